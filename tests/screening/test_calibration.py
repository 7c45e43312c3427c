"""The reliability diagram's bins and the risk-coverage curve, against independent code."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.calibration import calibration_curve

from screening import expected_calibration_error, phase_b_metrics
from screening.calibration import calibration_bins, threshold_curve


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    conf = rng.beta(4, 1.5, n)
    correct = rng.random(n) < conf**1.5  # overconfident
    return correct, conf


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bins_match_scikit_learn_and_exact_intervals(seed: int) -> None:
    correct, conf = _data(500, seed)
    bins = calibration_bins(correct, conf, n_bins=10)
    prob_true, prob_pred = calibration_curve(correct, conf, n_bins=10, strategy="uniform")
    assert [b.accuracy for b in bins] == pytest.approx(prob_true)
    assert [b.confidence for b in bins] == pytest.approx(prob_pred)
    counts, _ = np.histogram(conf, bins=np.linspace(0, 1, 11))
    assert [b.n for b in bins] == [int(c) for c in counts if c]
    for b in bins:
        members = (conf >= b.low) & (conf < b.high)
        ci = binomtest(int(correct[members].sum()), int(members.sum())).proportion_ci(
            confidence_level=0.95, method="exact"
        )
        assert (b.accuracy_low, b.accuracy_high) == pytest.approx((ci.low, ci.high))
    ece = sum(b.n * abs(b.accuracy - b.confidence) for b in bins) / conf.size
    assert ece == pytest.approx(expected_calibration_error(correct, conf))


def test_certainty_lands_in_the_last_bin_and_bad_input_is_refused() -> None:
    bins = calibration_bins([True, False, True], [1.0, 0.95, 0.05], n_bins=10)
    assert [(b.low, b.n) for b in bins] == [(0.0, 1), (pytest.approx(0.9), 2)]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        calibration_bins([True], [1.5])
    with pytest.raises(ValueError, match=r"length|shape"):
        calibration_bins([True, False], [0.5])


def test_threshold_curve_is_the_brute_force_one() -> None:
    correct, conf = _data(80, 3)
    conf = np.round(conf, 2)  # ties: a threshold keeps every pair of its confidence
    curve = threshold_curve(correct, conf, max_points=1000)
    thresholds = sorted(set(conf.tolist()), reverse=True)
    assert [p.threshold for p in curve] == thresholds
    for p in curve:
        kept = conf >= p.threshold
        assert p.n == kept.sum()
        assert p.errors == (~correct[kept]).sum()
        assert p.coverage == pytest.approx(kept.mean())
        assert p.risk == pytest.approx(1 - correct[kept].mean())
    assert curve[-1].coverage == 1.0


def test_a_long_curve_is_thinned_evenly_and_keeps_full_coverage() -> None:
    correct, conf = _data(5000, 4)
    curve = threshold_curve(correct, conf, max_points=101)
    assert 90 <= len(curve) <= 101
    assert curve[-1].coverage == 1.0
    assert curve[-1].errors == (~correct).sum()
    steps = np.diff([p.coverage for p in curve])
    assert (steps > 0).all()
    assert steps.max() < 0.03


def test_phase_b_carries_both() -> None:
    correct, conf = _data(300, 5)
    metrics = phase_b_metrics(correct, conf)
    assert metrics.calibration == calibration_bins(correct, conf)
    assert metrics.risk_coverage == threshold_curve(correct, conf)
