"""Several survey questions in one study: a code scoped to questions has pairs only on
the answers to them, and every consumer of the study's pairs follows (issue 35, 9)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from codebooks import CodebookError, load_codebook
from codebooks.model import BINARY, Code, Codebook
from scoring.engine import ScoringEngine
from scoring.fake import FakeBackend
from study import ResponseTable, Study
from study.errors import StudyError
from study.intake.responses import Response
from study.scope import question_value
from study.score_run import score_study

QUESTIONS = ("q1", "q2", "q3")


def survey(n: int = 6) -> ResponseTable:
    """``n`` answers to each of three questions (ids r1.., column ``question_id``)."""
    rows = []
    for q, question in enumerate(QUESTIONS):
        for i in range(n):
            number = q * n + i + 1
            rows.append(
                Response(f"r{number}", f"answer {number} to {question}", {"question_id": question})
            )
    return ResponseTable(responses=tuple(rows), attribute_columns=("question_id",))


def scoped_book() -> Codebook:
    codes = (
        Code("privacy", "Privacy", questions=("q1",)),
        Code("stress", "Stress", questions=("q1", "q2")),
        Code("tech", "Technical problems", questions=("q2",)),
        Code("alternatives", "Alternatives", questions=("q3",)),
        Code("tone", "Negative tone"),
    )
    return Codebook(name="Survey", codes=codes, scale=BINARY, question_column="question_id")


def question_of(study: Study) -> dict[str, str]:
    return {r.id: str(r.attrs["question_id"]) for r in study.responses()}


@pytest.fixture
def scoped(tmp_path: Path) -> Iterator[Study]:
    study = Study.create(tmp_path / "q.codecurve", responses=survey(), codebook=scoped_book())
    yield study
    study.close()


def test_pairs_exist_only_where_the_code_applies(scoped: Study) -> None:
    # privacy 6 + stress 12 + tech 6 + alternatives 6 + tone 18
    assert scoped.pair_count() == 48
    progress = scoped.queries.progress()
    assert {c: v["total"] for c, v in progress["by_code"].items()} == {
        "privacy": 6,
        "stress": 12,
        "tech": 6,
        "alternatives": 6,
        "tone": 18,
    }
    assert progress["total"] == 48
    asked = question_of(scoped)
    rows = scoped.queries.page(None, order="id", limit=1000)
    assert len(rows) == 48 == scoped.queries.count(None)
    for row in rows:
        code = scoped.codebook.code(row.code_id)
        assert not code.questions or asked[row.response_id] in code.questions
    assert scoped.queries.count(None, code_id="stress") == 12
    assert scoped.queries.count(None, search="to q3") == 12  # alternatives + tone
    assert [r.code_id for r in scoped.queries.of_response(None, "r13")] == ["alternatives", "tone"]


def test_scoring_scores_only_the_study_pairs(scoped: Study) -> None:
    engine = ScoringEngine(FakeBackend(), scoped.codebook)
    config_id = scoped.scores.ensure_config(engine.config)
    pending = scoped.scores.pending_pairs(config_id)
    assert len(pending) == 48
    asked = question_of(scoped)
    assert all(not p.code.questions or asked[p.response_id] in p.code.questions for p in pending)
    run = score_study(scoped, engine)
    assert run.stored == 48
    assert scoped.scores.scored_count(config_id) == 48
    assert scoped.scores.pending_pairs(config_id) == []
    rows = scoped.queries.page(config_id, order="entropy", limit=1000)
    assert len(rows) == 48
    assert all(r.pick is not None for r in rows)


def test_each_scoped_code_audits_its_own_question(scoped: Study) -> None:
    sample = scoped.audit.draw(per_code=4, seed=7)
    asked = question_of(scoped)
    for code in scoped.codes:
        pairs = sample.pairs(code.id)
        assert len(pairs) == 4
        if code.questions:
            assert {asked[r] for r in pairs} <= set(code.questions)
    # The default size is capped by each code's own population (6 answers to q1).
    assert sample.population_of("privacy") == 6
    assert sample.population_of("tone") == 18
    queue = sample.queue()
    assert len(queue) == 20
    assert all(sample.is_audit(r, c) for r, c in queue)
    assert scoped.queries.count(None, order="audit") == 20
    with pytest.raises(StudyError, match="cannot extend the audit of Privacy by 3"):
        scoped.audit.extend(3, codes=["privacy"])


def test_default_audit_sizes_follow_each_codes_population(tmp_path: Path) -> None:
    with Study.create(tmp_path / "d.codecurve", responses=survey(), codebook=scoped_book()) as s:
        sample = s.audit.draw(seed=1)
    assert sample.sizes == {"privacy": 6, "stress": 12, "tech": 6, "alternatives": 6, "tone": 18}


def test_a_decision_off_the_codes_questions_is_refused(scoped: Study) -> None:
    with pytest.raises(StudyError, match=r"'Privacy' does not apply to response 'r7'.*'q2'"):
        scoped.decisions.record("r7", "privacy", 1, coder="ana")
    with pytest.raises(StudyError, match="does not apply"):
        scoped.decisions.import_decisions([("r1", "privacy", 1), ("r13", "tech", 0)], coder="ana")
    assert scoped.queries.progress()["decided"] == 0


def test_exports_and_findings_follow_the_questions(scoped: Study) -> None:
    from study.analysis.findings import study_findings
    from study.exchange.frames import long_frame, wide_frame

    sample = scoped.audit.draw(seed=3)  # every pair: each code's default covers its population
    decisions = [(r, c, int(r in ("r1", "r2", "r7", "r13"))) for r, c in sample.queue()]
    scoped.decisions.import_decisions(decisions, coder="ana")
    long = long_frame(scoped, config_id=None)
    assert len(long) == 48
    wide = wide_frame(scoped, config_id=None)
    assert len(wide) == 18
    on_q3 = wide[wide["question_id"] == "q3"]
    assert on_q3["Privacy"].isna().all()
    assert on_q3["Alternatives"].notna().all()
    assert wide["codes_decided"].tolist() == [3] * 6 + [3] * 6 + [2] * 6
    findings = study_findings(scoped, by="question_id")
    overall = {f.code_id: f for f in findings.codes}
    assert overall["privacy"].pairs == 6
    assert overall["tone"].pairs == 18
    # Privacy applies to r1 and r2 of q1's six answers.
    assert overall["privacy"].audit.estimate == pytest.approx(2 / 6)
    groups = {(f.code_id, f.group) for f in findings.groups}
    assert ("privacy", "q1") in groups
    assert ("privacy", "q2") not in groups
    assert {g for c, g in groups if c == "stress"} == {"q1", "q2"}
    assert {g for c, g in groups if c == "tone"} == set(QUESTIONS)


def test_an_unscoped_codebook_keeps_its_snapshot_and_hashes() -> None:
    code = Code("a", "A", definition="d")
    assert "questions" not in code.to_dict()
    assert "question_column" not in Codebook(name="B", codes=(code,)).to_dict()
    # Scoping a code is not part of what a prompt shows: its scores stay valid.
    assert Code("a", "A", definition="d", questions=("q1",)).content_hash() == code.content_hash()
    book = scoped_book()
    assert Codebook.from_dict(book.to_dict()) == book


def test_bad_scoping_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StudyError, match="question_column 'qid' is not a column of the responses"):
        Study.create(
            tmp_path / "a.codecurve",
            responses=survey(),
            codebook=Codebook(
                name="S", codes=(Code("a", "A", questions=("q1",)),), question_column="qid"
            ),
        )
    with pytest.raises(StudyError, match="code 'A' names question 'q9', which no response answers"):
        Study.create(
            tmp_path / "b.codecurve",
            responses=survey(),
            codebook=Codebook(
                name="S", codes=(Code("a", "A", questions=("q9",)),), question_column="question_id"
            ),
        )
    assert not list(tmp_path.iterdir())
    with pytest.raises(CodebookError, match="names no 'question_column'"):
        Codebook(name="S", codes=(Code("a", "A", questions=("q1",)),))


def test_yaml_scoping_with_inherited_questions(tmp_path: Path) -> None:
    path = tmp_path / "cb.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "Survey",
                "question_column": "question_id",
                "codes": [
                    {
                        "name": "Exams",
                        "codable": False,
                        "questions": ["q1", 2],
                        "codes": [{"name": "Privacy"}, {"name": "Stress", "questions": "q2"}],
                    },
                    {"name": "Tone"},
                ],
            }
        ),
        encoding="utf-8",
    )
    book = load_codebook(path)
    assert book.question_column == "question_id"
    assert book.code("Privacy").questions == ("q1", "2")
    assert book.code("Stress").questions == ("q2",)
    assert book.code("Tone").questions == ()
    path.write_text("name: S\ncodes:\n  - name: A\n    questions: {q: 1}\n", encoding="utf-8")
    with pytest.raises(CodebookError, match="'questions' must be a list"):
        load_codebook(path)


def test_question_values_are_compared_as_text() -> None:
    assert question_value({"q": 2.0}, "q") == "2"
    assert question_value({"q": " a "}, "q") == "a"
    assert question_value({"q": ""}, "q") is None
    assert question_value({}, "q") is None
