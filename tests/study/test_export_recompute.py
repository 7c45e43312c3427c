"""The screen, the risk-coverage curve and the delegation recomputed from the long export
alone give the study's numbers, in every export format.

Only the export's columns are read (``audit``, ``blind``, ``decision``, ``model_applies``,
``confidence``, ``scored``); the recomputation calls the library's pure functions, which
the study's own commands call too. A confidence off by a unit in the last place (as
openpyxl's 16 significant digits, or pandas' fast JSON parser, gave) moves a pair across
a threshold equal to its stored value, and the counts then differ by one pair.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from screening import screen_report
from screening.calibration import threshold_curve
from screening.delegation import certify_delegation
from study import Study
from study.exchange.writers import read_export
from tests.study.test_audit import code_audit_blind, simulated_study
from tui.cli import main

#: The scale-aware cut of a 1-5 scale: halfway between chance (1/5) and certainty.
CUT = 0.6


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, truth = simulated_study(tmp_path_factory.mktemp("r") / "r.codecurve", n=1200, seed=11)
    with Study.open(path) as study:
        study.audit.draw(per_code=400, seed=5)
        code_audit_blind(study, truth)
    return path


def _json(*argv: str) -> Any:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--format", "json"]) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def study_numbers(audited: Path) -> tuple[Any, Any]:
    return _json("screen", str(audited), "--phase-b"), _json("delegate", str(audited))


def _flag(column: pd.Series) -> np.ndarray:
    return column.map(lambda v: str(v).strip().lower() in ("true", "1", "1.0")).to_numpy(bool)


@pytest.mark.parametrize("suffix", [".csv", ".xlsx", ".jsonl", ".parquet"])
def test_the_export_alone_gives_the_studys_screen_curve_and_delegation(
    audited: Path, study_numbers: tuple[Any, Any], tmp_path: Path, suffix: str
) -> None:
    screen, plan = study_numbers
    target = tmp_path / f"long{suffix}"
    with contextlib.redirect_stderr(io.StringIO()):
        assert main(["export", str(audited), "-o", str(target), "--layout", "long"]) == 0
    long = read_export(target)
    for code_name, report in screen["per_code"].items():
        rows = long[long["code_name"] == code_name]
        audit = _flag(rows["audit"]) & _flag(rows["blind"])
        decision = rows["decision"].to_numpy(float)
        applies = decision >= 4  # the 1-5 scale's "applies" (4-5)
        model = _flag(rows["model_applies"])
        confidence = rows["confidence"].to_numpy(float)
        correct = model[audit] == applies[audit]

        mine = screen_report(correct, confidence[audit], threshold=CUT, with_phase_b=True)
        table = mine.screen.table
        assert {"a": table.a, "b": table.b, "c": table.c, "d": table.d} == report["table"]
        assert mine.screen.tier == report["tier"]
        curve = threshold_curve(correct, confidence[audit])
        theirs = report["phase_b"]["risk_coverage"]
        assert [(p.threshold, p.n, p.errors) for p in curve] == [
            (p["threshold"], p["n"], p["errors"]) for p in theirs
        ]

        scored = _flag(rows["scored"])
        outside = scored & ~_flag(rows["audit"])
        undecided = np.isnan(decision[outside])
        delegation = certify_delegation(
            confidence[audit],
            correct,
            tier=mine.screen.tier,
            outside=confidence[outside],
            delegable=undecided,
        )
        code = next(c for c in plan["codes"].values() if c["code_name"] == code_name)
        assert delegation.threshold == code["threshold"]
        assert (delegation.n, delegation.errors) == (code["n"], code["errors"])
        assert delegation.upper_bound == pytest.approx(code["upper_bound"], nan_ok=True)
        assert delegation.delegable == code["delegated"]
