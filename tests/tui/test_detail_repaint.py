"""The detail pane repaints only the lines a key changed, and always shows the pair right.

Textual repaints a widget line by line from a cache of its drawn lines; a line the pane
does not mark as changed keeps what it showed. These tests check both sides: a key that
changes a few lines repaints only those, and what the pane shows after any key is what a
full repaint draws.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.strip import Strip

from study.store import Study
from tests.tui.waiting import settle
from tui.app import make_app
from tui.source import Query
from tui.widgets.detail import DetailPane

SIZE = (140, 40)


def drawn(pane: DetailPane) -> list[Strip]:
    """The pane's lines as Textual draws them now (unchanged lines from its cache)."""
    return pane.render_lines(Region(0, 0, *pane.outer_size))


def redrawn(pane: DetailPane) -> list[Strip]:
    """The pane's lines drawn again from scratch."""
    pane.refresh()
    return drawn(pane)


def record_repaints(pane: DetailPane, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Region, ...]]:
    """Each refresh of the pane from now on, as the regions it asked for (none: all)."""
    asked: list[tuple[Region, ...]] = []
    refresh = pane.refresh

    def recording(*regions: Region, **kwargs: Any) -> DetailPane:
        asked.append(regions)
        return refresh(*regions, **kwargs)

    monkeypatch.setattr(pane, "refresh", recording)
    return asked


async def test_another_code_of_the_same_response_repaints_only_what_differs(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        review = app.review
        review.set_query(Query(order="id"))  # a response's codes one after another
        await pilot.pause()
        pane = review.detail
        first = pane.row
        assert first is not None
        before = drawn(pane)
        asked = record_repaints(pane, monkeypatch)
        await pilot.press("j")
        await pilot.pause()
        second = pane.row
        assert second is not None
        assert second.response_id == first.response_id
        assert second.code_id != first.code_id
        # Only some lines, never the whole pane: the response's own lines stay.
        assert asked
        assert all(regions for regions in asked)
        lines = {y for regions in asked for r in regions for y in range(r.y, r.bottom)}
        height = pane.scrollable_content_region.height
        assert 0 < len(lines) < height
        assert 0 not in lines  # the first line of the response
        after = drawn(pane)
        assert after[1] == before[1]  # the response's first line, below the border
        assert after != before
        # What it shows is what a full repaint draws.
        assert after == redrawn(pane)


async def test_every_key_leaves_the_pane_as_a_full_repaint_draws_it(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pane = app.review.detail

        async def press(key: str) -> None:
            await pilot.press(key)
            await pilot.pause()
            assert drawn(pane) == redrawn(pane), key

        # Moves, a decision, an undo (the pair drawn before, its decision now gone), a
        # move back onto a pair already drawn, a new order.
        for key in ("j", "j", "k", "1", "u", "k", "j", "o", "j"):
            await press(key)
        title = pane.border_title or ""
        row = pane.row
        assert row is not None
        assert title == f"Response {row.response_id}"
        assert drawn(pane)[0].text.strip("─╭╮ ").startswith(title)


async def pane_text(pilot: Pilot[None]) -> str:
    await pilot.pause()
    return " ".join(pilot.app.review.detail.plain_text.split())  # type: ignore[attr-defined]


async def test_an_undone_decision_shows_as_undecided_again(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        undecided = await pane_text(pilot)
        assert "Not decided yet" in undecided
        await pilot.press("1")
        await pilot.press("k")  # back onto the pair just decided
        assert "coded by you" in await pane_text(pilot)
        await pilot.press("u")
        assert await pane_text(pilot) == undecided
