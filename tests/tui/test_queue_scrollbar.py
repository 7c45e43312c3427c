"""The queue's scrollbar is repainted when its thumb moves, and only then.

On a long queue a key that scrolls one row moves the thumb by a fraction of an eighth of
a cell: drawing it again costs the key a tenth of its work for the same picture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from tests.factories import build_study
from tests.tui.waiting import settle
from tui.app import make_app

SIZE = (100, 30)


def drawn(widget: Widget) -> list[Strip]:
    """The widget's lines as Textual draws them now (unchanged lines from its cache)."""
    return widget.render_lines(Region(0, 0, *widget.outer_size))


def redrawn(widget: Widget) -> list[Strip]:
    widget.refresh()
    return drawn(widget)


async def test_a_one_row_scroll_of_a_long_queue_leaves_the_scrollbar_as_drawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    study = build_study(tmp_path / "long.codecurve", n=1500)  # 4,500 pairs
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        bar = queue.vertical_scrollbar
        repaints: list[tuple[Any, ...]] = []
        refresh = bar.refresh

        def recording(*args: Any, **kwargs: Any) -> Widget:
            repaints.append(args)
            return refresh(*args, **kwargs)

        monkeypatch.setattr(bar, "refresh", recording)
        for _ in range(queue.size.height + 5):  # past the foot: each key scrolls a row
            await pilot.press("j")
        await pilot.pause()
        scrolled = int(queue.scroll_offset.y)
        assert scrolled >= 5
        # The thumb moved by about an eighth of a cell in all: drawn again once or twice
        # (where it crossed an eighth), not once a row.
        assert len(repaints) <= 3 < scrolled
        assert bar.position == bar.validate_position(queue.scroll_y)  # kept, if not drawn
        assert drawn(bar) == redrawn(bar)
        # A jump to the end moves the thumb: drawn again, where a full repaint puts it.
        before = len(repaints)
        await pilot.press("end")
        await pilot.pause()
        assert len(repaints) > before
        assert bar.position == bar.validate_position(queue.scroll_y)
        assert drawn(bar) == redrawn(bar)


async def test_a_short_queue_moves_its_thumb_with_each_row(study: Any) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        bar = queue.vertical_scrollbar
        for _ in range(queue.size.height + 5):
            await pilot.press("j")
            await pilot.pause()
            assert drawn(bar) == redrawn(bar)
        assert queue.scroll_offset.y >= 5
