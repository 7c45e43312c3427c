"""Inter-coder reliability: percent agreement, Cohen's kappa, Krippendorff's alpha.

The one implementation of these coefficients in codecurve (the formulas are in
:mod:`screening.coefficients`, re-exported here); :mod:`screening.agreement` wraps it for
the screen's model-vs-coder figures. Pure functions over numpy arrays.

Reliability data has shape (n_coders, n_units): one row per coder, one column per unit
(a response x code pair), missing ratings as ``None`` or nan. The category set and its
order come from ``labels`` (pass the scale's values, so that unused options still count
for weighted kappa), else from the sorted distinct observed values.

A coefficient that cannot be computed (no units, one category in all the data) is a
:class:`Coefficient` whose ``value`` is None and whose ``reason`` says why: never nan.

- :func:`percent_coefficient`: mean over units of the share of agreeing rating pairs.
- :func:`kappa_coefficient`: Cohen's kappa for two coders, unweighted or weighted.
- :func:`alpha_coefficient`: Krippendorff's alpha, nominal, ordinal or interval.
- :func:`reliability`: all three with percentile bootstrap intervals over units,
  prevalence per coder and the prevalence-paradox flag.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from screening.coefficients import (
    NO_UNITS,
    ONE_CATEGORY_ALPHA,
    ONE_CATEGORY_KAPPA,
    AlphaLevel,
    Coefficient,
    KappaWeights,
    alpha_coefficient,
    alpha_of,
    check_level,
    encode_ratings,
    kappa_coefficient,
    kappa_of,
    kappa_weights,
    missing_mask,
    pairable_units,
    percent_coefficient,
    percent_of,
)
from screening.validation import check_confidence_level

__all__ = [
    "AlphaLevel",
    "Bootstrap",
    "Coefficient",
    "Estimate",
    "KappaWeights",
    "Reliability",
    "alpha_coefficient",
    "constant_rater",
    "encode_ratings",
    "kappa_coefficient",
    "missing_mask",
    "percent_coefficient",
    "prevalence_paradox",
    "reliability",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

#: Units fewer than this make every coefficient undefined in :func:`reliability`.
MIN_UNITS = 2
#: Resampled units x resamples handled at once (bounds memory for large pooled sets).
_BLOCK_CELLS = 2_000_000
NAN = float("nan")


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its bootstrap interval.

    Attributes:
        value: The estimate; None when undefined.
        low: Lower bound of the interval; None when there is none.
        high: Upper bound of the interval; None when there is none.
        reason: Why the estimate (or only its interval) is missing, else None.
        undefined_resamples: Resamples in which the coefficient was undefined; they are
            left out of the interval.
    """

    value: float | None
    low: float | None = None
    high: float | None = None
    reason: str | None = None
    undefined_resamples: int = 0

    @property
    def defined(self) -> bool:
        return self.value is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "reason": self.reason,
            "undefined_resamples": self.undefined_resamples,
        }


@dataclass(frozen=True)
class Bootstrap:
    """How the intervals were made: percentile bootstrap over units (or clusters).

    Attributes:
        resamples: Number of bootstrap resamples.
        seed: Seed of ``numpy.random.default_rng``.
        confidence_level: Coverage of the intervals, e.g. 0.95.
        over: What was resampled: ``"units"`` or ``"clusters"``.
    """

    resamples: int
    seed: int
    confidence_level: float
    over: str = "units"

    def describe(self) -> str:
        """One line for a caption, e.g. for a methods section."""
        return (
            f"{self.confidence_level:.0%} percentile bootstrap intervals over {self.over}, "
            f"{self.resamples:,} resamples, seed {self.seed}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": "percentile",
            "resamples": self.resamples,
            "seed": self.seed,
            "confidence_level": self.confidence_level,
            "over": self.over,
        }


@dataclass(frozen=True)
class Reliability:
    """Agreement of two or more coders on one set of units.

    Attributes:
        coders: Coder names, one per row of the data.
        categories: The ordered categories.
        n_units: Units rated by two or more coders (the pairable units used).
        n_ratings: Ratings in those units.
        percent: Percent agreement (share in [0, 1]).
        kappa: Cohen's kappa; None unless there are exactly two coders.
        kappa_weights: None (unweighted), ``"linear"`` or ``"quadratic"``.
        alpha: Krippendorff's alpha.
        level: Alpha's level of measurement.
        prevalence: Per coder, the share of their ratings (in the units used) in each
            category; None for a coder with no rating there.
        paradox: Words when a coder gave one value to every unit (a constant rater,
            :func:`constant_rater`), or when high agreement and a low coefficient come
            from a skewed prevalence (the kappa paradox), else None.
        bootstrap: How the intervals were made.
    """

    coders: tuple[str, ...]
    categories: tuple[Any, ...]
    n_units: int
    n_ratings: int
    percent: Estimate
    kappa: Estimate | None
    kappa_weights: KappaWeights
    alpha: Estimate
    level: AlphaLevel
    prevalence: tuple[tuple[float, ...] | None, ...]
    paradox: str | None
    bootstrap: Bootstrap

    def to_dict(self) -> dict[str, Any]:
        return {
            "coders": list(self.coders),
            "categories": [_plain(c) for c in self.categories],
            "n_units": self.n_units,
            "n_ratings": self.n_ratings,
            "percent": self.percent.to_dict(),
            "kappa": None if self.kappa is None else self.kappa.to_dict(),
            "kappa_weights": self.kappa_weights or "none",
            "alpha": self.alpha.to_dict(),
            "alpha_level": self.level,
            "prevalence": {
                coder: None
                if shares is None
                else dict(zip(map(str, self.categories), shares, strict=True))
                for coder, shares in zip(self.coders, self.prevalence, strict=True)
            },
            "paradox": self.paradox,
            "bootstrap": self.bootstrap.to_dict(),
        }


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


# --- reliability with intervals ---------------------------------------------------------


def prevalence_paradox(
    *,
    percent: float | None,
    coefficient: float | None,
    coefficient_name: str,
    shares: Sequence[float],
    names: Sequence[str],
    min_agreement: float = 0.8,
    max_coefficient: float = 0.4,
    min_prevalence: float = 0.8,
) -> str | None:
    """Words for high agreement with a low coefficient caused by a skewed prevalence.

    Flags when ``percent >= min_agreement``, ``coefficient < max_coefficient`` and one
    category holds more than ``min_prevalence`` of all ratings.

    Args:
        percent: Percent agreement (share).
        coefficient: Kappa or alpha.
        coefficient_name: "kappa" or "alpha", for the words.
        shares: Share of all ratings in each category.
        names: Display name of each category.
        min_agreement: Agreement at or above which agreement counts as high.
        max_coefficient: Coefficient below which it counts as low.
        min_prevalence: Share above which one category dominates.

    Returns:
        A sentence, or None when the pattern is absent.
    """
    if percent is None or coefficient is None or not len(shares):
        return None
    top = int(np.argmax(shares))
    if percent >= min_agreement and coefficient < max_coefficient and shares[top] > min_prevalence:
        return (
            f"high agreement ({percent:.0%}) with low {coefficient_name} ({coefficient:.2f}) "
            f"comes from prevalence: {shares[top]:.0%} of the ratings are {names[top]!s}, "
            f"so most agreement is expected by chance (the kappa paradox); report the "
            f"prevalence with the coefficient"
        )
    return None


def constant_rater(
    prevalence: Sequence[Sequence[float] | None],
    coders: Sequence[str],
    names: Sequence[str],
    *,
    coefficient_name: str = "kappa",
) -> str | None:
    """Words for a rater who gave one value to every item, or None.

    Such a rater is constant: kappa is 0 (or undefined) by construction, whatever the
    other rater does, because it cannot agree more than chance would. That is not the
    kappa paradox (a skewed prevalence of two raters who both vary); it means the
    constant rater tells nothing apart.
    """
    for coder, shares in zip(coders, prevalence, strict=True):
        if shares is None or not len(shares):
            continue
        top = int(np.argmax(shares))
        if shares[top] >= 1.0 - 1e-12:
            return (
                f"{coder} gave {names[top]!s} to every item: a constant rater, so "
                f"{coefficient_name} is 0 or undefined by construction (not the kappa "
                f"paradox); {coder}'s ratings tell nothing apart"
            )
    return None


#: Largest share of resamples in which a coefficient may be undefined and still have an
#: interval (our choice): beyond it the defined resamples are those that happened to draw
#: a rare category, and their interval (often [1.00, 1.00]) would claim a certainty the
#: units do not give.
MAX_UNDEFINED_SHARE = 0.05


def _estimate(point: float, draws: FloatArray, level: float, undefined: str) -> Estimate:
    if math.isnan(point):
        return Estimate(None, reason=undefined)
    good = draws[~np.isnan(draws)]
    bad = int(draws.size - good.size)
    if good.size == 0:
        return Estimate(point, reason="no resample had a defined value", undefined_resamples=bad)
    if bad > MAX_UNDEFINED_SHARE * draws.size:
        return Estimate(
            point,
            reason=(
                f"no interval: undefined in {bad} of {draws.size} resamples (a category too "
                "rare among these units), so the rest would overstate the certainty"
            ),
            undefined_resamples=bad,
        )
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(good, [tail, 1.0 - tail])
    return Estimate(point, float(low), float(high), undefined_resamples=bad)


def _bootstrap_weights(
    n_clusters: int, cluster_of: IntArray, resamples: int, seed: int
) -> list[FloatArray]:
    """Resample weights per unit: how often each unit's cluster was drawn, in blocks."""
    rng = np.random.default_rng(seed)
    per_block = max(1, _BLOCK_CELLS // max(len(cluster_of), 1))
    blocks = []
    done = 0
    while done < resamples:
        size = min(per_block, resamples - done)
        drawn = rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=size)
        blocks.append(np.asarray(drawn[:, cluster_of], dtype=np.float64))
        done += size
    return blocks


def reliability(
    data: npt.ArrayLike | Sequence[Sequence[Any]],
    *,
    coders: Sequence[str] | None = None,
    level: AlphaLevel = "nominal",
    weights: KappaWeights = None,
    labels: npt.ArrayLike | None = None,
    names: Sequence[str] | None = None,
    clusters: npt.ArrayLike | None = None,
    resamples: int = 1000,
    seed: int = 0,
    confidence_level: float = 0.95,
) -> Reliability:
    """Percent agreement, Cohen's kappa (two coders) and Krippendorff's alpha, with intervals.

    Intervals are percentile bootstrap intervals: units (or, with ``clusters``, whole
    clusters of units, e.g. all codes of one response) are drawn with replacement,
    ``resamples`` times from ``numpy.random.default_rng(seed)``; resamples in which a
    coefficient is undefined are left out of its interval and counted.

    Args:
        data: Shape (n_coders, n_units); missing ratings as None or nan.
        coders: One name per row (default "coder 1", "coder 2", ...).
        level: Alpha's level of measurement.
        weights: Kappa's weights.
        labels: Ordered categories; default the sorted distinct observed values.
        names: Display names of ``labels``, for the paradox's words.
        clusters: Shape (n_units,), a cluster key per unit; resample clusters.
        resamples: Number of bootstrap resamples (0: no intervals).
        seed: Seed of the resampling.
        confidence_level: Coverage of the intervals, in (0, 1).

    Returns:
        The coefficients over the units rated by two or more coders; each undefined,
        with a reason, when fewer than 2 such units exist or one category fills the data.

    Raises:
        ValueError: Malformed input: not 2-D, rows of different lengths, fewer than two
            coders, names or clusters of the wrong length, a rating not in ``labels``,
            an unknown level or weights, a bad ``resamples`` or ``confidence_level``.
    """
    check_level(level)
    kappa_weights(1, weights)
    check_confidence_level(confidence_level)
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 0:
        raise ValueError(f"resamples must be a non-negative integer, got {resamples!r}")
    codes, cats = encode_ratings(data, labels=labels)
    n_coders, n_all = codes.shape
    if n_coders < 2:
        raise ValueError(f"reliability needs two or more coders, got {n_coders}")
    names_of_coders = (
        tuple(coders) if coders is not None else tuple(f"coder {i + 1}" for i in range(n_coders))
    )
    if len(names_of_coders) != n_coders:
        raise ValueError(f"{len(names_of_coders)} coder names for {n_coders} rows of ratings")
    shown = [str(c) for c in cats] if names is None else [str(n) for n in names]
    if len(shown) != len(cats):
        raise ValueError(f"{len(shown)} category names for {len(cats)} categories")
    units, keep = pairable_units(codes, len(cats))
    if clusters is None:
        cluster_of = np.arange(units.n, dtype=np.intp)
        over = "units"
    else:
        keys = np.asarray(clusters, dtype=object)
        if keys.shape != (n_all,):
            raise ValueError(f"clusters must have shape ({n_all},), got {keys.shape}")
        _, inverse = np.unique(keys[keep].astype(str), return_inverse=True)
        cluster_of = np.asarray(inverse, dtype=np.intp).ravel()
        over = "clusters"
    spec = Bootstrap(resamples, seed, confidence_level, over)
    kept = codes[:, keep]
    prevalence = tuple(
        None
        if not np.any(row >= 0)
        else tuple(
            float(x) for x in np.bincount(row[row >= 0], minlength=len(cats)) / np.sum(row >= 0)
        )
        for row in kept
    )
    two = n_coders == 2
    if units.n < MIN_UNITS:
        why = NO_UNITS if units.n == 0 else "only one item was rated by two or more coders"
        undefined = Estimate(None, reason=why)
        return Reliability(
            names_of_coders, cats, units.n, int(np.sum(kept >= 0)), undefined,
            undefined if two else None, weights, undefined, level, prevalence, None, spec,
        )  # fmt: skip
    one = np.ones((1, units.n))
    points = {
        "percent": float(percent_of(units, one)[0]),
        "alpha": float(alpha_of(units, one, level, cats)[0]),
        "kappa": float(kappa_of(units, one, weights)[0]) if two else NAN,
    }
    draws: dict[str, list[FloatArray]] = {key: [] for key in points}
    if resamples:
        n_clusters = int(cluster_of.max()) + 1
        # Each block is a small matrix product: BLAS threads only wait on one another
        # there (twice the time on two busy cores), so one thread does them all.
        with threadpool_limits(limits=1, user_api="blas"):
            for w in _bootstrap_weights(n_clusters, cluster_of, resamples, seed):
                draws["percent"].append(percent_of(units, w))
                draws["alpha"].append(alpha_of(units, w, level, cats))
                if two:
                    draws["kappa"].append(kappa_of(units, w, weights))
    joined = {k: np.concatenate(v) if v else np.zeros(0) for k, v in draws.items()}
    percent = _estimate(points["percent"], joined["percent"], confidence_level, NO_UNITS)
    alpha = _estimate(points["alpha"], joined["alpha"], confidence_level, ONE_CATEGORY_ALPHA)
    kappa = (
        _estimate(points["kappa"], joined["kappa"], confidence_level, ONE_CATEGORY_KAPPA)
        if two
        else None
    )
    if resamples == 0:
        percent, alpha = _no_interval(percent), _no_interval(alpha)
        kappa = None if kappa is None else _no_interval(kappa)
    pooled = units.counts.sum(axis=0)
    name = "kappa" if kappa is not None else "alpha"
    paradox = constant_rater(
        prevalence, names_of_coders, shown, coefficient_name=name
    ) or prevalence_paradox(
        percent=percent.value,
        coefficient=kappa.value if kappa is not None else alpha.value,
        coefficient_name=name,
        shares=list(pooled / pooled.sum()),
        names=shown,
    )
    return Reliability(
        coders=names_of_coders,
        categories=cats,
        n_units=units.n,
        n_ratings=int(pooled.sum()),
        percent=percent,
        kappa=kappa,
        kappa_weights=weights,
        alpha=alpha,
        level=level,
        prevalence=prevalence,
        paradox=paradox,
        bootstrap=spec,
    )


def _no_interval(estimate: Estimate) -> Estimate:
    if not estimate.defined:
        return estimate
    return Estimate(estimate.value, reason="no interval: 0 resamples")
