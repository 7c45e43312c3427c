"""``codecurve explain``: the cost first, progress, evidence kept; one line per bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from scoring import FakeBackend, ScoringEngine
from study import ResponseTable, Study, score_study
from tests.cli.test_audit_cli import exit_code, one_line
from tests.study.test_evidence import TEXTS
from tests.study.test_evidence import codebook as codebook  # a fixture
from tui.cli import main


@pytest.fixture
def study_path(tmp_path: Path, codebook) -> Path:
    path = tmp_path / "s.codecurve"
    table = ResponseTable.from_texts({k: v for k, v in TEXTS.items() if v})
    with Study.create(path, responses=table, codebook=codebook) as study:
        score_study(study, ScoringEngine(FakeBackend(), study.codebook))
        study.scores.record_rate(1, pairs=100, seconds=10.0)
    return path


def test_explain_says_the_cost_then_keeps_the_evidence(study_path, capsys):
    assert main(["explain", str(study_path), "--limit", "3"]) == 0
    err = capsys.readouterr().err
    assert "3 pairs to explain" in err
    assert "2 pairs left out (one sentence" in err
    assert "12 variants to score: about 1s at 10.0 pairs/s" in err
    assert "explained 3/3 pairs" in err
    assert "kept evidence for 3 pairs" in err
    with Study.open(study_path, read_only=True) as study:
        assert study.evidence.count(1) == 3
    assert main(["explain", str(study_path)]) == 0
    err = capsys.readouterr().err
    assert "1 pair to explain" in err
    assert "3 pairs explained already" in err
    assert main(["explain", str(study_path), "--code", "Waiting"]) == 0
    assert "0 pairs to explain" in capsys.readouterr().err


def test_an_unknown_code_is_one_line(study_path, capsys):
    assert exit_code(["explain", str(study_path), "--code", "nope"]) == 1
    assert "no code 'nope'" in one_line(capsys.readouterr().err)


def test_another_model_than_the_scores_is_refused(tmp_path, codebook, capsys):
    path = tmp_path / "o.codecurve"
    table = ResponseTable.from_texts({"a": "One thing. Another thing."})
    with Study.create(path, responses=table, codebook=codebook) as study:
        score_study(study, ScoringEngine(FakeBackend(name="other"), study.codebook))
    assert exit_code(["explain", str(path), "--model", "fake"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert "is not the one configuration 1 was scored with (other" in one_line(err[-1])
    with Study.open(path, read_only=True) as study:
        assert study.evidence.count(1) == 0


def test_an_unscored_or_missing_study_is_one_line(tmp_path, codebook, capsys):
    path = tmp_path / "u.codecurve"
    Study.create(
        path, responses=ResponseTable.from_texts({"a": "A. B."}), codebook=codebook
    ).close()
    assert exit_code(["explain", str(path)]) == 1
    assert "nothing is scored yet" in one_line(capsys.readouterr().err)
    assert exit_code(["explain", str(tmp_path / "none.codecurve")]) == 1
    assert "no such study file" in one_line(capsys.readouterr().err)
    assert exit_code(["explain", str(path), "--limit", "0"]) == 2


def test_a_learned_configuration_explains_itself_or_asks_to_learn_again(tmp_path, capsys):
    from study.analysis._learning import learn
    from tests.study.test_evidence_learned import EXPLAINED, KEYWORD_LINE, decide
    from tests.study.test_learning import CODEBOOK, _texts

    path = tmp_path / "l.codecurve"
    table = ResponseTable.from_texts({**_texts(160), **EXPLAINED})
    with Study.create(path, responses=table, codebook=CODEBOOK) as study:
        score_study(study, ScoringEngine(FakeBackend(), study.codebook))
        decide(study, "wait", 100)
        learned_id = learn(study, coder="ana", code="wait").config_id
    assert main(["explain", str(path), "--code", "wait", "--model", "fake"]) == 0
    err = capsys.readouterr().err
    assert f"4 pairs to explain in {path}, learned configuration {learned_id}" in err
    with Study.open(path, read_only=True) as study:
        found = study.evidence.get(learned_id, "x2", "wait")
        assert found is not None
        assert found.top is not None
        assert found.top.text(EXPLAINED["x2"]) == KEYWORD_LINE["x2"]
    with Study.open(path) as study:
        decide(study, "wait", 5, skip=100)
    assert exit_code(["explain", str(path), "--model", "fake"]) == 1
    said = one_line(capsys.readouterr().err)
    assert "changed since it was learned. Learn again, then explain it" in said
    assert f"(run 'codecurve learn {path}')" in said
