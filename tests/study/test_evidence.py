"""Evidence kept in the study: measured with the scores' own engine, read back only while
it describes the pair (same configuration, text and definition), planned with its cost."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from codebooks.model import BINARY, Code, Codebook
from scoring import FakeBackend, ScoringEngine
from scoring.evidence import explain, explain_work
from study import ResponseTable, Study
from study.analysis._evidence import explain_study, plan_explain
from study.errors import StudyError
from study.file import schema as study_schema
from study.score_run import score_study

TEXTS = {
    "r1": "The ward was clean. The nurse was rude to my mother. Parking was fine.",
    "r2": "Great care",
    "r3": "Staff were kind.\n- quick to answer\n- explained everything",
    "r4": "",
}


@pytest.fixture
def codebook() -> Codebook:
    return Codebook(
        name="NHS",
        codes=(
            Code("staff", "Staff attitude", definition="How staff behave."),
            Code("wait", "Waiting", definition="Waiting times.", scale=BINARY),
        ),
    )


@pytest.fixture
def scored(tmp_path: Path, codebook: Codebook):
    table = ResponseTable.from_texts({k: v for k, v in TEXTS.items() if v})
    study = Study.create(tmp_path / "s.codecurve", responses=table, codebook=codebook)
    engine = ScoringEngine(FakeBackend(), study.codebook, batch_size=4)
    score_study(study, engine)
    yield study, engine
    study.close()


def test_a_run_keeps_evidence_for_pairs_of_more_than_one_sentence(scored):
    study, engine = scored
    plan = plan_explain(study)
    # r1 (3 sentences) and r3 (3 lines) for both codes; r2 is one sentence.
    assert sorted((p.response_id, p.code.id) for p in plan.pairs) == [
        ("r1", "staff"), ("r1", "wait"), ("r3", "staff"), ("r3", "wait"),
    ]  # fmt: skip
    assert plan.single == 2
    assert plan.variants == 4 * 4
    assert plan.work == pytest.approx(sum(explain_work(p.text) for p in plan.pairs))
    if plan.rate is not None:  # the scoring run's measured speed, on pairs of the typical work
        assert plan.seconds == pytest.approx(plan.work / (plan.rate.rate * plan.typical))
    run = explain_study(study, engine, plan)
    assert run.stored == 4
    kept = study.evidence.get(plan.config.id, "r3", "staff")
    assert kept is not None
    text = TEXTS["r3"]
    assert [s.text(text) for s in kept.sentences] == [
        "Staff were kind.", "quick to answer", "explained everything",
    ]  # fmt: skip
    # Read back exactly as measured.
    [fresh] = explain(
        engine, [p for p in plan.pairs if (p.response_id, p.code.id) == ("r3", "staff")]
    )
    assert kept.applies == pytest.approx(fresh.applies)
    assert [s.applies_effect for s in kept.sentences] == pytest.approx(
        [s.applies_effect for s in fresh.sentences]
    )
    assert kept.top == max(kept.sentences, key=lambda s: s.applies_effect)
    # Nothing is left to explain; a second plan is empty and says what is done.
    again = plan_explain(study)
    assert again.pairs == ()
    assert again.explained == 4


def test_limit_and_code_choose_the_most_likely_to_apply_first(scored):
    study, _ = scored
    plan = plan_explain(study, code="Staff attitude", limit=1)
    assert len(plan.pairs) == 1
    config_id = plan.config.id
    order = [p.response_id for p, _ in study.evidence.to_explain(config_id, ["staff"])]
    multi = [r for r in order if r in ("r1", "r3")]
    assert plan.pairs[0].response_id == multi[0]
    ps = [p for _, p in study.evidence.to_explain(config_id, ["staff"])]
    assert ps == sorted(ps, reverse=True)


def test_bad_input_is_one_clear_error(tmp_path, scored, codebook):
    study, _ = scored
    with pytest.raises(StudyError, match="no code 'nope'"):
        plan_explain(study, code="nope")
    table = ResponseTable.from_texts({"a": "One. Two."})
    fresh = Study.create(tmp_path / "u.codecurve", responses=table, codebook=codebook)
    with fresh, pytest.raises(StudyError, match="nothing is scored yet"):
        plan_explain(fresh)
    other = ScoringEngine(FakeBackend(name="other"), study.codebook)
    with pytest.raises(StudyError, match="is not the one configuration"):
        explain_study(study, other, plan_explain(study))


def test_a_changed_text_or_definition_leaves_evidence_behind(scored, codebook):
    study, engine = scored
    plan = plan_explain(study)
    explain_study(study, engine, plan)
    config_id = plan.config.id
    assert study.evidence.get(config_id, "r1", "staff") is not None
    study.versions.add_responses(
        ResponseTable.from_texts({"r1": "All new text. Nothing rude here."}), update=True
    )
    assert study.evidence.get(config_id, "r1", "staff") is None
    assert study.evidence.get(config_id, "r3", "staff") is not None
    revised = replace(
        study.codebook,
        codes=tuple(
            replace(c, definition="How staff treat patients.") if c.id == "staff" else c
            for c in study.codebook.codes
        ),
    )
    study.versions.revise(revised)
    assert study.evidence.get(config_id, "r3", "staff") is None
    assert study.evidence.get(config_id, "r3", "wait") is not None


def test_a_version_6_study_gains_the_evidence_table(tmp_path, codebook):
    path = tmp_path / "old.codecurve"
    table = ResponseTable.from_texts({"a": "One. Two."})
    Study.create(path, responses=table, codebook=codebook).close()
    con = sqlite3.connect(path)
    con.execute("DROP TABLE evidence")
    con.execute("DROP TABLE scoped_pairs")  # version 8's
    con.execute("PRAGMA user_version = 6")
    con.commit()
    con.close()
    with Study.open(path) as study:
        assert study.evidence.for_config(1) == []
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == study_schema.SCHEMA_VERSION >= 7
    cols = [r[1] for r in con.execute("PRAGMA table_info(evidence)")]
    con.close()
    assert cols[:5] == ["config_id", "cid", "rid", "text_hash", "code_hash"]


def test_the_long_export_carries_the_top_sentence(scored):
    from study.exchange.frames import long_frame

    study, engine = scored
    plan = plan_explain(study, code="staff")
    explain_study(study, engine, plan)
    frame = long_frame(study).set_index(["response_id", "code_id"])
    row: Any = frame.loc[("r1", "staff")]
    kept = study.evidence.get(plan.config.id, "r1", "staff")
    assert kept is not None
    assert kept.top is not None
    text = TEXTS["r1"]
    assert (row["evidence_start"], row["evidence_end"]) == (kept.top.start, kept.top.end)
    assert row["evidence_text"] == text[kept.top.start : kept.top.end]
    assert row["evidence_effect"] == pytest.approx(kept.top.applies_effect, abs=1e-6)
    for key in [("r2", "staff"), ("r1", "wait")]:  # one sentence; not explained
        assert frame.loc[key, "evidence_text"] is None
        assert frame.loc[key, ["evidence_start", "evidence_effect"]].isna().all()


def test_a_qdpx_project_codes_the_models_evidence_and_keeps_it(tmp_path):
    import xmlschema

    from study.refi import project_bytes, project_from_study, read_project, write_qdpx
    from tests.scoring.test_evidence import KeywordBackend

    book = Codebook(
        name="NHS", codes=(Code("staff", "Staff attitude", definition="Staff.", scale=BINARY),)
    )
    texts = {
        "a": "The ward was clean. The nurse was rude to my mother. Parking was fine.",
        "b": "Rude porter",  # applies, one sentence: the whole text
        "c": "Fine food. Kind nurse.",  # does not apply: its twin, the whole text
    }
    path = tmp_path / "k.codecurve"
    with Study.create(path, responses=ResponseTable.from_texts(texts), codebook=book) as study:
        engine = ScoringEngine(KeywordBackend(), study.codebook, template="base-v1")
        score_study(study, engine)
        explain_study(study, engine, plan_explain(study))
        project = project_from_study(study)
    schema = xmlschema.XMLSchema(str(Path(__file__).parent / "data" / "Project.xsd"))
    schema.validate(project_bytes(project).decode("utf-8"))
    target = write_qdpx(project, tmp_path / "k.qdpx")
    back, _ = read_project(target)
    spans = {s.name: sorted((c.start, c.end) for c in s.codings) for s in back.sources}
    rude = texts["a"].index("The nurse")
    assert spans["a"] == [(rude, rude + len("The nurse was rude to my mother."))]
    assert spans["b"] == [(0, len(texts["b"]))]
    assert spans["c"] == [(0, len(texts["c"]))]
