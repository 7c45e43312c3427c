"""Certified delegation of the model's confident pairs (METHOD.md section 3).

Given the blind random audit sample of one code (the model's confidence and whether its
answer was correct), find the lowest confidence threshold t such that, with probability
at least ``level`` over the draw of the audit sample, the model's error rate among all
pairs of that code with confidence >= t is at most ``max_error``.

Procedure (:func:`certify_delegation`):

1. Candidate thresholds are the distinct confidence values of the audit pairs, highest
   first. For each, n(t) audit pairs lie at or above it, k(t) of them wrong.
2. H0(t): "the error rate at or above t exceeds eps" is rejected when the exact binomial
   p-value P(Binomial(n, eps) <= k) is at most delta = 1 - level; equivalently when the
   one-sided Clopper-Pearson upper bound Beta.ppf(level, k + 1, n - k) (1 when k = n)
   is at most eps.
3. The fallback procedure (Wiens 2003; a graph of Bretz et al. 2009 over the sequence
   of "Learn then Test", Angelopoulos et al. 2021). The level delta is split between two
   starting points fixed by the counts alone: :data:`FIRST_SHARE` on the highest
   threshold whose audit pairs could pass with one error, the rest on the highest whose
   audit pairs could pass with errors at :data:`START_RATE` of the maximum rate, if at
   most :data:`SECOND_DEPTH` of the audit pairs lie at or above it (else the first start
   has the whole level). Going
   down the list, each threshold is tested at its own share plus, when the threshold
   above it was rejected, the whole level that one was tested at; a failure passes
   nothing on but does not end the search, so the second start is tested however the
   first fared. The chosen threshold is the lowest one rejected. The family-wise error
   over all thresholds is at most delta (a Bonferroni-based graph), so every threshold
   rejected, the lowest included, keeps the guarantee.

   ``procedure="fixed sequence"`` is the former rule: the whole level from the highest
   threshold down, stopping at the first failure (Bauer 1991). One early failure then
   ends everything: when the errors are spread thinly (a confident half with a flat 2%
   error rate), the first thresholds tested hold a handful of audit pairs and about as
   many errors as they may, and nearly every audit stopped there, delegating nothing,
   while a threshold deeper down would have passed by far.

**Our choice**: thresholds with fewer than :func:`min_audit_pairs` (0 errors) audit pairs
at or above them are not tested. With distinct confidences the highest threshold has
n = 1, whose test can never reject (even with no error its bound is 1 - delta^(1/n) >
eps), so testing it would always stop the sequence at once and nothing would ever be
delegated. Whether a threshold is tested depends only on how many audit pairs lie above
it, never on their errors, so the sequence is still fixed before any error is seen.

Delegation is refused unless the code's screen on the audit sample is Valid
(``tier``): a signal that fails the screen can pass step 3 by the luck of a few
confident items.

Malformed input raises ValueError naming the argument (see :mod:`screening.errors`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from screening.headline import PATTERN
from screening.validation import BoolArray, as_bool_1d, as_float_1d, same_length

if TYPE_CHECKING:
    from screening.tiers import CellShortfall, Tier

__all__ = [
    "AuditOutlook",
    "Delegation",
    "DelegationSplit",
    "ThresholdTest",
    "audit_needed",
    "audit_outlook",
    "binomial_p_value",
    "certify_delegation",
    "clopper_pearson_upper",
    "delegation_mask",
    "insufficient_reason",
    "min_audit_pairs",
    "split_population",
    "worst_case_delegated_error",
]

#: Projection used by :func:`audit_needed`.
Projection = Literal["clean", "current rate"]
#: How the thresholds are tested (module docstring).
Procedure = Literal["fallback", "fixed sequence"]
#: The fallback procedure's share of the level for its first (highest) starting point.
FIRST_SHARE = 0.3
#: Its second starting point: the first threshold whose counts would pass with errors at
#: this share of the maximum error rate ...
START_RATE = 0.5
#: ... provided at most this share of the audit pairs lie at or above it; deeper, the
#: whole level goes to the first start (a single fixed sequence).
SECOND_DEPTH = 0.55
#: :func:`audit_needed` gives up beyond this many audit pairs (returns None).
MAX_AUDIT_PAIRS = 10_000_000


def _check_unit(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    if not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return float(value)


def _check_count(errors: int, n: int) -> None:
    if n < 0 or errors < 0 or errors > n:
        raise ValueError(f"need 0 <= errors <= n, got errors={errors}, n={n}")


def binomial_p_value(errors: int, n: int, *, max_error: float) -> float:
    """Exact p-value of H0 "error rate > max_error": P(Binomial(n, max_error) <= errors).

    Args:
        errors: Errors observed, 0 <= errors <= n.
        n: Pairs observed; n = 0 gives 1 (no evidence).
        max_error: The maximum error rate eps, in (0, 1).

    Raises:
        ValueError: If the counts are inconsistent or ``max_error`` is outside (0, 1).
    """
    from scipy import stats

    eps = _check_unit(max_error, "max_error")
    _check_count(errors, n)
    return float(stats.binom.cdf(errors, n, eps)) if n else 1.0


def clopper_pearson_upper(errors: int, n: int, *, level: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound of an error rate at ``level``.

    ``Beta.ppf(level, errors + 1, n - errors)``, and 1 when errors = n (including n = 0).

    Raises:
        ValueError: If the counts are inconsistent or ``level`` is outside (0, 1).
    """
    from scipy import stats

    lvl = _check_unit(level, "level")
    _check_count(errors, n)
    if errors == n:
        return 1.0
    return float(stats.beta.ppf(lvl, errors + 1, n - errors))


@lru_cache(maxsize=64)
def _min_pairs(errors: int, eps: float, delta: float) -> int:
    from scipy import stats

    if errors == 0:
        # (1 - eps)^n <= delta, in closed form: exact, and no search to overflow when
        # eps is tiny (1e-9 needs about 3e9 pairs; nothing below can be certified then).
        n = math.ceil(math.log(delta) / math.log1p(-eps) - 1e-9)
        while n > 1 and (1.0 - eps) ** (n - 1) <= delta:
            n -= 1
        while (1.0 - eps) ** n > delta:
            n += 1
        return max(1, n)
    # P(Binom(n, eps) <= errors) falls as n grows: double, then bisect.
    lo, hi = errors, max(errors + 1, 2)
    while stats.binom.cdf(errors, hi, eps) > delta:
        lo, hi = hi, hi * 2
        if hi > MAX_AUDIT_PAIRS:
            raise ValueError(f"more than {MAX_AUDIT_PAIRS} audit pairs would be needed")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if stats.binom.cdf(errors, mid, eps) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def min_audit_pairs(errors: int = 0, *, max_error: float = 0.05, level: float = 0.95) -> int:
    """Fewest audit pairs above a threshold that certify ``max_error`` with ``errors`` errors.

    At level 0.95: 59 / 93 / 124 / 208 pairs with 0 / 1 / 2 / 5 errors for 5%, and
    29 / 46 / 61 / 103 for 10%.

    Raises:
        ValueError: If ``errors`` is negative or ``max_error`` / ``level`` are outside (0, 1).
    """
    eps = _check_unit(max_error, "max_error")
    delta = 1.0 - _check_unit(level, "level")
    if isinstance(errors, bool) or errors < 0:
        raise ValueError(f"errors must be a non-negative integer, got {errors!r}")
    return _min_pairs(int(errors), eps, delta)


def audit_needed(
    *,
    n: int,
    errors: int,
    max_error: float = 0.05,
    level: float = 0.95,
    share: float = 1.0,
    projection: Projection = "clean",
) -> int | None:
    """Further audit items before the pairs above a threshold can certify ``max_error``.

    Args:
        n: Audit pairs at or above the threshold so far.
        errors: Errors among them.
        max_error: The maximum error rate to certify, in (0, 1).
        level: Confidence level, in (0, 1).
        share: Share of audit items that land at or above the threshold (n above /
            audit size); the answer is divided by it, so that with ``share`` it counts
            audit responses rather than pairs above the threshold. 1 counts pairs.
        projection: ``"clean"``: the new pairs have no error (the fewest possible;
            :func:`min_audit_pairs` minus ``n``). ``"current rate"``: the new pairs err
            at the rate errors / n seen so far.

    Returns:
        0 if already enough, the number of further items, or None if the current error
        rate is at or above ``max_error`` (no amount of auditing at that rate certifies it)
        or more than :data:`MAX_AUDIT_PAIRS` would be needed.

    Raises:
        ValueError: On inconsistent counts, ``share`` outside (0, 1], or ``max_error`` /
            ``level`` outside (0, 1).
    """
    eps = _check_unit(max_error, "max_error")
    delta = 1.0 - _check_unit(level, "level")
    _check_count(errors, n)
    if not 0.0 < share <= 1.0:
        raise ValueError(f"share must be in (0, 1], got {share!r}")
    if projection == "clean":
        try:
            more = max(0, _min_pairs(errors, eps, delta) - n)
        except ValueError:
            return None  # more than MAX_AUDIT_PAIRS: no audit of any size certifies it
    elif projection == "current rate":
        rate = errors / n if n else 0.0
        if rate >= eps:
            return None
        more_or_none = _more_at_rate(n, errors, rate, eps, delta)
        if more_or_none is None:
            return None
        more = more_or_none
    else:
        raise ValueError(f"projection must be 'clean' or 'current rate', got {projection!r}")
    return math.ceil(more / share - 1e-9)


def _more_at_rate(n: int, errors: int, rate: float, eps: float, delta: float) -> int | None:
    from scipy import stats

    start, width = n, 1024
    while start <= MAX_AUDIT_PAIRS:
        m = np.arange(max(start, 1), start + width)
        # Projected errors at total m: the current ones, plus the rate on the new pairs.
        k = errors + np.ceil(rate * (m - n) - 1e-9)
        hit = np.flatnonzero(stats.binom.cdf(k, m, eps) <= delta)
        if hit.size:
            return int(m[hit[0]]) - n
        start, width = start + width, width * 2
    return None


def _pct(x: float) -> str:
    """A share as a percentage without spurious rounding: 0.95 -> 95%, 0.975 -> 97.5%."""
    return f"{100 * x:.6g}%"


def _errors(k: int) -> str:
    return "1 error" if k == 1 else f"{k} errors"


@dataclass(frozen=True)
class ThresholdTest:
    """One step of the fixed sequence.

    Attributes:
        threshold: Confidence threshold t.
        n: Audit pairs with confidence >= t.
        errors: Errors among them.
        p_value: P(Binomial(n, eps) <= errors).
        upper_bound: One-sided Clopper-Pearson upper bound of their error rate; with
            a remainder, the finite-population upper bound of the error rate among
            the delegable pairs at or above t (1 when there are none).
        rejected: Whether H0 "error rate > eps" was rejected (p_value <= 1 - level).
        outside: Pairs outside the audit at or above t (0 without a remainder).
        delegable: Of those, the pairs that would be delegated (no human decision).
        level: The significance level the threshold was tested at (its share of
            1 - level plus what the threshold above passed on); the upper bound is at
            one minus it.
    """

    threshold: float
    n: int
    errors: int
    p_value: float
    upper_bound: float
    rejected: bool
    outside: int = 0
    delegable: int = 0
    level: float = 0.05


@dataclass(frozen=True)
class Delegation:
    """The result of certifying delegation for one code (or a pool).

    Attributes:
        threshold: The lowest certified threshold (delegate pairs with confidence >= it),
            or None when nothing may be delegated.
        n: Audit pairs at or above ``threshold`` (0 when None).
        errors: Errors among them (0 when None).
        upper_bound: Their one-sided Clopper-Pearson upper bound (nan when None).
        max_error: The maximum error rate eps.
        level: The confidence level 1 - delta.
        n_audit: Audit pairs given.
        n_audit_errors: Errors among all of them.
        min_pairs: Fewest audit pairs above a threshold able to certify eps (no error):
            thresholds with fewer are not tested.
        tests: The sequence tested, highest threshold first, ending with the first
            failure if there was one.
        tier: The screen's tier on the audit sample.
        reason: Why nothing was delegated; empty when a threshold was certified.
        scope: What the guarantee covers: ``"above"``, all pairs at or above the
            threshold, audited or not (the audit alone was given); ``"delegated"``, the
            delegated pairs themselves (the pairs outside the audit were given too).
        delegable: With scope ``"delegated"``, the pairs the threshold delegates.
        procedure: How the thresholds were tested: ``"fallback"`` or ``"fixed sequence"``.
        tested_at: The significance level the chosen threshold was tested at.
    """

    threshold: float | None
    n: int
    errors: int
    upper_bound: float
    max_error: float
    level: float
    n_audit: int
    n_audit_errors: int
    min_pairs: int
    tests: tuple[ThresholdTest, ...]
    tier: str
    reason: str
    scope: Literal["above", "delegated"] = "above"
    delegable: int = 0
    procedure: Procedure = "fallback"
    tested_at: float = math.nan

    @property
    def certified(self) -> bool:
        """Whether a threshold was certified."""
        return self.threshold is not None

    def procedure_words(self) -> str:
        """How the thresholds were tested, in words a methods section can quote."""
        if self.procedure == "fixed sequence":
            return (
                "thresholds tested in a fixed sequence from the highest down, the whole "
                "level on each, stopping at the first that failed (Bauer 1991)"
            )
        return (
            "thresholds tested from the highest down by the fallback procedure (Wiens "
            f"2003; Learn then Test, Angelopoulos et al. 2021), the {_pct(1 - self.level)} "
            f"error level split between two starting points fixed by the counts alone: "
            f"{FIRST_SHARE:.0%} on the highest threshold with enough audit pairs to pass "
            f"with one error, {1 - FIRST_SHARE:.0%} on the highest with enough to pass "
            f"with errors at {START_RATE:.0%} of the maximum rate, if it lies among the "
            f"{SECOND_DEPTH:.0%} most confident audit pairs (else the highest has it all); "
            "a rejected threshold "
            "passes its level to the next, a failed one passes nothing on but does not "
            "end the search"
        )

    def guarantee(self, code: str | None = None) -> str:
        """One sentence a methods section can quote (or the refusal and its reason)."""
        what = f"{code} pairs" if code else "pairs"
        if self.threshold is None:
            return f"Nothing delegated for {what}: {self.reason}."
        tested = (
            "" if math.isnan(self.tested_at) else f", the chosen one at level {self.tested_at:.3g}"
        )
        if self.scope == "delegated":
            return (
                f"With {_pct(self.level)} confidence, the model's error rate among the "
                f"{self.delegable} delegated {what} (confidence >= {self.threshold:.3f}, "
                f"outside the audit, decided by no one) is at most {self.max_error:.1%} "
                f"(blind random audit: {self.n} pairs at or above the threshold, "
                f"{_errors(self.errors)}; finite-population (hypergeometric) upper bound "
                f"{self.upper_bound:.1%} on the delegated pairs; "
                f"{self.procedure_words()}{tested})."
            )
        return (
            f"With {_pct(self.level)} confidence, the model's error rate among {what} with "
            f"confidence >= {self.threshold:.3f} is at most {self.max_error:.1%} "
            f"(blind random audit: {self.n} such pairs, {_errors(self.errors)}, one-sided "
            f"Clopper-Pearson upper bound {self.upper_bound:.1%}; "
            f"{self.procedure_words()}{tested})."
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (nan -> None)."""

        def num(x: float | None) -> float | None:
            return None if x is None or math.isnan(x) else float(x)

        return {
            "threshold": num(self.threshold),
            "n": self.n,
            "errors": self.errors,
            "upper_bound": num(self.upper_bound),
            "max_error": self.max_error,
            "level": self.level,
            "n_audit": self.n_audit,
            "n_audit_errors": self.n_audit_errors,
            "min_pairs": self.min_pairs,
            "tier": self.tier,
            "reason": self.reason,
            "scope": self.scope,
            "delegable": self.delegable,
            "procedure": self.procedure,
            "procedure_words": self.procedure_words(),
            "tested_at": num(self.tested_at),
            "tests": [asdict(t) for t in self.tests],
        }


def certify_delegation(
    confidence: npt.ArrayLike,
    correct: npt.ArrayLike,
    *,
    tier: Tier,
    max_error: float = 0.05,
    level: float = 0.95,
    outside: npt.ArrayLike | None = None,
    delegable: npt.ArrayLike | None = None,
    screen_finding: str | None = None,
    procedure: Procedure = "fixed sequence",
) -> Delegation:
    """Find the lowest confidence threshold whose error rate is certified at most eps.

    Given only the audit, the guarantee covers all pairs at or above the threshold,
    audited or not (binomial test, scope ``"above"``). Given also the confidence of the
    code's other scored pairs (``outside``) and which of them would be delegated
    (``delegable``), it covers the delegated pairs themselves (scope ``"delegated"``):
    the audit pairs at or above t are a simple random sample of the N = n + M pairs
    there, so their errors K follow a hypergeometric law given the E errors among the N,
    and H0(t) "more than eps * D errors among the D delegable pairs" is rejected when
    ``P(Hypergeom(N, k + floor(eps * D) + 1, n) <= k) <= delta``. Since the delegable
    pairs lie among the M outside the audit, whose errors are E - K, the test holds
    however the pairs coded by humans outside the audit were chosen. Thresholds enter
    the sequence once their counts could pass with one audit error.

    Args:
        confidence: Shape (n_audit,), the model's confidence on each audit pair (finite).
        correct: Shape (n_audit,), bool or 0/1; whether the model's answer agreed with
            the blind audit decision.
        tier: The code's screen tier on the same audit sample; anything but ``"Valid"``
            refuses delegation.
        max_error: The maximum error rate eps, in (0, 1).
        level: The confidence level 1 - delta, in (0, 1).
        screen_finding: What the screen found, in words, where the tier's own words
            would mislead (:func:`insufficient_reason`); default the tier's pattern.
        procedure: ``"fixed sequence"`` (default: the whole level down from the highest,
            ending at the first failure) or ``"fallback"`` (the level split between the
            highest threshold and later starting points, a failure passing nothing on but
            ending nothing: more delegated where errors are spread evenly, less where a
            calibrated model's top thresholds are nearly clean, so not yet the default).

    Returns:
        The certified threshold with its audit evidence, or a refusal with its reason.
        The result does not depend on the order of the audit pairs.

    Raises:
        ValueError: If ``max_error`` or ``level`` is outside (0, 1), the audit is empty,
            the arrays differ in length, or a value is malformed.
    """
    from scipy import stats

    remainder = None
    if outside is not None:
        out_conf = as_float_1d(outside, "outside")
        out_del = (
            np.ones(out_conf.shape, dtype=bool)
            if delegable is None
            else as_bool_1d(delegable, "delegable")
        )
        same_length(outside=out_conf, delegable=out_del)
        remainder = (np.sort(out_conf), np.sort(out_conf[out_del]))
    eps = _check_unit(max_error, "max_error")
    lvl = _check_unit(level, "level")
    delta = 1.0 - lvl
    conf = as_float_1d(confidence, "confidence")
    ok = as_bool_1d(correct, "correct")
    n_audit = same_length(confidence=conf, correct=ok)
    if n_audit == 0:
        raise ValueError("no audit decisions: delegation needs a coded blind audit sample")
    min_pairs = _min_pairs(0, eps, delta)
    n_errors = int((~ok).sum())
    scope: Literal["above", "delegated"] = "above" if remainder is None else "delegated"

    def refuse(reason: str, tests: tuple[ThresholdTest, ...] = ()) -> Delegation:
        return Delegation(
            threshold=None,
            n=0,
            errors=0,
            upper_bound=math.nan,
            max_error=eps,
            level=lvl,
            n_audit=n_audit,
            n_audit_errors=n_errors,
            min_pairs=min_pairs,
            tests=tests,
            tier=str(tier),
            reason=reason,
            scope=scope,
            procedure=procedure,
        )

    if tier != "Valid":
        found = screen_finding or PATTERN.get(str(tier), tier)
        return refuse(
            f"delegation needs the screen of the audit sample to find no pathology in the "
            f"model's confidence (tier Valid); it found: {found} "
            f"(tier {tier}), so its confidence is not shown to mean anything",
        )
    if remainder is None and n_audit < min_pairs:
        return refuse(
            f"{n_audit} audit pairs; certifying at most {eps:.1%} errors at {_pct(lvl)} "
            f"needs at least {min_pairs} audit pairs above a threshold, all correct",
        )
    order = np.argsort(conf, kind="stable")
    c_sorted = conf[order]
    wrong_from = np.concatenate([np.cumsum((~ok[order])[::-1])[::-1], [0]])
    thresholds = np.unique(c_sorted)[::-1]
    start = np.searchsorted(c_sorted, thresholds, side="left")
    n_at = n_audit - start
    k_at = wrong_from[start]
    if remainder is None:
        m_at = d_at = np.zeros(thresholds.size, dtype=int)
        tested = n_at >= min_pairs
    else:
        m_at = remainder[0].size - np.searchsorted(remainder[0], thresholds, side="left")
        d_at = remainder[1].size - np.searchsorted(remainder[1], thresholds, side="left")
        # Tested only where the audit pairs above could pass even with one error: like
        # the binomial rule, this depends on counts alone, never on the errors, and a
        # single early error does not end the sequence before it has evidence to weigh.
        tested = (_remainder_p(np.ones_like(n_at), n_at, m_at, d_at, eps) <= delta) & (d_at > 0)
        if not tested.any() and not d_at.any():
            return refuse("no pair outside the audit is left to delegate")
    thresholds, n_at, k_at = thresholds[tested], n_at[tested], k_at[tested]
    m_at, d_at = m_at[tested], d_at[tested]
    if not thresholds.size:
        return refuse(
            f"{n_audit} audit pairs; certifying at most {eps:.1%} errors at {_pct(lvl)} "
            f"among the delegated pairs needs more audit pairs above a threshold, all correct",
        )
    if remainder is None:
        p = stats.binom.cdf(k_at, n_at, eps)
    else:
        p = _remainder_p(k_at, n_at, m_at, d_at, eps)
    if procedure == "fixed sequence":
        failed = np.flatnonzero(p > delta)
        stop = int(failed[0]) + 1 if failed.size else thresholds.size
        levels = np.full(stop, delta)
    elif procedure == "fallback":
        # Where each start's counts would pass at its own share of the level: the highest
        # with one audit error, the second with errors at START_RATE of the maximum rate.
        errors_at = np.floor(START_RATE * eps * n_at + 1e-9).astype(np.int64)
        one = np.ones_like(n_at)
        if remainder is None:
            first_p = stats.binom.cdf(one, n_at, eps)
            second_p = stats.binom.cdf(errors_at, n_at, eps)
        else:
            first_p = _remainder_p(one, n_at, m_at, d_at, eps)
            second_p = _remainder_p(errors_at, n_at, m_at, d_at, eps)
        # A second start deeper than SECOND_DEPTH of the audit pairs is no start at all.
        shallow = n_at <= SECOND_DEPTH * n_audit
        weights = fallback_weights(
            first_p <= FIRST_SHARE * delta, (second_p <= (1 - FIRST_SHARE) * delta) & shallow
        )
        levels = _fallback_levels(p, weights, delta)
        stop = _last_shown(p, levels)
        levels = levels[:stop]
    else:
        raise ValueError(f"procedure must be 'fallback' or 'fixed sequence', not {procedure!r}")
    p = p[:stop]
    n_at, k_at, m_at, d_at = n_at[:stop], k_at[:stop], m_at[:stop], d_at[:stop]
    rejected = (p <= levels) & (levels > 0)
    # Each threshold's bound at the level it was tested at (1 where it had none).
    bound_level = np.clip(1.0 - levels, 0.0, 1.0)
    if remainder is None:
        upper = np.ones(stop)
        below = (k_at < n_at) & (levels > 0)
        upper[below] = stats.beta.ppf(
            bound_level[below], k_at[below] + 1, n_at[below] - k_at[below]
        )
    else:
        upper = np.ones(stop)
        some = levels > 0
        upper[some] = _remainder_upper(n_at[some], k_at[some], m_at[some], d_at[some], levels[some])
    tests = tuple(
        ThresholdTest(
            threshold=float(thresholds[j]),
            n=int(n_at[j]),
            errors=int(k_at[j]),
            p_value=float(p[j]),
            upper_bound=float(upper[j]),
            rejected=bool(rejected[j]),
            outside=int(m_at[j]),
            delegable=int(d_at[j]),
            level=float(levels[j]),
        )
        for j in range(stop)
    )
    accepted = [t for t in tests if t.rejected]
    if not accepted:
        # The first threshold actually tested (one before a start has no level).
        first = next((t for t in tests if t.level > 0), tests[0])
        return refuse(
            f"no threshold qualifies: the {first.n} audit pairs with confidence >= "
            f"{first.threshold:.3f} have {_errors(first.errors)}, upper bound "
            f"{first.upper_bound:.1%} > {eps:.1%}"
            + ("" if procedure == "fixed sequence" else ", and no later starting point passed"),
            tests,
        )
    best = accepted[-1]
    return Delegation(
        threshold=best.threshold,
        n=best.n,
        errors=best.errors,
        upper_bound=best.upper_bound,
        max_error=eps,
        level=lvl,
        n_audit=n_audit,
        n_audit_errors=n_errors,
        min_pairs=min_pairs,
        tests=tests,
        tier=str(tier),
        reason="",
        scope=scope,
        delegable=best.delegable,
        procedure=procedure,
        tested_at=best.level,
    )


def fallback_weights(
    first_ready: npt.ArrayLike, second_ready: npt.ArrayLike
) -> npt.NDArray[np.float64]:
    """The share of the level each threshold of the sequence starts with (sums to 1).

    Two starting points split the level: :data:`FIRST_SHARE` goes to the first (highest)
    threshold whose counts could pass with one audit error at that share
    (``first_ready``), the rest to the first threshold whose counts could pass with
    errors at :data:`START_RATE` of the maximum rate, at its share (``second_ready``).
    When the second start is no lower than the first, or either is missing, the one
    there is takes the whole level (a single fixed sequence). Both depend on the counts
    alone (audit pairs, pairs outside the audit, delegable pairs), never on the errors,
    so the procedure is fixed before any error is seen.

    Args:
        first_ready: Shape (J,), bool, highest threshold first.
        second_ready: Shape (J,), bool.
    """
    first = np.flatnonzero(np.asarray(first_ready, dtype=bool))
    second = np.flatnonzero(np.asarray(second_ready, dtype=bool))
    weights = np.zeros(np.asarray(first_ready).size)
    if not weights.size:
        return weights
    if first.size and second.size and second[0] > first[0]:
        weights[first[0]] = FIRST_SHARE
        weights[second[0]] = 1.0 - FIRST_SHARE
    elif first.size or second.size:
        start = min(
            first[0] if first.size else weights.size, second[0] if second.size else weights.size
        )
        weights[start] = 1.0
    else:
        weights[0] = 1.0
    return weights


def _fallback_levels(
    p: npt.NDArray[np.float64], weights: npt.NDArray[np.float64], delta: float
) -> npt.NDArray[np.float64]:
    """Each threshold's level under the fallback procedure (Wiens 2003).

    A threshold is tested at its own share of delta plus, when the threshold above it
    was rejected, the whole level that one was tested at; a failure passes nothing on.
    """
    levels = np.zeros(p.size)
    carried = 0.0
    for j in range(p.size):
        levels[j] = weights[j] * delta + carried
        carried = levels[j] if levels[j] > 0 and p[j] <= levels[j] else 0.0
    return levels


def _last_shown(p: npt.NDArray[np.float64], levels: npt.NDArray[np.float64]) -> int:
    """How many tests to report: through the first failure after the last rejection, or
    through the last starting point when nothing was rejected."""
    rejected = np.flatnonzero((p <= levels) & (levels > 0))
    if rejected.size:
        return min(int(rejected[-1]) + 2, p.size)
    tested = np.flatnonzero(levels > 0)
    return int(tested[-1]) + 1 if tested.size else p.size


def _remainder_p(
    k: npt.NDArray[np.int_],
    n: npt.NDArray[np.int_],
    m: npt.NDArray[np.int_],
    d: npt.NDArray[np.int_],
    eps: float,
) -> npt.NDArray[np.float64]:
    """p-values of H0(t) "more than eps * d errors among the d delegable pairs".

    ``P(Hypergeom(n + m, k + floor(eps * d) + 1, n) <= k)``: the fewest errors among the
    ``n + m`` pairs at or above t that break H0 given ``k`` in the audit. When the ``m``
    pairs outside the audit cannot hold that many, H0 is impossible: p = 0.
    """
    from scipy import stats

    allowed = np.floor(eps * d + 1e-9).astype(np.int64)
    breaking = k + allowed + 1
    possible = allowed + 1 <= m
    p = np.zeros(k.shape, dtype=float)
    p[possible] = stats.hypergeom.cdf(
        k[possible], n[possible] + m[possible], breaking[possible], n[possible]
    )
    return p


def _remainder_upper(
    n: npt.NDArray[np.int_],
    k: npt.NDArray[np.int_],
    m: npt.NDArray[np.int_],
    d: npt.NDArray[np.int_],
    delta: float | npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """Upper bounds at level 1 - delta of the error rate among ``d`` delegable pairs.

    Per threshold, the largest E with ``P(Hypergeom(n + m, E, n) <= k) > delta`` bounds
    the errors among the ``n + m`` pairs at or above it; ``E - k`` of them may lie outside
    the audit, all among the delegable ones in the worst case. Bisection on every
    threshold at once (the cdf falls as E grows).
    """
    from scipy import stats

    lo, hi = k.astype(np.int64), (k + m).astype(np.int64)
    total = n + m
    top = stats.hypergeom.cdf(k, total, hi, n) > delta
    lo = np.where(top, hi, lo)
    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        above = stats.hypergeom.cdf(k, total, mid, n) > delta
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = np.where(d > 0, (lo - k) / np.maximum(d, 1), 1.0)
    return np.minimum(1.0, bound)


@dataclass(frozen=True)
class DelegationSplit:
    """How a delegation threshold splits the uncoded pairs of a code.

    Attributes:
        delegated: Pairs with confidence >= the threshold (the model's pick stands).
        left: Pairs left for human review.
    """

    delegated: int
    left: int

    @property
    def total(self) -> int:
        """All pairs counted."""
        return self.delegated + self.left


def delegation_mask(confidence: npt.ArrayLike, *, threshold: float | None) -> BoolArray:
    """Which pairs a threshold delegates: confidence >= threshold (none when None).

    Args:
        confidence: Shape (n_pairs,), the model's confidence on the pairs (finite).
        threshold: A certified threshold, or None.

    Raises:
        ValueError: If ``confidence`` is not 1-D finite numeric.
    """
    conf = as_float_1d(confidence, "confidence")
    if threshold is None:
        return np.zeros(conf.shape, dtype=bool)
    return conf >= threshold


def split_population(confidence: npt.ArrayLike, *, threshold: float | None) -> DelegationSplit:
    """Count the pairs a threshold delegates and those left for review.

    Args:
        confidence: Shape (n_pairs,), confidence of the pairs to split (normally the
            uncoded ones: human decisions are never overridden).
        threshold: A certified threshold, or None (nothing delegated).
    """
    mask = delegation_mask(confidence, threshold=threshold)
    delegated = int(mask.sum())
    return DelegationSplit(delegated=delegated, left=int(mask.size) - delegated)


def worst_case_delegated_error(max_error: float, *, n_above: int, n_delegated: int) -> float:
    """Bound on the error rate among the delegated pairs alone, whatever humans coded.

    The guarantee covers all ``n_above`` pairs at or above the threshold; the delegated
    ones are those no human coded. If the coded ones were chosen selectively (say, all
    correct), the errors can only concentrate in the rest: at most
    ``max_error * n_above / n_delegated`` of them (capped at 1). Equal to ``max_error``
    when nothing above the threshold was coded outside the guarantee's reach.

    Raises:
        ValueError: If ``max_error`` is outside (0, 1) or the counts are inconsistent.
    """
    eps = _check_unit(max_error, "max_error")
    if n_delegated < 1 or n_above < n_delegated:
        raise ValueError(
            f"need 1 <= n_delegated <= n_above, got n_delegated={n_delegated}, n_above={n_above}"
        )
    return min(1.0, eps * n_above / n_delegated)


def _left(remaining: int) -> str:
    """``"only 36 are left"``; ``"the audit has no response left"`` at zero."""
    if remaining == 0:
        return "the audit has no response left"
    return f"only {remaining} {'is' if remaining == 1 else 'are'} left"


@dataclass(frozen=True)
class AuditOutlook:
    """How far one code's audit is from certifying delegation above a threshold.

    Attributes:
        threshold: The confidence threshold looked at (e.g. the screen's high cut).
        n_audit: Audit pairs coded.
        n_above: Audit pairs at or above the threshold.
        errors_above: Errors among them.
        max_error: The maximum error rate to certify.
        level: The confidence level.
        more_clean: Further audit responses needed if the new pairs above the
            threshold have no error (the fewest possible); None when no audit pair
            lies above the threshold yet (no rate to project from).
        more_at_rate: Further audit responses needed at the current error rate above
            the threshold; None when that rate is at or above ``max_error`` or no audit
            pair lies above the threshold.
    """

    threshold: float
    n_audit: int
    n_above: int
    errors_above: int
    max_error: float
    level: float
    more_clean: int | None
    more_at_rate: int | None

    def describe(self, code: str | None = None, *, remaining: int | None = None) -> str:
        """One line for the user, e.g. "to delegate Workload at <= 5% ... about 120 more".

        Args:
            code: The code's name.
            remaining: Responses the audit can still gain (None: not known). No line asks
                for more: past it, delegation is said to be out of reach in this study,
                with the reason and what to do instead.
        """
        what = f"to delegate {code}" if code else "to delegate"
        head = f"{what} at <= {_pct(self.max_error)} above confidence {self.threshold:.3f}"
        if self.n_above == 0:
            if remaining == 0:
                return f"{head}: no audit pair lies above it and the audit has no response left"
            left = f" ({remaining} left)" if remaining is not None else ""
            return f"{head}: no audit pair lies above it yet; audit more responses{left}"
        if self.more_at_rate == 0:
            return f"{head}: the audit is large enough"
        if self.more_clean is None:
            return (
                f"{head}: no audit of any size can certify so small an error rate; choose "
                "a larger maximum error, or code the pairs yourself"
            )
        fewest = self.more_clean
        if remaining is not None and fewest is not None and fewest > remaining:
            return (
                f"{head}: out of reach in this study: even with no further error it needs "
                f"about {fewest} more audit responses, and {_left(remaining)}; code "
                "the pairs yourself, accept a larger maximum error, or score with a bigger "
                "model whose confidence separates right from wrong better"
            )
        if self.more_at_rate is None:
            tail = (
                f"; {_left(remaining)}, so it is likely out of reach in this study"
                if remaining is not None
                else ""
            )
            return (
                f"{head}: the current error rate there ({self.errors_above}/{self.n_above}) "
                f"is too high; at best (no further error) about {self.more_clean} more "
                f"audit responses{tail}"
            )
        if remaining is not None and self.more_at_rate > remaining:
            return (
                f"{head}: at the current error rate ({self.errors_above}/{self.n_above}) it "
                f"needs about {self.more_at_rate} more audit responses, more than the "
                f"{remaining} left: likely out of reach in this study (at least "
                f"{self.more_clean}, with no further error)"
            )
        return (
            f"{head}: about {self.more_at_rate} more audit responses at the current error "
            f"rate ({self.errors_above}/{self.n_above}), at least {self.more_clean}"
        )


def audit_outlook(
    confidence: npt.ArrayLike,
    correct: npt.ArrayLike,
    *,
    threshold: float,
    max_error: float = 0.05,
    level: float = 0.95,
) -> AuditOutlook:
    """Project how many more audit responses delegation above ``threshold`` needs.

    The share of audit responses landing at or above the threshold is assumed to stay
    what it is, so the pair counts of :func:`audit_needed` become response counts.

    Args:
        confidence: Shape (n_audit,), the model's confidence on the audit pairs.
        correct: Shape (n_audit,), bool or 0/1, the model's answer agreed.
        threshold: The confidence threshold to project for.
        max_error: The maximum error rate, in (0, 1).
        level: The confidence level, in (0, 1).

    Raises:
        ValueError: On malformed arrays or ``max_error`` / ``level`` outside (0, 1).
    """
    eps = _check_unit(max_error, "max_error")
    lvl = _check_unit(level, "level")
    conf = as_float_1d(confidence, "confidence")
    ok = as_bool_1d(correct, "correct")
    n_audit = same_length(confidence=conf, correct=ok)
    above = conf >= threshold
    n_above, errors = int(above.sum()), int((~ok[above]).sum())
    clean = rate = None
    if n_above:
        share = n_above / n_audit
        clean = audit_needed(
            n=n_above, errors=errors, max_error=eps, level=lvl, share=share, projection="clean"
        )
        rate = audit_needed(
            n=n_above,
            errors=errors,
            max_error=eps,
            level=lvl,
            share=share,
            projection="current rate",
        )
    return AuditOutlook(
        threshold=float(threshold),
        n_audit=n_audit,
        n_above=n_above,
        errors_above=errors,
        max_error=eps,
        level=lvl,
        more_clean=clean,
        more_at_rate=rate,
    )


def insufficient_reason(shortfalls: Sequence[CellShortfall]) -> str | None:
    """Why a screen is "Insufficient data", when more coding will not cure it.

    The tier's own words ("too few decisions") send the coder to code more. Where a cell
    of the 2x2 table is still empty (no pair of low confidence, say, when the model
    answers every pair alike), there is no rate at which more decisions would fill it;
    this names the empty cells instead. None when every
    short cell has an estimate (more coding is the cure, and the tier's words are right).
    """
    empty = [s.meaning for s in shortfalls if s.more_items is None]
    if not empty:
        return None
    cells = " or ".join(empty)
    return (
        f"no audit pair is {cells} so far: the screen cannot judge a confidence that never "
        "falls in that cell, and more decisions may not change it"
    )
