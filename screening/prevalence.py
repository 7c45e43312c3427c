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
    "AuditInterval",
    "Difference",
    "Estimate",
    "audit_mean",
    "audit_proportion",
    "clopper_pearson_interval",
    "difference",
    "power_tuning",
    "ppi_mean",
]

#: The audit-only interval of a proportion: Wilson score or exact Clopper-Pearson.
AuditInterval = Literal["wilson", "exact"]

#: Fewer audit pairs on either side (applies / does not) than this and the normal
#: interval of a proportion is unreliable: the estimate says so in its ``note``.
MIN_SIDE = 5

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
    """

    estimate: float
    lower: float
    upper: float
    level: float = 0.95
    reason: str = ""

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


def _sides_note(y: np.ndarray[Any, np.dtype[np.float64]]) -> str:
    ones = int(np.sum(y == 1.0))
    zeros = int(np.sum(y == 0.0))
    if min(ones, zeros) < MIN_SIDE:
        return (
            f"only {min(ones, zeros)} audit pair(s) on one side (applies {ones}, not {zeros}): "
            "the normal interval may be too narrow"
        )
    return ""


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
    return Estimate(p, float(lower), float(upper), se, n, 0, method, level=level)


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
    return Estimate(mean, mean - half, mean + half, se, n, 0, "audit (normal)", level=level)


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
        binary: ``y`` is 0/1 (a prevalence): the estimate notes when the audit has too
            few pairs on one side for the normal interval, is refused when it has none
            on one side (the interval would have no width), and the interval is clipped
            to [0, 1].

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
    if binary and yv.min() == yv.max():
        which = "all" if yv[0] == 1.0 else "none of the"
        return _refused(
            f"the code applies to {which} {n} audit pairs: a normal interval would have no "
            "width (the audit's own interval still holds)",
            n=n,
            n_unlabeled=big_n,
            method="PPI++",
            level=level,
        )
    weight = power_tuning(yv, fv, uv) if lam is None else float(lam)
    rectifier = yv - weight * fv
    imputed = float(uv.mean()) if big_n else 0.0
    estimate = weight * imputed + float(rectifier.mean())
    imputed_var = weight**2 * float(uv.var()) / big_n if big_n else 0.0
    se = math.sqrt(imputed_var + float(rectifier.var()) / n)
    half = z_critical(level) * se
    lower, upper = estimate - half, estimate + half
    note = ""
    if binary:
        lower, upper = max(lower, 0.0), min(upper, 1.0)
        note = _sides_note(yv)
    return Estimate(
        estimate, lower, upper, se, n, big_n, "PPI++", lam=weight, level=level, note=note
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
    return Difference(d, lower, upper, level=first.level)
