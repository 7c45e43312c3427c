"""Agreement between two raters (model and coder, or two coders), as plain floats.

The screen's model-vs-coder figures. These wrap :mod:`screening.reliability`, the one
implementation of the coefficients, and keep the screening convention for degenerate
input: a :class:`ScreeningWarning` and nan (reliability itself never returns nan).

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

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from screening.reliability import (
    AlphaLevel,
    Coefficient,
    KappaWeights,
    alpha_coefficient,
    kappa_coefficient,
    missing_mask,
    percent_coefficient,
)
from screening.validation import same_length, warn

__all__ = ["AlphaLevel", "KappaWeights", "cohen_kappa", "krippendorff_alpha", "percent_agreement"]

NAN = float("nan")


def _pair(y1: npt.ArrayLike, y2: npt.ArrayLike) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    a = np.asarray(y1)
    b = np.asarray(y2)
    for name, arr in (("y1", a), ("y2", b)):
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-D of shape (n_items,), got shape {arr.shape}")
        if np.any(missing_mask(arr)):
            raise ValueError(
                f"{name} has missing ratings; drop those items or use krippendorff_alpha"
            )
    same_length(y1=a, y2=b)
    return a, b


def _float(result: Coefficient, what: str) -> float:
    if result.value is None:
        warn(f"{what} is undefined: {result.reason}")
        return NAN
    return result.value


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
    # Any values comparable with ==, ordered or not: encode by first appearance.
    both = np.concatenate([a.astype(object), b.astype(object)]).tolist()
    labels = list(dict.fromkeys(both))
    return _float(percent_coefficient([a.astype(object), b.astype(object)], labels=labels),
                  "percent agreement")  # fmt: skip


def cohen_kappa(
    y1: npt.ArrayLike,
    y2: npt.ArrayLike,
    *,
    labels: npt.ArrayLike | None = None,
    weights: KappaWeights = None,
) -> float:
    """Cohen's kappa: agreement beyond chance between two raters.

    See :func:`screening.reliability.kappa_coefficient` for the definition.

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
    result = kappa_coefficient(a, b, labels=labels, weights=weights)
    if a.size == 0:
        warn("kappa is undefined: no items")
        return NAN
    return _float(result, "kappa")


def krippendorff_alpha(
    reliability_data: npt.ArrayLike | Sequence[Sequence[Any]],
    *,
    level: AlphaLevel = "nominal",
    labels: npt.ArrayLike | None = None,
) -> float:
    """Krippendorff's alpha, ``1 - D_observed / D_expected``, from coincidences.

    See :func:`screening.reliability.alpha_coefficient` for the definition. Items rated
    by fewer than two raters are not pairable and are left out.

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
    return _float(alpha_coefficient(reliability_data, level=level, labels=labels), "alpha")
