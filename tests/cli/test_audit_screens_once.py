"""``codecurve audit`` screens the audit sample once per call: the delegation plan is
made from the same screen, and the verdict column is worded by screening.advice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import study.analysis.delegation_plan as delegation_plan
import study.analysis.screen as screen
from screening.advice import to_verdict
from screening.story import pattern_line
from study import Study
from tests.study.test_audit import code_audit_blind, simulated_study
from tui.cli import main


def test_one_screen_per_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, truth = simulated_study(tmp_path / "s.codecurve", n=200, seed=3)
    assert main(["audit", str(path), "--per-code", "40", "--seed", "1"]) == 0
    with Study.open(path) as study:
        code_audit_blind(study, truth)
    capsys.readouterr()
    calls: list[object] = []
    real = screen.screen_study

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(kwargs.get("sample"))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(screen, "screen_study", counted)
    monkeypatch.setattr(delegation_plan, "screen_study", counted)
    assert main(["audit", str(path), "--format", "json"]) == 0
    assert calls == ["audit"]
    rows = json.loads(capsys.readouterr().out)["codes"]
    with Study.open(path, read_only=True) as study:
        screened = real(study, sample="audit")
    for row in rows:
        report = screened.per_code[row["code"]]
        head = screened.headline(row["code"])
        assert row["tier"] == report.tier
        # The tier is named as a response pattern, with AUROC and kappa beside it.
        assert pattern_line(report.tier, head) in row["verdict"]
        if report.tier == "Insufficient data":
            left = screened.remaining[row["code"]]
            assert row["verdict"].startswith(
                to_verdict(report, row["code"], audit=True, remaining=left)
            )
        assert row["delegation"]
