"""Screening coded data: correctness modes, confidence signals, per-code and pooled."""

from __future__ import annotations

import math

import numpy as np
import pytest

from screening import (
    ScreeningWarning,
    confidence_signal,
    decisions_agree,
    default_applies_from,
    screen_coded,
    screen_report,
)

LIKERT = [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("scale", "cut"),
    [([1, 2, 3, 4, 5], 4), (list(range(1, 10)), 6), ([0, 1], 1), ([1, 2, 3, 4], 3)],
)
def test_default_applies_from_is_above_the_midpoint(scale: list[int], cut: int) -> None:
    assert default_applies_from(scale) == cut


def test_agreement_modes() -> None:
    model = [1, 4, 5, 3, 2]
    coder = [2, 5, 3, 3, 4]
    agree = lambda mode: decisions_agree(model, coder, option_values=LIKERT, agreement=mode)  # noqa: E731
    assert agree("applies").tolist() == [True, True, False, True, False]
    assert agree("exact").tolist() == [False, False, False, True, False]
    assert agree("within1").tolist() == [True, True, False, True, False]
    custom = decisions_agree(model, coder, option_values=LIKERT, applies_from=3)
    assert custom.tolist() == [True, True, True, True, False]


def test_within1_counts_scale_steps_not_values() -> None:
    scale = [0, 10, 20]
    assert decisions_agree([0, 0], [10, 20], option_values=scale, agreement="within1").tolist() == [
        True,
        False,
    ]


def test_decisions_off_the_scale_raise() -> None:
    with pytest.raises(ValueError, match=r"model_value holds 6\.0"):
        decisions_agree([6], [5], option_values=LIKERT)
    with pytest.raises(ValueError, match="strictly increasing"):
        decisions_agree([1], [1], option_values=[2, 1])
    with pytest.raises(ValueError, match="agreement"):
        decisions_agree([1], [1], option_values=LIKERT, agreement="close")  # type: ignore[arg-type]


def test_confidence_signals() -> None:
    probs = np.array([[0.2, 0.2, 0.2, 0.2, 0.2], [1.0, 0, 0, 0, 0], [0.5, 0.5, 0, 0, 0]])
    np.testing.assert_allclose(confidence_signal(probabilities=probs), [0.2, 1.0, 0.5])
    np.testing.assert_allclose(
        confidence_signal(probabilities=probs, kind="entropy"),
        [0.0, 1.0, 1 - math.log(2) / math.log(5)],
        atol=1e-12,
    )
    np.testing.assert_allclose(
        confidence_signal(normalised_entropy=[0.25, 1.0], kind="entropy"), [0.75, 0.0]
    )
    with pytest.raises(ValueError, match="needs probabilities or p_max"):
        confidence_signal(normalised_entropy=[0.5])
    with pytest.raises(ValueError, match="sum to 1"):
        confidence_signal(probabilities=[[0.5, 0.2]])
    with pytest.raises(ValueError, match=r"2-D .* got \(3,\)"):
        confidence_signal(probabilities=[0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="not both"):
        confidence_signal(probabilities=probs, p_max=[1, 1, 1])


def _coded(seed: int = 3, n: int = 600) -> dict[str, np.ndarray]:
    """Synthetic coded data where confidence tracks correctness (a Valid signal)."""
    rng = np.random.default_rng(seed)
    coder = rng.integers(1, 6, n).astype(float)
    wrong = rng.random(n) < 0.3
    model = np.where(wrong, 6 - coder, coder)
    model = np.where(model == coder, model, np.where(coder == 3, 1, model))
    p_max = np.clip(np.where(wrong, rng.normal(0.4, 0.15, n), rng.normal(0.7, 0.15, n)), 0.2, 1)
    codes = np.array(["price", "staff", "waiting"])[rng.integers(0, 3, n)]
    return {"model": model, "coder": coder, "p_max": p_max, "codes": codes}


def test_screen_coded_per_code_and_pooled() -> None:
    data = _coded()
    coder = data["coder"].copy()
    coder[:10] = np.nan  # not yet annotated
    res = screen_coded(
        data["model"],
        coder,
        option_values=LIKERT,
        codes=data["codes"],
        p_max=data["p_max"],
        source="SmolLM2-135M",
        dataset="nhs",
        with_phase_b=True,
    )
    assert res.n_excluded == 10
    assert res.n_screened == 590
    assert list(res.per_code) == list(dict.fromkeys(data["codes"][10:].tolist()))
    assert sum(r.n_items for r in res.per_code.values()) == res.pooled.n_items == 590
    assert res.applies_from == 4.0
    assert res.pooled.code is None
    assert res.per_code["staff"].code == "staff"
    assert res.reports()[-1] is res.pooled

    # The pooled report is the plain screen of the concatenated arrays.
    keep = slice(10, None)
    correct = (data["model"][keep] >= 4) == (data["coder"][keep] >= 4)
    direct = screen_report(correct, data["p_max"][keep])
    assert res.pooled.screen == direct.screen
    assert res.pooled.tier == "Valid"
    assert res.pooled.phase_b is not None
    assert res.pooled.phase_b.kappa_weights == "quadratic"
    assert res.pooled.phase_b.kappa is not None
    assert -1 <= res.pooled.phase_b.kappa <= 1
    assert res.pooled.source == "SmolLM2-135M"
    assert "p_max" in res.pooled.confidence_signal


def test_screen_coded_without_codes_and_with_entropy() -> None:
    data = _coded(seed=5)
    k = 5
    probs = np.full((data["p_max"].size, k), 0.0)
    probs[:, 0] = data["p_max"]
    probs[:, 1:] = ((1 - data["p_max"]) / (k - 1))[:, None]
    res = screen_coded(
        data["model"],
        data["coder"],
        option_values=LIKERT,
        probabilities=probs,
        confidence="entropy",
        agreement="exact",
        threshold="median",
    )
    assert res.per_code == {}
    assert res.confidence == "entropy"
    assert "median" in res.pooled.binarisation_threshold
    assert res.pooled.phase_b is None  # not asked


def test_screen_coded_warns_for_a_degenerate_code() -> None:
    model = np.array([4, 4, 4, 1, 2, 5])
    coder = np.array([4, 5, 4, 1, 2, 5])  # all correct under "applies"
    with pytest.warns(ScreeningWarning, match="no incorrect items"):
        res = screen_coded(model, coder, option_values=LIKERT, p_max=[0.9, 0.8, 0.6, 0.4, 0.3, 0.9])
    assert res.pooled.tier == "Insufficient data"


def test_screen_coded_malformed() -> None:
    with pytest.raises(ValueError, match="same length"):
        screen_coded([1, 2], [1], option_values=LIKERT, p_max=[0.5, 0.5])
    with pytest.raises(ValueError, match="same length"):
        screen_coded([1, 2], [1, 2], option_values=LIKERT, p_max=[0.5, 0.5], codes=["a"])
