"""The validity indices of a 2x2 table: L, Fp, RBS, TRIN and point-biserial r.

Definitions follow METHOD.md section 2 (Cacioli 2026). Every function takes a
:class:`~screening.table.Table2x2`; build one from per-item arrays with
:func:`~screening.table.contingency_table`. Indices depend on the counts only, so they
are invariant to item order by construction.

Undefined values (an empty margin) are nan and warn with
:class:`~screening.errors.ScreeningWarning`. The reference implementation reports 0.0
for L or Fp with an empty margin; it never shows those values because such a table is
always "Insufficient data", and here they are nan instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from scipy import special

from screening.intervals import (
    NAN_INTERVAL,
    Interval,
    fisher_z_interval,
    wald_interval,
    wilson_interval,
)
from screening.table import Table2x2
from screening.validation import warn

__all__ = [
    "IndexEstimate",
    "PointBiserial",
    "Trin",
    "fixed_responding",
    "inversion",
    "lack_of_monitoring",
    "over_withdrawal",
    "point_biserial",
]

NAN = float("nan")

#: Flag thresholds (METHOD.md section 2).
L_THRESHOLD = 0.95
FP_THRESHOLD = 0.50
RBS_THRESHOLD = 0.0
TRIN_THRESHOLD = 0.95


@dataclass(frozen=True)
class IndexEstimate:
    """A proportion-type index with its interval.

    Attributes:
        name: ``"L"``, ``"Fp"`` or ``"RBS"``.
        value: The point estimate; nan when its margin is empty.
        interval: 95% (or requested) interval; Wilson for L and Fp, Wald for RBS.
        n: Size of the margin the index is computed on (N incorrect for L, N correct
            for Fp, N for RBS).
    """

    name: str
    value: float
    interval: Interval
    n: int


@dataclass(frozen=True)
class Trin:
    """Fixed-responding index: the share of the larger confidence column.

    Attributes:
        value: ``max(a + b, c + d) / N``; nan for an empty table.
        direction: ``"fixed-high"`` if ``a + b > c + d``, else ``"fixed-low"`` (a tie,
            where TRIN = 0.5, is labelled fixed-low as in the reference); None for an
            empty table.
        warning: True at ``value >= 0.95``. A structural warning only: TRIN never
            makes a result Invalid.
    """

    value: float
    direction: Literal["fixed-high", "fixed-low"] | None
    warning: bool


@dataclass(frozen=True)
class PointBiserial:
    """Point-biserial correlation of binarised confidence (high = 1) with correctness.

    Attributes:
        r: The correlation (phi of the 2x2 table); nan if a margin is empty.
        p_value: Two-sided p for r = 0 (same null distribution as
            ``scipy.stats.pearsonr``); nan when r is nan or N <= 2.
        interval: Fisher-z interval, ``se = 1 / sqrt(N - 3)``, arctanh(r) capped at
            +/-3 when |r| = 1; nan bounds for N <= 3.
        n: Number of items.
    """

    r: float
    p_value: float
    interval: Interval
    n: int


def _proportion(k: int, n: int, confidence_level: float) -> tuple[float, Interval]:
    value = k / n if n else NAN
    return value, wilson_interval(k, n, confidence_level=confidence_level)


# The estimates without their warnings: the tier rules (screening.tiers) compute them for
# every table and say once, in their own words, what is undefined.


def estimate_l(table: Table2x2, confidence_level: float) -> IndexEstimate:
    value, ci = _proportion(table.b, table.n_incorrect, confidence_level)
    return IndexEstimate("L", value, ci, table.n_incorrect)


def estimate_fp(table: Table2x2, confidence_level: float) -> IndexEstimate:
    value, ci = _proportion(table.c, table.n_correct, confidence_level)
    return IndexEstimate("Fp", value, ci, table.n_correct)


def estimate_rbs(l_: IndexEstimate, fp: IndexEstimate, confidence_level: float) -> IndexEstimate:
    n = l_.n + fp.n
    if math.isnan(l_.value) or math.isnan(fp.value):
        return IndexEstimate("RBS", NAN, NAN_INTERVAL, n)
    # Operation order as in the reference implementation (bit-identical values).
    value = fp.value - (1 - l_.value)
    se_fp = math.sqrt(fp.value * (1 - fp.value) / fp.n)
    se_l = math.sqrt(l_.value * (1 - l_.value) / l_.n)
    se = math.sqrt(se_fp**2 + se_l**2)
    return IndexEstimate(
        "RBS", value, wald_interval(value, se, confidence_level=confidence_level), n
    )


def estimate_trin(table: Table2x2) -> Trin:
    if table.n == 0:
        return Trin(NAN, None, False)
    value = max(table.n_high, table.n_low) / table.n
    direction: Literal["fixed-high", "fixed-low"] = (
        "fixed-high" if table.n_high > table.n_low else "fixed-low"
    )
    return Trin(value, direction, value >= TRIN_THRESHOLD)


def estimate_point_biserial(table: Table2x2, confidence_level: float) -> PointBiserial:
    n = table.n
    margins = table.n_high * table.n_low * table.n_correct * table.n_incorrect
    if margins == 0:
        return PointBiserial(NAN, NAN, NAN_INTERVAL, n)
    r = (table.a * table.d - table.b * table.c) / math.sqrt(margins)
    r = min(1.0, max(-1.0, r))
    if n > 2:
        # Null distribution of r is Beta(n/2 - 1, n/2 - 1) on [-1, 1], as in scipy.
        shape = n / 2 - 1
        p = float(min(1.0, 2 * special.betaincc(shape, shape, (abs(r) + 1) / 2)))
    else:
        p = NAN
    return PointBiserial(r, p, fisher_z_interval(r, n, confidence_level=confidence_level), n)


def undefined_quantities(table: Table2x2) -> list[str]:
    """Names and reasons of the indices a table leaves undefined (empty margins)."""
    out: list[str] = []
    if table.n == 0:
        return ["all indices (no items)"]
    if table.n_incorrect == 0:
        out.append("L (no incorrect items)")
    if table.n_correct == 0:
        out.append("Fp (no correct items)")
    if table.n_incorrect == 0 or table.n_correct == 0:
        out.append("RBS (needs both correct and incorrect items)")
    if table.n_high == 0 or table.n_low == 0:
        side = "high" if table.n_high == 0 else "low"
        out.append(f"r (no {side}-confidence items)")
    elif table.n_incorrect == 0 or table.n_correct == 0:
        out.append("r (correctness does not vary)")
    return out


def lack_of_monitoring(table: Table2x2, *, confidence_level: float = 0.95) -> IndexEstimate:
    """L = b / (b + d) = P(high confidence | incorrect), with a Wilson interval.

    Args:
        table: The 2x2 table.
        confidence_level: Coverage of the interval.

    Returns:
        L; nan with interval (0, 1) when there are no incorrect items.

    Warns:
        ScreeningWarning: If there are no incorrect items.
    """
    if table.n_incorrect == 0:
        warn("L is undefined: no incorrect items")
    return estimate_l(table, confidence_level)


def over_withdrawal(table: Table2x2, *, confidence_level: float = 0.95) -> IndexEstimate:
    """Fp = c / (a + c) = P(low confidence | correct), with a Wilson interval.

    Args:
        table: The 2x2 table.
        confidence_level: Coverage of the interval.

    Returns:
        Fp; nan with interval (0, 1) when there are no correct items.

    Warns:
        ScreeningWarning: If there are no correct items.
    """
    if table.n_correct == 0:
        warn("Fp is undefined: no correct items")
    return estimate_fp(table, confidence_level)


def inversion(table: Table2x2, *, confidence_level: float = 0.95) -> IndexEstimate:
    """RBS = Fp - (1 - L), with a Wald interval.

    ``se = sqrt(Fp (1 - Fp) / N_correct + L (1 - L) / N_incorrect)``. Positive RBS
    means correct items are withdrawn more often than errors are: inverted monitoring.

    Args:
        table: The 2x2 table.
        confidence_level: Coverage of the interval.

    Returns:
        RBS; nan with a nan interval unless there are both correct and incorrect items.

    Warns:
        ScreeningWarning: If there are no correct or no incorrect items.
    """
    if table.n_correct == 0 or table.n_incorrect == 0:
        warn("RBS is undefined: needs both correct and incorrect items")
    return estimate_rbs(
        estimate_l(table, confidence_level), estimate_fp(table, confidence_level), confidence_level
    )


def fixed_responding(table: Table2x2) -> Trin:
    """TRIN = max(a + b, c + d) / N with its direction and the >= 0.95 warning.

    Warns:
        ScreeningWarning: If the table is empty (TRIN is then nan).
    """
    if table.n == 0:
        warn("TRIN is undefined: no items")
    return estimate_trin(table)


def point_biserial(table: Table2x2, *, confidence_level: float = 0.95) -> PointBiserial:
    """Point-biserial r between binarised confidence and correctness, with p and CI.

    Equals ``scipy.stats.pointbiserialr(high, correct)`` on the per-item arrays.

    Args:
        table: The 2x2 table.
        confidence_level: Coverage of the Fisher-z interval.

    Returns:
        r, p and interval; nan when either variable is constant.

    Warns:
        ScreeningWarning: If confidence or correctness does not vary.
    """
    if table.n_high * table.n_low * table.n_correct * table.n_incorrect == 0:
        warn("r is undefined: confidence or correctness does not vary")
    return estimate_point_biserial(table, confidence_level)
