"""Certified delegation: the fixed-sequence threshold search, its bounds and its refusals."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from scipy import stats

from screening import ScreeningWarning, screen_report
from screening.delegation import (
    FIRST_SHARE,
    SECOND_DEPTH,
    START_RATE,
    audit_needed,
    audit_outlook,
    binomial_p_value,
    certify_delegation,
    clopper_pearson_upper,
    delegation_mask,
    min_audit_pairs,
    split_population,
    worst_case_delegated_error,
)
from screening.headline import PATTERN

FAST = settings(max_examples=80, deadline=None)


def _ranked(n: int, errors_at: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """n distinct confidences, highest first, wrong at the given 1-based ranks."""
    conf = np.linspace(0.999, 0.5, n)
    correct = np.ones(n, bool)
    correct[[r - 1 for r in errors_at]] = False
    return conf, correct


def _reference(conf: np.ndarray, correct: np.ndarray, eps: float, level: float):
    """A plain loop over the rules of METHOD.md section 3 (with our skip rule)."""
    n_min = min_audit_pairs(0, max_error=eps, level=level)
    chosen, tested = None, []
    for t in sorted(set(conf.tolist()), reverse=True):
        above = conf >= t
        n, k = int(above.sum()), int((~correct[above]).sum())
        if n < n_min:
            continue
        p = stats.binom.cdf(k, n, eps)
        tested.append((t, n, k))
        if p > 1 - level:
            break
        chosen = (t, n, k)
    return chosen, tested


# --- the numbers of METHOD.md --------------------------------------------------------


@pytest.mark.parametrize(
    ("max_error", "expected"), [(0.05, [59, 93, 124, 208]), (0.10, [29, 46, 61, 103])]
)
def test_min_audit_pairs_matches_the_method_table(max_error: float, expected: list[int]) -> None:
    got = [min_audit_pairs(k, max_error=max_error, level=0.95) for k in (0, 1, 2, 5)]
    assert got == expected
    for k, n in zip((0, 1, 2, 5), expected, strict=True):
        # One pair fewer must not certify: the table is the minimum, not just enough.
        assert clopper_pearson_upper(k, n, level=0.95) <= max_error
        assert clopper_pearson_upper(k, n - 1, level=0.95) > max_error


def test_clopper_pearson_known_values() -> None:
    # No error in n: the bound solves (1 - U)^n = delta.
    assert clopper_pearson_upper(0, 59) == pytest.approx(1 - 0.05 ** (1 / 59), rel=1e-10)
    assert clopper_pearson_upper(3, 3) == 1.0
    assert clopper_pearson_upper(0, 0) == 1.0
    assert clopper_pearson_upper(5, 100, level=0.99) == pytest.approx(
        stats.beta.ppf(0.99, 6, 95), rel=1e-12
    )


@pytest.mark.parametrize("eps", [0.01, 0.05, 0.1, 0.2])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_p_value_and_bound_agree(eps: float, level: float) -> None:
    # p <= delta exactly when U <= eps: the two readings of step 2 are one test.
    for n in range(1, 160, 7):
        for k in range(0, n + 1, max(1, n // 12)):
            p = binomial_p_value(k, n, max_error=eps)
            u = clopper_pearson_upper(k, n, level=level)
            if abs(u - eps) > 1e-9:
                assert (p <= 1 - level) == (u <= eps), (n, k, p, u)


def test_binomial_p_value_edges() -> None:
    assert binomial_p_value(0, 0, max_error=0.05) == 1.0
    assert binomial_p_value(0, 59, max_error=0.05) == pytest.approx(0.95**59)
    assert binomial_p_value(10, 10, max_error=0.05) == pytest.approx(1.0)


# --- the search ------------------------------------------------------------------------


def test_sequence_stops_at_the_first_error_that_breaks_the_bound() -> None:
    conf, correct = _ranked(200, [70, 150])
    result = certify_delegation(conf, correct, tier="Valid", procedure="fixed sequence")
    # n = 59..69 have no error (0.95^59 = .0485 <= .05); n = 70 has 1 (p = .13): stop.
    assert [t.n for t in result.tests] == list(range(59, 71))
    assert [t.rejected for t in result.tests] == [True] * 11 + [False]
    assert result.threshold == conf[68]
    assert (result.n, result.errors) == (69, 0)
    assert result.upper_bound == pytest.approx(1 - 0.05 ** (1 / 69))
    assert result.upper_bound <= 0.05
    assert result.reason == ""
    assert result.certified
    assert (result.n_audit, result.n_audit_errors, result.min_pairs) == (200, 2, 59)


def test_an_early_error_refuses_even_if_lower_thresholds_would_pass() -> None:
    # With one error at rank 30, n = 59 fails (p = .20), though 93 pairs with 1 error
    # would pass: fixed-sequence testing never looks past the first failure.
    conf, correct = _ranked(300, [30])
    result = certify_delegation(conf, correct, tier="Valid", procedure="fixed sequence")
    assert result.threshold is None
    assert len(result.tests) == 1
    assert (result.tests[0].n, result.tests[0].errors) == (59, 1)
    assert "no threshold qualifies: the 59 audit pairs with confidence >= " in result.reason
    assert "have 1 error, upper bound 7.8% > 5.0%" in result.reason


def test_tied_confidences_form_one_threshold() -> None:
    conf = np.r_[np.full(93, 0.99), np.linspace(0.9, 0.5, 50)]
    correct = np.ones(conf.size, bool)
    correct[[10, 93]] = False  # one error among the 93 tied, one just below them
    result = certify_delegation(conf, correct, tier="Valid", procedure="fixed sequence")
    assert result.tests[0].threshold == 0.99
    assert (result.tests[0].n, result.tests[0].errors) == (93, 1)
    assert (result.threshold, result.n, result.errors) == (0.99, 93, 1)
    assert not result.tests[1].rejected


def test_everything_correct_delegates_every_pair() -> None:
    conf = np.linspace(1.0, 0.6, 300)
    for procedure in ("fallback", "fixed sequence"):
        result = certify_delegation(
            conf, np.ones(300, bool), tier="Valid", max_error=0.1, procedure=procedure
        )
        assert result.threshold == pytest.approx(0.6)
        assert result.n == 300
        assert all(t.rejected for t in result.tests if t.level > 0)


@pytest.mark.parametrize("tier", ["Invalid", "Indeterminate", "Insufficient data"])
def test_a_screen_that_is_not_valid_refuses(tier: str) -> None:
    conf = np.linspace(1.0, 0.6, 300)
    result = certify_delegation(conf, np.ones(300, bool), tier=tier)  # type: ignore[arg-type]
    assert result.threshold is None
    assert result.tests == ()
    assert f"(tier Valid); it found: {PATTERN[tier]} (tier {tier})" in result.reason
    assert result.tier == tier


def test_the_gate_uses_the_screen_of_the_same_audit_sample() -> None:
    # 80 confident pairs, all correct, and 220 unconfident ones of which 40 wrong: step 3
    # alone would certify the top, but with no confident error the 2x2 table has b = 0
    # and the screen cannot judge the signal (Insufficient data), so nothing is delegated.
    conf = np.r_[np.linspace(0.99, 0.9, 80), np.linspace(0.7, 0.5, 220)]
    correct = np.r_[np.ones(80, bool), np.arange(220) >= 40]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScreeningWarning)
        tier = screen_report(correct, conf, threshold=0.75).tier
    assert tier == "Insufficient data"
    assert certify_delegation(conf, correct, tier=tier).threshold is None
    assert certify_delegation(
        conf, correct, tier="Valid", procedure="fixed sequence"
    ).threshold == pytest.approx(0.9)


def test_too_small_an_audit_refuses_with_the_needed_size() -> None:
    result = certify_delegation(np.linspace(1, 0.5, 40), np.ones(40, bool), tier="Valid")
    assert result.threshold is None
    assert result.reason == (
        "40 audit pairs; certifying at most 5.0% errors at 95% needs at least 59 "
        "audit pairs above a threshold, all correct"
    )
    assert math.isnan(result.upper_bound)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_error": 0.0}, "max_error must be in \\(0, 1\\), got 0.0"),
        ({"max_error": 1.0}, "max_error must be in \\(0, 1\\)"),
        ({"max_error": -0.2}, "max_error must be in \\(0, 1\\)"),
        ({"max_error": "0.05"}, "max_error must be a number"),
        ({"level": 1.0}, "level must be in \\(0, 1\\), got 1.0"),
        ({"level": 0.0}, "level must be in \\(0, 1\\)"),
        ({"level": 95}, "level must be in \\(0, 1\\)"),
    ],
)
def test_bad_error_or_level(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        certify_delegation([0.9], [True], tier="Valid", **kwargs)  # type: ignore[arg-type]


def test_bad_audit_arrays() -> None:
    with pytest.raises(ValueError, match="no audit decisions"):
        certify_delegation([], [], tier="Valid")
    with pytest.raises(ValueError, match=r"same length, got confidence \(3,\), correct \(2,\)"):
        certify_delegation([0.9, 0.8, 0.7], [True, False], tier="Valid")
    with pytest.raises(ValueError, match="confidence must be finite"):
        certify_delegation([0.9, math.nan], [True, False], tier="Valid")
    with pytest.raises(ValueError, match="correct must hold only 0/1"):
        certify_delegation([0.9, 0.8], [1, 2], tier="Valid")


def test_guarantee_sentence_and_dict() -> None:
    conf, correct = _ranked(200, [70])
    result = certify_delegation(conf, correct, tier="Valid", procedure="fixed sequence")
    sentence = result.guarantee("Workload")
    assert sentence.startswith(
        "With 95% confidence, the model's error rate among Workload pairs with confidence >= "
    )
    assert "is at most 5.0% (blind random audit: 69 such pairs, 0 errors" in sentence
    assert "fixed sequence from the highest down, the whole level on each, stopping" in sentence
    data = json.loads(json.dumps(result.to_dict()))
    assert data["n"] == 69
    assert len(data["tests"]) == 12
    assert data["procedure"] == "fixed sequence"
    fallback = certify_delegation(conf, correct, tier="Valid", procedure="fallback")
    words = fallback.guarantee("Workload")
    assert "fallback procedure (Wiens 2003" in words
    assert "a failed one passes nothing on but does not end the search" in words
    assert json.loads(json.dumps(fallback.to_dict()))["procedure_words"] in words
    strict = certify_delegation(conf, correct, tier="Valid", max_error=0.1, level=0.975)
    assert strict.guarantee().startswith(
        "With 97.5% confidence, the model's error rate among pairs"
    )
    refused = certify_delegation(conf, correct, tier="Invalid")
    assert refused.guarantee("Workload").startswith("Nothing delegated for Workload pairs: ")
    assert json.loads(json.dumps(refused.to_dict()))["upper_bound"] is None


# --- the population ----------------------------------------------------------------


def test_split_counts_pairs_at_or_above_the_threshold() -> None:
    conf = [0.2, 0.95, 0.9, 0.9, 0.5]
    assert delegation_mask(conf, threshold=0.9).tolist() == [False, True, True, True, False]
    split = split_population(conf, threshold=0.9)
    assert (split.delegated, split.left, split.total) == (3, 2, 5)
    assert split_population(conf, threshold=None).delegated == 0
    assert split_population([], threshold=0.5).total == 0
    with pytest.raises(ValueError, match="confidence must be finite"):
        split_population([math.inf], threshold=0.5)


# --- how much auditing is needed --------------------------------------------------------


def test_audit_needed_clean() -> None:
    assert audit_needed(n=0, errors=0) == 59
    assert audit_needed(n=40, errors=0) == 19
    assert audit_needed(n=40, errors=1) == 53
    assert audit_needed(n=100, errors=1) == 0
    assert audit_needed(n=0, errors=0, max_error=0.1) == 29
    # 40% of audit responses land above the threshold: 19 pairs need 48 responses.
    assert audit_needed(n=40, errors=0, share=0.4) == 48


def test_audit_needed_at_the_current_rate() -> None:
    more = audit_needed(n=100, errors=2, projection="current rate")
    assert more is not None
    total = 100 + more
    k = 2 + math.ceil(0.02 * more - 1e-9)
    assert stats.binom.cdf(k, total, 0.05) <= 0.05
    # ... and it is the first such size.
    k_before = 2 + math.ceil(0.02 * (more - 1) - 1e-9)
    assert stats.binom.cdf(k_before, total - 1, 0.05) > 0.05
    assert audit_needed(n=100, errors=5, projection="current rate") is None
    assert audit_needed(n=100, errors=9, projection="current rate") is None
    assert audit_needed(n=0, errors=0, projection="current rate") == 59


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 5, "errors": 6}, "0 <= errors <= n"),
        ({"n": -1, "errors": 0}, "0 <= errors <= n"),
        ({"n": 5, "errors": 0, "share": 0.0}, "share must be in \\(0, 1\\]"),
        ({"n": 5, "errors": 0, "share": 1.5}, "share must be in"),
        ({"n": 5, "errors": 0, "max_error": 1.0}, "max_error must be in"),
        ({"n": 5, "errors": 0, "projection": "hopeful"}, "projection must be"),
    ],
)
def test_audit_needed_bad_input(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        audit_needed(**kwargs)  # type: ignore[arg-type]


def test_min_audit_pairs_bad_input() -> None:
    with pytest.raises(ValueError, match="errors must be a non-negative integer"):
        min_audit_pairs(-1)
    with pytest.raises(ValueError, match="level must be in"):
        min_audit_pairs(0, level=1.5)


def test_outlook_counts_responses_from_the_share_above_the_threshold() -> None:
    # 100 audit pairs, 40 at or above .9 with 1 error: 93 clean pairs would certify
    # (53 more pairs = 133 responses at a 40% share); at 1/40 = 2.5% errors more.
    conf = np.r_[np.full(40, 0.95), np.full(60, 0.6)]
    correct = np.ones(100, bool)
    correct[[0, 50]] = False
    outlook = audit_outlook(conf, correct, threshold=0.9)
    assert (outlook.n_audit, outlook.n_above, outlook.errors_above) == (100, 40, 1)
    assert outlook.more_clean == 133
    rate = audit_needed(n=40, errors=1, share=0.4, projection="current rate")
    assert outlook.more_at_rate == rate
    assert rate is not None
    assert rate > 133
    line = outlook.describe("Workload")
    assert line.startswith("to delegate Workload at <= 5% above confidence 0.900: about ")
    assert "more audit responses at the current error rate (1/40), at least 133" in line


def test_outlook_edge_cases() -> None:
    conf = np.full(100, 0.95)
    assert audit_outlook(conf, np.ones(100, bool), threshold=0.9).describe() == (
        "to delegate at <= 5% above confidence 0.900: the audit is large enough"
    )
    nothing = audit_outlook(conf, np.ones(100, bool), threshold=0.99)
    assert nothing.more_clean is None
    assert "no audit pair lies above it yet" in nothing.describe()
    bad = np.arange(100) < 90
    hopeless = audit_outlook(conf, bad, threshold=0.9)
    assert hopeless.more_at_rate is None
    assert "(10/100) is too high; at best (no further error) about" in hopeless.describe()
    with pytest.raises(ValueError, match="same length"):
        audit_outlook([0.9], [True, False], threshold=0.5)


def test_worst_case_error_among_delegated_pairs() -> None:
    assert worst_case_delegated_error(0.05, n_above=1000, n_delegated=1000) == 0.05
    assert worst_case_delegated_error(0.05, n_above=1000, n_delegated=800) == 0.0625
    assert worst_case_delegated_error(0.5, n_above=1000, n_delegated=10) == 1.0
    with pytest.raises(ValueError, match="1 <= n_delegated <= n_above"):
        worst_case_delegated_error(0.05, n_above=10, n_delegated=20)
    with pytest.raises(ValueError, match="1 <= n_delegated"):
        worst_case_delegated_error(0.05, n_above=10, n_delegated=0)


# --- properties --------------------------------------------------------------------------


@st.composite
def audits(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Audits of 1-300 pairs, often mostly correct (so that many certify), with ties."""
    n = draw(st.integers(1, 300))
    rng = np.random.default_rng(draw(st.integers(0, 2**32)))
    levels = draw(st.sampled_from([0, 5, 40]))  # 0: continuous confidence
    conf = rng.integers(0, levels, n) / levels if levels else rng.random(n)
    # Errors more likely at low confidence, at an overall rate drawn per example.
    rate = draw(st.sampled_from([0.0, 0.005, 0.02, 0.05, 0.2, 0.5]))
    correct = rng.random(n) >= rate * 2 * (1 - conf)
    return conf, correct


@FAST
@given(
    audits(),
    st.sampled_from([0.02, 0.05, 0.1, 0.2]),
    st.sampled_from([0.8, 0.9, 0.95]),
    st.randoms(),
)
def test_search_matches_the_rules(
    audit: tuple[np.ndarray, np.ndarray], eps: float, level: float, rnd: object
) -> None:
    conf, correct = audit
    result = certify_delegation(
        conf, correct, tier="Valid", max_error=eps, level=level, procedure="fixed sequence"
    )
    chosen, tested = _reference(conf, correct, eps, level)
    event("certified" if chosen else "refused")
    assert [(t.threshold, t.n, t.errors) for t in result.tests] == tested
    # Every threshold tested before the last was rejected; the last one failed or was
    # the lowest candidate.
    assert all(t.rejected for t in result.tests[:-1])
    assert [t.threshold for t in result.tests] == sorted(
        (t.threshold for t in result.tests), reverse=True
    )
    if chosen is None:
        assert result.threshold is None
        assert result.reason
    else:
        assert (result.threshold, result.n, result.errors) == chosen
        assert result.upper_bound <= eps + 1e-12
        assert all(t.upper_bound <= eps + 1e-12 for t in result.tests if t.rejected)
        assert result.threshold == [t for t in result.tests if t.rejected][-1].threshold
    # Invariance to the order of the audit pairs.
    order = list(range(conf.size))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    assert (
        certify_delegation(
            conf[order],
            correct[order],
            tier="Valid",
            max_error=eps,
            level=level,
            procedure="fixed sequence",
        )
        == result
    )


def _fallback_reference(
    conf: np.ndarray, correct: np.ndarray, eps: float, level: float
) -> float | None:
    """The fallback rule written from its description, pair by pair, with scipy's
    binomtest: the candidate thresholds of the fixed sequence; the two starts; levels
    passed on by rejections only; the lowest threshold rejected."""
    delta = 1 - level
    fixed = certify_delegation(
        conf, correct, tier="Valid", max_error=eps, level=level, procedure="fixed sequence"
    )
    if fixed.reason.startswith(f"{conf.size} audit pairs"):
        return None
    first_n = min_audit_pairs(0, max_error=eps, level=level)
    candidates = [t for t in np.unique(conf)[::-1] if int((conf >= t).sum()) >= first_n]

    def p_value(errors: int, n: int) -> float:
        return float(stats.binomtest(errors, n, p=eps, alternative="less").pvalue)

    counts = [int((conf >= t).sum()) for t in candidates]
    first = next((j for j, n in enumerate(counts) if p_value(1, n) <= FIRST_SHARE * delta), None)
    second = next(
        (
            j
            for j, n in enumerate(counts)
            if p_value(int(np.floor(START_RATE * eps * n + 1e-9)), n) <= (1 - FIRST_SHARE) * delta
            and n <= SECOND_DEPTH * conf.size
        ),
        None,
    )
    share = [0.0] * len(candidates)
    if first is not None and second is not None and second > first:
        share[first], share[second] = FIRST_SHARE, 1 - FIRST_SHARE
    elif first is not None or second is not None:
        share[min(j for j in (first, second) if j is not None)] = 1.0
    elif candidates:
        share[0] = 1.0
    chosen, carried = None, 0.0
    for j, t in enumerate(candidates):
        at = share[j] * delta + carried
        errors = int((~correct[conf >= t]).sum())
        rejected = at > 0 and p_value(errors, counts[j]) <= at
        carried = at if rejected else 0.0
        if rejected:
            chosen = float(t)
    return chosen


@FAST
@given(
    audits(),
    st.sampled_from([0.05, 0.1, 0.2]),
    st.sampled_from([0.9, 0.95]),
)
def test_the_fallback_matches_its_rules(
    audit: tuple[np.ndarray, np.ndarray], eps: float, level: float
) -> None:
    conf, correct = audit
    result = certify_delegation(
        conf, correct, tier="Valid", max_error=eps, level=level, procedure="fallback"
    )
    event("certified" if result.certified else "refused")
    assert result.procedure == "fallback"
    assert result.threshold == _fallback_reference(conf, correct, eps, level)
    if result.certified:
        assert result.tested_at <= 1 - level + 1e-12
        assert result.upper_bound <= eps + 1e-12


def test_an_early_failure_does_not_end_the_fallback() -> None:
    # The confident half errs at a flat 2%: the first thresholds hold a few errors too
    # many for their handful of pairs, and the fixed sequence stops there; the second
    # start (where the counts could pass at half the maximum rate) certifies far deeper.
    rng = np.random.default_rng(4)
    conf = rng.uniform(0.5, 1.0, 1000)
    top = np.flatnonzero(conf >= np.median(conf))
    correct = rng.random(1000) >= 0.3
    correct[top] = True
    correct[rng.choice(top, 10, replace=False)] = False
    fixed = certify_delegation(conf, correct, tier="Valid", procedure="fixed sequence")
    fallback = certify_delegation(conf, correct, tier="Valid", procedure="fallback")
    assert fixed.threshold is None or fixed.n < 200
    assert fallback.certified
    assert fallback.n >= 450
    first_failure = next(t for t in fallback.tests if t.level > 0 and not t.rejected)
    assert fallback.threshold is not None
    assert first_failure.threshold > fallback.threshold


@pytest.mark.parametrize("n", [1, 7, 59, 300, 2000])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_exact_bounds_match_scipys_binomial_test(n: int, level: float) -> None:
    """Against scipy's own exact binomial test (binomtest), not the Beta quantile the
    implementation uses: the p-value of "error rate > eps" and the one-sided
    Clopper-Pearson upper bound."""
    for errors in sorted({0, 1, n // 10, n // 2, n - 1, n} & set(range(n + 1))):
        test = stats.binomtest(errors, n, p=0.05, alternative="less")
        assert binomial_p_value(errors, n, max_error=0.05) == pytest.approx(
            test.pvalue, rel=1e-9, abs=1e-12
        )
        upper = test.proportion_ci(confidence_level=level, method="exact").high
        assert clopper_pearson_upper(errors, n, level=level) == pytest.approx(
            upper, rel=1e-9, abs=1e-12
        )


def test_a_refusal_names_the_scope_it_tested() -> None:
    conf = np.linspace(1.0, 0.6, 300)
    outside = np.linspace(1.0, 0.6, 500)
    refused = certify_delegation(conf, np.ones(300, bool), tier="Invalid", outside=outside)
    assert refused.threshold is None
    assert refused.scope == "delegated"
    assert json.loads(json.dumps(refused.to_dict()))["scope"] == "delegated"
    alone = certify_delegation(conf, np.ones(300, bool), tier="Invalid")
    assert alone.scope == "above"


def test_a_fallback_refusal_quotes_a_threshold_it_tested() -> None:
    # A chance-level model at 20% errors: nothing passes; the reason quotes the first
    # start's evidence, not a threshold above it that had no level.
    rng = np.random.default_rng(9)
    conf = rng.uniform(0.5, 1.0, 600)
    correct = rng.random(600) >= 0.2
    result = certify_delegation(conf, correct, tier="Valid", procedure="fallback")
    assert result.threshold is None
    first = next(t for t in result.tests if t.level > 0)
    assert f"the {first.n} audit pairs with confidence >= {first.threshold:.3f}" in result.reason
    assert "upper bound 100.0%" not in result.reason
    assert "no later starting point passed" in result.reason
