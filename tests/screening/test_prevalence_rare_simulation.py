"""Coverage of the prevalence interval for rare and common codes, by simulation.

The grid: prevalence 0.02, 0.05, 0.10, 0.30, 0.50 x audit 30, 50, 100, 150, 300, 500 x
four models of the code: ``good`` (sensitivity 0.92, false positives 5%), ``useless``
(picks "applies" at random half the time), ``missing`` (misses the code: sensitivity
0.40, specificity 0.98) and ``constant`` (never picks "applies"). Each repetition draws
a study of ``POPULATION`` responses, each applying with the known probability, the
model's picks, and a simple random audit; the interval printed (``ppi_mean`` with
``binary=True``: PPI++'s normal interval with at least 40 decisions on each side of the
audit, else the score interval) must cover the prevalence the responses come from.

Monte Carlo: with ``REPS`` = 4,000 repetitions a 95% interval's coverage is estimated
with a standard error of sqrt(0.95 * 0.05 / 4000) = 0.0034; the bar is 0.935, 4.4
standard errors below 0.95, so that over the 120 cells an interval covering at its level
fails none by chance, and one at 0.943 (the discreteness of the binomial: the normal
interval's exact coverage at prevalence 0.5 and audit 300; 0.940 at audit 150) fails a
cell about once in 100. At 2,000 repetitions the first fell to 0.931 in one run. The
fast subset (default suite) runs cells where the normal interval failed, with
``FAST_REPS`` = 600 repetitions (s.e. 0.0089) against 0.95 - 3 * 0.0089 = 0.923; the
full grid is marked ``grid`` and runs only when asked for (``pytest -m grid``).
``python -m tests.screening.test_prevalence_rare_simulation`` prints the table of
docs/method.md.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from screening.intervals import wilson_interval
from screening.prevalence import ppi_mean

LEVEL = 0.95
POPULATION = 2000
REPS = 4000
FAST_REPS = 600
#: The full grid's bar: 4.4 standard errors below the level at REPS (module docstring).
GRID_BAR = 0.935
PREVALENCES = (0.02, 0.05, 0.10, 0.30, 0.50)
AUDITS = (30, 50, 100, 150, 300, 500)
#: (P(pick applies | applies), P(pick applies | does not)) of each model.
MODELS = {
    "good": (0.92, 0.05),
    "useless": (0.5, 0.5),
    "missing": (0.40, 0.02),
    "constant": (0.0, 0.0),
}


def bar(reps: int) -> float:
    """Three Monte Carlo standard errors below the nominal level."""
    return LEVEL - 3 * math.sqrt(LEVEL * (1 - LEVEL) / reps)


def simulate(model: str, prevalence: float, audit: int, reps: int, seed: int) -> dict[str, float]:
    """Coverage and mean width of the interval printed and of Wilson on the same audits."""
    sensitivity, false_positive = MODELS[model]
    rng = np.random.default_rng(seed)
    covered = wilson_covered = 0
    width = wilson_width = 0.0
    normal = 0
    for _ in range(reps):
        truth = rng.random(POPULATION) < prevalence
        noise = rng.random(POPULATION)
        pick = np.where(truth, noise < sensitivity, noise < false_positive).astype(float)
        order = rng.permutation(POPULATION)
        labelled, rest = order[:audit], order[audit:]
        y = truth[labelled].astype(float)
        est = ppi_mean(y, pick[labelled], pick[rest], level=LEVEL, binary=True)
        lower, upper = wilson_interval(int(y.sum()), audit, confidence_level=LEVEL)
        covered += est.lower <= prevalence <= est.upper
        wilson_covered += lower <= prevalence <= upper
        width += est.upper - est.lower
        wilson_width += upper - lower
        normal += est.interval == "normal"
    return {
        "coverage": covered / reps,
        "wilson": wilson_covered / reps,
        "width_ratio": width / wilson_width,
        "normal_share": normal / reps,
    }


def _seed(model: str, prevalence: float, audit: int) -> int:
    return list(MODELS).index(model) * 100_000 + round(prevalence * 1000) * 1000 + audit


GRID = [(m, p, n) for m in MODELS for p in PREVALENCES for n in AUDITS]

#: Cells where PPI++'s normal interval covered 0.42-0.93 (rare codes, thin audits).
FAST = [
    ("good", 0.05, 50),
    ("missing", 0.05, 300),
    ("missing", 0.10, 150),
    ("useless", 0.02, 150),
    ("constant", 0.10, 50),
    ("good", 0.50, 30),
]


@pytest.mark.parametrize(("model", "prevalence", "audit"), FAST)
def test_the_interval_covers_where_the_normal_one_did_not(
    model: str, prevalence: float, audit: int
) -> None:
    result = simulate(model, prevalence, audit, FAST_REPS, _seed(model, prevalence, audit))
    assert result["coverage"] >= bar(FAST_REPS), result


def test_a_good_model_narrows_a_rare_code_and_a_useless_one_costs_little() -> None:
    good = simulate("good", 0.05, 300, FAST_REPS, 5)
    useless = simulate("useless", 0.05, 300, FAST_REPS, 6)
    assert good["width_ratio"] < 0.9, good
    assert useless["width_ratio"] <= 1.1, useless


@pytest.mark.parametrize(
    ("model", "first", "second", "audit"),
    [("missing", 0.05, 0.10, 150), ("good", 0.02, 0.06, 300), ("useless", 0.10, 0.10, 100)],
)
def test_the_difference_of_two_groups_covers(
    model: str, first: float, second: float, audit: int
) -> None:
    """Two independent groups of POPULATION / 2 responses each, audited alike: the
    square-and-add interval of their two printed intervals covers the difference of the
    prevalences (the same Monte Carlo bar as the fast subset)."""
    from screening.prevalence import difference

    sensitivity, false_positive = MODELS[model]
    rng = np.random.default_rng(round(first * 1000) + audit)
    half = POPULATION // 2
    covered = 0
    for _ in range(FAST_REPS):
        estimates = []
        for prevalence in (first, second):
            truth = rng.random(half) < prevalence
            noise = rng.random(half)
            pick = np.where(truth, noise < sensitivity, noise < false_positive).astype(float)
            order = rng.permutation(half)
            labelled, rest = order[: audit // 2], order[audit // 2 :]
            estimates.append(
                ppi_mean(truth[labelled].astype(float), pick[labelled], pick[rest], binary=True)
            )
        d = difference(estimates[0], estimates[1])
        covered += d.lower <= first - second <= d.upper
    assert covered / FAST_REPS >= bar(FAST_REPS), covered / FAST_REPS


@pytest.mark.slow
@pytest.mark.grid
@pytest.mark.parametrize(("model", "prevalence", "audit"), GRID)
def test_the_interval_covers_in_every_cell(model: str, prevalence: float, audit: int) -> None:
    result = simulate(model, prevalence, audit, REPS, _seed(model, prevalence, audit))
    assert result["coverage"] >= GRID_BAR, result
    if model in ("useless", "constant"):
        assert result["width_ratio"] <= 1.1, result
    if model == "good" and prevalence * audit >= 10:
        # Where the audit expects 10 "applies" or more, a good model narrows the interval
        # (with fewer than 5 it is given no weight, and the interval is the audit's).
        assert result["width_ratio"] < 1.0, result


def table() -> str:
    """The grid as the markdown table of docs/method.md."""
    lines = [
        "| model | prevalence | audit | coverage | Wilson's coverage | width / Wilson's | "
        "normal interval used |",
        "|---|---|---|---|---|---|---|",
    ]
    for model, prevalence, audit in GRID:
        r = simulate(model, prevalence, audit, REPS, _seed(model, prevalence, audit))
        lines.append(
            f"| {model} | {prevalence:.2f} | {audit} | {r['coverage']:.3f} | "
            f"{r['wilson']:.3f} | {r['width_ratio']:.2f} | {r['normal_share']:.0%} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
