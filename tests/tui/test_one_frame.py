"""What a key changes is painted in one frame, not in two 1/60 s apart."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import RenderableType
from textual.screen import Screen

from study.store import Study
from tests.tui.waiting import settle, wait_for
from tui.app import CodecurveApp, make_app

SIZE = (140, 40)


def record_paints(app: CodecurveApp, monkeypatch: pytest.MonkeyPatch) -> list[RenderableType]:
    """Every screen update the app sends to the terminal from now on."""
    paints: list[RenderableType] = []
    display = app._display  # the one place an update reaches the terminal

    def recording(screen: Screen[Any], renderable: RenderableType | None) -> None:
        if renderable is not None:
            paints.append(renderable)
        display(screen, renderable)

    monkeypatch.setattr(app, "_display", recording)
    return paints


def lines_of(update: RenderableType) -> set[int]:
    """The screen lines an update draws (a full update draws them all)."""
    spans = getattr(update, "spans", None)
    if spans is None:
        return set(range(SIZE[1]))
    return {y for y, _, _ in spans}


@pytest.mark.parametrize("key", ["o", "1", "u", "f"])
async def test_a_key_is_painted_in_one_frame(
    study: Study, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    """The queue, the detail pane and the status line change in the key's first frame
    (a sort, a decision, an undo, opening the filter bar)."""
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        if key == "u":
            await pilot.press("1")
            await settle(pilot)
        review = app.review
        status = review.status_line
        before = str(status.render())
        paints = record_paints(app, monkeypatch)
        await pilot.press(key)
        await wait_for(pilot, lambda: paints)
        assert str(status.render()) != before  # the key changed the status line
        first = lines_of(paints[0])
        assert status.region.y in first
        if key != "f":  # the filter bar opens on the status line alone
            queue = review.pair_queue
            cursor_line = queue.region.y + 1 + queue.cursor - int(queue.scroll_offset.y)
            assert cursor_line in first
            assert review.detail.region.y + 1 in first  # the pane's title: another pair
