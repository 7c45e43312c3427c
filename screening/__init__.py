"""Validity screening of a model's confidence signal (METHOD.md section 2).

Before calibration, AUROC or selective prediction are read from a confidence signal,
check that it carries item-level information about correctness (Cacioli 2026, after
the MMPI-3 / PAI validity scales). Pure functions over numpy arrays; numpy and scipy
only (``rich`` is imported lazily by :meth:`VRSReport.to_rich`).

Typical use::

    from screening import screen_report

    report = screen_report(correct, p_max, threshold=0.5, source="SmolLM2-135M")
    report.tier            # "Valid" | "Indeterminate" | "Invalid" | "Insufficient data"
    report.to_markdown()

For coded survey data, :func:`screen_coded` compares model and coder decisions and
returns a report per code and pooled.

Names are loaded on first use (PEP 562): importing one module of the package
(``screening.sampling``, say) does not load scipy through the others. The function
``phase_b`` is not among them: its name is its module's, which importing the module
binds here; import it from :mod:`screening.phase_b`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from screening.agreement import (
        AlphaLevel,
        KappaWeights,
        cohen_kappa,
        krippendorff_alpha,
        percent_agreement,
    )
    from screening.apply import (
        AgreementMode,
        CodedScreening,
        ConfidenceKind,
        confidence_signal,
        decisions_agree,
        default_applies_from,
        screen_coded,
    )
    from screening.errors import ScreeningWarning
    from screening.indices import (
        IndexEstimate,
        PointBiserial,
        Trin,
        fixed_responding,
        inversion,
        lack_of_monitoring,
        over_withdrawal,
        point_biserial,
    )
    from screening.intervals import (
        Interval,
        fisher_z_interval,
        wald_interval,
        wilson_interval,
        z_critical,
    )
    from screening.phase_b import (
        DEFAULT_COVERAGES,
        PhaseB,
        SelectivePoint,
        aurc,
        auroc_score,
        brier_loss,
        expected_calibration_error,
        phase_b_metrics,
        risk_coverage_curve,
        selective_accuracy,
    )
    from screening.report import SCHEMA, VRSReport, screen_report
    from screening.table import Binarisation, Table2x2, binarise_confidence, contingency_table
    from screening.tiers import (
        MIN_CELL_COUNT,
        CellShortfall,
        Flag,
        ScreenResult,
        Tier,
        VerdictDistance,
        distance_to_verdict,
        screen,
        screen_table,
    )

_LAZY = {
    "AgreementMode": "screening.apply",
    "AlphaLevel": "screening.agreement",
    "Binarisation": "screening.table",
    "CellShortfall": "screening.tiers",
    "CodedScreening": "screening.apply",
    "ConfidenceKind": "screening.apply",
    "DEFAULT_COVERAGES": "screening.phase_b",
    "Flag": "screening.tiers",
    "IndexEstimate": "screening.indices",
    "Interval": "screening.intervals",
    "KappaWeights": "screening.agreement",
    "MIN_CELL_COUNT": "screening.tiers",
    "PhaseB": "screening.phase_b",
    "PointBiserial": "screening.indices",
    "SCHEMA": "screening.report",
    "ScreenResult": "screening.tiers",
    "ScreeningWarning": "screening.errors",
    "SelectivePoint": "screening.phase_b",
    "Table2x2": "screening.table",
    "Tier": "screening.tiers",
    "Trin": "screening.indices",
    "VRSReport": "screening.report",
    "VerdictDistance": "screening.tiers",
    "aurc": "screening.phase_b",
    "auroc_score": "screening.phase_b",
    "binarise_confidence": "screening.table",
    "brier_loss": "screening.phase_b",
    "cohen_kappa": "screening.agreement",
    "confidence_signal": "screening.apply",
    "contingency_table": "screening.table",
    "decisions_agree": "screening.apply",
    "default_applies_from": "screening.apply",
    "distance_to_verdict": "screening.tiers",
    "expected_calibration_error": "screening.phase_b",
    "fisher_z_interval": "screening.intervals",
    "fixed_responding": "screening.indices",
    "inversion": "screening.indices",
    "krippendorff_alpha": "screening.agreement",
    "lack_of_monitoring": "screening.indices",
    "over_withdrawal": "screening.indices",
    "percent_agreement": "screening.agreement",
    "phase_b_metrics": "screening.phase_b",
    "point_biserial": "screening.indices",
    "risk_coverage_curve": "screening.phase_b",
    "screen": "screening.tiers",
    "screen_coded": "screening.apply",
    "screen_report": "screening.report",
    "screen_table": "screening.tiers",
    "selective_accuracy": "screening.phase_b",
    "wald_interval": "screening.intervals",
    "wilson_interval": "screening.intervals",
    "z_critical": "screening.intervals",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'screening' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "DEFAULT_COVERAGES",
    "MIN_CELL_COUNT",
    "SCHEMA",
    "AgreementMode",
    "AlphaLevel",
    "Binarisation",
    "CellShortfall",
    "CodedScreening",
    "ConfidenceKind",
    "Flag",
    "IndexEstimate",
    "Interval",
    "KappaWeights",
    "PhaseB",
    "PointBiserial",
    "ScreenResult",
    "ScreeningWarning",
    "SelectivePoint",
    "Table2x2",
    "Tier",
    "Trin",
    "VRSReport",
    "VerdictDistance",
    "aurc",
    "auroc_score",
    "binarise_confidence",
    "brier_loss",
    "cohen_kappa",
    "confidence_signal",
    "contingency_table",
    "decisions_agree",
    "default_applies_from",
    "distance_to_verdict",
    "expected_calibration_error",
    "fisher_z_interval",
    "fixed_responding",
    "inversion",
    "krippendorff_alpha",
    "lack_of_monitoring",
    "over_withdrawal",
    "percent_agreement",
    "phase_b_metrics",
    "point_biserial",
    "risk_coverage_curve",
    "screen",
    "screen_coded",
    "screen_report",
    "screen_table",
    "selective_accuracy",
    "wald_interval",
    "wilson_interval",
    "z_critical",
]
