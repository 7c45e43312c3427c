"""The coefficients themselves: percent agreement, Cohen's kappa, Krippendorff's alpha.

Each statistic is a sum over units, so :func:`percent_of`, :func:`kappa_of` and
:func:`alpha_of` take a weight per unit: ones for the point estimate, bootstrap counts
for a resample (see :mod:`screening.reliability`). A coefficient that cannot be computed
is a :class:`Coefficient` with no value and a reason, never nan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

__all__ = [
    "NO_UNITS",
    "ONE_CATEGORY_ALPHA",
    "ONE_CATEGORY_KAPPA",
    "AlphaLevel",
    "Coefficient",
    "KappaWeights",
    "Units",
    "alpha_coefficient",
    "alpha_of",
    "check_level",
    "encode_ratings",
    "kappa_coefficient",
    "kappa_of",
    "kappa_weights",
    "missing_mask",
    "pairable_units",
    "percent_coefficient",
    "percent_of",
]

KappaWeights = Literal["linear", "quadratic"] | None
AlphaLevel = Literal["nominal", "ordinal", "interval"]
IntArray = npt.NDArray[np.intp]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Coefficient:
    """A coefficient's value, or why it has none.

    Attributes:
        value: The value; None when it is undefined.
        reason: Why it is undefined (None when defined).
    """

    value: float | None
    reason: str | None = None

    @property
    def defined(self) -> bool:
        return self.value is not None


NO_UNITS = "no item was rated by two or more coders"
ONE_CATEGORY_ALPHA = "only one category occurs among the ratings"
ONE_CATEGORY_KAPPA = "both coders used a single, identical category throughout"


# --- input ------------------------------------------------------------------------------


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, (float, np.floating)) and math.isnan(value))


def missing_mask(values: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """True where a rating is missing (None, or nan in a float or object array)."""
    if values.dtype.kind == "f":
        return np.asarray(np.isnan(values), dtype=np.bool_)
    if values.dtype.kind == "O":
        return np.array([_is_missing(v) for v in values.ravel()], dtype=bool).reshape(values.shape)
    return np.zeros(values.shape, dtype=bool)


def _categories(observed: npt.NDArray[Any], labels: npt.ArrayLike | None) -> list[Any]:
    if labels is not None:
        cats = list(np.asarray(labels).ravel().tolist())
        if len(set(cats)) != len(cats):
            raise ValueError(f"labels must be distinct, got {cats!r}")
        if any(_is_missing(c) for c in cats):
            raise ValueError("labels must not contain missing values")
        return cats
    try:
        return sorted(set(observed.tolist()))
    except TypeError as exc:
        raise ValueError(f"ratings mix types that cannot be ordered: {exc}") from exc


def _as_matrix(data: npt.ArrayLike | Sequence[Sequence[Any]], name: str) -> npt.NDArray[Any]:
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        lengths = [len(row) if isinstance(row, Sequence | np.ndarray) else -1 for row in data]
        if -1 not in lengths and len(set(lengths)) > 1:
            raise ValueError(
                f"{name}: every coder needs one rating per unit, got lengths {lengths}"
            )
    try:
        array = np.asarray(data)
    except ValueError as exc:
        raise ValueError(f"{name}: rows of different lengths ({exc})") from None
    if array.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D of shape (n_coders, n_units), got shape {array.shape}"
        )
    return array


def encode_ratings(
    data: npt.ArrayLike | Sequence[Sequence[Any]], *, labels: npt.ArrayLike | None = None
) -> tuple[IntArray, tuple[Any, ...]]:
    """Category positions of a reliability matrix, -1 where missing.

    Args:
        data: Shape (n_coders, n_units); missing ratings as None or nan.
        labels: Ordered categories; default the sorted distinct observed values.

    Returns:
        The codes, shape (n_coders, n_units), and the ordered categories.

    Raises:
        ValueError: If the data is not 2-D (rows of different lengths) or a rating is
            not in ``labels``.
    """
    array = _as_matrix(data, "reliability data")
    obj = array.astype(object)
    missing = missing_mask(array)
    cats = _categories(obj[~missing], labels)
    index = {c: i for i, c in enumerate(cats)}
    codes = np.full(array.shape, -1, dtype=np.intp)
    present = obj[~missing].tolist()
    try:
        codes[~missing] = [index[v] for v in present]
    except KeyError as exc:
        raise ValueError(f"a rating {exc.args[0]!r} is not in labels") from None
    return codes, tuple(cats)


# --- the statistics on weighted units ---------------------------------------------------


@dataclass(frozen=True)
class Units:
    """Pairable units and what each contributes; statistics are sums over units.

    The per-unit coincidences and coder-pair cells are (n, k*k): they are built when a
    statistic asks for them, so that percent agreement over many categories (float
    ratings) never builds them.
    """

    counts: FloatArray  # (n, k): raters per category
    agree: FloatArray  # (n,): share of agreeing rating pairs in the unit
    cells: IntArray | None  # (n,): the (coder 1, coder 2) cell, two coders only
    k: int

    @property
    def n(self) -> int:
        return int(self.counts.shape[0])

    @cached_property
    def coincidence(self) -> FloatArray:
        """(n, k*k): each unit's coincidences (Krippendorff)."""
        counts, kk = self.counts, self.k
        m = counts.sum(axis=1)
        outer = counts[:, :, None] * counts[:, None, :]
        outer[:, np.arange(kk), np.arange(kk)] -= counts
        coincidence = outer / np.maximum(m - 1.0, 1.0)[:, None, None]
        return np.asarray(coincidence.reshape(len(m), kk * kk), dtype=np.float64)

    @cached_property
    def pairs(self) -> FloatArray | None:
        """(n, k*k): one-hot (coder 1, coder 2) cell per unit; None beyond two coders."""
        if self.cells is None:
            return None
        pairs = np.zeros((self.n, self.k * self.k), dtype=np.float64)
        pairs[np.arange(self.n), self.cells] = 1.0
        return pairs


def pairable_units(codes: IntArray, k: int) -> tuple[Units, npt.NDArray[np.bool_]]:
    n_coders, n_all = codes.shape
    counts = np.zeros((n_all, max(k, 1)), dtype=np.float64)
    coder, unit = np.nonzero(codes >= 0)
    np.add.at(counts, (unit, codes[coder, unit]), 1.0)
    m = counts.sum(axis=1)
    keep = m >= 2
    counts, m = counts[keep], m[keep]
    kk = counts.shape[1]
    agree = np.sum(counts * (counts - 1.0), axis=1) / np.maximum(m * (m - 1.0), 1.0)
    cells = codes[0, keep] * kk + codes[1, keep] if n_coders == 2 else None
    return Units(counts, agree, cells, kk), keep


def kappa_weights(k: int, weights: KappaWeights) -> FloatArray:
    i, j = np.indices((k, k))
    if weights is None:
        return np.asarray(i != j, dtype=np.float64)
    if weights == "linear":
        return np.asarray(np.abs(i - j), dtype=np.float64)
    if weights == "quadratic":
        return np.asarray((i - j) ** 2, dtype=np.float64)
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


def check_level(level: str) -> None:
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"level must be 'nominal', 'ordinal' or 'interval', got {level!r}")


def _alpha_delta(level: AlphaLevel, marginals: FloatArray, cats: Sequence[Any]) -> FloatArray:
    """Squared distances between categories, shape (B, k, k) for marginals (B, k)."""
    b, k = marginals.shape
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(k), (b, k, k))
    if level == "ordinal":
        # Krippendorff's ordinal metric: (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2.
        cum = np.concatenate([np.zeros((b, 1)), np.cumsum(marginals, axis=1)], axis=1)
        c, d = np.indices((k, k))
        lo, hi = np.minimum(c, d), np.maximum(c, d)
        span = cum[:, hi + 1] - cum[:, lo] - (marginals[:, c] + marginals[:, d]) / 2.0
        return np.asarray(span**2, dtype=np.float64)
    try:
        values = np.asarray(cats, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError("level='interval' needs numeric ratings") from exc
    return np.broadcast_to(np.subtract.outer(values, values) ** 2, (b, k, k))


def percent_of(units: Units, w: FloatArray) -> FloatArray:
    return np.asarray((w @ units.agree) / w.sum(axis=1), dtype=np.float64)


def alpha_of(units: Units, w: FloatArray, level: AlphaLevel, cats: Sequence[Any]) -> FloatArray:
    k = units.k
    coinc = (w @ units.coincidence).reshape(-1, k, k)
    marginals = coinc.sum(axis=2)
    total = marginals.sum(axis=1)
    delta = _alpha_delta(level, marginals, cats)
    observed = np.sum(coinc * delta, axis=(1, 2))
    expected = np.sum(marginals[:, :, None] * marginals[:, None, :] * delta, axis=(1, 2))
    expected = expected / np.maximum(total - 1.0, 1e-300)
    out = np.full(len(w), np.nan)
    ok = expected > 1e-12 * np.maximum(total, 1.0)
    out[ok] = 1.0 - observed[ok] / expected[ok]
    return out


def kappa_of(units: Units, w: FloatArray, weights: KappaWeights) -> FloatArray:
    assert units.pairs is not None
    k = units.k
    observed = (w @ units.pairs).reshape(-1, k, k)
    observed = observed / observed.sum(axis=(1, 2))[:, None, None]
    expected = observed.sum(axis=2)[:, :, None] * observed.sum(axis=1)[:, None, :]
    wk = kappa_weights(k, weights)
    chance = np.sum(wk * expected, axis=(1, 2))
    out = np.full(len(w), np.nan)
    ok = chance > 1e-12
    out[ok] = 1.0 - np.sum(wk * observed, axis=(1, 2))[ok] / chance[ok]
    return out


def _coefficient(values: FloatArray, reason: str) -> Coefficient:
    value = float(values[0])
    return Coefficient(None, reason) if math.isnan(value) else Coefficient(value)


def percent_coefficient(
    data: npt.ArrayLike | Sequence[Sequence[Any]], *, labels: npt.ArrayLike | None = None
) -> Coefficient:
    """Percent agreement: the mean over units of the share of agreeing rating pairs.

    For two coders this is the share of units both rated identically.

    Args:
        data: Shape (n_coders, n_units); missing ratings as None or nan.
        labels: Ordered categories; default the sorted distinct observed values.

    Returns:
        A share in [0, 1], or undefined when no unit has two ratings.
    """
    codes, cats = encode_ratings(data, labels=labels)
    units, _ = pairable_units(codes, len(cats))
    if units.n == 0:
        return Coefficient(None, NO_UNITS)
    return _coefficient(percent_of(units, np.ones((1, units.n))), NO_UNITS)


def kappa_coefficient(
    y1: npt.ArrayLike | Sequence[Any],
    y2: npt.ArrayLike | Sequence[Any],
    *,
    labels: npt.ArrayLike | None = None,
    weights: KappaWeights = None,
) -> Coefficient:
    """Cohen's kappa: agreement of two coders beyond chance.

    ``kappa = 1 - sum(w * O) / sum(w * E)`` with O the observed and E the
    chance-expected (product of the coders' margins) joint proportions and w the
    disagreement weights on label positions: 1 off the diagonal (unweighted),
    ``|i - j|`` (linear), ``(i - j)^2`` (quadratic). Units either coder left unrated
    are left out.

    Args:
        y1: Shape (n_units,), the first coder's ratings (None or nan where missing).
        y2: Shape (n_units,), the second coder's ratings.
        labels: Ordered categories; default the sorted distinct observed values.
        weights: None, ``"linear"`` or ``"quadratic"``.

    Returns:
        Kappa in [-1, 1], or undefined (no units; one and the same category only).

    Raises:
        ValueError: If the lengths differ, a rating is not in ``labels`` or ``weights``
            is unknown.
    """
    kappa_weights(1, weights)
    a, b = np.asarray(y1), np.asarray(y2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"y1 and y2 must be 1-D, got shapes {a.shape} and {b.shape}")
    if a.shape != b.shape:
        raise ValueError(f"y1 and y2 must have the same length, got {a.size} and {b.size}")
    codes, cats = encode_ratings([a.astype(object), b.astype(object)], labels=labels)
    units, _ = pairable_units(codes, len(cats))
    if units.n == 0:
        return Coefficient(None, "no item was rated by both coders")
    return _coefficient(kappa_of(units, np.ones((1, units.n)), weights), ONE_CATEGORY_KAPPA)


def alpha_coefficient(
    data: npt.ArrayLike | Sequence[Sequence[Any]],
    *,
    level: AlphaLevel = "nominal",
    labels: npt.ArrayLike | None = None,
) -> Coefficient:
    """Krippendorff's alpha, ``1 - D_observed / D_expected``, from coincidences.

    Units rated by fewer than two coders are not pairable and are left out.

    Args:
        data: Shape (n_coders, n_units); missing ratings as None or nan.
        level: ``"nominal"``, ``"ordinal"`` (order of ``labels``) or ``"interval"``
            (numeric ratings).
        labels: Ordered categories; default the sorted distinct observed values.

    Returns:
        Alpha (1 perfect agreement, 0 chance), or undefined (no pairable unit; one
        category only).

    Raises:
        ValueError: If the data is not 2-D, a rating is not in ``labels``, ``level``
            is unknown, or ``level="interval"`` with non-numeric labels.
    """
    check_level(level)
    codes, cats = encode_ratings(data, labels=labels)
    units, _ = pairable_units(codes, len(cats))
    if units.n == 0:
        return Coefficient(None, NO_UNITS)
    return _coefficient(alpha_of(units, np.ones((1, units.n)), level, cats), ONE_CATEGORY_ALPHA)
