"""Reconciliation in the app (Pilot): the disagreements filter, taking a coder's decision
as the consensus, a new consensus value with a note, undo and the progress count."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from study.analysis._reconcile import disagreements
from study.store import Study
from tests.factories import build_study
from tui.app import make_app
from tui.screens.disagreements import ConsensusValueScreen, DisagreementsScreen
from tui.screens.review import ReviewScreen

SIZE = (110, 34)

#: Studies a test opened, closed after it.
_OPENED: list[Study] = []


@pytest.fixture(autouse=True)
def _close_studies() -> Iterator[None]:
    yield
    while _OPENED:
        study = _OPENED.pop()
        if not study.closed:
            study.close()


def opened(study: Study) -> Study:
    _OPENED.append(study)
    return study


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def two_coders(path: Path) -> Study:
    """ana and ben decide workload on r1..r6; they differ on r2, r4 and r6."""
    study = opened(build_study(path, n=8))
    study.decisions.import_decisions([(f"r{i}", "workload", 1) for i in range(1, 7)], coder="ana")
    study.decisions.import_decisions(
        [(f"r{i}", "workload", 0 if i % 2 == 0 else 1) for i in range(1, 7)], coder="ben"
    )
    study.decisions.record("r1", "workload", 1, coder="ben", note="clearly about hours")
    study.decisions.record("r2", "workload", 0, coder="ben", note="talks about pay, not workload")
    return study


def screen_of(pilot: Pilot[None]) -> DisagreementsScreen:
    screen = pilot.app.screen
    assert isinstance(screen, DisagreementsScreen)
    return screen


async def test_filter_lists_disagreements_and_enter_opens_reconciliation(
    tmp_path: Path,
) -> None:
    study = two_coders(tmp_path / "w.codecurve")
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f", "down")  # the status field
        # Step back to "coders disagree" (before "left for review", the last value).
        await pilot.press("left", "left")
        await pilot.press("enter")
        await settle(pilot)
        q = app.review.pair_queue
        assert q.pair_query.status == "disagreement"
        assert q.total == 3
        keys = {(r.response_id, r.code_id) for r in (q.row_at(i) for i in range(3)) if r}
        assert keys == {("r2", "workload"), ("r4", "workload"), ("r6", "workload")}
        await pilot.press("enter")
        await settle(pilot)
        screen = screen_of(pilot)
        assert screen.progress_text() == "0 of 3 disagreements resolved"
        item = screen.current()
        assert item is not None
        assert item.resolved is False
        # Each coder's decision and note side by side.
        detail = str(screen.query_one("#reconcile-detail").render())
        assert "ana" in detail
        assert "ben" in detail
        assert len(item.views) == 2


async def test_take_a_coder_set_a_value_with_a_note_and_undo(tmp_path: Path) -> None:
    study = two_coders(tmp_path / "w.codecurve")
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)
        screen = screen_of(pilot)
        assert screen.progress_text() == "0 of 3 disagreements resolved"
        first = screen.current()
        assert first is not None
        assert first.response_id == "r2"
        assert "talks about pay" in str(screen.query_one("#reconcile-detail").render())
        await pilot.press("2")  # take ben's decision (0)
        await settle(pilot)
        assert study.decisions.decision("r2", "workload", coder="consensus").value == 0  # type: ignore[union-attr]
        assert study.decisions.decision("r2", "workload", coder="consensus").source == "human"  # type: ignore[union-attr]
        assert screen.progress_text() == "1 of 3 disagreements resolved"
        # The cursor moved on to the next unresolved disagreement: a new value, a note.
        following = screen.current()
        assert following is not None
        assert following.response_id == "r4"
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, ConsensusValueScreen)
        app.screen.query_one("#consensus-value", Input).value = "Yes"
        app.screen.query_one("#consensus-note", Input).value = "overtime counts"
        await pilot.press("enter")
        await settle(pilot)
        screen = screen_of(pilot)
        decided = study.decisions.decision("r4", "workload", coder="consensus")
        assert decided is not None
        assert decided.value == 1
        assert study.decisions.note("r4", "workload", coder="consensus") == "overtime counts"
        assert screen.progress_text() == "2 of 3 disagreements resolved"
        # Undo takes back the consensus coder's last change only.
        await pilot.press("u")
        await settle(pilot)
        assert study.decisions.decision("r4", "workload", coder="consensus") is None
        assert study.decisions.note("r4", "workload", coder="consensus") is None
        assert study.decisions.decision("r2", "workload", coder="consensus") is not None
        assert screen.progress_text() == "1 of 3 disagreements resolved"
        # The cursor is back on the undone pair: take ana's decision there instead.
        undone = screen.current()
        assert undone is not None
        assert undone.response_id == "r4"
        await pilot.press("1")
        await settle(pilot)
        assert study.decisions.decision("r4", "workload", coder="consensus").value == 1  # type: ignore[union-attr]
        assert screen.progress_text() == "2 of 3 disagreements resolved"
        # The coders' own decisions are untouched.
        assert study.decisions.decision("r2", "workload", coder="ana").value == 1  # type: ignore[union-attr]
        # Back to the queue, which shows the consensus decision made meanwhile.
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen_stack[-1], ReviewScreen)


async def test_a_value_off_the_scale_is_refused_and_nothing_saved(tmp_path: Path) -> None:
    study = two_coders(tmp_path / "w.codecurve")
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        app.screen.query_one("#consensus-value", Input).value = "7"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ConsensusValueScreen)  # still asking
        await pilot.press("escape")
        await settle(pilot)
        assert study.decisions.decision("r2", "workload", coder="consensus") is None


async def test_fewer_than_two_coders_says_so(tmp_path: Path) -> None:
    study = opened(build_study(tmp_path / "w.codecurve", n=6))
    study.decisions.import_decisions([("r1", "workload", 1)], coder="ana")
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)
        screen = screen_of(pilot)
        assert "need the decisions of two coders" in screen.progress_text()
        await pilot.press("1", "v", "u")  # nothing to act on: no crash, nothing saved
        await settle(pilot)
        assert study.decisions.decision("r1", "workload", coder="consensus") is None
        await pilot.press("escape")
        await settle(pilot)
        # The filter bar's value says so too, and lists nothing.
        await pilot.press("f", "down", "left", "left", "enter")  # "coders disagree"
        await settle(pilot)
        assert app.review.pair_queue.total == 0


async def test_choose_the_coders_compared(tmp_path: Path) -> None:
    study = two_coders(tmp_path / "w.codecurve")
    study.decisions.import_decisions([("r1", "workload", 0), ("r3", "workload", 1)], coder="cy")
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)
        screen = screen_of(pilot)
        assert screen.progress_text() == "0 of 4 disagreements resolved"  # r1 too, now
        await pilot.press("w")
        await settle(pilot)
        app.screen.query_one("#coders", Input).value = "ana, cy"
        await pilot.press("enter")
        await settle(pilot)
        screen = screen_of(pilot)
        assert screen.progress_text() == "0 of 1 disagreements resolved"
        assert screen.compared() == ["ana", "cy"]
        await pilot.press("w")
        await settle(pilot)
        app.screen.query_one("#coders", Input).value = "ana, zed"
        await pilot.press("enter")
        await settle(pilot)
        assert "no decisions by coder 'zed'" in screen_of(pilot).progress_text()


def test_disagreements_need_shared_units(tmp_path: Path) -> None:
    study = opened(build_study(tmp_path / "w.codecurve", n=6))
    study.decisions.import_decisions([("r1", "workload", 1)], coder="ana")
    study.decisions.import_decisions([("r2", "workload", 0)], coder="ben")
    assert disagreements(study) == []


async def test_note_on_a_taken_consensus(tmp_path: Path) -> None:
    study = two_coders(tmp_path / "w.codecurve")
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)
        await pilot.press("1", "up")  # take ana's Yes on r2, then back to r2
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        app.screen.query_one("#note-input", Input).value = "hours, not pay"
        await pilot.press("enter")
        await settle(pilot)
        assert study.decisions.note("r2", "workload", coder="consensus") == "hours, not pay"
        assert (
            study.decisions.note("r2", "workload", coder="ben") == "talks about pay, not workload"
        )
        assert "hours, not pay" in str(screen_of(pilot).query_one("#reconcile-detail").render())
