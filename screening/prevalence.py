"""Prevalence of a code from a random audit and the model's predictions (METHOD.md section 4).

Pure functions over numpy arrays. The audit gives ``n`` labelled pairs with the human
value ``y`` and the model's prediction ``f``; the other ``N`` pairs have the prediction
``f_unlabeled`` only.

* :func:`audit_proportion`: the audit alone, a binomial proportion with the Wilson
  score interval (default) or the exact Clopper-Pearson interval.
* :func:`audit_mean`: the audit alone for a mean (an ordinal value): the normal interval
  with the sample standard deviation.
* :func:`ppi_mean`: prediction-powered inference for a mean (Angelopoulos, Bates,
  Fannjiang, Jordan, Zrnic, Science 2023) with the power tuning of PPI++ (Angelopoulos,
  Duchi, Zrnic 2023)::

      theta = lam * mean(f_unlabeled) + mean(y - lam * f)
      se^2  = lam^2 var(f_unlabeled) / N + var(y - lam * f) / n

  with ``lam = cov(y, f) / ((1 + n / N) var(f, f_unlabeled pooled))`` clipped to
  [0, 1] (``lam = 0`` is the audit alone, ``lam = 1`` plain PPI), and the normal
  interval. The arithmetic follows the authors' ``ppi_py.ppi_mean_ci`` with ``lam=None``
  (population variances, ``ddof=0``, in the standard errors; the pooled prediction
  variance with ``ddof=1`` in ``lam``), so the two agree on the same inputs.

  For a prevalence (``binary=True``) the normal interval is used only where the audit
  holds at least :data:`NORMAL_SIDE` decisions on each side (applies / does not);
  elsewhere it under-covers (simulated 0.42-0.93 for codes applying to 2-10% of
  responses), and the interval printed is a score interval for the rectified mean
  (:func:`score_interval`; docs/method.md, "Rare codes"), which is Wilson's when the
  predictions carry no weight. With fewer than :data:`MIN_SIDE` decisions on one side
  the predictions are given no weight at all (the audit alone).
* :func:`difference`: the difference of two independent estimates (two groups) with the
  square-and-add interval (Newcombe 1998; Zou and Donner 2008), which for two normal
  intervals is ``d -/+ z sqrt(se1^2 + se2^2)`` and for two Wilson intervals is
  Newcombe's hybrid score interval.

An estimate that cannot be computed is an :class:`Estimate` with nan values and a
``reason``, never an exception; malformed input (shapes, values outside [0, 1] for a
proportion) raises ``ValueError``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from screening.intervals import wilson_interval, z_critical
from screening.validation import check_confidence_level

__all__ = [
    "MIN_SIDE",
    "NORMAL_SIDE",
    "AuditInterval",
    "Difference",
    "Estimate",
    "audit_mean",
    "audit_proportion",
    "clopper_pearson_interval",
    "difference",
    "power_tuning",
    "ppi_mean",
    "score_interval",
]

#: The audit-only interval of a proportion: Wilson score or exact Clopper-Pearson.
AuditInterval = Literal["wilson", "exact"]

#: Fewer audit pairs on either side (applies / does not) than this and a prevalence's
#: predictions get no weight: the estimate is the audit's own share (score interval).
MIN_SIDE = 5
#: At least this many audit pairs on each side (applies / does not) and a prevalence gets
#: PPI++'s normal interval (``ppi_py``'s); fewer, the score interval.
NORMAL_SIDE = 40

_NAN = float("nan")


@dataclass(frozen=True)
class Estimate:
    """A prevalence (or mean) estimate with its two-sided interval.

    Attributes:
        estimate: The point estimate (nan when it cannot be computed).
        lower: Lower bound of the interval.
        upper: Upper bound.
        se: Its standard error (nan for the exact interval, which has none).
        n: Labelled (audit) pairs used.
        n_unlabeled: Pairs with the model's prediction only (0 for the audit alone).
        method: ``"audit (Wilson)"``, ``"audit (Clopper-Pearson)"``, ``"audit (normal)"``
            or ``"PPI++"``.
        lam: The power-tuning weight of the predictions (nan for the audit alone).
        level: The interval's confidence level.
        reason: Why there is no estimate (empty when there is one).
        note: A caution about an estimate that was computed (empty when none).
        interval: Which interval: ``"normal"``, ``"score"`` (the rectified mean's score
            interval), ``"wilson"``, ``"exact"`` (Clopper-Pearson); empty when refused.
        why: Why that interval, in words a methods section can quote (empty when the
            method alone says it).
    """

    estimate: float
    lower: float
    upper: float
    se: float
    n: int
    n_unlabeled: int
    method: str
    lam: float = _NAN
    level: float = 0.95
    reason: str = ""
    note: str = ""
    interval: str = ""
    why: str = ""

    @property
    def ok(self) -> bool:
        """Whether there is an estimate and an interval."""
        return not self.reason

    def to_dict(self) -> dict[str, Any]:
        """Plain values; nan as ``None``."""
        return {
            "estimate": _plain(self.estimate),
            "lower": _plain(self.lower),
            "upper": _plain(self.upper),
            "se": _plain(self.se),
            "n": self.n,
            "n_unlabeled": self.n_unlabeled,
            "method": self.method,
            "lambda": _plain(self.lam),
            "level": self.level,
            "reason": self.reason,
            "note": self.note,
            "interval": self.interval,
            "why": self.why,
        }


@dataclass(frozen=True)
class Difference:
    """The difference ``first - second`` of two independent estimates.

    Attributes:
        estimate: The difference of the point estimates.
        lower: Lower bound (square-and-add).
        upper: Upper bound.
        level: Confidence level (that of the two intervals).
        reason: Why there is no difference (empty when there is one).
        method: How the interval was formed, in words a methods section can quote.
    """

    estimate: float
    lower: float
    upper: float
    level: float = 0.95
    reason: str = ""
    method: str = ""

    @property
    def ok(self) -> bool:
        return not self.reason

    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly above or wholly below zero."""
        return self.ok and (self.lower > 0.0 or self.upper < 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": _plain(self.estimate),
            "lower": _plain(self.lower),
            "upper": _plain(self.upper),
            "level": self.level,
            "reason": self.reason,
            "method": self.method,
        }


def _plain(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _vector(values: ArrayLike, name: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds a missing or infinite value")
    return array


def _refused(reason: str, *, n: int, n_unlabeled: int, method: str, level: float) -> Estimate:
    return Estimate(_NAN, _NAN, _NAN, _NAN, n, n_unlabeled, method, level=level, reason=reason)


def clopper_pearson_interval(k: int, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided interval of the proportion ``k / n``.

    ``(0, 1)`` for ``n = 0``.

    Raises:
        ValueError: ``k`` or ``n`` negative, ``k > n``, or a level outside (0, 1).
    """
    check_confidence_level(level)
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 0.0, 1.0
    tail = (1.0 - level) / 2.0
    lower = 0.0 if k == 0 else float(stats.beta.ppf(tail, k, n - k + 1))
    upper = 1.0 if k == n else float(stats.beta.ppf(1.0 - tail, k + 1, n - k))
    return lower, upper


def _sides(y: np.ndarray[Any, np.dtype[np.float64]]) -> tuple[int, int]:
    ones = int(np.sum(y == 1.0))
    return ones, int(y.size) - ones


def _quadratic_roots(a: float, b: float, c: float) -> tuple[float, float] | None:
    disc = b * b - 4.0 * a * c
    if disc < 0.0:
        return None
    root = math.sqrt(disc)
    return (-b - root) / (2.0 * a), (-b + root) / (2.0 * a)


def score_interval(
    estimate: float,
    share: float,
    *,
    n: int,
    rectifier_var: float,
    imputed_var: float,
    lam: float,
    level: float = 0.95,
) -> tuple[float, float]:
    """The score interval of a PPI++ prevalence: every theta the score test keeps.

    A prevalence theta is kept when ``(|estimate - theta| - cc)^2 <= t^2 (imputed_var +
    v(theta) / n)``, ``t`` Student's quantile with ``n - 1`` degrees of freedom. ``v``
    is the rectifier's variance ``rectifier_var`` with the human decisions' own variance
    ``share (1 - share)`` replaced by its value under the hypothesis, ``theta (1 -
    theta)``, as Wilson's interval does for a proportion:

    * towards 1/2 from ``share`` (where the replacement widens): the whole replacement,
      and never less than the normal interval's variance (no narrower than it);
    * away from 1/2: the replacement weighted by ``1 - lam`` (the human decisions' part
      of the rectifier ``y - lam f``) with the continuity correction ``cc = (1 - lam) /
      (2 n)``.

    With ``lam = 0`` this is Wilson's interval towards 1/2 and the continuity-corrected
    Wilson bound away from it (at Student's quantile); with ``lam`` near 1 it approaches
    the normal interval away from 1/2 and stays Wilson-wide towards it, where the normal
    interval of a rare code under-covers. Clipped to [0, 1]; it always holds
    ``estimate``.

    Args:
        estimate: The PPI++ point estimate.
        share: The audit's share of "applies".
        n: Audit pairs.
        rectifier_var: ``var(y - lam f)`` over the audit (``ddof=0``).
        imputed_var: ``lam^2 var(f_unlabeled) / N``.
        lam: The weight of the predictions, in [0, 1].
        level: Confidence level in (0, 1).
    """
    check_confidence_level(level)
    # Student's quantile with n - 1 degrees of freedom: the variances are estimated from
    # the audit, and at 30 decisions the normal quantile left the score interval short.
    z2 = float(stats.t.ppf(0.5 + level / 2.0, n - 1)) ** 2 if n > 1 else z_critical(level) ** 2
    base = share * (1.0 - share)

    def bounds(weight: float, cc: float) -> tuple[float, float]:
        # (theta - centre)^2 <= z2 (imputed + (rectifier - weight base + weight theta (1 -
        # theta)) / n), a quadratic in theta, centred cc below and above the estimate.
        g = z2 * weight / n
        alpha = z2 * (imputed_var + (rectifier_var - weight * base) / n)
        low = _quadratic_roots(1.0 + g, -(2.0 * (estimate - cc) + g), (estimate - cc) ** 2 - alpha)
        high = _quadratic_roots(1.0 + g, -(2.0 * (estimate + cc) + g), (estimate + cc) ** 2 - alpha)
        return (
            estimate if low is None else min(estimate, low[0]),
            estimate if high is None else max(estimate, high[1]),
        )

    normal = math.sqrt(max(z2 * (imputed_var + rectifier_var / n), 0.0))
    toward_low, toward_high = bounds(1.0, 0.0)
    away_low, away_high = bounds(1.0 - lam, (1.0 - lam) / (2.0 * n))
    if share <= 0.5:
        lower, upper = away_low, max(toward_high, estimate + normal)
    else:
        lower, upper = min(toward_low, estimate - normal), away_high
    return max(lower, 0.0), min(upper, 1.0)


def audit_proportion(
    y: ArrayLike, *, level: float = 0.95, interval: AuditInterval = "wilson"
) -> Estimate:
    """The share of audit pairs to which the code applies, with a binomial interval.

    Args:
        y: Shape (n,): 1 where the human coder says the code applies, else 0.
        level: Confidence level in (0, 1).
        interval: ``"wilson"`` (score interval) or ``"exact"`` (Clopper-Pearson).

    Raises:
        ValueError: ``y`` not one-dimensional or not all 0/1, an unknown interval.
    """
    check_confidence_level(level)
    values = _vector(y, "y")
    if not np.all((values == 0.0) | (values == 1.0)):
        raise ValueError("a proportion needs 0/1 values")
    if interval not in ("wilson", "exact"):
        raise ValueError(f"interval must be 'wilson' or 'exact', not {interval!r}")
    method = "audit (Wilson)" if interval == "wilson" else "audit (Clopper-Pearson)"
    n = int(values.size)
    if n == 0:
        return _refused("no audit pairs", n=0, n_unlabeled=0, method=method, level=level)
    k = int(values.sum())
    p = k / n
    if interval == "wilson":
        lower, upper = wilson_interval(k, n, confidence_level=level)
        se = math.sqrt(p * (1.0 - p) / n)
    else:
        lower, upper = clopper_pearson_interval(k, n, level=level)
        se = _NAN
    return Estimate(p, float(lower), float(upper), se, n, 0, method, level=level, interval=interval)


def audit_mean(y: ArrayLike, *, level: float = 0.95) -> Estimate:
    """The mean of the audit values (e.g. an ordinal scale) with its normal interval.

    The standard error is the sample standard deviation (``ddof=1``) over ``sqrt(n)``.

    Raises:
        ValueError: ``y`` not one-dimensional or not finite.
    """
    check_confidence_level(level)
    values = _vector(y, "y")
    n = int(values.size)
    if n < 2:
        return _refused(
            f"{n} audit pair(s): a mean's interval needs at least 2",
            n=n,
            n_unlabeled=0,
            method="audit (normal)",
            level=level,
        )
    mean = float(values.mean())
    se = float(values.std(ddof=1)) / math.sqrt(n)
    half = z_critical(level) * se
    return Estimate(
        mean, mean - half, mean + half, se, n, 0, "audit (normal)", level=level, interval="normal"
    )


def power_tuning(y: ArrayLike, f: ArrayLike, f_unlabeled: ArrayLike) -> float:
    """PPI++'s weight of the predictions for a mean, clipped to [0, 1].

    ``lam = cov(y, f) / ((1 + n / N) var(f pooled with f_unlabeled))``, the covariance
    with ``ddof=0`` and the pooled variance with ``ddof=1`` as in ``ppi_py``. Constant
    predictions carry no information: ``lam = 0``. With no unlabeled pairs ``lam = 0``.

    Raises:
        ValueError: shapes that do not match.
    """
    yv, fv, uv = _checked(y, f, f_unlabeled)
    n, big_n = yv.size, uv.size
    if n == 0 or big_n == 0:
        return 0.0
    pooled = np.concatenate([fv, uv])
    var = float(np.var(pooled, ddof=1)) if pooled.size > 1 else 0.0
    if var <= 0.0:
        return 0.0
    # Centred at the sample means, so the PPI point estimate ppi_py centres at cancels.
    cov = float(np.mean((yv - yv.mean()) * (fv - fv.mean())))
    return float(np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0))


def _checked(
    y: ArrayLike, f: ArrayLike, f_unlabeled: ArrayLike
) -> tuple[
    np.ndarray[Any, np.dtype[np.float64]],
    np.ndarray[Any, np.dtype[np.float64]],
    np.ndarray[Any, np.dtype[np.float64]],
]:
    yv = _vector(y, "y")
    fv = _vector(f, "f")
    uv = _vector(f_unlabeled, "f_unlabeled")
    if yv.shape != fv.shape:
        raise ValueError(
            f"y and f must have the same shape (one prediction per audit pair), got "
            f"{yv.shape} and {fv.shape}"
        )
    return yv, fv, uv


def ppi_mean(
    y: ArrayLike,
    f: ArrayLike,
    f_unlabeled: ArrayLike,
    *,
    level: float = 0.95,
    lam: float | None = None,
    binary: bool = False,
) -> Estimate:
    """The prediction-powered (PPI++) estimate of a mean with its normal interval.

    Args:
        y: Shape (n,): the human values of the audit pairs.
        f: Shape (n,): the model's predictions of the same pairs.
        f_unlabeled: Shape (N,): the model's predictions of every other pair.
        level: Confidence level in (0, 1).
        lam: The weight of the predictions; None tunes it (:func:`power_tuning`).
        binary: ``y`` is 0/1 (a prevalence): the interval is the normal one only with
            at least :data:`NORMAL_SIDE` audit pairs on each side, else the score
            interval (:func:`score_interval`); with fewer than :data:`MIN_SIDE` on one
            side the predictions get no weight (``lam`` is set to 0, the audit alone);
            the interval is clipped to [0, 1]. The estimate's ``why`` says which.

    Returns:
        The estimate; refused (nan, with a reason) with fewer than 2 audit pairs.

    Raises:
        ValueError: shapes that do not match, values not finite, ``lam`` outside
            [0, 1], ``binary`` with values other than 0/1.
    """
    check_confidence_level(level)
    yv, fv, uv = _checked(y, f, f_unlabeled)
    n, big_n = int(yv.size), int(uv.size)
    if binary and not np.all((yv == 0.0) | (yv == 1.0)):
        raise ValueError("a prevalence needs 0/1 audit values")
    if lam is not None and not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must lie in [0, 1], got {lam}")
    if n < 2:
        return _refused(
            f"{n} audit pair(s): an interval needs at least 2",
            n=n,
            n_unlabeled=big_n,
            method="PPI++",
            level=level,
        )
    weight = power_tuning(yv, fv, uv) if lam is None else float(lam)
    ones, zeros = _sides(yv) if binary else (n, n)
    thin = binary and min(ones, zeros) < MIN_SIDE
    if thin:
        weight = 0.0
    rectifier = yv - weight * fv
    imputed = float(uv.mean()) if big_n else 0.0
    estimate = weight * imputed + float(rectifier.mean())
    imputed_var = weight**2 * float(uv.var()) / big_n if big_n else 0.0
    se = math.sqrt(imputed_var + float(rectifier.var()) / n)
    if not binary:
        half = z_critical(level) * se
        return Estimate(
            estimate,
            estimate - half,
            estimate + half,
            se,
            n,
            big_n,
            "PPI++",
            lam=weight,
            level=level,
            interval="normal",
        )
    sides = f"{ones} audit decision(s) of applies and {zeros} of does not"
    if min(ones, zeros) >= NORMAL_SIDE:
        half = z_critical(level) * se
        lower, upper = max(estimate - half, 0.0), min(estimate + half, 1.0)
        interval = "normal"
        why = (
            f"the normal interval of PPI++ ({sides}, at least {NORMAL_SIDE} on each side, "
            "where its normal approximation holds)"
        )
    else:
        lower, upper = score_interval(
            estimate,
            ones / n,
            n=n,
            rectifier_var=float(rectifier.var()),
            imputed_var=imputed_var,
            lam=weight,
            level=level,
        )
        interval = "score"
        why = (
            f"a score interval ({sides}: fewer than {NORMAL_SIDE} on a side, where the "
            "normal interval is too narrow; the variance of the human decisions is taken "
            "at each prevalence tested, as Wilson's interval does)"
        )
        if thin:
            why += (
                f"; with fewer than {MIN_SIDE} on a side the model's predictions are given "
                "no weight (the audit alone)"
            )
    return Estimate(
        estimate,
        lower,
        upper,
        se,
        n,
        big_n,
        "PPI++",
        lam=weight,
        level=level,
        interval=interval,
        why=why,
    )


def difference(first: Estimate, second: Estimate) -> Difference:
    """``first - second`` for two independent estimates (two groups), square-and-add.

    ``lower = d - sqrt((e1 - l1)^2 + (u2 - e2)^2)``, ``upper = d + sqrt((u1 - e1)^2 +
    (e2 - l2)^2)``: for normal intervals ``d -/+ z sqrt(se1^2 + se2^2)``, for Wilson
    intervals Newcombe's hybrid score interval, for exact intervals its analogue.

    Raises:
        ValueError: the two estimates have different confidence levels.
    """
    if first.level != second.level:
        raise ValueError(
            f"estimates at different levels ({first.level} and {second.level}) cannot be "
            "differenced"
        )
    if not first.ok or not second.ok:
        reason = first.reason or second.reason
        return Difference(_NAN, _NAN, _NAN, level=first.level, reason=reason)
    d = first.estimate - second.estimate
    lower = d - math.hypot(first.estimate - first.lower, second.upper - second.estimate)
    upper = d + math.hypot(first.upper - first.estimate, second.estimate - second.lower)
    return Difference(d, lower, upper, level=first.level, method=_difference_method(first, second))


#: How each kind of interval is named in a difference's method.
_KINDS = {
    "normal": "normal",
    "score": "score",
    "wilson": "Wilson score",
    "exact": "exact (Clopper-Pearson)",
}


def _difference_method(first: Estimate, second: Estimate) -> str:
    kinds = sorted({_KINDS.get(e.interval, e.interval or "normal") for e in (first, second)})
    which = (
        f"two {kinds[0]} intervals"
        if len(kinds) == 1
        else f"a {kinds[0]} and a {kinds[1]} interval"
    )
    if kinds == ["normal"]:
        return (
            "the difference of the estimates with the square-and-add interval of "
            f"{which} (their variances added)"
        )
    return (
        f"the difference of the estimates with the square-and-add interval (MOVER; Newcombe "
        f"1998, Zou and Donner 2008) of {which}, which keeps each interval's asymmetry"
    )
