"""Agreement between two raters (model and coder, or two coders).

Ratings may be numbers or strings. The category set and its order come from ``labels``
when given (pass the scale's values so that unused options still count for weighted
kappa and ordinal alpha), else from the sorted distinct observed values.

- :func:`percent_agreement`: share of items rated identically.
- :func:`cohen_kappa`: Cohen's kappa, unweighted or with linear / quadratic weights on
  the label positions (quadratic for ordinal scales).
- :func:`krippendorff_alpha`: Krippendorff's alpha for any number of raters with
  missing ratings (nan or None), nominal, ordinal or interval.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from screening.validation import FloatArray, same_length, warn

__all__ = ["AlphaLevel", "KappaWeights", "cohen_kappa", "krippendorff_alpha", "percent_agreement"]

KappaWeights = Literal["linear", "quadratic"] | None
AlphaLevel = Literal["nominal", "ordinal", "interval"]
IntArray = npt.NDArray[np.intp]
NAN = float("nan")


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, (float, np.floating)) and math.isnan(value))


def _missing_mask(values: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
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


def _encode(values: npt.NDArray[Any], categories: list[Any], name: str) -> IntArray:
    """Map present values to positions in ``categories``; values must all be present."""
    index = {c: i for i, c in enumerate(categories)}
    flat = values.ravel().tolist()
    try:
        codes = [index[v] for v in flat]
    except KeyError as exc:
        raise ValueError(f"{name} holds {exc.args[0]!r}, which is not in labels") from exc
    return np.asarray(codes, dtype=np.intp).reshape(values.shape)


def _pair(y1: npt.ArrayLike, y2: npt.ArrayLike) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    a = np.asarray(y1)
    b = np.asarray(y2)
    for name, arr in (("y1", a), ("y2", b)):
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-D of shape (n_items,), got shape {arr.shape}")
        if np.any(_missing_mask(arr)):
            raise ValueError(
                f"{name} has missing ratings; drop those items or use krippendorff_alpha"
            )
    same_length(y1=a, y2=b)
    return a, b


def percent_agreement(y1: npt.ArrayLike, y2: npt.ArrayLike) -> float:
    """Share of items on which the two raters agree exactly.

    Args:
        y1: Shape (n_items,), the first rater's categories.
        y2: Shape (n_items,), the second rater's categories.

    Returns:
        Agreement in [0, 1]; nan, with a :class:`ScreeningWarning`, for no items.

    Raises:
        ValueError: If an input is not 1-D, has missing values, or the lengths differ.
    """
    a, b = _pair(y1, y2)
    if a.size == 0:
        warn("percent agreement is undefined: no items")
        return NAN
    return float(np.mean([u == v for u, v in zip(a.tolist(), b.tolist(), strict=True)]))


def _disagreement_weights(k: int, weights: KappaWeights) -> FloatArray:
    i, j = np.indices((k, k))
    if weights is None:
        return np.asarray(i != j, dtype=np.float64)
    if weights == "linear":
        return np.asarray(np.abs(i - j), dtype=np.float64)
    if weights == "quadratic":
        return np.asarray((i - j) ** 2, dtype=np.float64)
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


def cohen_kappa(
    y1: npt.ArrayLike,
    y2: npt.ArrayLike,
    *,
    labels: npt.ArrayLike | None = None,
    weights: KappaWeights = None,
) -> float:
    """Cohen's kappa: agreement beyond chance between two raters.

    ``kappa = 1 - sum(w * O) / sum(w * E)`` with O the observed and E the
    chance-expected (product of margins) joint proportions and w the disagreement
    weights on label positions: 1 off the diagonal (unweighted), ``|i - j|`` (linear),
    ``(i - j)^2`` (quadratic).

    Args:
        y1: Shape (n_items,), the first rater's categories.
        y2: Shape (n_items,), the second rater's categories.
        labels: Ordered categories; default the sorted distinct observed values.
        weights: None, ``"linear"`` or ``"quadratic"``.

    Returns:
        Kappa in [-1, 1]; nan if chance disagreement is zero (both raters used one
        and the same category) or there are no items.

    Raises:
        ValueError: If an input is not 1-D or has missing values, the lengths differ,
            a rating is not in ``labels``, or ``weights`` is unknown.

    Warns:
        ScreeningWarning: When returning nan.
    """
    a, b = _pair(y1, y2)
    cats = _categories(np.concatenate([a.astype(object), b.astype(object)]), labels)
    k = len(cats)
    w = _disagreement_weights(max(k, 1), weights)
    if a.size == 0:
        warn("kappa is undefined: no items")
        return NAN
    ia = _encode(a.astype(object), cats, "y1")
    ib = _encode(b.astype(object), cats, "y2")
    observed = np.zeros((k, k), dtype=np.float64)
    np.add.at(observed, (ia, ib), 1.0)
    observed /= a.size
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    chance = float(np.sum(w * expected))
    if chance == 0.0:
        warn("kappa is undefined: both raters used a single, identical category")
        return NAN
    return 1.0 - float(np.sum(w * observed)) / chance


def _ordinal_distances(marginals: FloatArray) -> FloatArray:
    """Krippendorff's ordinal metric: (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2."""
    cum = np.concatenate([[0.0], np.cumsum(marginals)])
    c, k = np.indices((marginals.size, marginals.size))
    lo, hi = np.minimum(c, k), np.maximum(c, k)
    span = cum[hi + 1] - cum[lo] - (marginals[c] + marginals[k]) / 2.0
    return np.asarray(span**2, dtype=np.float64)


def krippendorff_alpha(
    reliability_data: npt.ArrayLike,
    *,
    level: AlphaLevel = "nominal",
    labels: npt.ArrayLike | None = None,
) -> float:
    """Krippendorff's alpha, ``1 - D_observed / D_expected``, from coincidences.

    Items rated by fewer than two raters are not pairable and are left out.

    Args:
        reliability_data: Shape (n_raters, n_items), one row per rater (two rows for
            two raters); missing ratings as nan (numeric) or None.
        level: ``"nominal"``, ``"ordinal"`` (order of ``labels``) or ``"interval"``
            (numeric ratings).
        labels: Ordered categories; default the sorted distinct observed values.

    Returns:
        Alpha (1 = perfect agreement, 0 = chance); nan if no item is pairable or
        only one category occurs.

    Raises:
        ValueError: If the data is not 2-D, a rating is not in ``labels``, ``level``
            is unknown, or ``level="interval"`` with non-numeric labels.

    Warns:
        ScreeningWarning: When returning nan.
    """
    data = np.asarray(reliability_data)
    if data.ndim != 2:
        raise ValueError(
            f"reliability_data must be 2-D of shape (n_raters, n_items), got shape {data.shape}"
        )
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"level must be 'nominal', 'ordinal' or 'interval', got {level!r}")
    obj = data.astype(object)
    missing = _missing_mask(data)
    cats = _categories(obj[~missing], labels)
    k = len(cats)
    codes = np.full(data.shape, -1, dtype=np.intp)
    codes[~missing] = _encode(obj[~missing], cats, "reliability_data")
    # counts[u, c]: how many raters put item u in category c.
    counts = np.zeros((data.shape[1], k), dtype=np.float64)
    rater, item = np.nonzero(~missing)
    np.add.at(counts, (item, codes[rater, item]), 1.0)
    m = counts.sum(axis=1)
    pairable = m >= 2
    if not np.any(pairable):
        warn("alpha is undefined: no item has two or more ratings")
        return NAN
    cu, mu = counts[pairable], m[pairable]
    coincidence = np.einsum("uc,uk->ck", cu / (mu - 1)[:, None], cu) - np.diag(
        np.sum(cu / (mu - 1)[:, None], axis=0)
    )
    marginals = coincidence.sum(axis=1)
    n = float(marginals.sum())
    if level == "nominal":
        delta = 1.0 - np.eye(k)
    elif level == "ordinal":
        delta = _ordinal_distances(marginals)
    else:
        try:
            values = np.asarray(cats, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError("level='interval' needs numeric ratings") from exc
        delta = np.subtract.outer(values, values) ** 2
    expected = float(np.sum(np.outer(marginals, marginals) * delta)) / (n - 1.0)
    if expected == 0.0:
        warn("alpha is undefined: only one category occurs among pairable ratings")
        return NAN
    return 1.0 - float(np.sum(coincidence * delta)) / expected
