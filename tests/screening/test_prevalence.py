"""The prevalence estimates: the authors' ``ppi_py`` as reference, and their edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from screening.prevalence import (
    NORMAL_SIDE,
    audit_mean,
    audit_proportion,
    clopper_pearson_interval,
    difference,
    power_tuning,
    ppi_mean,
)

ppi_py = pytest.importorskip("ppi_py")


def _data(
    seed: int, n: int, big_n: int, *, accuracy: float, prob: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = (rng.random(n + big_n) < 0.3).astype(float)
    flip = rng.random(n + big_n) >= accuracy
    pred = np.where(flip, 1.0 - truth, truth)
    if prob:
        pred = np.clip(0.5 * pred + 0.5 * rng.random(n + big_n), 0.0, 1.0)
    return truth[:n], pred[:n], pred[n:]


CASES = [
    (0, 50, 2000, 0.9, False),
    (1, 200, 1800, 0.75, False),
    (2, 400, 1600, 0.5, False),
    (3, 120, 300, 0.95, True),
    (4, 60, 60, 0.6, True),
    (5, 300, 30, 0.85, False),
]


@pytest.mark.parametrize(("seed", "n", "big_n", "accuracy", "prob"), CASES)
@pytest.mark.parametrize("level", [0.95, 0.9])
def test_ppi_mean_equals_ppi_py_with_power_tuning(
    seed: int, n: int, big_n: int, accuracy: float, prob: bool, level: float
) -> None:
    y, f, f_unl = _data(seed, n, big_n, accuracy=accuracy, prob=prob)
    mine = ppi_mean(y, f, f_unl, level=level)
    point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f, f_unl, lam=None)))
    lower, upper = ppi_py.ppi_mean_ci(y, f, f_unl, alpha=1 - level, lam=None)
    assert mine.estimate == pytest.approx(point, abs=1e-12)
    assert mine.lower == pytest.approx(float(np.squeeze(lower)), abs=1e-12)
    assert mine.upper == pytest.approx(float(np.squeeze(upper)), abs=1e-12)
    assert 0.0 <= mine.lam <= 1.0


@pytest.mark.parametrize("lam", [0.0, 0.5, 1.0])
def test_ppi_mean_equals_ppi_py_at_a_fixed_weight(lam: float) -> None:
    y, f, f_unl = _data(7, 150, 900, accuracy=0.8)
    mine = ppi_mean(y, f, f_unl, lam=lam)
    lower, upper = ppi_py.ppi_mean_ci(y, f, f_unl, alpha=0.05, lam=lam)
    assert (mine.lower, mine.upper) == pytest.approx(
        (float(np.squeeze(lower)), float(np.squeeze(upper))), abs=1e-12
    )
    assert mine.lam == lam


def test_ordinal_values_equal_ppi_py() -> None:
    rng = np.random.default_rng(11)
    truth = rng.integers(1, 6, size=1000).astype(float)
    pred = np.clip(truth + rng.integers(-1, 2, size=1000), 1, 5).astype(float)
    y, f, f_unl = truth[:150], pred[:150], pred[150:]
    mine = ppi_mean(y, f, f_unl)
    lower, upper = ppi_py.ppi_mean_ci(y, f, f_unl, alpha=0.05)
    assert (mine.lower, mine.upper) == pytest.approx(
        (float(np.squeeze(lower)), float(np.squeeze(upper))), abs=1e-12
    )


def test_power_tuning_is_zero_for_a_model_at_chance_and_near_one_for_a_perfect_one() -> None:
    rng = np.random.default_rng(3)
    y = (rng.random(400) < 0.3).astype(float)
    assert power_tuning(y, y, (rng.random(4000) < 0.3).astype(float)) > 0.85
    noise = (rng.random(400) < 0.5).astype(float)
    assert power_tuning(y, noise, (rng.random(4000) < 0.5).astype(float)) < 0.2


def test_constant_predictions_fall_back_to_the_audit_alone() -> None:
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0])
    est = ppi_mean(y, np.ones(8), np.ones(100))
    assert est.lam == 0.0
    assert est.estimate == pytest.approx(y.mean())
    assert est.se == pytest.approx(y.std() / math.sqrt(8))


def test_too_few_audit_pairs_is_a_reason_not_an_error() -> None:
    est = ppi_mean([1.0], [1.0], np.ones(10))
    assert not est.ok
    assert "at least 2" in est.reason
    assert math.isnan(est.estimate)
    assert not audit_proportion([]).ok
    assert not audit_mean([3.0]).ok


def test_malformed_input_raises() -> None:
    with pytest.raises(ValueError, match="same shape"):
        ppi_mean([1, 0, 1], [1, 0], [0, 1])
    with pytest.raises(ValueError, match="0/1"):
        audit_proportion([0, 2, 1])
    with pytest.raises(ValueError, match="0/1"):
        ppi_mean([0, 2], [0, 1], [1, 1], binary=True)
    with pytest.raises(ValueError, match="lam"):
        ppi_mean([0, 1], [0, 1], [1, 1], lam=1.5)
    with pytest.raises(ValueError, match="one-dimensional"):
        audit_mean(np.ones((2, 2)))


def test_a_prevalence_with_40_on_each_side_keeps_ppi_pys_normal_interval() -> None:
    y, f, f_unl = _data(1, 200, 1800, accuracy=0.75)
    assert min(y.sum(), (1 - y).sum()) >= NORMAL_SIDE
    mine = ppi_mean(y, f, f_unl, binary=True)
    lower, upper = ppi_py.ppi_mean_ci(y, f, f_unl, alpha=0.05, lam=None)
    assert mine.interval == "normal"
    assert (mine.lower, mine.upper) == pytest.approx(
        (float(np.squeeze(lower)), float(np.squeeze(upper))), abs=1e-12
    )
    assert "normal interval of PPI++" in mine.why


def test_a_rare_code_gets_the_score_interval_and_says_why() -> None:
    y = np.zeros(150)
    y[:8] = 1
    f = y.copy()
    f[8:11] = 1  # three false positives
    est = ppi_mean(y, f, np.r_[np.zeros(1500), np.ones(90)], binary=True)
    _, upper = ppi_py.ppi_mean_ci(y, f, np.r_[np.zeros(1500), np.ones(90)], alpha=0.05)
    assert est.interval == "score"
    assert "8 audit decision(s) of applies" in est.why
    assert "fewer than 40" in est.why
    # Never narrower than the normal interval towards 1/2, where a rare code's misses are.
    assert est.upper >= float(np.squeeze(upper)) - 1e-12
    assert est.lower <= est.estimate <= est.upper
    assert 0.0 < est.lam <= 1.0


def _cc_wilson_lower(k: int, n: int, z: float) -> float:
    # Newcombe (1998), method 4: the continuity-corrected score interval's lower bound.
    p = k / n
    if k == 0:
        return 0.0
    root = z * math.sqrt(z * z - 2 - 1 / n + 4 * p * (n * (1 - p) + 1))
    return max(0.0, (2 * n * p + z * z - 1 - root) / (2 * (n + z * z)))


@pytest.mark.parametrize(("k", "n"), [(3, 50), (1, 30), (12, 100), (0, 80), (30, 100)])
def test_with_no_weight_on_the_model_the_score_interval_is_wilsons(k: int, n: int) -> None:
    from statsmodels.stats.proportion import proportion_confint

    y = np.r_[np.ones(k), np.zeros(n - k)]
    est = ppi_mean(y, np.zeros(n), np.zeros(500), binary=True)
    # At Student's quantile with n - 1 degrees of freedom.
    z = float(stats.t.ppf(0.975, n - 1))
    wilson = proportion_confint(k, n, alpha=2 * float(stats.norm.sf(z)), method="wilson")
    assert est.lam == 0.0
    assert est.estimate == pytest.approx(k / n)
    # Towards 1/2 Wilson's bound (or the normal one, when wider); away from 1/2 the
    # continuity-corrected one, which mends Wilson's dips in coverage for rare codes.
    assert est.upper == pytest.approx(
        max(wilson[1], k / n + z * math.sqrt(k / n * (1 - k / n) / n))
    )
    assert est.lower == pytest.approx(_cc_wilson_lower(k, n, z), abs=1e-12)


def test_fewer_than_five_on_a_side_gives_the_model_no_weight() -> None:
    y = np.zeros(60)
    y[:2] = 1
    est = ppi_mean(y, y, np.zeros(500), binary=True)
    assert est.lam == 0.0
    assert est.estimate == pytest.approx(2 / 60)
    assert "no weight" in est.why
    assert est.lower >= 0.0


def test_audit_proportion_wilson_and_exact() -> None:
    y = np.r_[np.ones(12), np.zeros(28)]
    wilson = audit_proportion(y)
    exact = audit_proportion(y, interval="exact")
    assert wilson.estimate == exact.estimate == 0.3
    assert wilson.method == "audit (Wilson)"
    assert exact.method == "audit (Clopper-Pearson)"
    # Clopper-Pearson inverts the binomial test: its bounds are where the tails are 2.5%.
    assert stats.binom.sf(11, 40, exact.lower) == pytest.approx(0.025, abs=1e-9)
    assert stats.binom.cdf(12, 40, exact.upper) == pytest.approx(0.025, abs=1e-9)
    assert exact.upper - exact.lower > wilson.upper - wilson.lower
    assert clopper_pearson_interval(0, 10)[0] == 0.0
    assert clopper_pearson_interval(10, 10)[1] == 1.0


def test_audit_mean_uses_the_sample_standard_deviation() -> None:
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 3.0])
    est = audit_mean(y)
    half = 1.959963984540054 * y.std(ddof=1) / math.sqrt(6)
    assert (est.lower, est.upper) == pytest.approx((y.mean() - half, y.mean() + half))


def test_difference_of_normal_intervals_adds_the_variances() -> None:
    a = ppi_mean(*_data(1, 100, 500, accuracy=0.8))
    b = ppi_mean(*_data(2, 80, 400, accuracy=0.8))
    d = difference(a, b)
    half = 1.959963984540054 * math.hypot(a.se, b.se)
    assert d.estimate == pytest.approx(a.estimate - b.estimate)
    assert (d.lower, d.upper) == pytest.approx((d.estimate - half, d.estimate + half))


def test_difference_of_wilson_intervals_is_newcombes_hybrid_score() -> None:
    # Newcombe (1998), Table II, example (a): 56/70 vs 48/80 -> 0.2000 (0.0524, 0.3339).
    a = audit_proportion(np.r_[np.ones(56), np.zeros(14)])
    b = audit_proportion(np.r_[np.ones(48), np.zeros(32)])
    d = difference(a, b)
    assert d.estimate == pytest.approx(0.2)
    assert (d.lower, d.upper) == pytest.approx((0.0524, 0.3339), abs=5e-5)
    assert d.excludes_zero()


def test_difference_with_a_missing_estimate_says_why() -> None:
    d = difference(audit_proportion([]), audit_proportion([1, 0, 1]))
    assert not d.ok
    assert d.reason == "no audit pairs"
    assert not d.excludes_zero()
    with pytest.raises(ValueError, match="levels"):
        difference(audit_proportion([1, 0]), audit_proportion([1, 0], level=0.9))


def test_to_dict_is_plain() -> None:
    out = audit_proportion([]).to_dict()
    assert out["estimate"] is None
    assert out["reason"] == "no audit pairs"


def test_an_audit_all_on_one_side_gets_wilsons_upper_bound() -> None:
    est = ppi_mean(np.zeros(80), np.zeros(80), np.r_[np.zeros(300), np.ones(20)], binary=True)
    assert est.ok
    assert est.lower == 0.0
    z = float(stats.t.ppf(0.975, 79))
    assert est.upper == pytest.approx(z * z / (80 + z * z))  # Wilson's bound for 0 / 80
