"""A curve learned from the coder keeps the guarantees (METHOD.md section 5).

Each repetition draws a study of ``N_PAIRS`` pairs of one yes/no code: a latent feature
vector per pair (``DIMS`` standard normal dimensions, standing for the model's hidden
state), the coder's value from a logistic model of it (true logit with standard
deviation ``SIGNAL``, intercept set to the cell's prevalence; in the boundary cells the
coder also flips ``FLIP`` of the values at random, an error floor nothing can learn),
and a noisy zero-shot logit (half the true one plus normal noise of sd 1.5). Then, in
this order:

1. the blind audit: a simple random sample of ``AUDIT`` pairs, drawn first and
   independently of everything else;
2. the coder works the queue *outside the audit*, least certain first: ``ROUND`` pairs
   by the zero-shot curve's entropy, a logistic regression (standardised features, the
   zero-shot logit among them, C = 0.1) is fitted on the decisions so far, the rest is
   re-ranked by its entropy, ``ROUND`` more, and so on: ``ROUNDS`` * ``ROUND`` = 150
   decisions. Active learning, deliberately not random;
3. the learned curve (the last fit, on the queue decisions only) gives every pair its
   confidence (max probability) and pick, and the audit is used with it exactly as with
   a zero-shot configuration: certified delegation with the remainder (the pairs outside
   the audit given, the queue decisions not delegable; the target is the error among
   the delegated pairs) and with the audit alone (scope "above"; the target is the error
   among all pairs at or above the threshold, and also among the delegated ones), and
   the PPI++ interval of the prevalence (the learned picks as predictions), whose
   coverage is checked for the study's own prevalence (a finite population, where it
   is conservative) and for the prevalence of the model the study was drawn from.

The screen's tier is passed as "Valid" in every draw, as in the other delegation
simulations: the gate can only refuse a delegation, so leaving it open is the harder
test of the bound. The negative controls break the rule: the last fit also learns the
audit decisions, with a model that can memorise them, and the exceedance is far above
delta (a memoriser also wrecks PPI's coverage); the same under-regularised model trained
by the rule keeps both.

Monte Carlo: ``REPS`` = 400 repetitions per cell (``REPS_CONTROL`` = 200 for the
negative controls). An exceedance frequency is compared with delta + 3 standard errors
of a proportion at delta, 0.05 + 3 * sqrt(0.05 * 0.95 / 400) = 0.0827 (``LIMIT``); a
coverage with 0.95 - 3 * sqrt(0.95 * 0.05 / 400) = 0.9173 (``TOLERANCE`` = 0.0327). A
correct procedure fails one such check with probability about 0.001. Seeds are fixed,
so the tests are deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import optimize, special
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from threadpoolctl import threadpool_limits

from screening.delegation import certify_delegation
from screening.prevalence import ppi_mean

EPS, LEVEL = 0.05, 0.95
DELTA = 1 - LEVEL
REPS = 400
REPS_CONTROL = 200
TOLERANCE = 3 * math.sqrt(LEVEL * DELTA / REPS)
LIMIT = DELTA + TOLERANCE

N_PAIRS = 2000
AUDIT = 400
DIMS = 12
#: Standard deviation of the coder's true logit: the signal there is to learn.
SIGNAL = 4.0
#: Share of values the coder flips at random in the boundary cells.
FLIP = 0.04
ROUND, ROUNDS = 50, 3
#: Pure-noise features the under-regularised model also gets (room to overfit).
NOISE_DIMS = 100


@dataclass(frozen=True)
class Cell:
    """One simulated setting."""

    prevalence: float
    flip: float = 0.0
    balanced: bool = False
    #: "regularised" (C = 0.1), "overfit" (C = 100, NOISE_DIMS more features) or
    #: "memoriser" (1-nearest neighbour) for the last fit.
    model: str = "regularised"
    learn_audit: bool = False


@dataclass(frozen=True)
class Outcome:
    """Per-draw results of one cell (boolean arrays of length reps)."""

    delegated: np.ndarray  # the remainder test delegated at least one pair
    exceeded: np.ndarray  # ... and the delegated pairs err above EPS
    above_delegated: np.ndarray  # the audit-alone test certified a threshold
    above_exceeded: np.ndarray  # ... and all pairs at or above it err above EPS
    above_remainder_exceeded: np.ndarray  # ... or its delegated pairs do
    covered: np.ndarray  # PPI++ interval covers the study's own prevalence
    covered_model: np.ndarray  # ... and the prevalence of the model it was drawn from
    share: np.ndarray  # share of the delegable pairs delegated (0 when none)
    error: np.ndarray  # error rate among the delegated pairs (nan when none)


def _intercept(prevalence: float, flip: float) -> float:
    """The intercept giving P(applies) = prevalence, by Gauss-Hermite quadrature."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    weights = weights / weights.sum()

    def gap(b: float) -> float:
        p = weights @ special.expit(b + SIGNAL * nodes)
        return float(flip + (1 - 2 * flip) * p - prevalence)

    return float(optimize.brentq(gap, -30.0, 30.0))


def _model(cell: Cell, final: bool) -> LogisticRegression | KNeighborsClassifier:
    if final and cell.model == "memoriser":
        return KNeighborsClassifier(n_neighbors=1)
    weight = "balanced" if cell.balanced else None
    if final and cell.model == "overfit":
        return LogisticRegression(C=100.0, class_weight=weight, max_iter=10_000)
    return LogisticRegression(C=0.1, class_weight=weight, max_iter=1_000)


def simulate(cell: Cell, *, reps: int, seed: int) -> Outcome:
    # Thousands of tiny fits: BLAS and OpenMP threads only contend (6 times slower on 2
    # busy cores).
    with threadpool_limits(limits=1):
        return _simulate(cell, reps=reps, seed=seed)


def _simulate(cell: Cell, *, reps: int, seed: int) -> Outcome:
    rng = np.random.default_rng(seed)
    intercept = _intercept(cell.prevalence, cell.flip)
    direction = rng.standard_normal(DIMS)
    direction *= SIGNAL / np.linalg.norm(direction)
    extra = NOISE_DIMS if cell.model == "overfit" else 0
    out = {name: np.zeros(reps, dtype=bool) for name in Outcome.__dataclass_fields__}
    out["share"] = np.zeros(reps)
    out["error"] = np.full(reps, np.nan)
    for r in range(reps):
        x = rng.standard_normal((N_PAIRS, DIMS))
        logit = intercept + x @ direction
        y = (rng.random(N_PAIRS) < special.expit(logit)) ^ (rng.random(N_PAIRS) < cell.flip)
        zero_shot = 0.5 * logit + 1.5 * rng.standard_normal(N_PAIRS)
        # Standardised over all pairs (no decision is used), the zero-shot logit included.
        feats = np.column_stack([x, zero_shot, rng.standard_normal((N_PAIRS, extra))])
        feats = (feats - feats.mean(axis=0)) / feats.std(axis=0)

        audit = np.zeros(N_PAIRS, dtype=bool)
        audit[rng.choice(N_PAIRS, AUDIT, replace=False)] = True
        # The queue, outside the audit: least certain (|logit| smallest) first.
        trained = np.zeros(N_PAIRS, dtype=bool)
        certainty = np.abs(zero_shot)
        for _ in range(ROUNDS):
            queue = np.flatnonzero(~audit & ~trained)
            trained[queue[np.argsort(certainty[queue], kind="stable")[:ROUND]]] = True
            model = _model(cell, final=False).fit(feats[trained, : DIMS + 1], y[trained])
            certainty = np.abs(model.decision_function(feats[:, : DIMS + 1]))
        learned = trained | audit if cell.learn_audit else trained
        model = _model(cell, final=True).fit(feats[learned], y[learned])
        p = model.predict_proba(feats)[:, 1]
        conf, pick = np.maximum(p, 1 - p), p >= 0.5
        correct = pick == y

        outside = ~audit
        remainder = certify_delegation(
            conf[audit],
            correct[audit],
            tier="Valid",
            max_error=EPS,
            level=LEVEL,
            outside=conf[outside],
            delegable=~trained[outside],
        )
        if remainder.threshold is not None:
            chosen = outside & ~trained & (conf >= remainder.threshold)
            if chosen.any():
                out["delegated"][r] = True
                out["error"][r] = (~correct[chosen]).mean()
                out["exceeded"][r] = out["error"][r] > EPS
                out["share"][r] = chosen.sum() / (outside & ~trained).sum()
        above = certify_delegation(
            conf[audit], correct[audit], tier="Valid", max_error=EPS, level=LEVEL
        )
        if above.threshold is not None:
            out["above_delegated"][r] = True
            at_or_above = conf >= above.threshold
            out["above_exceeded"][r] = (~correct[at_or_above]).mean() > EPS
            chosen = outside & ~trained & at_or_above
            out["above_remainder_exceeded"][r] = chosen.any() and (~correct[chosen]).mean() > EPS
        estimate = ppi_mean(
            y[audit].astype(float),
            pick[audit].astype(float),
            pick[outside].astype(float),
            level=LEVEL,
            binary=True,
        )
        out["covered"][r] = estimate.lower <= y.mean() <= estimate.upper
        out["covered_model"][r] = estimate.lower <= cell.prevalence <= estimate.upper
    return Outcome(**out)


CELLS = {
    "common": (Cell(prevalence=0.4), 1),
    "rare, class-balanced": (Cell(prevalence=0.15, balanced=True), 2),
    "common, coder flips 4%": (Cell(prevalence=0.4, flip=FLIP), 3),
    "rare, coder flips 4%": (Cell(prevalence=0.15, flip=FLIP), 4),
    "overfit, by the rule": (Cell(prevalence=0.4, model="overfit"), 5),
}


def _check_guarantees(result: Outcome, min_delegated: float) -> None:
    figures = {
        "delegated": result.delegated.mean(),
        "exceeded": result.exceeded.mean(),
        "above": result.above_exceeded.mean(),
        "above, remainder": result.above_remainder_exceeded.mean(),
        "coverage": result.covered.mean(),
        "coverage (model)": result.covered_model.mean(),
    }
    assert result.delegated.mean() >= min_delegated, figures
    assert result.exceeded.mean() <= LIMIT, figures
    assert result.above_exceeded.mean() <= LIMIT, figures
    assert result.above_remainder_exceeded.mean() <= LIMIT, figures
    assert result.covered.mean() >= LEVEL - TOLERANCE, figures
    assert result.covered_model.mean() >= LEVEL - TOLERANCE, figures


def test_a_curve_learned_outside_the_audit_keeps_the_guarantees() -> None:
    # Measured: delegates in 77% of draws (38% of the delegable pairs on average; the
    # fixed sequence, with the whole level on its first start: 92%, 46%); exceedance
    # 2.3% (remainder) and 1.5% (all pairs above); coverage 98.5% of the study's own
    # prevalence, 93.8% of the prevalence of the model it was drawn from.
    cell, seed = CELLS["common"]
    _check_guarantees(simulate(cell, reps=REPS, seed=seed), min_delegated=0.7)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "min_delegated"),
    [
        # Class-balanced weights make the learned probabilities miscalibrated (too
        # many "applies"); the audit measures the curve as it is, so no matter.
        # Measured: delegates in 99.5% of draws, exceedance 0.5%.
        ("rare, class-balanced", 0.8),
        # An error floor at 4%: the delegated pairs err near eps, delegation is rare
        # and any of it is at risk; the bound must still hold (measured: delegates in
        # 3% and 6% of draws, exceedance 2.0% and 0.5%).
        ("common, coder flips 4%", 0.0),
        ("rare, coder flips 4%", 0.0),
        # An under-regularised model trained by the rule: the audit sees its real
        # errors, so it delegates nothing (measured) and promises nothing it cannot keep.
        ("overfit, by the rule", 0.0),
    ],
)
def test_the_guarantees_hold_in_harder_cells(name: str, min_delegated: float) -> None:
    cell, seed = CELLS[name]
    _check_guarantees(simulate(cell, reps=REPS, seed=seed), min_delegated)


def _check_broken(result: Outcome) -> None:
    figures = {
        "exceeded": result.exceeded.mean(),
        "above": result.above_exceeded.mean(),
        "coverage": result.covered.mean(),
        "coverage (model)": result.covered_model.mean(),
    }
    # Clearly above delta, not a Monte Carlo wobble: most draws exceed.
    assert result.exceeded.mean() > 0.5 > LIMIT, figures
    assert result.above_exceeded.mean() > 0.5, figures


def test_negative_control_learning_from_the_audit_breaks_the_guarantees() -> None:
    # The rule broken: the last fit also learns the audit decisions, with a model that
    # memorises them (1-nearest neighbour). The audit then shows no error at all, and
    # the whole remainder is delegated at the model's real error rate (measured: every
    # draw exceeds, at 14% errors on average). PPI, told by the audit that the picks are
    # perfect, leans on them and misses the prevalence (measured coverage 76.5%).
    cell = Cell(prevalence=0.15, model="memoriser", learn_audit=True)
    result = simulate(cell, reps=REPS_CONTROL, seed=6)
    _check_broken(result)
    assert result.covered.mean() < LEVEL - 3 * TOLERANCE, result.covered.mean()


@pytest.mark.slow
def test_negative_control_an_overfit_model_learning_from_the_audit() -> None:
    # The same under-regularised logistic regression as in "overfit, by the rule", now
    # also fitted on the audit: its in-sample errors on the audit are far fewer than
    # its real ones, so the threshold is set too low (measured: 98.5% of draws exceed,
    # the delegated pairs err at 13% on average). (PPI's coverage suffers less here:
    # this model's errors fall on both sides about equally, so its picks' prevalence is
    # close to the truth even when the audit hides their errors.)
    cell = Cell(prevalence=0.4, model="overfit", learn_audit=True)
    _check_broken(simulate(cell, reps=REPS_CONTROL, seed=7))
