"""Phase-B metrics: what a confidence signal is worth, once it has passed the screen.

These are computed only when asked, and :func:`phase_b` computes them only for a screen
whose tier allows it: "Valid", or "Indeterminate" with a caveat attached; for "Invalid"
and "Insufficient data" it returns None (the numbers would invite interpretation of a
signal that carries no item-level information).

All metrics take per-item ``correct`` (shape (n_items,), bool or 0/1) and continuous
``confidence`` (shape (n_items,); in [0, 1] for ECE and Brier). Selective prediction
ranks items by confidence, highest first, with a stable sort: ties keep item order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
from scipy import stats

from screening.agreement import KappaWeights, cohen_kappa
from screening.calibration import (
    CalibrationBin,
    CoveragePoint,
    calibration_bins,
    threshold_curve,
)
from screening.tiers import ScreenResult
from screening.validation import (
    BoolArray,
    FloatArray,
    as_bool_1d,
    as_float_1d,
    same_length,
    warn,
)

__all__ = [
    "DEFAULT_COVERAGES",
    "PhaseB",
    "SelectivePoint",
    "aurc",
    "auroc_score",
    "brier_loss",
    "expected_calibration_error",
    "phase_b",
    "phase_b_metrics",
    "risk_coverage_curve",
    "selective_accuracy",
]

#: Coverage levels reported for selective prediction (METHOD.md section 2).
DEFAULT_COVERAGES: tuple[float, ...] = (0.9, 0.8, 0.7, 0.6, 0.5, 0.3, 0.2)
NAN = float("nan")


@dataclass(frozen=True)
class SelectivePoint:
    """Accuracy when only the most confident share of items is kept.

    Attributes:
        coverage: Requested share of items kept, in (0, 1].
        n_kept: ``ceil(n_items * coverage)``.
        accuracy: Accuracy of the kept items.
        gain: ``accuracy`` minus the accuracy over all items.
    """

    coverage: float
    n_kept: int
    accuracy: float
    gain: float


@dataclass(frozen=True)
class PhaseB:
    """Phase-B metrics of one screened group.

    Attributes:
        n_items: Items used.
        base_accuracy: Accuracy over all items.
        auroc: Area under the ROC curve of confidence for correctness.
        selective: Selective accuracy at each coverage.
        aurc: Mean selective risk over all n_items coverage levels (lower is better).
        ece: Expected calibration error, equal-width bins weighted by size.
        brier: Brier score (lower is better).
        kappa: Cohen's kappa between model and coder decisions, if decisions were given.
        kappa_weights: ``None`` (unweighted), ``"linear"`` or ``"quadratic"``.
        caveat: Set for an Indeterminate screen: read these numbers with caution.
        calibration: The reliability diagram: the non-empty ECE bins, each with its
            count, mean confidence and observed accuracy with an exact interval.
        risk_coverage: The risk-coverage curve: per confidence threshold, highest
            first, the items at or above it, their errors, coverage and risk.
    """

    n_items: int
    base_accuracy: float
    auroc: float
    selective: tuple[SelectivePoint, ...]
    aurc: float
    ece: float
    brier: float
    kappa: float | None = None
    kappa_weights: KappaWeights = None
    caveat: str | None = None
    calibration: tuple[CalibrationBin, ...] = ()
    risk_coverage: tuple[CoveragePoint, ...] = ()


def _inputs(correct: npt.ArrayLike, confidence: npt.ArrayLike) -> tuple[BoolArray, FloatArray]:
    ok = as_bool_1d(correct, "correct")
    conf = as_float_1d(confidence, "confidence")
    same_length(correct=ok, confidence=conf)
    return ok, conf


def _unit_interval(conf: FloatArray) -> None:
    if conf.size and (conf.min() < 0.0 or conf.max() > 1.0):
        raise ValueError(
            f"confidence must lie in [0, 1] for calibration metrics, "
            f"got range [{conf.min():.3g}, {conf.max():.3g}]"
        )


def _order(conf: FloatArray) -> npt.NDArray[np.intp]:
    # Highest confidence first; "stable" keeps item order among ties.
    return np.argsort(-conf, kind="stable")


def auroc_score(correct: npt.ArrayLike, confidence: npt.ArrayLike) -> float:
    """Probability that a random correct item has higher confidence than a random error.

    Ties count one half, so this is Mann-Whitney U / (n_correct * n_incorrect).

    Args:
        correct: Shape (n_items,), bool or 0/1.
        confidence: Shape (n_items,), continuous.

    Returns:
        AUROC in [0, 1]; nan if all items are correct or all incorrect.

    Warns:
        ScreeningWarning: If only one class is present.
    """
    ok, conf = _inputs(correct, confidence)
    n1 = int(ok.sum())
    n0 = ok.size - n1
    if n1 == 0 or n0 == 0:
        warn("AUROC is undefined: correctness does not vary")
        return NAN
    ranks = stats.rankdata(conf)
    u = float(ranks[ok].sum()) - n1 * (n1 + 1) / 2.0
    return u / (n1 * n0)


def _n_kept(n: int, coverage: float) -> int:
    # Rounded first so that e.g. 10 * 0.7 = 7.000000000000001 keeps 7 items, not 8.
    return max(1, math.ceil(round(n * coverage, 9)))


def selective_accuracy(
    correct: npt.ArrayLike,
    confidence: npt.ArrayLike,
    *,
    coverages: Sequence[float] = DEFAULT_COVERAGES,
) -> tuple[SelectivePoint, ...]:
    """Accuracy of the top ``ceil(n_items * c)`` items by confidence, for each coverage c.

    Args:
        correct: Shape (n_items,), bool or 0/1.
        confidence: Shape (n_items,), continuous.
        coverages: Shares of items kept, each in (0, 1].

    Returns:
        One point per coverage, in the given order; accuracies nan for no items.

    Raises:
        ValueError: If a coverage is outside (0, 1].

    Warns:
        ScreeningWarning: If there are no items.
    """
    ok, conf = _inputs(correct, confidence)
    for c in coverages:
        if not 0.0 < c <= 1.0:
            raise ValueError(f"coverages must lie in (0, 1], got {c!r}")
    n = ok.size
    if n == 0:
        warn("selective accuracy is undefined: no items")
        return tuple(SelectivePoint(float(c), 0, NAN, NAN) for c in coverages)
    ranked = ok[_order(conf)]
    base = float(ok.mean())
    points = []
    for c in coverages:
        k = _n_kept(n, c)
        acc = float(ranked[:k].mean())
        points.append(SelectivePoint(float(c), k, acc, acc - base))
    return tuple(points)


def risk_coverage_curve(
    correct: npt.ArrayLike, confidence: npt.ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Selective risk (error rate of the kept items) at every coverage k / n_items.

    Args:
        correct: Shape (n_items,), bool or 0/1.
        confidence: Shape (n_items,), continuous.

    Returns:
        ``(coverage, risk)``, each of shape (n_items,), coverage increasing from
        1 / n_items to 1.
    """
    ok, conf = _inputs(correct, confidence)
    n = ok.size
    kept = np.arange(1, n + 1, dtype=np.float64)
    risk = 1.0 - np.cumsum(ok[_order(conf)], dtype=np.float64) / kept
    return kept / n, risk


def aurc(correct: npt.ArrayLike, confidence: npt.ArrayLike) -> float:
    """Area under the risk-coverage curve: mean selective risk over all n_items levels.

    Lower is better. nan, with a warning, for no items.
    """
    _, risk = risk_coverage_curve(correct, confidence)
    if risk.size == 0:
        warn("AURC is undefined: no items")
        return NAN
    return float(risk.mean())


def expected_calibration_error(
    correct: npt.ArrayLike, confidence: npt.ArrayLike, *, n_bins: int = 10
) -> float:
    """ECE over ``n_bins`` equal-width bins of [0, 1], weighted by bin size.

    Bin i holds ``i / n_bins <= confidence < (i + 1) / n_bins``; 1.0 is in the last bin.

    Args:
        correct: Shape (n_items,), bool or 0/1.
        confidence: Shape (n_items,), in [0, 1].
        n_bins: Number of bins, >= 1.

    Returns:
        ``sum_b (n_b / n) |accuracy_b - mean confidence_b|``; nan for no items.

    Raises:
        ValueError: If confidence is outside [0, 1] or ``n_bins < 1``.

    Warns:
        ScreeningWarning: If there are no items.
    """
    ok, conf = _inputs(correct, confidence)
    _unit_interval(conf)
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    if ok.size == 0:
        warn("ECE is undefined: no items")
        return NAN
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    bins = np.searchsorted(edges[1:-1], conf, side="right")
    total = 0.0
    for b in np.unique(bins):
        members = bins == b
        total += members.sum() * abs(float(ok[members].mean()) - float(conf[members].mean()))
    return total / ok.size


def brier_loss(correct: npt.ArrayLike, confidence: npt.ArrayLike) -> float:
    """Mean squared difference between confidence and correctness (lower is better).

    Raises:
        ValueError: If confidence is outside [0, 1].

    Warns:
        ScreeningWarning: If there are no items (returns nan).
    """
    ok, conf = _inputs(correct, confidence)
    _unit_interval(conf)
    if ok.size == 0:
        warn("Brier score is undefined: no items")
        return NAN
    return float(np.mean((conf - ok) ** 2))


def phase_b_metrics(
    correct: npt.ArrayLike,
    confidence: npt.ArrayLike,
    *,
    coverages: Sequence[float] = DEFAULT_COVERAGES,
    n_bins: int = 10,
    model_decision: npt.ArrayLike | None = None,
    coder_decision: npt.ArrayLike | None = None,
    labels: npt.ArrayLike | None = None,
    weights: KappaWeights = None,
) -> PhaseB:
    """All phase-B metrics, without consulting a screen (see :func:`phase_b`).

    Args:
        correct: Shape (n_items,), bool or 0/1.
        confidence: Shape (n_items,), in [0, 1].
        coverages: Coverage levels for selective accuracy.
        n_bins: Bins for ECE.
        model_decision: Shape (n_items,), the model's decisions, for kappa.
        coder_decision: Shape (n_items,), the coder's decisions, for kappa.
        labels: The ordered category set for kappa (e.g. the scale's values).
        weights: Kappa weights: None, ``"linear"`` or ``"quadratic"`` (ordinal scales).

    Returns:
        The metrics; ``kappa`` is None unless both decision arrays are given.

    Raises:
        ValueError: As the individual metrics, or if only one decision array is given.
    """
    ok, conf = _inputs(correct, confidence)
    if (model_decision is None) != (coder_decision is None):
        raise ValueError("give both model_decision and coder_decision, or neither")
    kappa = None
    if model_decision is not None and coder_decision is not None:
        kappa = cohen_kappa(model_decision, coder_decision, labels=labels, weights=weights)
    base = float(ok.mean()) if ok.size else NAN
    return PhaseB(
        n_items=int(ok.size),
        base_accuracy=base,
        auroc=auroc_score(ok, conf),
        selective=selective_accuracy(ok, conf, coverages=coverages),
        aurc=aurc(ok, conf),
        ece=expected_calibration_error(ok, conf, n_bins=n_bins),
        brier=brier_loss(ok, conf),
        kappa=kappa,
        calibration=calibration_bins(ok, conf, n_bins=n_bins) if ok.size else (),
        risk_coverage=threshold_curve(ok, conf),
        kappa_weights=weights if kappa is not None else None,
    )


def phase_b(
    result: ScreenResult,
    correct: npt.ArrayLike,
    confidence: npt.ArrayLike,
    *,
    coverages: Sequence[float] = DEFAULT_COVERAGES,
    n_bins: int = 10,
    model_decision: npt.ArrayLike | None = None,
    coder_decision: npt.ArrayLike | None = None,
    labels: npt.ArrayLike | None = None,
    weights: KappaWeights = None,
) -> PhaseB | None:
    """Phase-B metrics gated by the screen of the same items.

    Args:
        result: The screen of ``correct`` against the binarised ``confidence``.
        correct: Shape (n_items,), the arrays that were screened.
        confidence: Shape (n_items,), continuous confidence in [0, 1].
        coverages: See :func:`phase_b_metrics`.
        n_bins: See :func:`phase_b_metrics`.
        model_decision: See :func:`phase_b_metrics`.
        coder_decision: See :func:`phase_b_metrics`.
        labels: See :func:`phase_b_metrics`.
        weights: See :func:`phase_b_metrics`.

    Returns:
        None for an "Invalid" or "Insufficient data" screen (refused, by design);
        the metrics for "Valid"; the metrics with ``caveat`` set for "Indeterminate".

    Raises:
        ValueError: If ``correct`` does not have the screened number of items.
    """
    if not result.phase_b_allowed:
        return None
    ok = as_bool_1d(correct, "correct")
    if ok.size != result.table.n or int(ok.sum()) != result.table.n_correct:
        raise ValueError(
            f"correct (shape {ok.shape}, {int(ok.sum())} correct) is not the screened data "
            f"(N = {result.table.n}, {result.table.n_correct} correct)"
        )
    metrics = phase_b_metrics(
        ok,
        confidence,
        coverages=coverages,
        n_bins=n_bins,
        model_decision=model_decision,
        coder_decision=coder_decision,
        labels=labels,
        weights=weights,
    )
    if result.tier == "Indeterminate":
        caveat = (
            "Indeterminate screen: the confidence signal's validity is not established "
            f"({result.flagging_reason}); read these metrics with caution."
        )
        metrics = replace(metrics, caveat=caveat)
    return metrics
