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
"""

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
    phase_b,
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
    "phase_b",
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
