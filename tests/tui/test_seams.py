"""The app's seams: screens tell by message, one scoring loop, one rule per key, one
vocabulary, and a study that cannot save does not take the app down."""

from __future__ import annotations

import ast
import sqlite3
import threading
from pathlib import Path
from typing import Any, get_args

import pytest
from textual._compositor import LayoutUpdate  # the full-screen update, to tell it apart
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input

import study.score_run
import tui.app
from scoring import FakeBackend
from scoring.score import CONTEXT_LEVELS
from study.rows import CONTEXTS, LAYOUTS, ORDERS, STATUSES, Context, Layout, Order, Status
from study.store import Study
from tests.factories import build_study
from tests.tui.waiting import settle
from tui.app import make_app
from tui.keymap import described
from tui.messages import AnnotationSaved, ExportFinished, ScoringFinished, StudyChanged
from tui.screens.export import LAYOUTS as EXPORT_LAYOUTS
from tui.screens.export import ExportScreen
from tui.screens.help import HelpScreen
from tui.screens.note import NoteScreen
from tui.screens.response import ResponseScreen
from tui.screens.review import ReviewScreen
from tui.screens.small import TooSmall
from tui.session import Failed, Refused, ReviewSession, Saved
from tui.source import ORDERS as QUEUE_ORDERS
from tui.source import STATUSES as QUEUE_STATUSES
from tui.widgets.queue import PairQueue

SIZE = (100, 30)
SCREENS = Path(__file__).resolve().parents[2] / "tui" / "screens"


def unique(messages: list[Message], kind: type[Message]) -> list[Any]:
    """The messages of ``kind``, each once (the hook sees a bubbling one at every node)."""
    found: dict[int, Message] = {}
    for message in messages:
        if isinstance(message, kind):
            found.setdefault(id(message), message)
    return list(found.values())


def notes_of(app: Any, severity: str) -> list[str]:
    return [n.message for n in app._notifications if n.severity == severity]


# -- imports and vocabularies ----------------------------------------------------------


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (TYPE_CHECKING and functions too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_no_screen_module_imports_the_app() -> None:
    modules = sorted(SCREENS.glob("*.py"))
    assert len(modules) > 5
    for module in modules:
        offending = {m for m in imported_modules(module) if m == "tui.app" or m == "tui"}
        offending |= {m for m in imported_modules(module) if m.startswith("tui.app.")}
        assert not offending, f"{module.name} imports {offending}"


def test_the_import_check_sees_a_type_checking_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from tui.app import CodecurveApp\n"
    )
    assert "tui.app" in imported_modules(module)


def test_the_vocabularies_are_defined_once() -> None:
    assert ORDERS == get_args(Order) == ("entropy", "id", "pick", "confidence", "audit", "shared")
    assert QUEUE_ORDERS is ORDERS
    assert set(STATUSES) == set(get_args(Status))
    assert set(QUEUE_STATUSES) == {None, *STATUSES}
    assert tuple(CONTEXTS) == CONTEXT_LEVELS
    assert set(get_args(Context)) == set(CONTEXT_LEVELS)
    assert get_args(Layout) == LAYOUTS
    assert {value for _, value in EXPORT_LAYOUTS} == set(LAYOUTS)


# -- one scoring loop ----------------------------------------------------------------


async def test_the_scoring_worker_runs_score_study_with_its_cancellation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    study_ = build_study(tmp_path / "s.codecurve", n=8, scored=False)
    calls: list[dict[str, Any]] = []
    real = study.score_run.score_study

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(tui.app, "score_study", spy)
    seen: list[Message] = []
    app = make_app(
        study_,
        backend_factory=lambda: FakeBackend(),
        coder="tester",
        batch_size=5,
        score_on_open=True,
        close_study=True,
    )
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        while not any(isinstance(m, ScoringFinished) for m in seen):
            await pilot.pause(0.02)
        assert len(calls) == 1
        assert isinstance(calls[0]["cancel"], threading.Event)
        assert callable(calls[0]["progress"])
        assert callable(calls[0]["started"])
        finished = next(m for m in seen if isinstance(m, ScoringFinished))
        assert (finished.done, finished.total, finished.cancelled) == (24, 24, False)


# -- messages between screens ---------------------------------------------------------


async def test_a_note_edited_in_the_response_view_shows_on_the_review_screen(
    study: Study,
) -> None:
    seen: list[Message] = []
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await settle(pilot)
        review = app.review
        row = review.pair_queue.current
        assert row is not None
        assert row.note is None
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ResponseScreen)
        await pilot.press("c")  # n is No on a yes/no code here
        assert isinstance(app.screen, NoteScreen)
        await pilot.press(*"ask again", "enter")
        await settle(pilot)
        saved = unique(seen, AnnotationSaved)
        assert [(m.response_id, m.code_id, m.kind) for m in saved] == [
            (row.response_id, row.code_id, "note")
        ]
        assert any(isinstance(m, StudyChanged) for m in seen)
        await pilot.press("escape")
        await settle(pilot)
        shown: Screen[Any] = app.screen
        assert shown is review
        current = review.pair_queue.current
        assert current is not None
        assert (current.response_id, current.code_id) == (row.response_id, row.code_id)
        assert current.note == "ask again"
        assert review.detail.row is not None
        assert review.detail.row.note == "ask again"


async def test_decisions_post_annotation_saved_from_both_screens(study: Study) -> None:
    seen: list[Message] = []
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await settle(pilot)
        await pilot.press("1", "x", "u")
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        kinds = [m.kind for m in unique(seen, AnnotationSaved)]
        assert kinds == ["record", "record", "undo", "record"]
        assert study.decisions.count(coder="tester") == 2


async def test_a_decision_repaints_only_what_changed(study: Study) -> None:
    """A decision, an undo and a move redraw the regions they changed, never the whole
    terminal: a message to a screen under the top one (Textual's empty default screen)
    used to repaint every cell on every decision."""
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)  # the first screening's repaint included
        full: list[str] = []
        display = app._display

        def record(screen: Screen[Any], renderable: Any) -> None:
            if isinstance(renderable, LayoutUpdate):  # the compositor's full update
                full.append(keys[-1] if keys else "")
            display(screen, renderable)

        keys: list[str] = []
        app._display = record  # type: ignore[method-assign]
        for key in ("1", "x", "j", "u", "1"):
            keys.append(key)
            await pilot.press(key)
            await pilot.pause(0.05)
        assert study.decisions.count(coder="tester") == 2
        assert full == []


async def test_the_review_screen_under_the_response_view_catches_up_when_shown(
    study: Study,
) -> None:
    """Decisions in the response view leave the review screen below it to catch up once,
    when it is shown again, not on every key."""
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        review = app.review
        reloads = 0
        reload = review.pair_queue.reload

        def counted(**options: Any) -> None:
            nonlocal reloads
            reloads += 1
            reload(**options)

        review.pair_queue.reload = counted  # type: ignore[method-assign]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ResponseScreen)
        await pilot.press("1", "down", "1", "down", "0")
        await settle(pilot)
        assert reloads == 0
        assert review.stale
        await pilot.press("escape")
        await settle(pilot)
        shown: Screen[Any] = app.screen
        assert shown is review
        assert reloads == 1
        assert not review.stale


# -- the session's rules ------------------------------------------------------------


def test_the_session_holds_each_keys_rule(tmp_path: Path) -> None:
    study_ = build_study(tmp_path / "s.codecurve", n=4, scored=2)
    try:
        session = ReviewSession(study_, coder="tester")
        rows = study_.queries.page(session.config_id, order="id", limit=100)
        binary = next(r for r in rows if r.code_id == "workload" and r.pick is not None)
        unscored = next(r for r in rows if r.pick is None)
        refused = session.decide(binary, 3)
        assert isinstance(refused, Refused)
        assert "press 1 or y" in refused.message
        assert isinstance(session.accept(unscored), Refused)
        assert session.accept(binary) == Saved(
            binary.response_id, "workload", binary.pick, source="model"
        )
        assert study_.decisions.decision(binary.response_id, "workload", coder="tester") is not None
        assert isinstance(session.not_apply(unscored), Saved)
        note = session.annotate(unscored, "why")
        assert note == Saved(unscored.response_id, unscored.code_id, None, kind="note")
        undone = [session.take_back() for _ in range(4)]
        assert isinstance(undone[-1], Refused)
        assert all(isinstance(u, Saved) and u.kind == "undo" for u in undone[:2])
        assert study_.decisions.count(coder="tester") == 0
    finally:
        study_.close()


@pytest.mark.parametrize(
    "error",
    [
        sqlite3.OperationalError("database or disk is full"),
        OSError(28, "No space left on device"),
    ],
)
def test_a_failed_write_is_an_outcome_not_an_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    study_ = build_study(tmp_path / "s.codecurve", n=3)
    try:
        session = ReviewSession(study_, coder="tester")
        row = study_.queries.page(session.config_id, order="id", limit=1)[0]

        def fail(*args: object, **kwargs: object) -> None:
            raise error

        monkeypatch.setattr(study_.decisions, "record", fail)
        monkeypatch.setattr(study_.decisions, "set_note", fail)
        monkeypatch.setattr(study_.decisions, "undo", fail)
        for outcome in (
            session.decide(row, 1),
            session.accept(row),
            session.not_apply(row),
            session.annotate(row, "x"),
            session.take_back(),
        ):
            assert isinstance(outcome, Failed)
            assert "not saved" in outcome.message
            assert "study is unchanged" in outcome.message
    finally:
        monkeypatch.undo()
        study_.close()


# -- a full disk while coding ---------------------------------------------------------


async def test_a_failed_save_is_an_error_in_the_app_which_keeps_going(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Message] = []
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE, notifications=True, message_hook=seen.append) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        row = queue.current
        assert row is not None
        cursor = queue.cursor

        def disk_full(*args: object, **kwargs: object) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(study.decisions, "record", disk_full)
        await pilot.press("1")
        await settle(pilot)
        assert app.is_running
        errors = notes_of(app, "error")
        assert len(errors) == 1
        assert "not saved" in errors[0]
        assert "disk is full" in errors[0]
        # Nothing is shown as saved: same pair, still undecided, no message posted.
        assert queue.cursor == cursor
        current = queue.current
        assert current is not None
        assert current.decision is None
        assert not any(isinstance(m, AnnotationSaved) for m in seen)
        assert study.decisions.count(coder="tester") == 0
        # The next keys still go to the app; once there is room again, saving works.
        await pilot.press("x")
        assert len(notes_of(app, "error")) == 2
        monkeypatch.undo()
        await pilot.press("1")
        await settle(pilot)
        assert study.decisions.count(coder="tester") == 1
        assert study.decisions.decision(row.response_id, row.code_id, coder="tester") is not None
    assert app.return_code in (None, 0)


async def test_a_failed_save_in_the_response_view_keeps_the_view(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResponseScreen)

        def disk_full(*args: object, **kwargs: object) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(study.decisions, "set_note", disk_full)
        await pilot.press("c", *"lost", "enter")
        await settle(pilot)
        assert app.screen is screen
        assert any("No space left" in e for e in notes_of(app, "error"))
        assert isinstance(screen, ResponseScreen)
        assert all(r.note is None for r in screen.rows)


# -- a terminal too small ----------------------------------------------------------------


async def test_a_terminal_too_small_says_so(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=(40, 10)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        assert screen.has_class("-too-small")
        message = screen.query_one(TooSmall)
        assert message.display
        assert message.region.height > 0
        assert "Enlarge the terminal to at least 60x18" in str(message.render())
        assert not screen.query_one(PairQueue).region.height
        # Larger again: the screen draws, with the screening panel the key opened.
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        assert not screen.has_class("-too-small")
        assert screen.screening.region.height > 0
        assert not message.region.height


async def test_the_response_view_too_says_when_the_terminal_is_too_small(
    study: Study,
) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=(40, 10)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ResponseScreen)
        assert app.screen.has_class("-too-small")
        assert "Enlarge the terminal" in str(app.screen.query_one(TooSmall).render())


# -- keys, help and palette from the bindings ---------------------------------------------


async def test_help_and_palette_are_generated_from_the_tooltips(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown = [
            b
            for b in ReviewScreen.BINDINGS
            if getattr(b, "show", False) or getattr(b, "tooltip", "")
        ]
        assert all(getattr(b, "tooltip", "") for b in shown if getattr(b, "show", False))
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert commands["Undo"] == "take back your last decision (repeatable) (u, ⌫)"
        assert "Quit" in commands  # Textual's own, once
        await pilot.press("question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        texts = dict(help_screen._keys)
        for binding in ReviewScreen.BINDINGS:
            tooltip = getattr(binding, "tooltip", "")
            if tooltip:
                assert described(tooltip) in texts.values()  # other keys named as bound
        assert "Next: the line below" in texts.values()  # the queue's keys too
        assert texts["1-9"].startswith("Record a value")
        assert "yes/no: 1 Yes, 0 No" in texts["1-9"]


# -- export in a worker -------------------------------------------------------------------


async def test_export_runs_in_a_worker_and_reports_by_message(study: Study, tmp_path: Path) -> None:
    seen: list[Message] = []
    app = make_app(study, coder="tester")
    target = tmp_path / "out.csv"
    async with app.run_test(size=SIZE, notifications=True, message_hook=seen.append) as pilot:
        await settle(pilot)
        await pilot.press("e")
        dialog = app.screen
        assert isinstance(dialog, ExportScreen)
        dialog.choose(layout="wide")
        dialog.query_one("#export-path", Input).value = str(target)
        await pilot.click("#export-ok")
        await settle(pilot)
        finished = unique(seen, ExportFinished)
        assert [m.path for m in finished] == [target]
        assert target.is_file()
        assert any(str(target) in n.message for n in app._notifications)
        assert not [w for w in app.workers if w.group == "export" and w.is_running]


async def test_the_export_dialog_scrolls_to_its_file_field_in_a_small_terminal(
    study: Study,
) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=(40, 10)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportScreen)
        assert app.focused is dialog.query_one("#export-format")  # the first choice
        await pilot.press("tab", "tab")
        await settle(pilot)
        path = dialog.query_one("#export-path", Input)
        assert app.focused is path
        visible = dialog.query_one("#export-dialog").content_region
        assert path.region.height > 0
        assert visible.contains_region(path.region)


def test_score_study_says_how_many_pairs_it_will_score_before_the_first_batch(
    tmp_path: Path,
) -> None:
    from scoring.engine import ScoringEngine
    from study.score_run import ScoreProgress, score_study

    study_ = build_study(tmp_path / "s.codecurve", n=5, scored=4)
    try:
        engine = ScoringEngine(FakeBackend(), study_.codebook, batch_size=4)
        events: list[object] = []
        run = score_study(
            study_,
            engine,
            started=lambda config_id, pending: events.append((config_id, pending)),
            progress=events.append,
        )
        assert events[0] == (run.config_id, run.pending)
        assert all(isinstance(e, ScoreProgress) for e in events[1:])
        assert len(events) > 1
    finally:
        study_.close()
