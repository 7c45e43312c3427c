"""Two-sided confidence intervals used by the validity indices (METHOD.md section 2).

All take ``confidence_level`` (default 0.95, i.e. z = 1.959964) and return an
:class:`Interval`. Undefined intervals are ``Interval(nan, nan)``, except Wilson at
n = 0, which is (0, 1) as in the reference implementation.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

from scipy import stats

from screening.validation import check_confidence_level

__all__ = ["Interval", "fisher_z_interval", "wald_interval", "wilson_interval", "z_critical"]

#: |z| substituted for arctanh(r) when |r| = 1, where the Fisher transform is infinite.
FISHER_Z_CAP = 3.0


class Interval(NamedTuple):
    """A two-sided interval ``(lower, upper)``; nan bounds when undefined."""

    lower: float
    upper: float

    def excludes_zero(self) -> bool:
        """True if the whole interval lies strictly above or strictly below zero."""
        return self.lower > 0.0 or self.upper < 0.0


NAN_INTERVAL = Interval(float("nan"), float("nan"))


def z_critical(confidence_level: float = 0.95) -> float:
    """Standard normal quantile for a two-sided interval (1.959964 at 0.95).

    Raises:
        ValueError: If ``confidence_level`` is not in (0, 1).
    """
    check_confidence_level(confidence_level)
    return _z_critical(confidence_level)


@lru_cache(maxsize=16)
def _z_critical(confidence_level: float) -> float:
    # Cached: norm.ppf costs tens of microseconds and is called four times per table.
    return float(stats.norm.ppf(0.5 + confidence_level / 2.0))


def wilson_interval(k: int, n: int, *, confidence_level: float = 0.95) -> Interval:
    """Wilson score interval for the proportion k / n, clipped to [0, 1].

    Args:
        k: Successes, 0 <= k <= n.
        n: Trials, n >= 0. For n = 0 the interval is (0, 1): nothing is known.
        confidence_level: Coverage of the interval.

    Raises:
        ValueError: If k or n are negative or k > n.
    """
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return Interval(0.0, 1.0)
    z = z_critical(confidence_level)
    # Same operation order as the reference implementation, so results agree to the bit.
    p = k / n
    denom = 1 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denom
    spread = z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    return Interval(max(0.0, centre - spread), min(1.0, centre + spread))


def wald_interval(estimate: float, se: float, *, confidence_level: float = 0.95) -> Interval:
    """Symmetric normal-approximation interval ``estimate -/+ z * se`` (not clipped).

    nan in either argument gives ``Interval(nan, nan)``.
    """
    z = z_critical(confidence_level)
    return Interval(estimate - z * se, estimate + z * se)


def fisher_z_interval(r: float, n: int, *, confidence_level: float = 0.95) -> Interval:
    """Interval for a correlation via Fisher's z with ``se = 1 / sqrt(n - 3)``.

    ``arctanh(r)`` is replaced by ``+/-3.0`` when ``|r| = 1``. For ``n <= 3`` or nan
    ``r`` the interval is ``Interval(nan, nan)`` (the reference implementation uses
    ``se = 1`` there; that branch is never reached by its classified results).
    """
    if n <= 3 or math.isnan(r):
        return NAN_INTERVAL
    z_r = math.atanh(r) if abs(r) < 1.0 else math.copysign(FISHER_Z_CAP, r)
    half = z_critical(confidence_level) / math.sqrt(n - 3)
    return Interval(math.tanh(z_r - half), math.tanh(z_r + half))
