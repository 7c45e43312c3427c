"""The screen in plain words: the headline, the next action and the glosses."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from screening import ScreeningWarning
from screening.advice import GLOSSES, advise, gloss, to_verdict
from screening.headline import Headline, kappa_interval, make_headline
from screening.report import VRSReport, screen_report
from screening.story import pattern_line


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
        "the screen of the model's confidence is not settled yet for Timeliness"
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
    # Valid only says that no pathology was found, never that the model is right.
    assert advice.headline == (
        "the screen found no pathology in the model's confidence for all 2 codes"
    )
    assert "right from wrong" not in advice.headline
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


# -- the honest headline and steps that fit the study ------------------------------------


def constant_headline(name: str | None, n: int = 75) -> Headline:
    rng = np.random.default_rng(3)
    decisions = (rng.random(n) < 0.2).astype(float)
    return make_headline(
        name,
        picks=np.zeros(n),
        decisions=decisions,
        pick_applies=np.zeros(n, bool),
        decision_applies=decisions.astype(bool),
        confidence=rng.uniform(0.6, 0.9, n),
        labels={0.0: "No", 1.0: "Yes"},
    )


def test_a_constant_model_is_said_to_add_nothing_before_any_tier() -> None:
    head = constant_headline("Pay")
    assert head.sentence() == (
        "the model answered No to all 75 pairs of this code: it adds nothing here"
    )
    assert head.kappa.value == 0.0
    assert (head.kappa.low, head.kappa.high) == (0.0, 0.0)
    assert head.model_picks == (("No", 75), ("Yes", 0))
    # Even a Valid screen cannot outrank it.
    advice = advise(VALID, {"Pay": VALID}, headlines={"Pay": head, None: head})
    assert advice.headline.startswith("the model answered No to all 75 pairs")
    assert "Valid" not in advice.headline + advice.action
    assert advice.action.startswith("code Pay yourself")


def test_a_model_at_chance_is_said_to_add_nothing_so_far() -> None:
    rng = np.random.default_rng(0)
    picks = rng.random(200) < 0.5
    decisions = rng.random(200) < 0.5
    head = make_headline(
        "Pay",
        picks=picks.astype(float),
        decisions=decisions.astype(float),
        pick_applies=picks,
        decision_applies=decisions,
        confidence=rng.uniform(0.5, 1.0, 200),
    )
    assert head.at_chance
    assert head.adds_nothing
    assert "not better than chance" in head.sentence()


def test_a_model_that_agrees_gets_its_figures() -> None:
    rng = np.random.default_rng(1)
    decisions = rng.random(100) < 0.4
    picks = decisions.copy()
    picks[:10] = ~picks[:10]
    head = make_headline(
        "Pay",
        picks=picks.astype(float),
        decisions=decisions.astype(float),
        pick_applies=picks,
        decision_applies=decisions,
        confidence=rng.uniform(0.5, 1.0, 100),
    )
    assert not head.adds_nothing
    assert head.sentence().startswith("the model agrees with you on 90% of 100 pairs, kappa 0.")
    assert pattern_line("Valid", head).startswith(
        "response pattern: no pathology found (tier Valid) · AUROC "
    )
    assert " · kappa 0." in pattern_line("Valid", head)


@pytest.mark.parametrize("seed", range(5))
def test_kappa_and_its_interval_match_statsmodels(seed: int) -> None:
    from statsmodels.stats.inter_rater import cohens_kappa

    rng = np.random.default_rng(seed)
    first = rng.integers(0, 3, 120)
    second = np.where(rng.random(120) < 0.6, first, rng.integers(0, 3, 120))
    table = np.zeros((3, 3))
    np.add.at(table, (first, second), 1)
    reference = cohens_kappa(table, return_results=True)
    ours = kappa_interval(first, second)
    assert ours.value == pytest.approx(reference.kappa)
    assert ours.low == pytest.approx(reference.kappa_low)
    assert ours.high == pytest.approx(reference.kappa_upp)


def test_no_step_asks_for_more_pairs_than_remain() -> None:
    assert SHORT.tier == "Insufficient data"
    more = advise(SHORT, {"Pay": SHORT}).more
    assert more is not None
    assert more > 3
    advice = advise(SHORT, {"Pay": SHORT}, remaining={"Pay": 3})
    assert advice.more == 3
    assert advice.action.startswith("code the 3 Pay pairs left (every one)")
    assert "out of reach in this study" in advice.action
    done = advise(SHORT, {"Pay": SHORT}, audit=True, remaining={"Pay": 0})
    assert done.more == 0
    assert done.action.startswith("every audit pair of Pay is coded: no verdict can be reached")
    assert "bigger model" in done.action
    assert to_verdict(SHORT, "Pay", remaining=10_000) == f"code {more} more Pay pairs"


def test_a_finished_audit_does_not_say_every_pair_is_coded() -> None:
    # Every audit pair is coded, but the study may hold pairs outside the audit (a new
    # wave): the step must not claim that nothing is left.
    head = constant_headline("Pay")
    advice = advise(
        VALID, {"Pay": VALID}, audit=True, headlines={"Pay": head, None: head}, remaining={"Pay": 0}
    )
    assert "every pair is coded" not in advice.action
    assert advice.action.startswith(
        "keep your own decisions for Pay and code the pairs outside the audit yourself "
        "(every audit pair is coded)"
    )
    whole = advise(VALID, {"Pay": VALID}, headlines={"Pay": head, None: head}, remaining={"Pay": 0})
    assert whole.action.startswith("keep your own decisions for Pay (every pair is coded)")
