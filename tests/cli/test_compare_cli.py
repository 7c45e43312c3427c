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


def test_configurations_are_told_apart_by_backend_and_codes_named(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One model file run by two backends is two configurations, and reads as two; codes
    are named as the codebook names them, not by their ids."""
    import dataclasses

    from scoring.backend import ModelIdentity
    from tests.factories import synthetic_config, synthetic_scores

    with Study.open(study) as s:
        for backend in ("transformers", "llama.cpp 0.3.16"):
            model = ModelIdentity("embedded:SmolLM2", "r1", "float32", "cpu", backend)
            config = dataclasses.replace(synthetic_config(s.codebook), model=model)
            s.scores.store(s.scores.ensure_config(config), synthetic_scores(s, config))
        items = [(rid, "hours", 1 + i % 5) for i, rid in enumerate(s.response_ids())]
        s.decisions.import_decisions(items, coder="ana")
    capsys.readouterr()
    assert main(["compare", str(study), "--resamples", "20"]) == 0
    out = capsys.readouterr().out
    assert "embedded:SmolLM2 (transformers) [" in out
    assert "embedded:SmolLM2 (llama.cpp) [" in out
    assert "Hours" in out
    assert not any(line.startswith("hours") for line in out.splitlines())
    with Study.open(study, read_only=True) as s:
        from study.labels import config_label

        labels = [config_label(s.scores.config_row(c.id)) for c in s.scores.configs()]
    assert any("SmolLM2 (transformers)" in label for label in labels)
    assert any("SmolLM2 (llama.cpp)" in label for label in labels)
