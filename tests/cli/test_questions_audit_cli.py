"""``codecurve audit`` on a scoped study (issue 35, 9): the table says which questions
each code applies to, and the hint before a draw sizes it by each code's own answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_questions_cli import write_survey
from tui.cli import main


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "220")


def new_study(folder: Path) -> Path:
    responses, codebook = write_survey(folder)
    study = folder / "exams.codecurve"
    argv = ["new", str(study), "--responses", str(responses), "--codebook", str(codebook)]
    assert main(argv) == 0
    return study


def test_the_hint_sizes_the_draw_by_each_codes_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    study = new_study(tmp_path)
    capsys.readouterr()
    assert main(["audit", str(study)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    # Alternatives has the 10 answers to q3; Negative tone all 60 (not 60 for every code).
    assert "draw one of 10 to 60 (each code's own responses) responses per code" in err


def test_the_table_has_a_question_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    study = new_study(tmp_path)
    assert main(["audit", str(study), "--draw", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "Audit pairs" in line)
    assert "Question" in header
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in out.splitlines()
        if line.count("│") > 3 and "Audit pairs" not in line
    }
    assert rows["Privacy"] == "q1"
    assert rows["Stress"] == "q1, q2"
    assert rows["Negative tone"] == "all"
    assert main(["audit", str(study), "--format", "json"]) == 0
    codes = {c["code"]: c["questions"] for c in json.loads(capsys.readouterr().out)["codes"]}
    assert codes["Technical problems"] == ["q2"]
    assert codes["Negative tone"] == []


def test_an_unscoped_table_has_no_question_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses, _codebook = write_survey(tmp_path)
    codebook = tmp_path / "plain.yaml"
    codebook.write_text("name: Plain\nscale: binary\ncodes:\n  - name: Tone\n", encoding="utf-8")
    study = tmp_path / "plain.codecurve"
    argv = ["new", str(study), "--responses", str(responses), "--codebook", str(codebook)]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["audit", str(study)]) == 1
    assert "draw one of 60 responses per code" in " ".join(capsys.readouterr().err.split())
    assert main(["audit", str(study), "--draw"]) == 0
    assert "Question" not in capsys.readouterr().out
