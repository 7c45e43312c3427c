"""A learned configuration explains itself: its model scores the variants and its learned
curves read them (study.analysis._evidence with study.analysis._learning.fitted_curves).

The fake model's features are a hashed bag of the response's words and its zero-shot
curve is noise (tests/study/test_learning.py): a curve learned from decisions that
follow the words "wait" and "late" must find the sentence that holds one of them, and
its evidence must be left behind when the curve is refitted on other decisions.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scoring import FakeBackend, Pair, ScoringEngine
from scoring.evidence import explain
from study import ResponseTable, Study, score_study
from study.analysis._evidence import explain_study, plan_explain
from study.analysis._learning import fits, fitted_curves, learn
from study.errors import StudyError
from study.exchange.frames import long_frame
from tests.study.test_learning import CODEBOOK, _texts, truth

#: Responses of several lines (one sentence each), one line holding a word of "wait".
EXPLAINED = {
    "x1": "staff were kind\nthe ambulance was late\nfood parking nurse",
    "x2": "the wait was long\nstaff were kind to the nurse\nparking food",
    "x3": "rude nurse\nfood was the food\nkind staff were late",
    "x4": "parking was kind\nnurse staff food\nthe rude staff\nwe had a wait",
}
#: The line of each with the word.
KEYWORD_LINE = {
    "x1": "the ambulance was late",
    "x2": "the wait was long",
    "x3": "kind staff were late",
    "x4": "we had a wait",
}


def decide(study: Study, code: str, n: int, *, skip: int = 0) -> None:
    """The coder decides ``n`` of the one-line responses (after the first ``skip``) as
    the words say."""
    done = 0
    for response in study.responses():
        if response.id in EXPLAINED:
            continue
        if skip:
            skip -= 1
            continue
        study.decisions.record(response.id, code, truth(response.text, code), coder="ana")
        done += 1
        if done == n:
            return


@pytest.fixture
def study(tmp_path: Path) -> Iterator[Study]:
    texts = {**_texts(200), **EXPLAINED}
    with Study.create(
        tmp_path / "s.codecurve", responses=ResponseTable.from_texts(texts), codebook=CODEBOOK
    ) as opened:
        score_study(opened, ScoringEngine(FakeBackend(), opened.codebook))
        yield opened


@pytest.fixture
def engine(study: Study) -> ScoringEngine:
    return ScoringEngine(FakeBackend(), study.codebook)


def top_line(study: Study, config_id: int, rid: str, code: str = "wait") -> str:
    found = study.evidence.get(config_id, rid, code)
    assert found is not None
    assert found.top is not None
    return found.top.text(EXPLAINED[rid])


def test_a_learned_curve_finds_the_sentence_with_its_word(study, engine) -> None:
    base = study.scores.active_config_id()
    decide(study, "wait", 100)
    run = learn(study, coder="ana", code="wait")
    plan = plan_explain(study, code="wait")
    assert (plan.config.id, plan.learned_id, plan.kept_id) == (base, run.config_id, run.config_id)
    # Only the responses of several lines have evidence to measure.
    assert sorted(p.response_id for p in plan.pairs) == sorted(EXPLAINED)
    explain_study(study, engine, plan)
    for rid, line in KEYWORD_LINE.items():
        assert top_line(study, run.config_id, rid) == line, rid
        found = study.evidence.get(run.config_id, rid, "wait")
        assert found is not None
        assert found.applies > 0.5
        assert found.ranked()[0].applies_effect > found.ranked()[1].applies_effect + 0.1
    # The zero-shot curve (noise) does not: the same variants, read by the model's curve.
    pairs = [Pair(rid, EXPLAINED[rid], study.codebook.code("wait")) for rid in EXPLAINED]
    zero = [e.top.text(EXPLAINED[e.response_id]) for e in explain(engine, pairs) if e.top]
    assert sum(z == KEYWORD_LINE[e] for z, e in zip(zero, EXPLAINED, strict=True)) < 4
    # The evidence is kept under the learned configuration only, and exported with it.
    assert study.evidence.count(run.config_id) == 4
    assert base is not None
    assert study.evidence.count(base) == 0
    frame = long_frame(study, config_id=run.config_id).set_index(["response_id", "code_id"])
    assert frame.loc[("x1", "wait"), "evidence_text"] == KEYWORD_LINE["x1"]


def test_evidence_of_a_refitted_curve_is_left_behind(study, engine) -> None:
    decide(study, "wait", 100)
    run = learn(study, coder="ana", code="wait")
    explain_study(study, engine, plan_explain(study, code="wait"))
    assert study.evidence.count(run.config_id) == 4
    # The same decisions give the same curve: the evidence holds.
    learn(study, coder="ana", code="wait")
    assert study.evidence.count(run.config_id) == 4
    assert plan_explain(study, code="wait").pairs == ()
    # Other decisions give another curve: it is measured again.
    decide(study, "wait", 40, skip=100)
    again = learn(study, coder="ana", code="wait")
    assert again.codes[0].params_hash != run.codes[0].params_hash
    assert study.evidence.count(run.config_id) == 0
    assert study.evidence.get(run.config_id, "x1", "wait") is None
    plan = plan_explain(study, code="wait")
    assert len(plan.pairs) == 4
    explain_study(study, engine, plan)
    assert top_line(study, run.config_id, "x1") == KEYWORD_LINE["x1"]


def test_a_code_not_learned_is_explained_on_its_zero_shot_curve(study, engine) -> None:
    decide(study, "wait", 100)
    run = learn(study, coder="ana")  # "kind" and "mood" have no decisions: zero-shot
    plan = plan_explain(study, code="kind")
    assert plan.learned_id == run.config_id
    assert dict(plan.curves) == {}
    explain_study(study, engine, plan)
    pairs = [Pair(rid, EXPLAINED[rid], study.codebook.code("kind")) for rid in EXPLAINED]
    for zero in explain(engine, pairs):
        kept = study.evidence.get(run.config_id, zero.response_id, "kind")
        assert kept is not None
        assert kept.applies == pytest.approx(zero.applies)
        assert [s.applies_effect for s in kept.sentences] == pytest.approx(
            [s.applies_effect for s in zero.sentences]
        )
    # Once the code is learned, what was measured on its zero-shot curve is left behind.
    decide(study, "kind", 100)
    learn(study, coder="ana", code="kind")
    assert [f.learned for f in fits(study, run.config_id) if f.code_id == "kind"] == [True]
    assert study.evidence.for_config(run.config_id, code_id="kind") == []


def test_fitted_curves_are_the_learned_ones_and_refuse_changed_decisions(study) -> None:
    decide(study, "wait", 100)
    run = learn(study, coder="ana", code="wait")
    (fit,) = [f for f in fits(study, run.config_id) if f.learned]
    curves = fitted_curves(study, run.config_id)
    assert list(curves) == ["wait"]
    assert curves["wait"].params_hash() == fit.params_hash == run.codes[0].params_hash
    # A curve fitted before is taken as it is while it is the one kept.
    known = run.codes[0].curve
    assert known is not None
    assert fitted_curves(study, run.config_id, known={"wait": known})["wait"] is known
    # New decisions, not learned yet: one clear error saying to learn again.
    decide(study, "wait", 10, skip=100)
    with pytest.raises(StudyError, match=r"changed since it was learned\. Learn again"):
        fitted_curves(study, run.config_id)
    with pytest.raises(StudyError, match="Learn again") as refused:
        plan_explain(study, code="wait")
    assert [r.action for r in refused.value.remedies] == ["learn"]
    # A code asked for that is not learned needs no refit.
    assert fitted_curves(study, run.config_id, codes=["kind"]) == {}


def test_a_curve_fitted_otherwise_from_the_same_decisions_says_so(study) -> None:
    # The parameters kept are not those the same decisions give now (a study learned by
    # an earlier codecurve, whose fit differed in its last digits): not "they changed".
    decide(study, "wait", 100)
    run = learn(study, coder="ana", code="wait")
    with study.transaction() as conn:
        conn.execute("UPDATE learned SET params_hash = 'fitted-elsewhere' WHERE config_id = ?",
                     (run.config_id,))  # fmt: skip
    with pytest.raises(StudyError, match="an earlier version of codecurve fitted it") as refused:
        fitted_curves(study, run.config_id)
    assert "as many of each value" in str(refused.value)
    assert [r.action for r in refused.value.remedies] == ["learn"]


def test_a_model_without_features_cannot_explain_a_learned_curve(study) -> None:
    decide(study, "wait", 100)
    learn(study, coder="ana", code="wait")
    plan = plan_explain(study, code="wait")
    blind = ScoringEngine(FakeBackend(features=False), study.codebook)
    with pytest.raises(StudyError, match="learned curves read the model's features"):
        explain_study(study, blind, plan)


def test_the_report_quotes_the_learned_curves_evidence(study, engine) -> None:
    from study.report._data import report_data
    from study.report._files import render_html
    from tests.study.test_report_evidence import no_figures

    decide(study, "wait", 100)
    run = learn(study, coder="ana", code="wait")
    explain_study(study, engine, plan_explain(study, code="wait"))
    data = report_data(study)
    found = data.section("evidence")
    assert found is not None
    assert (found["config_id"], found["learned"]) == (run.config_id, True)
    quoted = found["codes"]["Waiting"]
    assert quoted
    for example in quoted:
        line = KEYWORD_LINE[example["response_id"]]
        assert example["text"][example["start"] : example["end"]] == line
    page = render_html(data, svg=no_figures)
    assert "whose learned curves read the model" in page
