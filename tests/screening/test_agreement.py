"""Agreement statistics against hand calculations, a textbook and a real data set."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from screening import ScreeningWarning, cohen_kappa, krippendorff_alpha, percent_agreement

DATA = Path(os.environ["CODECURVE_SHARED_DATA"]) / "countercausal_news.csv"


def test_unweighted_kappa_by_hand() -> None:
    r1 = list("xxxxxxyyyy")
    r2 = list("xxxxyxxyyy")
    # Agreement on items 0-3, 5 and 7-9: p_o = 8/10. Each rater says x six times of ten,
    # so p_e = .6 * .6 + .4 * .4 = .52 and kappa = (.8 - .52) / (1 - .52) = 7/12.
    assert cohen_kappa(r1, r2) == pytest.approx(7 / 12)
    assert percent_agreement(r1, r2) == pytest.approx(0.8)


def test_quadratic_kappa_by_hand() -> None:
    r1 = np.array([1, 2, 3, 3, 2, 1, 3, 2])
    r2 = np.array([1, 3, 3, 2, 2, 1, 1, 2])
    k = 3
    observed = np.zeros((k, k))
    for u, v in zip(r1 - 1, r2 - 1, strict=True):
        observed[u, v] += 1
    expected = np.outer(observed.sum(1), observed.sum(0)) / observed.sum()
    num = sum((i - j) ** 2 * observed[i, j] for i in range(k) for j in range(k))
    den = sum((i - j) ** 2 * expected[i, j] for i in range(k) for j in range(k))
    assert cohen_kappa(r1, r2, weights="quadratic") == pytest.approx(1 - num / den)
    # Quadratic weights by label position: an unused middle option changes the distances.
    assert cohen_kappa(r1, r2, weights="quadratic", labels=[1, 2, 3, 4]) == pytest.approx(
        1 - num / den
    )


def test_linear_and_quadratic_equal_unweighted_for_two_categories() -> None:
    r1, r2 = [0, 1, 1, 0, 1, 1], [0, 1, 0, 0, 1, 1]
    base = cohen_kappa(r1, r2)
    assert cohen_kappa(r1, r2, weights="quadratic") == pytest.approx(base)
    assert cohen_kappa(r1, r2, weights="linear") == pytest.approx(base)


def test_kappa_degenerate_and_malformed() -> None:
    with pytest.warns(ScreeningWarning, match="single"):
        assert math.isnan(cohen_kappa(["a", "a"], ["a", "a"]))
    with pytest.raises(ValueError, match="missing"):
        cohen_kappa([1.0, np.nan], [1.0, 2.0])
    with pytest.raises(ValueError, match="not in labels"):
        cohen_kappa([1, 2], [1, 5], labels=[1, 2, 3])
    with pytest.raises(ValueError, match=r"shape \(2, 1\)"):
        cohen_kappa([[1], [2]], [1, 2])
    with pytest.raises(ValueError, match="weights"):
        cohen_kappa([1, 2], [1, 2], weights="cubic")  # type: ignore[arg-type]


NAN = float("nan")
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C:
# 4 observers, 12 units, missing values.
TEXTBOOK = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_krippendorff_alpha_textbook(level: str, published: float) -> None:
    assert round(krippendorff_alpha(TEXTBOOK, level=level), 3) == published  # type: ignore[arg-type]


def test_krippendorff_alpha_two_observers_binary_textbook() -> None:
    # Same source, section A: two observers, binary data, alpha = 0.095.
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    assert round(krippendorff_alpha([a, b]), 3) == 0.095


def _alpha_by_pairs(r1: Sequence[object], r2: Sequence[object]) -> float:
    """Nominal alpha for two raters from its pairwise definition (independent check)."""
    pairs = [(u, v) for u, v in zip(r1, r2, strict=True) if u is not None and v is not None]
    values = [x for p in pairs for x in p]
    n = len(values)
    d_o = sum(u != v for u, v in pairs) * 2 / n
    d_e = sum(x != y for i, x in enumerate(values) for j, y in enumerate(values) if i != j)
    return 1 - d_o / (d_e / (n * (n - 1)))


def test_krippendorff_alpha_two_raters_with_missing_values() -> None:
    r1 = ["a", "b", None, "c", "a", "b", "b", "c", "a", None]
    r2 = ["a", "b", "b", None, "a", "c", "b", "c", "b", "a"]
    assert krippendorff_alpha([r1, r2]) == pytest.approx(_alpha_by_pairs(r1, r2))
    numeric1 = [1, 2, NAN, 3, 1, 2, 2, 3, 1, NAN]
    numeric2 = [1, 2, 2, NAN, 1, 3, 2, 3, 2, 1]
    assert krippendorff_alpha([numeric1, numeric2]) == pytest.approx(_alpha_by_pairs(r1, r2))


def test_krippendorff_alpha_degenerate_and_malformed() -> None:
    with pytest.warns(ScreeningWarning, match="no item"):
        assert math.isnan(krippendorff_alpha([[1, NAN], [NAN, 2]]))
    with pytest.warns(ScreeningWarning, match="one category"):
        assert math.isnan(krippendorff_alpha([[1, 1], [1, 1]]))
    with pytest.raises(ValueError, match=r"2-D .* got shape \(3,\)"):
        krippendorff_alpha([1, 2, 3])
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha([[1], [1]], level="ratio")  # type: ignore[arg-type]


def test_countercausal_annotators_kappa_matches_crosstab() -> None:
    frame = pd.read_csv(DATA)
    both = frame.dropna(subset=["coder1", "coder2"])
    assert len(both) == 300
    table = pd.crosstab(both["coder1"], both["coder2"])
    cats = sorted(set(table.index) | set(table.columns))
    table = table.reindex(index=cats, columns=cats, fill_value=0)
    n = table.to_numpy().sum()
    p_o = np.trace(table.to_numpy()) / n
    p_e = float((table.sum(axis=1).to_numpy() * table.sum(axis=0).to_numpy()).sum()) / n**2
    expected = (p_o - p_e) / (1 - p_e)

    kappa = cohen_kappa(both["coder1"].to_numpy(), both["coder2"].to_numpy())
    assert kappa == pytest.approx(expected, abs=1e-12)
    assert percent_agreement(both["coder1"], both["coder2"]) == pytest.approx(p_o)
    assert pytest.approx(p_o, abs=0.005) == 0.82  # the data card's 82%

    # Alpha over all 500 rows: the 200 singly-missing rows are unpairable and drop out.
    ratings = frame[["coder1", "coder2"]].astype(object).where(frame[["coder1", "coder2"]].notna())
    alpha = krippendorff_alpha(ratings.to_numpy().T)
    assert alpha == pytest.approx(_alpha_by_pairs(list(both["coder1"]), list(both["coder2"])))
