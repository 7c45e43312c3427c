"""Before ``score`` runs, it says what the run will cost: its pairs and the time they
take at the speed measured on an earlier run (kept in the study), or on the first
batches of this one; the app says the same when ``r`` starts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from study import Study
from study.intake.responses import ResponseTable
from tui.cli import main

CODEBOOK = """\
name: Test codes
scale: binary
codes:
  - name: Pay
    definition: Salary and benefits.
  - name: Team
    definition: Colleagues and teamwork.
"""


def make_study(tmp_path: Path, n: int) -> Path:
    responses = tmp_path / "responses.csv"
    rows = "".join(f"a{i},Answer number {i} about pay and colleagues.\n" for i in range(n))
    responses.write_text("id,text\n" + rows, encoding="utf-8")
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    path = tmp_path / "s.codecurve"
    assert main(["new", str(path), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    return path


def lines(err: str) -> list[str]:
    return [line.strip() for line in err.replace("\r", "\n").splitlines() if line.strip()]


def test_the_first_run_estimates_after_a_warm_up_and_keeps_its_speed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make_study(tmp_path, 60)
    capsys.readouterr()
    assert main(["score", str(path), "--model", "fake", "--batch-size", "8"]) == 0
    said = lines(capsys.readouterr().err)
    assert "120 pairs to score; the time is estimated once the first batches are scored" in said
    warm = [line for line in said if "pairs left: about" in line]
    assert len(warm) == 1
    match = re.search(r"\(([\d,.]+) pairs/s on the first (\d+), the longest responses\)", warm[0])
    assert match is not None
    assert int(match.group(2)) >= 32
    with Study.open(path) as study:
        config_id = study.scores.active_config_id()
        assert config_id is not None
        rate = study.scores.measured_rate(config_id)
        assert rate is not None
        assert rate.rate > 0
        assert rate.config_id == config_id
        assert 0 < rate.pairs <= 120


def test_a_later_run_says_its_cost_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make_study(tmp_path, 20)
    assert main(["score", str(path), "--model", "fake"]) == 0
    with Study.open(path) as study:
        study.versions.add_responses(
            ResponseTable.from_texts({f"w{i}": f"Wave two answer {i}." for i in range(5)})
        )
        config_id = study.scores.active_config_id()
        assert config_id is not None
        kept = study.scores.measured_rate(config_id)
        assert kept is not None
    capsys.readouterr()
    assert main(["score", str(path), "--model", "fake"]) == 0
    said = lines(capsys.readouterr().err)
    scoring = next(i for i, line in enumerate(said) if line.startswith("scoring 10 pending"))
    estimate = said[scoring + 1]  # before any batch is scored
    assert estimate.startswith("10 pairs to score: about ")
    assert f"at {kept.rate:,.1f} pairs/s" in estimate
    assert "this configuration's last run" in estimate
    assert not any("pairs left: about" in line for line in said)  # no warm-up needed
    # Another context of the same model and device borrows that speed, and says so.
    capsys.readouterr()
    assert main(["score", str(path), "--model", "fake", "--context", "full"]) == 0
    said = lines(capsys.readouterr().err)
    assert any(
        "50 pairs to score: about" in line and "same model and device" in line for line in said
    )


def test_the_embedded_model_keeps_its_measured_speed(tmp_path: Path) -> None:
    path = make_study(tmp_path, 5)
    assert main(["score", str(path)]) == 0
    with Study.open(path) as study:
        config_id = study.scores.active_config_id()
        assert config_id is not None
        assert "SmolLM2" in study.scores.config_row(config_id).model.name
        rate = study.scores.measured_rate(config_id)
    # Ten pairs scored by the real model, at its speed on this machine.
    assert rate is not None
    assert rate.pairs == 10
    assert rate.rate > 0
