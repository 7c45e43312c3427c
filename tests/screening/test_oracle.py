"""Agreement with the reference implementation ``validity-screen`` 0.1.0 (test-only oracle).

Known, deliberate differences (see docs/screening.md):

- "Insufficient data": the reference returns no indices (None); here they are computed
  descriptively, nan where a margin is empty (with a ScreeningWarning), and the
  intervals agree with the reference's own ``wilson_ci``.
- The reference prints "p < .001" whenever r's interval excludes zero; the report here
  prints the actual p (the values of p agree).
"""

from __future__ import annotations

import math
import warnings
from collections import Counter

import numpy as np
import pytest
import validity_screen as oracle

from screening import ScreeningWarning, Table2x2, screen_table

N_TABLES = 3000


def _cell(rng: np.random.Generator) -> int:
    # One cell in four is tiny (0..6) so zeros, the < 5 guard and extreme L / Fp occur.
    return int(rng.integers(0, 7)) if rng.random() < 0.25 else int(rng.integers(0, 601))


def _tables() -> list[Table2x2]:
    rng = np.random.default_rng(20260501)
    tables = [Table2x2(*(_cell(rng) for _ in range(4))) for _ in range(N_TABLES)]
    # Near the thresholds: L around .95 with d = 5..9, Fp around .50, RBS around 0.
    tables.extend(
        Table2x2(int(rng.integers(5, 400)), b, int(rng.integers(5, 400)), d)
        for d in range(5, 10)
        for b in range(80, 260, 7)
    )
    tables.extend(
        Table2x2(a, int(rng.integers(5, 60)), a + int(rng.integers(-4, 5)) + 5, 30)
        for a in range(5, 120, 3)
    )
    return tables


def _arrays(t: Table2x2) -> tuple[np.ndarray, np.ndarray]:
    correct = np.repeat([True, False, True, False], [t.a, t.b, t.c, t.d])
    high = np.repeat([True, True, False, False], [t.a, t.b, t.c, t.d])
    return correct, high


def _close(x: float, y: float) -> bool:
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)


def _empty_margin(t: Table2x2) -> bool:
    return t.n_high * t.n_low * t.n_correct * t.n_incorrect == 0


def test_random_tables_agree_with_reference() -> None:
    seen: Counter[str] = Counter()
    for t in _tables():
        correct, high = _arrays(t)
        ref = oracle.screen(correct, high)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ours = screen_table(t)
        # Warns exactly when an index is undefined.
        assert bool(caught) == _empty_margin(t), t
        assert all(issubclass(w.category, ScreeningWarning) for w in caught)

        assert ours.tier == ref.tier, t
        assert list(ours.reasons) == ref.flagging_reasons, t
        assert ours.response_style == ref.response_style, t
        assert (ref.a, ref.b, ref.c, ref.d) == (t.a, t.b, t.c, t.d)
        seen[ours.tier] += 1
        seen.update(f"{f.index}:{f.level}" for f in ours.flags)

        if ref.tier == "Insufficient data":
            assert ref.L is None
            assert ref.Fp is None
            assert ref.rbs is None
            # Documented difference: indices are still computed descriptively.
            assert ours.l.interval == pytest.approx(oracle.wilson_ci(t.b, t.n_incorrect))
            assert ours.fp.interval == pytest.approx(oracle.wilson_ci(t.c, t.n_correct))
            assert math.isnan(ours.l.value) == (t.n_incorrect == 0)
            assert math.isnan(ours.fp.value) == (t.n_correct == 0)
            assert math.isnan(ours.r.r) == _empty_margin(t)
            continue

        for mine, theirs in (
            (ours.l, ref.L),
            (ours.fp, ref.Fp),
            (ours.rbs, ref.rbs),
        ):
            assert theirs is not None
            assert _close(mine.value, theirs.value), (t, mine.name)
            assert _close(mine.interval.lower, theirs.ci_lower), (t, mine.name)
            assert _close(mine.interval.upper, theirs.ci_upper), (t, mine.name)
            assert ours.status(mine.name) == theirs.flag, (t, mine.name)
        assert ref.trin is not None
        assert ref.r_conf_correct is not None
        assert _close(ours.trin.value, ref.trin.value)
        assert ours.status("TRIN") == ref.trin.flag
        direction = "fixed-high" if t.a + t.b > t.c + t.d else "fixed-low"
        assert ours.trin.direction == direction
        assert _close(ours.r.r, ref.r_conf_correct.value), t
        assert _close(ours.r.interval.lower, ref.r_conf_correct.ci_lower), t
        assert _close(ours.r.interval.upper, ref.r_conf_correct.ci_upper), t
        assert math.isclose(
            ours.r.p_value, ref.r_conf_correct.threshold, rel_tol=1e-6, abs_tol=1e-300
        ), t

    # The sample reaches every tier and every kind of flag, so the comparison means something.
    for key in (
        "Valid",
        "Indeterminate",
        "Invalid",
        "Insufficient data",
        "Fp:invalid",
        "Fp:indeterminate",
        "L:invalid",
        "L:indeterminate",
        "RBS:invalid",
        "RBS:indeterminate",
        "cells:insufficient",
    ):
        assert seen[key] > 0, (key, seen)


def test_binarise_agrees_with_reference() -> None:
    from screening import binarise_confidence

    rng = np.random.default_rng(7)
    conf = np.round(rng.random(301), 2)  # ties on purpose
    for threshold in (0.5, 0.73, "median"):
        method = "median" if threshold == "median" else "fixed"
        cut = 0.5 if threshold == "median" else threshold
        expected = oracle.binarise(conf, threshold=cut, method=method)
        np.testing.assert_array_equal(binarise_confidence(conf, threshold=threshold).high, expected)


def test_oracle_reports_p_below_001_when_it_is_not() -> None:
    """Documents the reference's p-value display defect that the report here avoids."""
    from screening import VRSReport

    t = Table2x2(38, 12, 20, 20)  # r = 0.27 with N = 90: CI excludes zero, p is about .01
    correct, high = _arrays(t)
    ref = oracle.screen(correct, high)
    assert ref.r_conf_correct is not None
    p = ref.r_conf_correct.threshold
    assert 0.001 < p < 0.05
    assert "p < .001" in ref.vrs_table()
    row = dict(VRSReport(screen_table(t)).rows())["r(confidence, correct)"]
    assert f"p = {p:.3f}" in row
