"""``codecurve learn``: what it prints, its JSON, and one line for each bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoring import FakeBackend, ScoringEngine
from study import ResponseTable, Study, score_study
from tests.cli.test_audit_cli import exit_code, one_line
from tests.study.test_learning import CODEBOOK, _texts, decide_audit, decide_outside_audit
from tui.cli import main


@pytest.fixture
def study_path(tmp_path: Path) -> Path:
    path = tmp_path / "s.codecurve"
    with Study.create(
        path, responses=ResponseTable.from_texts(_texts(240)), codebook=CODEBOOK
    ) as study:
        score_study(study, ScoringEngine(FakeBackend(), study.codebook))
        study.audit.draw(per_code=80, seed=11)
        decide_outside_audit(study, "wait", 100)
        decide_audit(study, "wait")
    return path


def test_learn_prints_each_code_and_marks_the_auroc_as_not_the_audits(
    study_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["learn", str(study_path)]) == 0
    out = capsys.readouterr().out
    assert "learned configuration #2: ana's decisions on configuration #1" in out
    assert "now the active one" in out
    assert "Waiting: learned from 100 decisions" in out
    assert "(not the audit's)" in out
    assert "80 audit decisions left out" in out
    assert "Kindness: zero-shot curve kept, needs 5 more of 0 (has 0)" in out
    with Study.open(study_path, read_only=True) as study:
        assert study.scores.active_config_id() == 2


def test_learn_json_and_compare_on_the_audit(
    study_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["learn", str(study_path), "--code", "Waiting", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    (wait,) = payload["codes"]
    assert wait["learned"] is True
    assert wait["audit_decisions_left_out"] == 80
    assert len(wait["params_hash"]) == 16
    assert main(["compare", str(study_path), "--sample", "audit", "--format", "json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    assert "learned from ana on #1" in json.dumps(compared)


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--code", "Kindness"], "cannot learn 'Kindness' yet: it needs 5 more of 0 (has 0)"),
        (["--coder", "bo"], "coder 'bo' has made no decisions of their own"),
        (["--code", "nope"], "nope"),
        (["--config", "9"], "no scoring configuration 9"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    study_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], words: str
) -> None:
    before = study_path.read_bytes()
    assert exit_code(["learn", str(study_path), *extra]) == 1
    assert words in one_line(capsys.readouterr().err)
    with Study.open(study_path, read_only=True) as study:
        assert study.scores.active_config_id() == 1
    assert len(study_path.read_bytes()) == len(before)


def test_a_learned_configuration_without_an_audit_is_not_delegated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "n.codecurve"
    with Study.create(
        path, responses=ResponseTable.from_texts(_texts(120)), codebook=CODEBOOK
    ) as study:
        score_study(study, ScoringEngine(FakeBackend(), study.codebook))
        for response in list(study.responses())[:60]:
            study.decisions.record(response.id, "wait", int("wait" in response.text), coder="ana")
    assert main(["learn", str(path), "--code", "wait"]) == 0
    capsys.readouterr()
    assert exit_code(["delegate", str(path)]) == 1
    line = one_line(capsys.readouterr().err)
    assert "no audit sample" in line
    assert "a learned configuration is judged on the blind audit only" in line
