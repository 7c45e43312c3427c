"""The screen in plain words: the headline, the next action and the glosses."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from screening import ScreeningWarning
from screening.advice import GLOSSES, advise, gloss
from screening.report import VRSReport, screen_report


def report(a: int, b: int, c: int, d: int) -> VRSReport:
    correct = [True] * a + [False] * b + [True] * c + [False] * d
    confidence = [0.9] * (a + b) + [0.2] * (c + d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScreeningWarning)
        return screen_report(np.array(correct), np.array(confidence), threshold=0.5)


VALID = report(385, 29, 82, 28)
SHORT = report(10, 1, 3, 0)
INVALID = report(5, 200, 200, 5)


def test_every_index_has_plain_words() -> None:
    assert gloss("L") == "L (confident when wrong)"
    assert GLOSSES["Fp"] == "unsure when right"
    assert GLOSSES["RBS"] == "confidence inverted"
    assert GLOSSES["TRIN"] == "always the same confidence"
    assert gloss("Accuracy") == "Accuracy"


def test_insufficient_data_names_the_code_and_how_many_more() -> None:
    assert SHORT.tier == "Insufficient data"
    advice = advise(SHORT, {"Timeliness": SHORT, "Staff": VALID})
    assert advice.headline == (
        "the model's confidence does not yet tell right from wrong for Timeliness"
    )
    assert advice.code == "Timeliness"
    assert advice.more is not None
    assert advice.more > 0
    assert advice.action == f"code {advice.more} more Timeliness pairs"


@pytest.mark.parametrize("audit", [False, True])
def test_one_more_pair_leaves_the_codes_name_alone(
    monkeypatch: pytest.MonkeyPatch, audit: bool
) -> None:
    monkeypatch.setattr("screening.advice._more", lambda report: 1)
    advice = advise(SHORT, {"Repairs": SHORT}, audit=audit)
    expected = "audit pair of Repairs" if audit else "Repairs pair"
    assert advice.action == f"code 1 more {expected}"


def test_invalid_comes_first_and_says_why() -> None:
    assert INVALID.tier == "Invalid"
    advice = advise(INVALID, {"Staff": SHORT, "Pay": INVALID})
    assert advice.code == "Pay"
    assert advice.headline.startswith("the model's confidence cannot be trusted for Pay: ")
    assert any(words in advice.headline for words in GLOSSES.values())
    assert advice.action.startswith("code Pay yourself")


def test_all_valid() -> None:
    advice = advise(VALID, {"Pay": VALID, "Staff": VALID})
    assert advice.headline == "the model's confidence tells right from wrong for all 2 codes"
    assert advice.code is None


def test_no_errors_yet_asks_for_disagreements() -> None:
    none_wrong = report(12, 0, 6, 0)
    advice = advise(none_wrong, {"Pay": none_wrong})
    assert "has not disagreed with you yet" in advice.action


def test_nothing_to_screen() -> None:
    empty = report(0, 0, 0, 0)
    assert advise(empty, {}).headline.startswith("nothing to screen yet")


@pytest.mark.parametrize(("k", "cut"), [(2, 0.75), (5, 0.6), (9, 5 / 9), (3, 2 / 3)])
def test_the_scale_aware_cut_is_halfway_between_chance_and_certainty(k: int, cut: float) -> None:
    from study.analysis.screen import scale_cut

    assert scale_cut(k) == pytest.approx(cut)
    # (p_max - 1/K) / (1 - 1/K) = 0.5 exactly at the cut
    assert (cut - 1 / k) / (1 - 1 / k) == pytest.approx(0.5)
    assert scale_cut(k, "entropy") == 0.5
    with pytest.raises(ValueError, match="at least 2"):
        scale_cut(1)
