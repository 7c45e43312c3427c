"""Curve math against values worked out by hand (METHOD.md section 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scoring.curves import SPARK_BARS, curve_from_logprobs, sparkline


def test_uniform_curve_has_entropy_ln_k_and_normalised_one() -> None:
    curve = curve_from_logprobs(np.log([0.2] * 5))
    assert curve.entropy == pytest.approx(math.log(5), abs=1e-12)
    assert curve.norm_entropy == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(curve.probs, 0.2)
    assert curve.on_scale_mass == pytest.approx(1.0)
    assert curve.expected == pytest.approx(3.0)
    # sd of the uniform distribution over 1..5: sqrt((25 - 1) / 12) = sqrt(2)
    assert curve.spread == pytest.approx(math.sqrt(2.0))
    assert curve.confidence == pytest.approx(0.2)
    assert curve.mode == 0  # ties go to the lower index


def test_one_hot_curve_has_zero_entropy() -> None:
    curve = curve_from_logprobs([-math.inf, -math.inf, 0.0, -math.inf, -math.inf])
    assert curve.entropy == 0.0
    assert curve.norm_entropy == 0.0
    assert curve.mode == 2
    assert curve.expected == pytest.approx(3.0)
    assert curve.spread == 0.0
    assert curve.confidence == 1.0
    assert curve.surprisal[2] == 0.0
    assert math.isinf(curve.surprisal[0])


def test_renormalisation_and_off_scale_mass() -> None:
    # P = 0.1 and 0.3 on a two-point scale: m = 0.4, p = (0.25, 0.75), 60 % off-scale
    curve = curve_from_logprobs(np.log([0.1, 0.3]), values=[0, 1])
    assert curve.on_scale_mass == pytest.approx(0.4)
    assert curve.off_scale_mass == pytest.approx(0.6)
    assert curve.probs == pytest.approx([0.25, 0.75])
    assert curve.off_scale  # 0.6 > 0.5
    h = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert curve.entropy == pytest.approx(h)
    assert curve.norm_entropy == pytest.approx(h / math.log(2))
    assert curve.surprisal == pytest.approx([-math.log(0.1), -math.log(0.3)])
    assert curve.expected == pytest.approx(0.75)
    assert curve.spread == pytest.approx(math.sqrt(0.25 * 0.75))
    assert not curve_from_logprobs(np.log([0.3, 0.3])).off_scale


def test_mode_and_expected_value_differ_on_a_bimodal_curve() -> None:
    # mass split between the ends: the pick is 5, the expected value sits in the middle
    curve = curve_from_logprobs(np.log([0.45, 0.0 + 1e-300, 1e-300, 1e-300, 0.55]))
    assert curve.mode == 4
    assert curve.expected == pytest.approx(0.45 * 1 + 0.55 * 5)
    assert curve.confidence == pytest.approx(0.55)
    assert curve.spread == pytest.approx(math.sqrt(0.45 * 0.55) * 4)


def test_entropy_confidence_signal() -> None:
    curve = curve_from_logprobs(np.log([0.5, 0.25, 0.25]))
    h = -(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25))
    assert curve.confidence_as("pmax") == pytest.approx(0.5)
    assert curve.confidence_as("entropy") == pytest.approx(1 - h / math.log(3))
    with pytest.raises(ValueError, match="unknown confidence signal"):
        curve.confidence_as("vibes")


def test_tiny_masses_renormalise_without_underflow() -> None:
    curve = curve_from_logprobs([-800.0, -801.0])
    p0 = 1 / (1 + math.exp(-1))
    assert curve.probs == pytest.approx([p0, 1 - p0])
    assert curve.on_scale_mass == pytest.approx(0.0)
    assert curve.off_scale


@pytest.mark.parametrize(
    ("logprobs", "message"),
    [
        ([0.0], "shape"),
        ([[-1.0, -2.0]], "shape"),
        ([-1.0, math.nan], "NaN"),
        ([-1.0, 0.5], "<= 0"),
        ([-math.inf, -math.inf], "zero"),
    ],
)
def test_malformed_logprobs_raise(logprobs: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        curve_from_logprobs(logprobs)


def test_values_must_match_the_options() -> None:
    with pytest.raises(ValueError, match="values"):
        curve_from_logprobs([-1.0, -2.0], values=[1, 2, 3])


def test_sparkline_is_tall_where_surprisal_is_low() -> None:
    line = sparkline([3.0, 0.1, 5.0])
    assert len(line) == 3
    assert line[1] == SPARK_BARS[-1]
    assert line[2] == SPARK_BARS[0]
    assert sparkline([1.0, 1.0]) == SPARK_BARS[-1] * 2
    assert sparkline([math.inf, 0.0]) == SPARK_BARS[0] + SPARK_BARS[-1]
    assert sparkline([]) == ""
    assert sparkline([math.nan, 0.0]) == SPARK_BARS[0] + SPARK_BARS[-1]
    assert sparkline([math.nan, math.inf]) == "··"


def test_sparkline_heights_are_the_probabilities_relative_to_the_top() -> None:
    # exp(-ln 2) = 0.5 of the top: 3.5 of 7 steps, rounded half to even: 4.
    # exp(-ln 4) = 0.25: 1.75 steps: 2.
    assert sparkline([0.0, math.log(2), math.log(4), 30.0]) == (
        SPARK_BARS[7] + SPARK_BARS[4] + SPARK_BARS[2] + SPARK_BARS[0]
    )
