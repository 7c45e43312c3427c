"""The loop in the app: the coder's decisions teach the curves, the queue follows them.

The fake model's features are a hashed bag of the response's words and its zero-shot
curve is noise, so a curve learned from decisions that follow the words orders the queue
differently from the zero-shot one. Every wait is for a message or a state the app
reaches, never for a stretch of time.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.pilot import Pilot

import study.analysis._learning as learning_module
from codebooks.model import BINARY, Code, Codebook
from scoring import FakeBackend, ScoringEngine
from scoring.learned import fit_curve
from study import ResponseTable, Study, score_study
from study.analysis._learning import fits, learned_config_id
from study.errors import SCORE, StudyError
from tests.tui.waiting import settle, wait_for
from tui.app import CodecurveApp, make_app
from tui.keymap import REGISTRY
from tui.learning import REFIT_EVERY, Learner, Request, needs_text
from tui.messages import LearningFinished
from tui.screens.help import HelpScreen
from tui.source import Query

#: Wide enough for the status line in full.
SIZE = (240, 40)

WORDS = ["staff", "were", "kind", "the", "wait", "was", "long", "parking", "late", "nurse"]

CODEBOOK = Codebook(
    name="Patients",
    codes=(
        Code("wait", "Waiting", "Mentions of waiting or delays."),
        Code("kind", "Kindness", "Staff were kind or caring."),
    ),
    scale=BINARY,
)


def truth(text: str, code: str) -> int:
    words = set(text.split())
    if code == "wait":
        return int("wait" in words or "late" in words)
    return int("kind" in words)


@pytest.fixture
def study(tmp_path: Path) -> Iterator[Study]:
    rng = random.Random(3)
    texts = {f"c{i + 1}": " ".join(rng.choices(WORDS, k=rng.randint(4, 12))) for i in range(160)}
    opened = Study.create(
        tmp_path / "s.codecurve", responses=ResponseTable.from_texts(texts), codebook=CODEBOOK
    )
    score_study(opened, ScoringEngine(FakeBackend(), opened.codebook))
    opened.audit.draw(per_code=40, seed=11)
    yield opened
    if not opened.closed:
        opened.close()


def outside_audit(study: Study, code: str) -> list[tuple[str, str]]:
    """``(response id, text)`` of the responses whose pair of ``code`` is not audited."""
    sample = study.audit.sample()
    assert sample is not None
    return [(r.id, r.text) for r in study.responses() if not sample.is_audit(r.id, code)]


def decide(study: Study, code: str, n: int, *, coder: str = "ana") -> None:
    """``n`` decisions of ``code`` outside the audit that follow the words."""
    for rid, text in outside_audit(study, code)[:n]:
        study.decisions.record(rid, code, truth(text, code), coder=coder)


def status(app: CodecurveApp) -> str:
    return app.review.status_line.render_line(0).text


def notes(app: CodecurveApp, severity: str | None = None) -> list[str]:
    return [
        str(n.message) for n in app._notifications if severity is None or n.severity == severity
    ]


def learned(seen: list[Message]) -> list[LearningFinished]:
    found: dict[int, LearningFinished] = {}
    for message in seen:
        if isinstance(message, LearningFinished):
            found.setdefault(id(message), message)
    return [m for m in found.values() if m.learned.request.learn]


def keys_of(app: CodecurveApp, n: int) -> list[tuple[str, str]]:
    queue = app.review.pair_queue
    rows = [queue.row_at(i) for i in range(n)]
    return [(r.response_id, r.code_id) for r in rows if r is not None]


async def open_on(pilot: Pilot[None], app: CodecurveApp, code: str) -> None:
    """Settle, wait for where each code stands, and show the code's pairs only."""
    await settle(pilot)
    await wait_for(pilot, lambda: bool(app.learner.states))
    review = app.review
    review.set_query(Query(order=review.pair_queue.pair_query.order, code_id=code))
    review.first_undecided()
    await pilot.pause()


# -- the key -----------------------------------------------------------------------------


async def test_the_key_refits_and_the_queue_follows_the_learned_curve(study: Study) -> None:
    decide(study, "wait", 60)
    base = study.scores.active_config_id()
    assert base is not None
    seen: list[Message] = []
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await open_on(pilot, app, "wait")
        zero_shot = keys_of(app, 40)
        assert "learned" not in status(app)
        await pilot.press("L")
        await wait_for(pilot, lambda: bool(learned(seen)))
        await settle(pilot)
        learned_id = learned_config_id(study, base, "ana")
        assert learned_id is not None
        assert app.session.config_id == learned_id
        # Shown in this coder's session only: the study's active configuration (another
        # coder's queue) stays as it was.
        with Study.open(study.path, read_only=True) as other:
            assert other.scores.active_config_id() == base
        # The queue's order is the learned curves' entropy order now.
        expected = [
            (r.response_id, r.code_id)
            for r in study.queries.page(learned_id, order="entropy", code_id="wait", limit=40)
        ]
        assert keys_of(app, 40) == expected
        assert expected != zero_shot
        (fit,) = [f for f in fits(study, learned_id) if f.code_id == "wait"]
        assert fit.learned
        assert fit.cv_auroc is not None
        said = (
            f"Waiting: learned from 60 decisions (No {fit.counts[0]}, Yes {fit.counts[1]}), "
            f"CV AUROC {fit.cv_auroc:.2f} (not the audit's)"
        )
        assert said in status(app)
        assert any(said in n for n in notes(app))
        # The learned configuration is named as such on the status line; agreement with
        # its picks, on the decisions it learned from, would flatter it: not shown.
        assert f"#{learned_id} learned from ana" in status(app)
        assert "agreement" not in status(app)
        # Narrower, the line says it shorter, and never cuts the figure from its caveat.
        for width in (150, 120, 100, 80):
            await pilot.resize_terminal(width, 30)
            await pilot.pause()
            line = status(app)
            assert ("AUROC" in line) == ("(not the audit's)" in line), line
        assert "Waiting: CV AUROC" not in status(app)  # at 80 columns: left out whole


async def test_the_key_is_in_the_keymap_and_the_help(study: Study) -> None:
    assert REGISTRY["review.learn"].keys == "L"
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        texts = dict(app.screen.keys)
        assert texts["L"].startswith("Learn now: refit the highlighted pair's code's curve")
        assert "The audit never teaches it" in texts["L"]


# -- by itself, every N decisions --------------------------------------------------------


async def test_a_refit_happens_by_itself_after_n_decisions(study: Study) -> None:
    decide(study, "wait", 30)
    base = study.scores.active_config_id()
    assert base is not None
    sample = study.audit.sample()
    assert sample is not None
    seen: list[Message] = []
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await open_on(pilot, app, "wait")
        texts = {r.id: r.text for r in study.responses()}
        queue = app.review.pair_queue
        counted = audit = 0
        while counted < REFIT_EVERY:
            assert not learned(seen), "refitted before its decisions"
            row = queue.current
            assert row is not None
            assert row.decision is None
            await pilot.press("1" if truth(texts[row.response_id], "wait") else "0")
            if sample.is_audit(row.response_id, "wait"):
                audit += 1  # never counted: the audit never teaches the curve
            else:
                counted += 1
        assert audit > 0  # the queue walked some audit pairs too
        await wait_for(pilot, lambda: bool(learned(seen)))
        await settle(pilot)
        (message,) = learned(seen)
        assert message.learned.activated
        assert message.learned.request == Request("wait", learn=True)
        assert app.session.config_id == learned_config_id(study, base, "ana")
        assert "Waiting: learned from 50 decisions" in status(app)
        assert app.learner.new_decisions("wait") == 0


async def test_audit_pairs_and_accepted_picks_never_count(study: Study) -> None:
    decide(study, "wait", 30)
    seen: list[Message] = []
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await open_on(pilot, app, "wait")
        app.learner.every = 3
        # The blind audit's pairs, more of them than a refit waits for: none counts.
        app.review.show_audit()
        await pilot.pause()
        for _ in range(5):
            await pilot.press("1")
        # Picks accepted from the model (outside the audit) do not count either.
        app.review.set_query(Query(order="entropy", code_id="wait", status="undecided"))
        await pilot.pause()
        sample = study.audit.sample()
        assert sample is not None
        queue = app.review.pair_queue
        accepted = 0
        for index in range(queue.total):
            row = queue.row_at(index)
            assert row is not None
            if not sample.is_audit(row.response_id, "wait"):
                queue.move_to(index)
                await pilot.press("a")
                accepted += 1
                if accepted == 4:
                    break
        await settle(pilot)
        assert app.learner.new_decisions("wait") == 0
        assert not learned(seen)
        assert study.decisions.count(coder="ana") == 30 + 5 + 4


# -- the status line ---------------------------------------------------------------------


async def test_the_status_line_says_what_the_learning_needs_then_learns(study: Study) -> None:
    # 7 No and 2 Yes outside the audit: 3 more Yes are needed.
    rows = outside_audit(study, "wait")
    no = [rid for rid, text in rows if not truth(text, "wait")][:7]
    yes = [rid for rid, text in rows if truth(text, "wait")][:2]
    for rid in no:
        study.decisions.record(rid, "wait", 0, coder="ana")
    for rid in yes:
        study.decisions.record(rid, "wait", 1, coder="ana")
    seen: list[Message] = []
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await open_on(pilot, app, "wait")
        assert "Waiting: 3 more Yes decisions to learn" in status(app)
        zero_shot = app.session.config_id
        sample = study.audit.sample()
        assert sample is not None
        decided = {*no, *yes}
        queue = app.review.pair_queue
        for more in (2, 1, 0):
            index = next(
                i
                for i in range(queue.total)
                if (row := queue.row_at(i)) is not None
                and row.response_id not in decided
                and not sample.is_audit(row.response_id, "wait")
            )
            row = queue.row_at(index)
            assert row is not None
            decided.add(row.response_id)
            queue.move_to(index)
            await pilot.press("1")
            if more:
                word = "decision" if more == 1 else "decisions"
                assert f"Waiting: {more} more Yes {word} to learn" in status(app)
                assert app.session.config_id == zero_shot  # the zero-shot order still
        # Enough of each value: the curve is learned at once, not after N decisions.
        await wait_for(pilot, lambda: bool(learned(seen)))
        await settle(pilot)
        assert app.session.config_id != zero_shot
        assert "Waiting: learned from 12 decisions (No 7, Yes 5)" in status(app)
        assert "(not the audit's)" in status(app)


def test_the_words_name_the_scales_labels(study: Study) -> None:
    scale = study.codebook.scale_for(study.codebook.code("wait"))
    assert needs_text("Waiting", scale, {1: 3}) == (
        "Waiting: 3 more Yes decisions to learn",
        "Waiting: 3 more Yes to learn",
    )
    assert needs_text("Waiting", scale, {0: 1, 1: 5})[0] == (
        "Waiting: 5 more Yes and 1 more No decisions to learn"
    )


# -- blind ---------------------------------------------------------------------------------


async def test_blind_coding_shows_nothing_of_the_learning(study: Study) -> None:
    decide(study, "wait", 60)
    base = study.scores.active_config_id()
    assert base is not None
    seen: list[Message] = []
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await open_on(pilot, app, "wait")
        await pilot.press("B")
        await settle(pilot)
        assert app.session.blind_coding
        app.review.set_query(Query(order="id", code_id="wait"))
        await pilot.pause()
        await pilot.press("L")
        await wait_for(pilot, lambda: bool(learned(seen)))
        await settle(pilot)
        # The learning ran ...
        assert app.session.config_id == learned_config_id(study, base, "ana")
        # ... and nothing shows it.
        line = status(app).lower()
        assert "blind coding" in line
        for word in ("learn", "auroc", "audit's"):
            assert word not in line
        said = " ".join(notes(app)).lower()
        assert "auroc" not in said
        assert "learned from" not in said
        # Blind coding off: the status line says it again.
        await pilot.press("B")
        await settle(pilot)
        app.review.set_query(Query(order="entropy", code_id="wait"))
        await pilot.pause()
        assert "Waiting: learned from 60 decisions" in status(app)


# -- failures ------------------------------------------------------------------------------


async def test_a_failing_refit_is_one_notification(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    decide(study, "wait", 60)
    active = study.scores.active_config_id()

    def fail(*args: object, **kwargs: object) -> Any:
        raise StudyError(
            "12 of the 160 scored pairs of code 'Waiting' have no features of the model "
            "kept: score the study again to recapture them",
            remedy=SCORE,
        )

    monkeypatch.setattr(learning_module, "learn", fail)
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await open_on(pilot, app, "wait")
        await pilot.press("L")
        await settle(pilot)
        assert app.is_running
        errors = notes(app, "error")
        assert len(errors) == 1
        assert errors[0].startswith("Not learned: ")
        assert "score the study again" in errors[0]
        # The remedy as the app's key, never as the command line's words.
        assert f"press {REGISTRY['review.score'].keys} to score the study" in errors[0]
        assert "codecurve" not in errors[0]
        assert "Traceback" not in errors[0]
        assert study.scores.active_config_id() == active == app.session.config_id
        assert app.learner.running is None


async def test_a_refit_by_itself_that_fails_is_told_once(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    decide(study, "wait", 30)

    def fail(*args: object, **kwargs: object) -> Any:
        raise StudyError("the study is open read-only; learning writes a configuration")

    monkeypatch.setattr(learning_module, "learn", fail)
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await open_on(pilot, app, "wait")
        app.learner.every = 2
        for _ in range(8):
            await pilot.press("x")
        await settle(pilot)
        errors = notes(app, "error")
        assert len(errors) == 1
        assert "Refits wait until you press L" in errors[0]
        assert app.learner.paused


# -- the coder keeps deciding --------------------------------------------------------------


async def test_keys_during_a_refit_are_not_held_up(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refit is held inside learn(), after its reads and before its writes; keys
    go on being handled while it is held, and their decisions are saved (how fast is
    bench_app's business, never a timed assertion here)."""
    decide(study, "wait", 60)
    gate, entered = threading.Event(), threading.Event()
    real = fit_curve  # what learn() calls, held at its start

    def held(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        gate.wait(timeout=120)
        return real(*args, **kwargs)

    monkeypatch.setattr(learning_module, "fit_curve", held)
    seen: list[Message] = []
    app = make_app(study, coder="ana")
    try:
        async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
            await open_on(pilot, app, "wait")
            await pilot.press("L")
            await wait_for(pilot, entered.is_set)
            worker = next(w for w in app.workers if w.group == "learning")
            decided = study.decisions.count(coder="ana")
            await pilot.press(*"jkjkjk10")
            assert worker.is_running  # all of them while the refit was under way
            assert study.decisions.count(coder="ana") == decided + 2
            assert not learned(seen)
            gate.set()
            await wait_for(pilot, lambda: bool(learned(seen)))
            await settle(pilot)
            assert learned(seen)[0].learned.activated
    finally:
        gate.set()  # a failed test must not leave the worker held


# -- the learner alone ---------------------------------------------------------------------


def test_one_refit_at_a_time_and_what_is_asked_meanwhile_waits(study: Study) -> None:
    from tui.learning import Learned
    from tui.session import ReviewSession

    started: list[Request] = []
    learner = Learner(study, ReviewSession(study, coder="ana"), run=started.append, every=2)
    first = Request("wait", learn=True, asked=True)
    assert learner.request(first)
    assert not learner.request(Request("kind", learn=True))
    assert not learner.request(Request("kind", learn=True))  # asked twice: once
    assert started == [first]
    learner.finished(Learned(first, None, {}))
    assert started == [first, Request("kind", learn=True)]
    # A refit by itself that failed pauses the others until the coder asks.
    assert learner.stopped(failed=True) == Request("kind", learn=True)
    assert learner.paused
    rid, _ = outside_audit(study, "wait")[0]

    def count() -> Request | None:
        return learner.decided(rid, "wait", 1, human=True)

    assert count() is None
    assert count() is None  # due, but paused
    learner.request(Request("wait", learn=True, asked=True))
    assert not learner.paused


# -- the model and new scores -------------------------------------------------------------


async def test_the_model_loading_keeps_the_learned_curves_and_scoring_refits_them(
    study: Study,
) -> None:
    from study.analysis._learning import learn
    from tui.messages import ModelLoaded, ScoringFinished

    decide(study, "wait", 60)
    run = learn(study, coder="ana", activate=True)
    seen: list[Message] = []
    app = make_app(study, backend_factory=FakeBackend, coder="ana")
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, ModelLoaded) for m in seen))
        await settle(pilot)
        # The model of the learned curves' base loaded: the queue stays on the curves.
        assert app.session.config_id == run.config_id
        assert not any("A new configuration starts" in n for n in notes(app))
        # Scoring makes the base the active configuration; the curves are refitted on
        # its scores, and the queue follows them again.
        await pilot.press("r")
        await wait_for(pilot, lambda: any(isinstance(m, ScoringFinished) for m in seen))
        await wait_for(pilot, lambda: bool(learned(seen)))
        await settle(pilot)
        assert learned(seen)[0].learned.request == Request(None, learn=True)
        assert app.session.config_id == run.config_id


async def test_a_coder_reopens_on_their_own_learned_curves(study: Study) -> None:
    from study.analysis._learning import learn

    decide(study, "wait", 60)
    base = study.scores.active_config_id()
    run = learn(study, coder="ana", activate=False)
    assert study.scores.active_config_id() == base
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session.config_id == run.config_id
    other = make_app(study, coder="bob")
    async with other.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert other.session.config_id == base
