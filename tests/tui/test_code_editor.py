"""The code editor (E): a confirmed edit is a new codebook version, exactly like
``codecurve codebook --revise``, and only the edited code's pairs are scored again, in
the background, their old curves greyed until then; cancel and an unchanged text change
nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.app import App
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import Static, TextArea

from codebooks.model import Codebook
from scoring import FakeBackend
from scoring.engine import ScoringEngine
from study.errors import StudyError
from study.iteration.revisions import stale_pairs
from study.score_run import score_study
from study.store import Study
from tests.factories import build_study
from tui.app import CodecurveApp, make_app
from tui.messages import ModelLoaded, ScoringFinished, ScoringStarted
from tui.screens.code_editor import CodeEditorScreen, edited_codebook
from tui.source import Query
from tui.widgets.curve import STALE_NOTE
from tui.widgets.keys import key_help

SIZE = (120, 30)
NEW_DEFINITION = "Complaints about the amount of work, deadlines or overtime."


async def wait_for(pilot: Pilot[None], condition: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.02)


@pytest.fixture
def opened() -> Iterator[Callable[[Study], Study]]:
    """Keep a study to close after the test, passed or failed (its lock file goes too)."""
    studies: list[Study] = []

    def keep(study: Study) -> Study:
        studies.append(study)
        return study

    try:
        yield keep
    finally:
        for study in studies:
            if not study.closed:
                study.close()


def scored_study(path: Path, n: int = 12) -> Study:
    """Every pair scored with the fake model (the app's model, so nothing is pending)."""
    study = build_study(path, n=n, scored=False)
    score_study(study, ScoringEngine(FakeBackend(), study.codebook))
    return study


def notes(app: CodecurveApp) -> list[str]:
    return [n.message for n in app._notifications]


def content(study: Study) -> tuple[object, ...]:
    """What a cancelled edit must leave alone."""
    return (
        study.versions.current(),
        study.codebook.content_hash(),
        len(study.versions.all()),
        study.scores.scored_count(study.scores.active_config_id() or 0),
    )


async def open_editor_on(pilot: Pilot[None], app: CodecurveApp, code_id: str) -> CodeEditorScreen:
    app.review.set_query(Query(code_id=code_id))
    await pilot.pause()
    row = app.review.pair_queue.current
    assert row is not None
    assert row.code_id == code_id
    await pilot.press("E")
    await wait_for(pilot, lambda: isinstance(app.screen, CodeEditorScreen))
    await pilot.pause()
    assert isinstance(app.screen, CodeEditorScreen)
    return app.screen


def test_edited_codebook_replaces_only_that_code() -> None:
    from tests.factories import CODEBOOK

    revised = edited_codebook(
        CODEBOOK,
        "workload",
        {"definition": "  New.  ", "examples": "too much work\n\n  overtime again \n"},
    )
    code = next(c for c in revised.codes if c.id == "workload")
    assert code.definition == "New."
    assert code.examples == ("too much work", "overtime again")
    assert code.inclusion == CODEBOOK.codes[0].inclusion
    assert revised.codes[1:] == CODEBOOK.codes[1:]


async def test_save_records_a_version_and_rescores_only_that_codes_pairs(
    tmp_path: Path,
    opened: Callable[[Study], Study],
) -> None:
    study = opened(scored_study(tmp_path / "s.codecurve"))
    backend = FakeBackend()
    seen: list[Message] = []
    app = make_app(
        study,
        backend_factory=lambda: backend,
        coder="tester",
        close_study=False,
        measure_evidence=False,  # the model's calls are counted: scoring's alone
    )
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, ModelLoaded) for m in seen))
        await pilot.pause()
        editor = await open_editor_on(pilot, app, "workload")
        area = editor.query_one("#edit-definition", TextArea)
        assert area.text == "Mentions of how much work there is."
        area.text = NEW_DEFINITION
        await pilot.press("ctrl+s")
        await pilot.pause()
        # First the planned change, nothing written yet.
        assert editor.planned is not None
        assert any("workload" in line and "definition" in line for line in editor.planned.lines)
        assert study.versions.current() == 1
        assert backend.calls == 0
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any(isinstance(m, ScoringFinished) for m in seen))
        await pilot.pause()
        assert not isinstance(app.screen, CodeEditorScreen)
        assert study.versions.current() == 2
        assert study.code("workload").definition == NEW_DEFINITION
        # The app's session follows the new codebook (the detail pane shows it).
        assert app.session.code("workload") == study.code("workload")
        # Only the edited code's 12 pairs went to the model, with the new text.
        prompts = [p for batch in backend.batches for p in batch]
        assert len(prompts) == 12
        assert all(NEW_DEFINITION in p for p in prompts)
        config_id = study.scores.active_config_id()
        assert config_id is not None
        with study.snapshot() as conn:
            assert stale_pairs(conn, study.index, config_id) == []
        assert app.stale_keys == frozenset()
        assert study.scores.scored_count(config_id) == study.pair_count()
        assert any("Recorded codebook version 2" in n for n in notes(app))
    versions = study.versions.all()
    assert [v.version for v in versions] == [1, 2]
    assert versions[1].source == "app: edited code workload"
    assert any(c.code_id == "workload" for c in versions[1].changes)
    study.close()


async def test_cancel_leaves_everything_unchanged(
    tmp_path: Path, opened: Callable[[Study], Study]
) -> None:
    study = opened(scored_study(tmp_path / "s.codecurve"))
    before = content(study)
    backend = FakeBackend()
    app = make_app(
        study,
        backend_factory=lambda: backend,
        coder="tester",
        close_study=False,
        measure_evidence=False,  # the model's calls are counted: scoring's alone
    )
    async with app.run_test(size=SIZE) as pilot:
        editor = await open_editor_on(pilot, app, "pay")
        editor.query_one("#edit-inclusion", TextArea).text = "Any mention of money."
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CodeEditorScreen)
        # Cancelling from the plan goes back to the text first.
        editor = await open_editor_on(pilot, app, "pay")
        editor.query_one("#edit-inclusion", TextArea).text = "Any mention of money."
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert editor.planned is not None
        await pilot.press("escape")
        await pilot.pause()
        assert editor.planned is None
        assert app.screen is editor
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, CodeEditorScreen))
        await app.workers.wait_for_complete()  # a scoring run, had one started
    assert content(study) == before
    assert backend.calls == 0
    study.close()


async def test_an_unchanged_text_says_so_and_records_nothing(
    tmp_path: Path, opened: Callable[[Study], Study]
) -> None:
    study = opened(scored_study(tmp_path / "s.codecurve"))
    before = content(study)
    app = make_app(study, coder="tester", close_study=False)
    async with app.run_test(size=SIZE) as pilot:
        editor = await open_editor_on(pilot, app, "team")
        # Whitespace at the ends is no change either.
        area = editor.query_one("#edit-definition", TextArea)
        area.text = area.text + "\n  "
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not isinstance(app.screen, CodeEditorScreen)
        assert any("unchanged" in n for n in notes(app))
    assert content(study) == before
    study.close()


async def test_old_curves_are_greyed_until_the_new_score_arrives(
    tmp_path: Path, opened: Callable[[Study], Study]
) -> None:
    # No model: the edited code's pairs keep their old scores, drawn greyed.
    study = opened(scored_study(tmp_path / "s.codecurve"))
    app = make_app(study, coder="tester", close_study=False)
    async with app.run_test(size=SIZE) as pilot:
        editor = await open_editor_on(pilot, app, "workload")
        editor.query_one("#edit-exclusion", TextArea).text = "Not: pay."
        await pilot.press("ctrl+s")
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert study.versions.current() == 2
        stale = {(r, c) for r, c in app.stale_keys}
        assert stale == {(f"r{i + 1}", "workload") for i in range(12)}
        review = app.review
        assert review.pair_queue.stale_keys == app.stale_keys
        row = review.pair_queue.current
        assert row is not None
        assert row.code_id == "workload"
        assert row.surprisal is not None  # the old score is still shown
        assert STALE_NOTE in review.detail.plain_text
        assert any("No model is configured" in n for n in notes(app))
        # Another code's curve is not greyed.
        review.set_query(Query(code_id="pay"))
        await pilot.pause()
        assert STALE_NOTE not in review.detail.plain_text
        # Once scored again (here: by codecurve score), nothing is greyed.
        score_study(study, ScoringEngine(FakeBackend(), study.codebook))
        app.update_stale()
        assert app.stale_keys == frozenset()
        assert review.pair_queue.stale_keys == frozenset()
    study.close()


async def test_the_queue_draws_a_stale_curve_dim(
    tmp_path: Path, opened: Callable[[Study], Study]
) -> None:
    study = opened(scored_study(tmp_path / "s.codecurve"))
    app = make_app(study, coder="tester", close_study=False)
    async with app.run_test(size=SIZE) as pilot:
        queue = app.review.pair_queue
        row = queue.current
        assert row is not None
        fresh = queue.render_line(1)  # the first row, under the header
        queue.stale_keys = frozenset({(row.response_id, row.code_id)})
        await pilot.pause()
        greyed = queue.render_line(1)
        assert fresh.text == greyed.text
        assert list(fresh) != list(greyed)  # the same glyphs in another style
    study.close()


class _Host(App[None]):
    """The editor alone, over a planner that refuses."""

    def __init__(self) -> None:
        super().__init__()
        self.result: object = "open"

    def on_mount(self) -> None:
        from tests.factories import CODEBOOK

        def refuse(codebook: Codebook) -> list[str]:
            raise StudyError("cannot revise the codebook: refused for the test")

        def done(result: object) -> None:
            self.result = result

        self.push_screen(CodeEditorScreen(CODEBOOK, "pay", planner=refuse), done)


async def test_a_refused_revision_is_said_in_the_editor_which_stays_open() -> None:
    app = _Host()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, CodeEditorScreen)
        editor.query_one("#edit-definition", TextArea).text = "Money."
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert editor.planned is None
        assert app.screen is editor
        message = editor.query_one("#code-editor-message", Static)
        assert "refused for the test" in str(message.render())
        assert app.result == "open"


async def test_help_lists_the_edit_and_configuration_keys(
    tmp_path: Path, opened: Callable[[Study], Study]
) -> None:
    study = opened(scored_study(tmp_path / "s.codecurve", n=3))
    app = make_app(study, coder="tester", close_study=False)
    async with app.run_test(size=SIZE):
        items = {item.keys: item.title for item in key_help(app, app.review.BINDINGS)}
        assert items["E"] == "Edit code"
        assert items["C"] == "Configurations"
    study.close()


async def test_an_edit_during_a_scoring_run_is_rescored_after_it(
    tmp_path: Path, opened: Callable[[Study], Study]
) -> None:
    study = opened(build_study(tmp_path / "s.codecurve", n=12, scored=False))
    gate = threading.Event()  # the first run is held until the edit is saved
    backend = FakeBackend(gate=gate)
    seen: list[Message] = []
    app = make_app(
        study,
        backend_factory=lambda: backend,
        coder="tester",
        batch_size=4,
        close_study=False,
        measure_evidence=False,  # the gate counts the model's calls: scoring's alone
    )
    try:
        async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
            await wait_for(pilot, lambda: any(isinstance(m, ModelLoaded) for m in seen))
            await pilot.press("r")
            await wait_for(pilot, lambda: any(isinstance(m, ScoringStarted) for m in seen))
            assert app.scoring
            editor = await open_editor_on(pilot, app, "workload")
            editor.query_one("#edit-definition", TextArea).text = NEW_DEFINITION
            await pilot.press("ctrl+s")
            await pilot.pause()
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: study.versions.current() == 2)
            assert app.scoring  # the first run goes on; the rescoring waits for it
            assert not any(isinstance(m, ScoringFinished) for m in seen)
            gate.set()
            await wait_for(
                pilot, lambda: sum(isinstance(m, ScoringFinished) for m in seen) >= 2, timeout=60
            )
            await wait_for(pilot, lambda: not app.scoring)
            await pilot.pause()
            config_id = study.scores.active_config_id()
            assert config_id is not None
            assert study.scores.scored_count(config_id) == study.pair_count()
            with study.snapshot() as conn:
                assert stale_pairs(conn, study.index, config_id) == []
            assert app.stale_keys == frozenset()
            # Every workload pair was scored with the new text in the end.
            last = [p for batch in backend.batches for p in batch if NEW_DEFINITION in p]
            assert len(set(last)) == 12
    finally:
        gate.set()  # a failed test must not leave the worker held


async def test_a_code_added_while_reading_is_a_version_and_its_pairs_are_scored(
    tmp_path: Path,
    opened: Callable[[Study], Study],
) -> None:
    from textual.widgets import Input

    from tui.screens.response import ResponseScreen

    study = opened(scored_study(tmp_path / "s.codecurve"))
    backend = FakeBackend()
    seen: list[Message] = []
    app = make_app(
        study,
        backend_factory=lambda: backend,
        coder="tester",
        close_study=False,
        measure_evidence=False,  # the model's calls are counted: scoring's alone
    )
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, ModelLoaded) for m in seen))
        await pilot.press("v")  # reading response by response
        await wait_for(pilot, lambda: isinstance(app.screen, ResponseScreen))
        view = app.screen
        assert isinstance(view, ResponseScreen)
        await pilot.press("A")
        await wait_for(pilot, lambda: isinstance(app.screen, CodeEditorScreen))
        editor = app.screen
        assert isinstance(editor, CodeEditorScreen)
        await pilot.press("ctrl+s")  # no name yet: said in the editor, which stays open
        await pilot.pause()
        assert editor.planned is None
        assert "give the new code a name" in str(
            editor.query_one("#code-editor-message", Static).render()
        )
        editor.query_one("#edit-name", Input).value = "Night shifts"
        editor.query_one("#edit-definition", TextArea).text = "Working at night."
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert editor.planned is not None
        assert editor.planned.added
        assert any("night-shifts" in line for line in editor.planned.lines)
        assert study.versions.current() == 1  # nothing written before the second ctrl+s
        seen.clear()
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any(isinstance(m, ScoringFinished) for m in seen))
        await pilot.pause()
        assert app.screen is view  # back to reading, the new code in the table
        assert study.versions.current() == 2
        assert study.code("night-shifts").definition == "Working at night."
        assert "night-shifts" in [r.code_id for r in view.rows]
        # Its 12 pairs, and only those, went to the model.
        prompts = [p for batch in backend.batches for p in batch]
        assert len(prompts) == 12
        assert all("Working at night." in p for p in prompts)
        config_id = study.scores.active_config_id()
        assert config_id is not None
        assert study.scores.scored_count(config_id) == study.pair_count()
        row = next(r for r in view.rows if r.code_id == "night-shifts")
        assert row.surprisal is not None  # its curve shows without leaving the view
        # The queue's filter bar offers it.
        await pilot.press("escape")
        await pilot.pause()
        bar = app.review.filter_bar
        await pilot.press("f", "N")
        assert bar.code_id == "night-shifts"
    versions = study.versions.all()
    assert versions[1].source == "app: added code night-shifts"
    study.close()
