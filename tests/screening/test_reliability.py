"""Reliability coefficients against independent implementations, and their intervals.

scikit-learn's ``cohen_kappa_score`` and the ``krippendorff`` package are the references;
decision sets come from hypothesis, with missing values and two to five coders.
"""

from __future__ import annotations

import itertools
import math
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from screening import cohen_kappa, krippendorff_alpha
from screening.coefficients import AlphaLevel
from screening.reliability import (
    Estimate,
    alpha_coefficient,
    kappa_coefficient,
    percent_coefficient,
    prevalence_paradox,
    reliability,
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def two_coders(draw: st.DrawFn) -> tuple[list[int], list[int], list[int]]:
    k = draw(st.integers(2, 6))
    labels = list(range(1, k + 1))
    n = draw(st.integers(1, 60))
    value = st.sampled_from(labels)
    first = draw(st.lists(value, min_size=n, max_size=n))
    # Second coder: mostly a copy of the first, so that kappa spans its range.
    agree = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    other = draw(st.lists(value, min_size=n, max_size=n))
    second = [f if a else o for f, a, o in zip(first, agree, other, strict=True)]
    return first, second, labels


@st.composite
def many_coders(draw: st.DrawFn) -> tuple[np.ndarray, list[int]]:
    k = draw(st.integers(2, 6))
    coders = draw(st.integers(2, 5))
    n = draw(st.integers(1, 40))
    truth = draw(st.lists(st.integers(1, k), min_size=n, max_size=n))
    rows = []
    for _ in range(coders):
        noise = draw(st.lists(st.integers(0, k), min_size=n, max_size=n))
        # noise 0: missing; 1-2: the true value; else a random category.
        rows.append(
            [
                math.nan if z == 0 else float(t if z <= 2 else ((t + z) % k) + 1)
                for t, z in zip(truth, noise, strict=True)
            ]
        )
    return np.array(rows), list(range(1, k + 1))


@SETTINGS
@given(two_coders(), st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_matches_scikit_learn(case, weights) -> None:
    first, second, labels = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = cohen_kappa_score(first, second, labels=labels, weights=weights)
    ours = kappa_coefficient(first, second, labels=labels, weights=weights)
    if math.isnan(expected):
        assert ours.value is None
        assert ours.reason
    else:
        assert ours.value == pytest.approx(expected, abs=1e-9)


@SETTINGS
@given(two_coders())
def test_kappa_with_missing_values_drops_those_units(case) -> None:
    first, second, labels = case
    gappy = [None if i % 3 == 0 else v for i, v in enumerate(first)]
    kept = [i for i in range(len(first)) if i % 3]
    assume(kept)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = cohen_kappa_score(
            [first[i] for i in kept], [second[i] for i in kept], labels=labels
        )
    ours = kappa_coefficient(gappy, second, labels=labels)
    if math.isnan(expected):
        assert ours.value is None
    else:
        assert ours.value == pytest.approx(expected, abs=1e-9)


def _reference_alpha(data: np.ndarray, level: AlphaLevel, labels: list[int]) -> float | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = krippendorff.alpha(
                reliability_data=data, level_of_measurement=level, value_domain=labels
            )
    except (ValueError, ZeroDivisionError):
        return None
    return None if math.isnan(value) else float(value)


@SETTINGS
@given(many_coders(), st.sampled_from(["nominal", "ordinal", "interval"]))
def test_alpha_matches_the_krippendorff_package(case, level) -> None:
    data, labels = case
    ours = alpha_coefficient(data, level=level, labels=labels)
    pairable = int(np.sum(np.sum(~np.isnan(data), axis=0) >= 2))
    values = set(data[:, np.sum(~np.isnan(data), axis=0) >= 2].ravel()) - {math.nan}
    values = {v for v in values if not math.isnan(v)}
    if pairable == 0 or len(values) < 2:
        assert ours.value is None
        assert ours.reason
        return
    expected = _reference_alpha(data, level, labels)
    assert expected is not None
    assert ours.value == pytest.approx(expected, abs=1e-9)


@SETTINGS
@given(many_coders())
def test_percent_agreement_is_the_mean_share_of_agreeing_pairs(case) -> None:
    data, labels = case
    shares = []
    for column in data.T:
        present = [v for v in column if not math.isnan(v)]
        if len(present) >= 2:
            pairs = list(itertools.combinations(present, 2))
            shares.append(sum(a == b for a, b in pairs) / len(pairs))
    ours = percent_coefficient(data, labels=labels)
    if shares:
        assert ours.value == pytest.approx(float(np.mean(shares)))
    else:
        assert ours.value is None


def test_screening_wrappers_are_the_same_numbers() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(1, 6, 80)
    b = np.where(rng.random(80) < 0.6, a, rng.integers(1, 6, 80))
    for weights in (None, "linear", "quadratic"):
        assert cohen_kappa(a, b, weights=weights) == kappa_coefficient(a, b, weights=weights).value
    for level in ("nominal", "ordinal", "interval"):
        assert (
            krippendorff_alpha([a, b], level=level) == alpha_coefficient([a, b], level=level).value
        )


# --- reliability(): intervals, prevalence, undefined values and malformed input ---------------


def _ratings(seed: int, n: int = 120, k: int = 4, coders: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, k + 1, n)
    rows = [np.where(rng.random(n) < 0.75, truth, rng.integers(1, k + 1, n)) for _ in range(coders)]
    data = np.array(rows, dtype=float)
    data[rng.random(data.shape) < 0.1] = np.nan
    return data


def _inside(e: Estimate) -> bool:
    assert e.value is not None
    assert e.low is not None
    assert e.high is not None
    return e.low <= e.value <= e.high


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("coders", [2, 3, 5])
def test_intervals_cover_the_point_estimate_and_repeat_with_the_seed(
    seed: int, coders: int
) -> None:
    data = _ratings(seed, coders=coders)
    kwargs = {"level": "ordinal", "weights": "quadratic", "labels": [1, 2, 3, 4], "seed": seed}
    result = reliability(data, resamples=400, **kwargs)  # type: ignore[arg-type]
    assert _inside(result.percent)
    assert _inside(result.alpha)
    if coders == 2:
        assert result.kappa is not None
        assert _inside(result.kappa)
    else:
        assert result.kappa is None
    again = reliability(data, resamples=400, **kwargs)  # type: ignore[arg-type]
    assert again == result
    other = reliability(data, resamples=400, **{**kwargs, "seed": seed + 100})  # type: ignore[arg-type]
    assert other.alpha.value == result.alpha.value
    assert (other.alpha.low, other.alpha.high) != (result.alpha.low, result.alpha.high)
    assert result.bootstrap.resamples == 400
    assert result.bootstrap.seed == seed
    assert "400 resamples, seed" in result.bootstrap.describe()


@settings(max_examples=40, deadline=None)
@given(many_coders(), st.integers(0, 2**32 - 1))
def test_bootstrap_is_reproducible_for_any_data(case, seed) -> None:
    data, labels = case
    one = reliability(data, labels=labels, level="ordinal", resamples=50, seed=seed)
    two = reliability(data, labels=labels, level="ordinal", resamples=50, seed=seed)
    assert one == two
    for estimate in (one.percent, one.alpha):
        if estimate.low is not None:
            assert estimate.high is not None
            assert estimate.low <= estimate.high


def test_interval_agrees_with_a_naive_bootstrap() -> None:
    data = _ratings(11, n=150)
    both = ~np.isnan(data).any(axis=0)
    a, b = data[0, both], data[1, both]
    result = reliability(data, labels=[1, 2, 3, 4], weights="quadratic", resamples=4000, seed=1)
    rng = np.random.default_rng(99)
    draws = []
    for _ in range(4000):
        pick = rng.integers(0, a.size, a.size)
        draws.append(cohen_kappa_score(a[pick], b[pick], labels=[1, 2, 3, 4], weights="quadratic"))
    low, high = np.quantile(draws, [0.025, 0.975])
    assert result.kappa is not None
    assert result.kappa.low == pytest.approx(low, abs=0.03)
    assert result.kappa.high == pytest.approx(high, abs=0.03)


def test_clusters_of_one_unit_are_the_unit_bootstrap() -> None:
    data = _ratings(5)
    plain = reliability(data, resamples=200, seed=4)
    clustered = reliability(data, resamples=200, seed=4, clusters=[f"r{i:04d}" for i in range(120)])
    assert (clustered.alpha.low, clustered.alpha.high) == (plain.alpha.low, plain.alpha.high)
    # Whole clusters of units: intervals change but the point estimates do not.
    grouped = reliability(data, resamples=200, seed=4, clusters=[i // 4 for i in range(120)])
    assert grouped.alpha.value == plain.alpha.value
    assert grouped.bootstrap.over == "clusters"


def test_prevalence_per_coder_and_the_paradox_flag() -> None:
    # 100 units, "no" dominant: 92% agreement, yet kappa is low.
    first = ["no"] * 90 + ["yes"] * 2 + ["no"] * 4 + ["yes"] * 4
    second = ["no"] * 90 + ["yes"] * 2 + ["yes"] * 4 + ["no"] * 4
    result = reliability([first, second], coders=["ann", "bob"], resamples=100, seed=0)
    assert result.percent.value == pytest.approx(0.92)
    assert result.kappa is not None
    assert result.kappa.value is not None
    assert result.kappa.value < 0.4
    assert result.prevalence[0] == pytest.approx((0.94, 0.06))
    assert result.prevalence[1] == pytest.approx((0.94, 0.06))
    assert result.paradox is not None
    assert "no" in result.paradox
    assert "prevalence" in result.paradox
    assert "92%" in result.paradox
    balanced = reliability([list("aabbaabbab"), list("aabbaabbba")], resamples=10)
    assert balanced.paradox is None
    assert (
        prevalence_paradox(
            percent=0.9, coefficient=0.6, coefficient_name="kappa", shares=[0.9, 0.1], names="ab"
        )
        is None
    )


def test_one_category_in_all_data_is_undefined_with_a_reason() -> None:
    result = reliability([[1, 1, 1, 1], [1, 1, 1, 1]], labels=[1, 2], resamples=50)
    assert result.percent.value == 1.0
    for estimate in (result.kappa, result.alpha):
        assert estimate is not None
        assert estimate.value is None
        assert estimate.low is None
        assert estimate.reason is not None
        assert "single" in estimate.reason or "one category" in estimate.reason
    text = repr(result.to_dict())
    assert "nan" not in text


def test_fewer_than_two_units_is_undefined() -> None:
    cases: list[list[list[int | None]]] = [[[1, None], [2, 3]], [[None, None], [1, 2]]]
    for data in cases:
        result = reliability(data, resamples=50)
        for estimate in (result.percent, result.kappa, result.alpha):
            assert estimate is not None
            assert estimate.value is None
            assert estimate.reason is not None
            assert "item" in estimate.reason


def test_malformed_input_raises() -> None:
    with pytest.raises(ValueError, match="lengths"):
        reliability([[1, 2, 3], [1, 2]])
    with pytest.raises(ValueError, match="same length"):
        kappa_coefficient([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="two or more coders"):
        reliability([[1, 2, 3]])
    with pytest.raises(ValueError, match="coder names"):
        reliability([[1, 2], [1, 2]], coders=["a"])
    with pytest.raises(ValueError, match="clusters"):
        reliability([[1, 2], [1, 2]], clusters=[1])
    with pytest.raises(ValueError, match="not in labels"):
        reliability([[1, 2], [1, 3]], labels=[1, 2])
    with pytest.raises(ValueError, match="resamples"):
        reliability([[1, 2], [1, 2]], resamples=-1)
    with pytest.raises(ValueError, match="confidence_level"):
        reliability([[1, 2], [1, 2]], confidence_level=1.0)
    with pytest.raises(ValueError, match="level"):
        alpha_coefficient([[1, 2], [1, 2]], level="ratio")  # type: ignore[arg-type]


def test_no_resamples_means_no_interval() -> None:
    result = reliability(_ratings(2), resamples=0)
    assert result.alpha.value is not None
    assert result.alpha.low is None
    assert result.alpha.reason == "no interval: 0 resamples"


def test_a_constant_rater_is_not_called_the_kappa_paradox() -> None:
    # The model says "no" to all 100 items; the coder says "yes" to 16: 84% agreement,
    # kappa 0. The paradox rule alone would blame prevalence.
    model = ["no"] * 100
    coder = ["no"] * 84 + ["yes"] * 16
    result = reliability([coder, model], coders=["gold", "model"], resamples=50, seed=0)
    assert result.percent.value == pytest.approx(0.84)
    assert result.paradox is not None
    assert result.paradox.startswith("model gave no to every item: a constant rater")
    assert "(not the kappa paradox)" in result.paradox
    assert "comes from prevalence" not in result.paradox


def test_a_category_too_rare_for_the_bootstrap_gets_no_interval() -> None:
    """One coder used a code once in 24 units, the other agreed: kappa is 1, but most
    resamples miss that unit (kappa undefined there), and the rest would give a certain
    looking [1.00, 1.00]: no interval, and why."""
    first = [0] * 23 + [1]
    result = reliability([first, first], resamples=1000, seed=1)
    assert result.kappa is not None
    assert result.kappa.value == pytest.approx(1.0)
    assert result.kappa.low is None
    assert result.kappa.high is None
    assert result.kappa.reason is not None
    assert "too rare" in result.kappa.reason
    assert result.kappa.undefined_resamples > 50
