"""The detail pane marks the sentence that moved the model: read from the study, measured
in the background where none is kept, toggled by a key, never shown while coding blind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.message import Message

from codebooks.model import BINARY, Code, Codebook
from scoring import FakeBackend, Pair, ScoringEngine
from scoring.evidence import Evidence
from study import ResponseTable, Study
from study.analysis._evidence import evidence_config, explain_study, plan_explain
from study.score_run import score_study
from tests.tui.waiting import settle, wait_for
from tui.app import CodecurveApp, make_app
from tui.messages import EvidenceMeasured
from tui.source import Row, is_hidden, row_key
from tui.widgets.detail import response_text
from tui.widgets.evidence import EVIDENCE_STYLE, effect_words, evidence_marks

SIZE = (140, 40)

#: Every response has several sentences: every pair has evidence once measured.
TEXTS = {
    "r1": "The ward was clean. The nurse was rude to my mother. Parking was fine.",
    "r2": "We waited four hours in the corridor. Nobody told us why. The food was cold.",
    "r3": "Staff were kind.\n- quick to answer\n- explained everything",
    "r4": "Too few nurses on the night shift. My call bell went unanswered. Good doctors.",
    "r5": "Friendly porters. The discharge took all day. Pharmacy lost the prescription.",
    "r6": "Clean rooms and calm staff. I felt listened to. Would come back.",
}

CODEBOOK = Codebook(
    name="NHS",
    codes=(
        Code("staff", "Staff attitude", definition="How staff behave."),
        Code("wait", "Waiting", definition="Waiting times.", scale=BINARY),
    ),
)


@pytest.fixture
def scored(tmp_path: Path) -> Iterator[Study]:
    """The texts scored with the fake model, nothing explained yet."""
    table = ResponseTable.from_texts(TEXTS)
    study = Study.create(tmp_path / "s.codecurve", responses=table, codebook=CODEBOOK)
    score_study(study, ScoringEngine(FakeBackend(), study.codebook))
    yield study
    if not study.closed:
        study.close()


def explain_all(study: Study) -> int:
    """Measure and keep the evidence of every pair; the configuration id."""
    engine = ScoringEngine(FakeBackend(), study.codebook)
    plan = plan_explain(study)
    explain_study(study, engine, plan)
    return plan.config.id


def pane_text(app: CodecurveApp) -> str:
    return " ".join(app.review.detail.plain_text.split())


def current(app: CodecurveApp) -> Row:
    row = app.review.pair_queue.current
    assert row is not None
    return row


def shown_words(evidence: Evidence | None) -> list[str]:
    """What the pane must say of ``evidence``: each marked sentence's effect."""
    marks = evidence_marks(evidence)
    assert marks, "the test needs a pair whose evidence marks a sentence"
    return [effect_words(effect) for _, _, effect in marks]


def test_marked_sentences_are_drawn_in_the_evidence_style() -> None:
    text = TEXTS["r1"]
    start = text.index("The nurse")
    end = text.index(" Parking")
    shown = response_text(text, evidence=((start, end, 0.3),))
    styled = [(s.start, s.end) for s in shown.spans if str(s.style) == EVIDENCE_STYLE]
    assert styled == [(start, end)]
    assert shown.plain == text  # marks change no character


async def test_the_stored_evidence_is_marked_and_follows_the_cursor(scored: Study) -> None:
    config_id = explain_all(scored)
    app = make_app(scored, coder="tester", close_study=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen = set()
        for _ in range(4):
            row = current(app)
            kept = scored.evidence.get(config_id, row.response_id, row.code_id)
            assert kept is not None
            text = pane_text(app)
            if evidence_marks(kept):
                assert "Moved the model (w hides):" in text
                for words in shown_words(kept):
                    assert words in text
                top = kept.top
                assert top is not None
                assert " ".join(top.text(row.text).split())[:40] in text
            else:
                assert "no sentence; leaving any one out does not lower P(applies)" in text
            seen.add(row_key(row))
            await pilot.press("j")
            await pilot.pause()
        assert len(seen) == 4  # four pairs, each with its own evidence


async def test_the_key_hides_and_shows_the_marks(scored: Study) -> None:
    explain_all(scored)
    app = make_app(scored, coder="tester", close_study=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "Moved the model" in pane_text(app)
        await pilot.press("w")
        assert not app.review.detail.evidence_shown
        assert "Moved the model" not in pane_text(app)
        assert "P(applies) without it" not in pane_text(app)
        # Off for every pair, not just this one.
        await pilot.press("j")
        await pilot.pause()
        assert "Moved the model" not in pane_text(app)
        await pilot.press("w")
        assert app.review.detail.evidence_shown
        assert "Moved the model" in pane_text(app)


async def test_blind_coding_hides_the_marks_until_the_pair_is_decided(scored: Study) -> None:
    config_id = explain_all(scored)
    app = make_app(scored, coder="tester", close_study=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "Moved the model" in pane_text(app)
        await pilot.press("B")  # blind coding: the model stays hidden until decided
        await settle(pilot)
        queue = app.review.pair_queue
        for _ in range(3):
            row = current(app)
            assert is_hidden(row)
            assert scored.evidence.get(config_id, row.response_id, row.code_id) is not None
            text = pane_text(app)
            assert "Moved the model" not in text
            assert "P(applies) without it" not in text
            await pilot.press("j")
            await pilot.pause()
        # The toggle does not bring them back while the pair is hidden.
        await pilot.press("w", "w")
        assert "Moved the model" not in pane_text(app)
        # Decided: the model's answer shows, and so does what moved it.
        queue.move_to(0)
        await pilot.pause()
        decided = current(app)
        await pilot.press("1")
        await settle(pilot)
        queue.move_to(queue.index_of(row_key(decided), 0) or 0)
        await pilot.pause()
        assert row_key(current(app)) == row_key(decided)
        assert not is_hidden(current(app))
        assert "Moved the model" in pane_text(app)


async def test_missing_evidence_is_measured_in_the_background_and_kept(scored: Study) -> None:
    config = evidence_config(scored)[0]
    assert scored.evidence.count(config.id) == 0
    seen: list[Message] = []
    app = make_app(scored, backend_factory=FakeBackend, coder="tester", close_study=True)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, EvidenceMeasured) for m in seen))
        first = next(m for m in seen if isinstance(m, EvidenceMeasured))
        row = current(app)
        # The pair under the cursor first, then its neighbours, kept in the study.
        measured = [(e.response_id, e.code_id) for e in first.evidence]
        assert measured[0] == row_key(row)
        assert len(measured) >= 2
        for response_id, code_id in measured:
            assert scored.evidence.get(config.id, response_id, code_id) is not None
        await wait_for(pilot, lambda: "Moved the model" in pane_text(app))
        # The next pair was measured ahead: moving there shows it at once.
        await pilot.press("j")
        await pilot.pause()
        assert row_key(current(app)) in measured
        assert "Moved the model" in pane_text(app)
        await settle(pilot)


async def test_help_lists_the_key(scored: Study) -> None:
    from tui.screens.help import HelpScreen

    app = make_app(scored, coder="tester", close_study=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert dict(app.screen.keys)["w"].startswith("Why:")


@pytest.fixture
def learned(tmp_path: Path) -> Iterator[tuple[Study, int]]:
    """A study of one code whose learned curve (ana's) is the active configuration."""
    from study.analysis._learning import learn
    from tests.study.test_evidence_learned import EXPLAINED, decide
    from tests.study.test_learning import _texts

    book = Codebook(name="W", codes=(Code("wait", "Waiting", "Waits."),), scale=BINARY)
    table = ResponseTable.from_texts({**_texts(160), **EXPLAINED})
    study = Study.create(tmp_path / "l.codecurve", responses=table, codebook=book)
    score_study(study, ScoringEngine(FakeBackend(), study.codebook))
    decide(study, "wait", 100)
    run = learn(study, coder="ana")
    yield study, run.config_id
    if not study.closed:
        study.close()


async def test_a_learned_configuration_is_measured_through_its_curves(learned) -> None:
    from scoring.evidence import explain
    from study.analysis._evidence import learned_reading
    from study.analysis._learning import fitted_curves

    study, learned_id = learned
    curves = fitted_curves(study, learned_id)
    reading = learned_reading(curves)
    seen: list[Message] = []
    app = make_app(study, backend_factory=FakeBackend, coder="ana")
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        assert app.session.config_id == learned_id
        await wait_for(pilot, lambda: any(isinstance(m, EvidenceMeasured) for m in seen))
        first = next(m for m in seen if isinstance(m, EvidenceMeasured))
        assert first.config_id == learned_id
        assert not first.waiting
        assert first.curves["wait"].params_hash() == curves["wait"].params_hash()
        engine = ScoringEngine(FakeBackend(), study.codebook)
        for kept in first.evidence:
            read = study.evidence.get(learned_id, kept.response_id, "wait")
            assert read is not None
            assert (read.applies, read.sentences) == (kept.applies, kept.sentences)
            pair = Pair(
                kept.response_id, study.response(kept.response_id).text, study.codebook.code("wait")
            )
            [fresh] = explain(engine, [pair], reading=reading)
            assert kept.applies == pytest.approx(fresh.applies, abs=1e-6)
            assert [s.applies_effect for s in kept.sentences] == pytest.approx(
                [s.applies_effect for s in fresh.sentences], abs=1e-6
            )
        await settle(pilot)
    study.close()


async def test_a_learned_curve_its_decisions_no_longer_give_waits(learned) -> None:
    from tests.study.test_evidence_learned import decide

    study, learned_id = learned
    decide(study, "wait", 5, skip=100)  # decided since the curve was learned
    seen: list[Message] = []
    app = make_app(study, backend_factory=FakeBackend, coder="ana")
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, EvidenceMeasured) for m in seen))
        await settle(pilot)
        measured = [m for m in seen if isinstance(m, EvidenceMeasured)]
        assert [(m.waiting, m.evidence) for m in measured] == [(True, ())]
        assert not app.evidence.resume()  # nothing is tried again until the next refit
    assert study.evidence.count(learned_id) == 0
    study.close()
