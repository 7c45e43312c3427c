"""Order, filters, search and export, driven from the keyboard and the dialogs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input

from study.exchange.export import read_export
from study.store import Study
from tui.app import CodecurveApp, make_app
from tui.screens.export import ExportScreen
from tui.source import Query
from tui.widgets.queue import PairQueue

SIZE = (100, 30)


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def order_of(queue: PairQueue) -> str:
    """The queue's order, read anew (mypy would keep a narrowing across a key press)."""
    return queue.pair_query.order


def column(app: CodecurveApp, attribute: str) -> list[Any]:
    """One attribute of every row of the queue, in queue order."""
    queue = app.review.pair_queue
    return [getattr(queue.row_at(i), attribute) for i in range(queue.total)]


async def test_o_cycles_the_order(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        assert order_of(queue) == "entropy"
        await pilot.press("j", "j", "o")
        assert order_of(queue) == "id"
        assert queue.cursor == 0
        ids = column(app, "response_id")
        assert ids[:6] == ["r1", "r1", "r1", "r2", "r2", "r2"]
        assert ids.index("r10") > ids.index("r9")  # natural order
        await pilot.press("o")
        assert order_of(queue) == "pick"
        picks = column(app, "pick")
        assert picks == sorted(picks, reverse=True)
        await pilot.press("o")
        assert order_of(queue) == "confidence"
        confidence = column(app, "confidence")
        assert confidence == sorted(confidence)
        await pilot.press("o")
        assert order_of(queue) == "entropy"
        assert "most uncertain first" in str(app.review.status_line.render())


async def test_f_filters_by_code_and_status_from_the_keyboard(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        await pilot.press("1", "1")  # two decisions to filter on
        await pilot.press("f")
        bar = app.review.filter_bar
        assert bar.is_open
        assert queue.has_focus  # the bar takes the keys without taking focus
        assert app.screen is app.review  # a bar, not a dialog: nothing to close
        assert "every code" in str(app.review.status_line.render())  # drawn in its place

        await pilot.press("right", "right")  # every code -> Workload -> Pay, applied at once
        await settle(pilot)
        assert (bar.code_id, queue.total) == ("pay", 30)
        assert set(column(app, "code_id")) == {"pay"}
        await pilot.press("left")
        await settle(pilot)
        assert (bar.code_id, queue.total) == ("workload", 30)

        await pilot.press("t")  # type-ahead: the next code whose name starts with t
        await settle(pilot)
        assert bar.code_id == "team"
        await pilot.press("home")  # back to every code
        await pilot.press("tab")  # the status field (as down does), not the next pane
        assert bar.field == "status"
        assert queue.has_focus
        await pilot.press("c")  # "coded by hand"
        await settle(pilot)
        state: tuple[str | None, str | None] = (bar.code_id, bar.status)  # after c, read anew
        assert state == (None, "human")
        assert queue.total == 2
        assert all(d is not None for d in column(app, "decision"))
        assert "coded by hand" in str(app.review.status_line.render())

        await pilot.press("escape")  # closes the bar, keeps the query
        assert not bar.is_open
        assert queue.total == 2
        await pilot.press("f")  # opens on the query shown
        assert bar.status == "human"
        await pilot.press("down", "home", "enter")
        await settle(pilot)
        assert not bar.is_open
        assert queue.total == 90
        await pilot.press("escape")  # nothing left to clear
        assert queue.total == 90


async def test_escape_clears_filters_once_the_bar_is_closed(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        await pilot.press("f", "right", "enter")
        await settle(pilot)
        assert queue.total == 30
        await pilot.press("escape")
        await settle(pilot)
        assert queue.total == 90
        assert app.review.pair_queue.pair_query == Query(order="entropy")


async def test_slash_searches_the_response_text(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        await pilot.press("slash")
        search = app.review.search_input
        assert search.has_focus
        await pilot.press(*"noisy", "enter")
        await settle(pilot)
        assert queue.has_focus
        assert 0 < queue.total < 90
        assert all("noisy" in str(t).lower() for t in column(app, "text"))
        # Digits typed in the search box are text, not decisions.
        await pilot.press("slash", "1", "backspace", "escape")
        await settle(pilot)
        assert queue.total == 90
        assert study.decisions.count(coder="tester") == 0
        assert isinstance(search, Input)


async def test_export_dialog_writes_the_file(study: Study, tmp_path: Path) -> None:
    app = make_app(study, coder="tester")
    target = tmp_path / "out" / "coded.csv"
    target.parent.mkdir()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("1", "x")
        await pilot.press("e")
        dialog = app.screen
        assert isinstance(dialog, ExportScreen)
        dialog.choose(layout="wide")
        dialog.query_one("#export-path", Input).value = str(target)
        await pilot.click("#export-ok")
        await settle(pilot)
        assert app.screen is app.review
        assert target.exists()
        frame = read_export(target)
        assert len(frame) == 30  # wide: one row per response
        messages = [n.message for n in app._notifications]
        assert any(str(target) in m for m in messages)

        await pilot.press("e")
        second: object = app.screen
        assert isinstance(second, ExportScreen)
        second.choose(format="jsonl")
        await pilot.pause()
        path = second.query_one("#export-path", Input)
        assert path.value.endswith(".jsonl")
        path.value = str(target.with_suffix(".jsonl"))
        path.focus()
        await pilot.press("enter")
        await settle(pilot)
        frame = read_export(target.with_suffix(".jsonl"))
        assert len(frame) == 90  # long: one row per pair
        decided = frame[frame["decision"].notna()]
        assert len(decided) == 2


async def test_export_failure_is_a_notification_not_a_crash(study: Study, tmp_path: Path) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("e")
        dialog = app.screen
        assert isinstance(dialog, ExportScreen)
        dialog.query_one("#export-path", Input).value = str(tmp_path / "missing" / "x.csv")
        await pilot.click("#export-ok")
        await settle(pilot)
        assert app.is_running
        assert any(n.severity == "error" for n in app._notifications)
