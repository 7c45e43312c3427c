"""Phase-B metrics on hand-worked examples, and the tier gate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from screening import (
    ScreeningWarning,
    Table2x2,
    aurc,
    auroc_score,
    brier_loss,
    expected_calibration_error,
    phase_b_metrics,
    risk_coverage_curve,
    screen,
    screen_table,
    selective_accuracy,
)
from screening.phase_b import phase_b

CORRECT = np.array([1, 1, 0, 1, 0, 1, 1, 0, 1, 0], dtype=bool)
CONF = np.array([0.95, 0.9, 0.85, 0.8, 0.7, 0.7, 0.6, 0.4, 0.3, 0.1])


def test_selective_accuracy_keeps_ceil_n_c_items() -> None:
    points = selective_accuracy(CORRECT, CONF)
    assert [p.coverage for p in points] == [0.9, 0.8, 0.7, 0.6, 0.5, 0.3, 0.2]
    # 10 * 0.7 is 7.000000000000001 in floating point; still 7 items.
    assert [p.n_kept for p in points] == [9, 8, 7, 6, 5, 3, 2]
    by_c = {p.coverage: p for p in points}
    assert by_c[0.9].accuracy == pytest.approx(6 / 9)
    assert by_c[0.5].accuracy == pytest.approx(3 / 5)
    assert by_c[0.2].accuracy == 1.0
    assert by_c[0.2].gain == pytest.approx(1.0 - 0.6)


def test_selective_accuracy_breaks_ties_by_item_order() -> None:
    correct = np.array([0, 1, 1, 0], dtype=bool)
    conf = np.array([0.5, 0.5, 0.5, 0.5])
    (half,) = selective_accuracy(correct, conf, coverages=[0.5])
    assert half.accuracy == 0.5  # items 0 and 1, in that order
    (quarter,) = selective_accuracy(correct, conf, coverages=[0.25])
    assert quarter.accuracy == 0.0


def test_risk_coverage_and_aurc() -> None:
    coverage, risk = risk_coverage_curve(CORRECT, CONF)
    np.testing.assert_allclose(coverage, np.arange(1, 11) / 10)
    hand = [0, 0, 1 / 3, 1 / 4, 2 / 5, 2 / 6, 2 / 7, 3 / 8, 3 / 9, 4 / 10]
    np.testing.assert_allclose(risk, hand)
    assert aurc(CORRECT, CONF) == pytest.approx(np.mean(hand))


def test_ece_by_hand() -> None:
    # Bins: [0.9,1]: .95,.9 -> acc 1, conf .925; [0.8,0.9): .85,.8 -> acc .5, conf .825;
    # [0.7,0.8): .7,.7 -> acc .5, conf .7; [0.6,0.7): .6 -> 1; [0.4,0.5): .4 -> 0;
    # [0.3,0.4): .3 -> 1; [0.1,0.2): .1 -> 0.
    hand = (
        2 * abs(1 - 0.925)
        + 2 * abs(0.5 - 0.825)
        + 2 * abs(0.5 - 0.7)
        + abs(1 - 0.6)
        + abs(0 - 0.4)
        + abs(1 - 0.3)
        + abs(0 - 0.1)
    ) / 10
    assert expected_calibration_error(CORRECT, CONF) == pytest.approx(hand)


def test_ece_puts_one_in_the_last_bin() -> None:
    assert expected_calibration_error([True, False], [1.0, 0.9]) == pytest.approx(0.45)


def test_brier_by_hand() -> None:
    assert brier_loss(CORRECT, CONF) == pytest.approx(np.mean((CONF - CORRECT) ** 2))
    assert brier_loss([1, 0], [1.0, 0.0]) == 0.0


def test_auroc_by_hand() -> None:
    # 6 correct x 4 incorrect pairs; the tie .7/.7 counts one half.
    wins = sum(
        1.0 if c1 > c0 else 0.5 if c1 == c0 else 0.0
        for c1 in CONF[CORRECT]
        for c0 in CONF[~CORRECT]
    )
    assert auroc_score(CORRECT, CONF) == pytest.approx(wins / 24)


def test_calibration_metrics_reject_out_of_range_confidence() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        expected_calibration_error([1, 0], [1.2, 0.1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        brier_loss([1, 0], [-0.1, 0.1])
    with pytest.raises(ValueError, match=r"coverages must lie in \(0, 1\]"):
        selective_accuracy([1, 0], [0.2, 0.1], coverages=[0.0])


def test_empty_input_warns_and_returns_nan() -> None:
    with pytest.warns(ScreeningWarning):
        assert math.isnan(aurc([], []))
    with pytest.warns(ScreeningWarning):
        assert math.isnan(expected_calibration_error([], []))


def _items(t: Table2x2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per-item arrays for a table, with continuous confidence consistent with a 0.5 cut."""
    rng = np.random.default_rng(seed)
    correct = np.repeat([True, False, True, False], [t.a, t.b, t.c, t.d])
    high = np.repeat([True, True, False, False], [t.a, t.b, t.c, t.d])
    conf = np.where(high, rng.uniform(0.5, 1.0, t.n), rng.uniform(0.0, 0.5, t.n))
    return correct, conf


def test_phase_b_is_refused_for_invalid_and_insufficient() -> None:
    for cells in [(24, 71, 423, 6), (491, 26, 3, 4)]:
        t = Table2x2(*cells)
        correct, conf = _items(t)
        assert phase_b(screen_table(t), correct, conf) is None


def test_phase_b_for_valid_has_no_caveat_and_indeterminate_has_one() -> None:
    valid = Table2x2(385, 29, 82, 28)
    correct, conf = _items(valid)
    res = phase_b(screen(correct, conf >= 0.5), correct, conf)
    assert res is not None
    assert res.caveat is None
    assert res.n_items == valid.n
    assert res.auroc == pytest.approx(auroc_score(correct, conf))

    indeterminate = Table2x2(222, 152, 94, 56)
    correct, conf = _items(indeterminate)
    res = phase_b(screen(correct, conf >= 0.5), correct, conf)
    assert res is not None
    assert res.caveat is not None
    assert "Indeterminate" in res.caveat
    assert "RBS = +0.028" in res.caveat


def test_phase_b_checks_the_data_is_the_screened_data() -> None:
    t = Table2x2(385, 29, 82, 28)
    correct, conf = _items(t)
    with pytest.raises(ValueError, match="not the screened data"):
        phase_b(screen_table(t), correct[:-1], conf[:-1])


def test_phase_b_metrics_kappa_needs_both_decisions() -> None:
    with pytest.raises(ValueError, match="both"):
        phase_b_metrics(CORRECT, CONF, model_decision=[1] * 10)
    res = phase_b_metrics(
        CORRECT, CONF, model_decision=[1, 2] * 5, coder_decision=[1, 2] * 5, weights="quadratic"
    )
    assert res.kappa == 1.0
    assert res.kappa_weights == "quadratic"


def test_the_readme_says_what_the_gate_does() -> None:
    # The gate above: Valid, and Indeterminate with a caveat; never Invalid or
    # Insufficient data. The README's promise must say the same.
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    start = readme.index("Calibration numbers")
    said = " ".join(readme[start : readme.index("See", start)].split())
    assert "for a Valid screen, and for an Indeterminate one with a warning" in said
    assert "never for Invalid or Insufficient data" in said
