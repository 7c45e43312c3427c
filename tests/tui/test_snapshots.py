"""Snapshots of the main screens at 80x24 and 140x40 (reviewed by eye when accepted).

Update with ``pytest tests/tui/test_snapshots.py --snapshot-update``, then render the
SVGs in ``__snapshots__`` to PNG and look at them before committing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from tests.factories import build_study
from tests.tui.waiting import settle
from tui.app import CodecurveApp, make_app

SnapCompare = Callable[..., bool]


def app_for(tmp_path: Path, **kwargs: Any) -> CodecurveApp:
    study = build_study(tmp_path / "snap.codecurve", n=40)
    return make_app(study, coder="tester", close_study=True, **kwargs)


def pressing(*keys: str) -> Callable[[Pilot[None]], Awaitable[None]]:
    """Press keys, then wait for the debounced screening refresh: a stable picture."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press(*keys)
        await settle(pilot)

    return run_before


def test_queue_80x24(snap_compare: SnapCompare, tmp_path: Path) -> None:
    assert snap_compare(app_for(tmp_path), run_before=pressing("1", "j", "a"))


def test_queue_140x40(snap_compare: SnapCompare, tmp_path: Path) -> None:
    assert snap_compare(
        app_for(tmp_path), terminal_size=(140, 40), run_before=pressing("1", "x", "a")
    )


def test_screening_panel_140x40(snap_compare: SnapCompare, tmp_path: Path) -> None:
    run_before = pressing(*"1x1x1a1", "s")
    assert snap_compare(app_for(tmp_path), terminal_size=(140, 40), run_before=run_before)


def test_response_view_80x24(snap_compare: SnapCompare, tmp_path: Path) -> None:
    assert snap_compare(app_for(tmp_path), run_before=pressing("enter", "1"))


def test_help_80x24(snap_compare: SnapCompare, tmp_path: Path) -> None:
    assert snap_compare(app_for(tmp_path), run_before=pressing("question_mark"))


def test_light_theme_80x24(snap_compare: SnapCompare, tmp_path: Path) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        pilot.app.theme = "textual-light"
        await pressing("1")(pilot)

    assert snap_compare(app_for(tmp_path), run_before=run_before)


def test_filter_bar_80x24(snap_compare: SnapCompare, tmp_path: Path) -> None:
    # Filtered to Pay, status field highlighted: the bar over the queue's last line and
    # its keys in the key bar.
    assert snap_compare(app_for(tmp_path), run_before=pressing("1", "f", "right", "right", "down"))


def response_mode_app(tmp_path: Path) -> CodecurveApp:
    from tests.tui.test_response_mode import yes_no_study

    study = yes_no_study(tmp_path / "snap.codecurve", n=12)
    return make_app(study, coder="tester", close_study=True)


def test_response_mode_80x24(snap_compare: SnapCompare, tmp_path: Path) -> None:
    run_before = pressing("v", "y", "n", "c", *"ask", "enter")
    assert snap_compare(response_mode_app(tmp_path), run_before=run_before)


def test_response_mode_140x40(snap_compare: SnapCompare, tmp_path: Path) -> None:
    run_before = pressing("v", "y", "n", "y", "right_square_bracket", "n")
    assert snap_compare(response_mode_app(tmp_path), terminal_size=(140, 40), run_before=run_before)


def test_response_list_80x24(snap_compare: SnapCompare, tmp_path: Path) -> None:
    assert snap_compare(app_for(tmp_path), run_before=pressing("1", "x", "V", "down"))


def test_response_list_140x40(snap_compare: SnapCompare, tmp_path: Path) -> None:
    # A response coded in the view, with a memo; a note on another response's pair.
    keys = ("enter", "1", "1", "1", "m", *"sarcastic", "enter", "escape")
    run_before = pressing(*keys, "j", "c", *"check", "enter", "V", "down", "down")
    assert snap_compare(app_for(tmp_path), terminal_size=(140, 40), run_before=run_before)


def long_response_app(tmp_path: Path) -> CodecurveApp:
    from tests.tui.test_small_terminal import long_study

    study = long_study(tmp_path / "long.codecurve")
    return make_app(study, coder="tester", close_study=True)


def test_detail_pane_long_response_80x24(snap_compare: SnapCompare, tmp_path: Path) -> None:
    run_before = pressing("slash", *"long", "enter")
    assert snap_compare(long_response_app(tmp_path), run_before=run_before)


def test_detail_pane_long_response_140x40(snap_compare: SnapCompare, tmp_path: Path) -> None:
    run_before = pressing("slash", *"long", "enter")
    assert snap_compare(long_response_app(tmp_path), terminal_size=(140, 40), run_before=run_before)
