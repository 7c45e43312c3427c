"""Property tests across the indices and phase-B metrics (hypothesis)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from screening import (
    ScreeningWarning,
    Table2x2,
    aurc,
    auroc_score,
    brier_loss,
    contingency_table,
    expected_calibration_error,
    screen,
    screen_table,
    selective_accuracy,
)

FAST = settings(max_examples=60, deadline=None)
cell = st.integers(min_value=0, max_value=600)
full_cell = st.integers(min_value=1, max_value=600)
tables = st.builds(Table2x2, cell, cell, cell, cell)
full_tables = st.builds(Table2x2, full_cell, full_cell, full_cell, full_cell)


def _quiet_screen(t: Table2x2):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScreeningWarning)
        return screen_table(t)


def _same(x: float, y: float) -> bool:
    return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)


@FAST
@given(tables)
def test_swapping_high_and_low_inverts_signs(t: Table2x2) -> None:
    res, swapped = _quiet_screen(t), _quiet_screen(t.swapped())
    # L -> 1 - L, Fp -> 1 - Fp, and their Wilson intervals mirror.
    assert _same(swapped.l.value, 1 - res.l.value)
    assert _same(swapped.fp.value, 1 - res.fp.value)
    assert _same(swapped.l.interval.lower, 1 - res.l.interval.upper)
    assert _same(swapped.fp.interval.upper, 1 - res.fp.interval.lower)
    # RBS and r change sign; r's p is unchanged.
    assert _same(swapped.rbs.value, -res.rbs.value)
    assert _same(swapped.rbs.interval.lower, -res.rbs.interval.upper)
    assert _same(swapped.r.r, -res.r.r)
    assert _same(swapped.r.interval.lower, -res.r.interval.upper)
    assert _same(swapped.r.p_value, res.r.p_value)
    # TRIN keeps its value; its direction flips unless the columns tie.
    assert _same(swapped.trin.value, res.trin.value)
    if t.n_high != t.n_low:
        assert {swapped.trin.direction, res.trin.direction} == {"fixed-high", "fixed-low"}


@FAST
@given(full_tables, st.integers(0, 2**32 - 1))
def test_screen_is_invariant_to_item_order(t: Table2x2, seed: int) -> None:
    correct = np.repeat([True, False, True, False], [t.a, t.b, t.c, t.d])
    high = np.repeat([True, True, False, False], [t.a, t.b, t.c, t.d])
    order = np.random.default_rng(seed).permutation(t.n)
    assert screen(correct[order], high[order]) == screen(correct, high) == screen_table(t)


@FAST
@given(full_tables)
def test_r_equals_scipy_pointbiserialr(t: Table2x2) -> None:
    correct = np.repeat([1, 0, 1, 0], [t.a, t.b, t.c, t.d])
    high = np.repeat([1, 1, 0, 0], [t.a, t.b, t.c, t.d])
    expected = stats.pointbiserialr(high, correct)
    res = screen_table(t).r
    assert res.r == pytest.approx(expected.statistic, rel=1e-9, abs=1e-12)
    assert res.p_value == pytest.approx(expected.pvalue, rel=1e-6, abs=1e-300)


@st.composite
def scored_items(draw: st.DrawFn, *, distinct: bool = False) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(2, 80))
    correct = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    if distinct:
        conf = np.array(draw(st.permutations(range(n)))) / n
    else:
        conf = np.array(draw(st.lists(st.integers(0, 10), min_size=n, max_size=n))) / 10
    return correct, conf


@FAST
@given(scored_items())
def test_auroc_equals_mann_whitney_u(items: tuple[np.ndarray, np.ndarray]) -> None:
    correct, conf = items
    n1, n0 = int(correct.sum()), int((~correct).sum())
    if n1 == 0 or n0 == 0:
        with pytest.warns(ScreeningWarning, match="AUROC"):
            assert math.isnan(auroc_score(correct, conf))
        return
    u = stats.mannwhitneyu(conf[correct], conf[~correct]).statistic
    assert auroc_score(correct, conf) == pytest.approx(u / (n1 * n0), abs=1e-12)


@FAST
@given(scored_items(), st.integers(0, 2**32 - 1))
def test_order_free_metrics_are_invariant_to_item_order(
    items: tuple[np.ndarray, np.ndarray], seed: int
) -> None:
    correct, conf = items
    order = np.random.default_rng(seed).permutation(correct.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScreeningWarning)  # one-class draws give nan AUROC
        for metric in (auroc_score, expected_calibration_error, brier_loss):
            a, b = metric(correct, conf), metric(correct[order], conf[order])
            assert _same(a, b), metric.__name__


@FAST
@given(scored_items(distinct=True), st.integers(0, 2**32 - 1))
def test_selective_metrics_are_order_free_without_ties(
    items: tuple[np.ndarray, np.ndarray], seed: int
) -> None:
    correct, conf = items
    order = np.random.default_rng(seed).permutation(correct.size)
    assert selective_accuracy(correct, conf) == selective_accuracy(correct[order], conf[order])
    assert aurc(correct, conf) == pytest.approx(aurc(correct[order], conf[order]))


def test_degenerate_no_errors_warns_and_is_insufficient() -> None:
    correct = np.ones(50, dtype=bool)
    high = np.arange(50) % 2 == 0
    with pytest.warns(ScreeningWarning, match="L .no incorrect items"):
        res = screen(correct, high)
    assert res.tier == "Insufficient data"
    assert math.isnan(res.l.value)
    assert res.l.interval == (0.0, 1.0)
    assert math.isnan(res.rbs.value)
    assert math.isnan(res.r.r)
    assert res.fp.value == 0.5


def test_degenerate_all_high_warns_and_is_insufficient() -> None:
    correct = np.arange(40) % 3 != 0
    high = np.ones(40, dtype=bool)
    with pytest.warns(ScreeningWarning, match="no low-confidence items"):
        res = screen(correct, high)
    assert res.tier == "Insufficient data"
    assert res.trin.value == 1.0
    assert res.trin.direction == "fixed-high"
    assert res.trin.warning
    assert res.l.value == 1.0
    assert res.fp.value == 0.0
    assert math.isnan(res.r.r)
    assert math.isnan(res.r.p_value)


def test_degenerate_empty_input_warns() -> None:
    with pytest.warns(ScreeningWarning, match="no items"):
        res = screen([], [])
    assert res.tier == "Insufficient data"
    assert math.isnan(res.trin.value)
    assert res.trin.direction is None
    assert math.isnan(res.table.accuracy)


@pytest.mark.parametrize(
    ("correct", "high", "match"),
    [
        (np.ones((3, 2)), np.ones(3), r"correct must be 1-D .* got shape \(3, 2\)"),
        (np.ones(3), np.ones(4), r"same length.*\(3,\).*\(4,\)"),
        ([0, 1, 2], [0, 1, 1], "0/1"),
        ([0.0, np.nan], [1, 1], "0/1"),
        (["yes", "no"], [1, 1], "dtype"),
    ],
)
def test_malformed_input_raises_naming_the_shape(correct: object, high: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        contingency_table(correct, high)  # type: ignore[arg-type]


def test_table_rejects_bad_counts() -> None:
    with pytest.raises(ValueError, match="cell b must be >= 0"):
        Table2x2(1, -1, 1, 1)
    with pytest.raises(ValueError, match="integer"):
        Table2x2(1, 2.5, 1, 1)  # type: ignore[arg-type]
