"""What a reliability diagram and a risk-coverage curve draw, as numbers.

* :func:`calibration_bins`: equal-width confidence bins of [0, 1] (the bins of
  :func:`screening.phase_b.expected_calibration_error`: bin i holds ``i / n_bins <=
  confidence < (i + 1) / n_bins``, 1.0 in the last), each with its count, mean
  confidence, observed accuracy and an exact (Clopper-Pearson) interval of that
  accuracy. Empty bins are left out.
* :func:`threshold_curve`: for each confidence threshold t, highest first, the items at
  or above t, their errors, the share of items they are (coverage) and their error rate
  (risk): what delegating every pair at or above t would cost. At most ``max_points``
  thresholds are kept, evenly spaced in coverage; the lowest threshold (coverage 1) is
  always among them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from screening.validation import as_bool_1d, as_float_1d, same_length

__all__ = ["CalibrationBin", "CoveragePoint", "calibration_bins", "threshold_curve"]


@dataclass(frozen=True)
class CalibrationBin:
    """One bin of a reliability diagram.

    Attributes:
        low: The bin's lower edge (included).
        high: Its upper edge (excluded, except 1.0 in the last bin).
        n: Items in the bin.
        confidence: Their mean confidence.
        accuracy: Their share correct.
        accuracy_low: Lower end of the exact interval of ``accuracy``.
        accuracy_high: Upper end of it.
    """

    low: float
    high: float
    n: int
    confidence: float
    accuracy: float
    accuracy_low: float
    accuracy_high: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CoveragePoint:
    """One point of a risk-coverage curve.

    Attributes:
        threshold: Confidence threshold t.
        n: Items with confidence >= t.
        errors: Errors among them.
        coverage: ``n`` over all items.
        risk: ``errors / n``.
    """

    threshold: float
    n: int
    errors: int
    coverage: float
    risk: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def clopper_pearson(k: int, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """The two-sided exact interval of a proportion ``k / n`` (n >= 1)."""
    alpha = 1.0 - level
    low = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


def calibration_bins(
    correct: npt.ArrayLike,
    confidence: npt.ArrayLike,
    *,
    n_bins: int = 10,
    level: float = 0.95,
) -> tuple[CalibrationBin, ...]:
    """The non-empty equal-width bins of ``confidence`` with their observed accuracy.

    Args:
        correct: Shape (n_items,), bool or 0/1.
        confidence: Shape (n_items,), in [0, 1].
        n_bins: Number of bins of [0, 1], >= 1.
        level: Level of each bin's interval.

    Raises:
        ValueError: For arrays of different lengths, confidence outside [0, 1] or
            ``n_bins < 1``.
    """
    ok = as_bool_1d(correct, "correct")
    conf = as_float_1d(confidence, "confidence")
    same_length(correct=ok, confidence=conf)
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    if conf.size and (conf.min() < 0 or conf.max() > 1):
        raise ValueError("confidence must lie in [0, 1]")
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    bins = np.searchsorted(edges[1:-1], conf, side="right")
    out = []
    for b in np.unique(bins):
        members = bins == b
        n = int(members.sum())
        k = int(ok[members].sum())
        low, high = clopper_pearson(k, n, level=level)
        out.append(
            CalibrationBin(
                low=float(edges[b]),
                high=float(edges[b + 1]),
                n=n,
                confidence=float(conf[members].mean()),
                accuracy=k / n,
                accuracy_low=low,
                accuracy_high=high,
            )
        )
    return tuple(out)


def threshold_curve(
    correct: npt.ArrayLike, confidence: npt.ArrayLike, *, max_points: int = 101
) -> tuple[CoveragePoint, ...]:
    """Coverage and risk of keeping the items at or above each threshold, highest first.

    Ties count together: a threshold keeps every item of its confidence. Empty for no
    items.

    Raises:
        ValueError: For arrays of different lengths or ``max_points < 2``.
    """
    ok = as_bool_1d(correct, "correct")
    conf = as_float_1d(confidence, "confidence")
    total = same_length(correct=ok, confidence=conf)
    if max_points < 2:
        raise ValueError(f"max_points must be >= 2, got {max_points}")
    if total == 0:
        return ()
    order = np.argsort(conf, kind="stable")
    c_sorted = conf[order]
    wrong_from = np.concatenate([np.cumsum((~ok[order])[::-1])[::-1], [0]])
    thresholds = np.unique(c_sorted)[::-1]
    start = np.searchsorted(c_sorted, thresholds, side="left")
    n_at = total - start
    k_at = wrong_from[start]
    if thresholds.size > max_points:
        # The thresholds nearest to evenly spaced coverages, the last always kept.
        wanted = np.linspace(n_at[0], total, max_points)
        pick = np.unique(np.searchsorted(n_at, wanted, side="left").clip(0, n_at.size - 1))
        thresholds, n_at, k_at = thresholds[pick], n_at[pick], k_at[pick]
    return tuple(
        CoveragePoint(
            threshold=float(t),
            n=int(n),
            errors=int(k),
            coverage=int(n) / total,
            risk=int(k) / int(n),
        )
        # As Python numbers first: numpy scalars one at a time cost ten times more.
        for t, n, k in zip(thresholds.tolist(), n_at.tolist(), k_at.tolist(), strict=True)
    )
