"""``codecurve compare STUDY``: table, markdown and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from study import Study
from tui.cli import main


@pytest.fixture
def study(tmp_path: Path) -> Path:
    lines = ["respondent,answer"] + [f"r{i},answer number {i}" for i in range(1, 13)]
    responses = tmp_path / "answers.csv"
    responses.write_text("\n".join(lines) + "\n", encoding="utf-8")
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(
        "name: W\ncodes:\n  - name: Pay\n    definition: Money.\n  - name: Hours\n",
        encoding="utf-8",
    )
    path = tmp_path / "s.codecurve"
    assert main(["new", str(path), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    return path


def test_compare_needs_decisions(study: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(study), "--model", "fake"]) == 0
    capsys.readouterr()
    assert main(["compare", str(study)]) == 1
    assert "no decisions to compare with" in capsys.readouterr().err


def test_compare_prints_every_configuration(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for context in ("none", "full"):
        assert main(["score", str(study), "--model", "fake", "--context", context]) == 0
    with Study.open(study) as s:
        items = [
            (rid, code, (i * 7 + j) % 5 + 1)
            for i, rid in enumerate(s.response_ids())
            for j, code in enumerate(("pay", "hours"))
        ]
        s.decisions.import_decisions(items, coder="ana")
    capsys.readouterr()
    assert main(["compare", str(study), "--resamples", "50"]) == 0
    table = capsys.readouterr().out
    assert "kappa [95% CI]" in table
    assert "All codes" in table
    assert "[none]" in table
    assert "[full]" in table
    assert main(["compare", str(study), "--format", "markdown", "--resamples", "50"]) == 0
    assert capsys.readouterr().out.startswith("| code |")
    assert main(["compare", str(study), "--format", "json", "--resamples", "50"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["coder"] == "ana"
    assert data["n_pairs"] == 24
    assert len(data["configs"]) == 2
    assert {row["code"] for row in data["rows"]} == {"pay", "hours", "All codes"}
    assert main(["compare", str(study), "--sample", "audit"]) == 1
    assert "no audit sample drawn" in capsys.readouterr().err
