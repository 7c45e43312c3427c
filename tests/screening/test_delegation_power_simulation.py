"""Certified delegation by simulation: the guarantee on the delegated pairs, and how much
it delegates against an oracle, for the fallback procedure and the former fixed sequence.

A population of ``POPULATION`` pairs of one code with a known error profile:

* ``clean`` / ``nearly clean``: confidence uniform on [0.5, 1]; the confident half errs at
  0% / 0.5%, the rest at 30%;
* ``flat 2%``: the same, the confident half erring at a flat 2%;
* ``boundary``: the confident half at 5.5%, just above the maximum: nothing may be
  delegated;
* ``calibrated`` / ``overconfident``: confidence piled up near 1 (1 - Beta(1, 8) / 2),
  the model erring at 1 - c, or 2.5 times that.

Each repetition draws a random audit of 20%, 50% or 80% of the pairs; outside it the
people coded ``none`` of the pairs, the quarter of least confidence (``queue``, as the
review queue orders them), or a third of the confident pairs the model got right
(``adversarial``: the errors concentrate in what is left to delegate). Delegation is
certified at 5% with 95% confidence on the delegated pairs themselves; the oracle knows
every error and delegates the most pairs outside the audit (a threshold on confidence)
whose error rate is at most 5%.

Monte Carlo: the exceedance frequency (the delegated pairs err above 5%) over REPS
repetitions has a standard error of sqrt(0.05 * 0.95 / REPS) at delta; the bar is delta
plus three of them (0.083 at 400 repetitions, 0.103 at 150). The median delegated count
is compared with the oracle's median. The fast subset runs in the default suite; the
grid is marked ``grid`` and runs only when asked for (``pytest -m grid``).
``python -m tests.screening.test_delegation_power_simulation`` prints the table of
docs/method.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from screening.delegation import Procedure, certify_delegation

EPS, LEVEL = 0.05, 0.95
DELTA = 1 - LEVEL
POPULATION = 2000
REPS = 400
FAST_REPS = 150
PROFILES = ("clean", "nearly clean", "flat 2%", "calibrated", "overconfident", "boundary")
FRACTIONS = (0.2, 0.5, 0.8)
CODINGS = ("none", "queue", "adversarial")


def bar(reps: int) -> float:
    return DELTA + 3 * math.sqrt(DELTA * (1 - DELTA) / reps)


def population(profile: str, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """Confidence and correctness of every pair."""
    rng = np.random.default_rng(seed)
    if profile in ("calibrated", "overconfident"):
        conf = 1 - 0.5 * rng.beta(1, 8, POPULATION)
        wrong = rng.random(POPULATION) < (1 - conf) * (1.0 if profile == "calibrated" else 2.5)
        return conf, ~wrong
    top_error = {"clean": 0.0, "nearly clean": 0.005, "flat 2%": 0.02, "boundary": 0.055}
    conf = rng.uniform(0.5, 1.0, POPULATION)
    top = conf >= np.median(conf)
    wrong = np.zeros(POPULATION, dtype=bool)
    top_idx = np.flatnonzero(top)
    wrong[rng.choice(top_idx, round(top_error[profile] * top_idx.size), replace=False)] = True
    wrong[~top] = rng.random(int((~top).sum())) < 0.3
    return conf, ~wrong


def oracle(conf: np.ndarray, correct: np.ndarray) -> int:
    """The most pairs a confidence threshold delegates with at most EPS of them wrong."""
    order = np.argsort(-conf, kind="stable")
    ranked = conf[order]
    wrong = np.cumsum(~correct[order])
    kept = np.arange(1, conf.size + 1)
    at_threshold = np.r_[ranked[1:] != ranked[:-1], True]
    fine = (wrong / kept <= EPS) & at_threshold
    return int(kept[fine].max()) if fine.any() else 0


def coded_outside(
    coding: str, conf: np.ndarray, correct: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Which pairs outside the audit people decided (never delegated)."""
    if coding == "none":
        return np.zeros(conf.size, dtype=bool)
    if coding == "queue":
        coded = np.zeros(conf.size, dtype=bool)
        coded[np.argsort(conf, kind="stable")[: conf.size // 4]] = True
        return coded
    return (conf >= 0.75) & correct & (rng.random(conf.size) < 1 / 3)


def simulate(
    profile: str, fraction: float, coding: str, reps: int, procedure: Procedure, seed: int = 5
) -> dict[str, float]:
    """Median delegated and oracle counts, mean delegated, and the exceedance frequency."""
    conf, correct = population(profile)
    rng = np.random.default_rng(seed)
    delegated, best, exceeded = [], [], 0
    for _ in range(reps):
        order = rng.permutation(POPULATION)
        audit, outside = order[: int(fraction * POPULATION)], order[int(fraction * POPULATION) :]
        coded = coded_outside(coding, conf[outside], correct[outside], rng)
        result = certify_delegation(
            conf[audit],
            correct[audit],
            tier="Valid",
            max_error=EPS,
            level=LEVEL,
            outside=conf[outside],
            delegable=~coded,
            procedure=procedure,
        )
        left = outside[~coded]
        best.append(oracle(conf[left], correct[left]))
        chosen = left[conf[left] >= result.threshold] if result.certified else left[:0]
        delegated.append(chosen.size)
        exceeded += chosen.size > 0 and float((~correct[chosen]).mean()) > EPS
    return {
        "delegated": float(np.median(delegated)),
        "mean": float(np.mean(delegated)),
        "oracle": float(np.median(best)),
        "exceeded": exceeded / reps,
    }


def share(result: dict[str, float], key: str = "delegated") -> float:
    return result[key] / max(result["oracle"], 1.0)


def test_a_flat_two_percent_error_rate_no_longer_ends_delegation_at_its_first_threshold() -> None:
    new = simulate("flat 2%", 0.5, "none", 40, "fallback")
    old = simulate("flat 2%", 0.5, "none", 40, "fixed sequence")
    # Measured over 200 repetitions: 0.91 of the oracle's median, the fixed sequence 0.
    assert share(new) >= 0.6, new
    assert share(old) < 0.2, old


@pytest.mark.parametrize(("profile", "coding"), [("boundary", "none"), ("flat 2%", "adversarial")])
def test_the_delegated_pairs_exceed_the_maximum_in_at_most_delta(profile: str, coding: str) -> None:
    result = simulate(profile, 0.5, coding, FAST_REPS, "fallback")
    assert result["exceeded"] <= bar(FAST_REPS), result


GRID = [(p, f, c) for p in PROFILES for f in FRACTIONS for c in CODINGS]


@pytest.mark.slow
@pytest.mark.grid
@pytest.mark.parametrize(("profile", "fraction", "coding"), GRID)
def test_the_guarantee_holds_in_every_setting(profile: str, fraction: float, coding: str) -> None:
    result = simulate(profile, fraction, coding, REPS, "fallback")
    assert result["exceeded"] <= bar(REPS), result
    if profile == "flat 2%" and fraction == 0.5 and coding != "adversarial":
        assert share(result) >= 0.6, result


def table(reps: int = 200, run: Callable[..., dict[str, float]] = simulate) -> str:
    """Old and new, setting by setting: the markdown table of docs/method.md."""
    lines = [
        "| errors | audited | people coded outside | oracle (median) | fixed sequence: "
        "median / mean share, exceeded | fallback: median / mean share, exceeded |",
        "|---|---|---|---|---|---|",
    ]
    for profile, fraction, coding in GRID:
        old = run(profile, fraction, coding, reps, "fixed sequence")
        new = run(profile, fraction, coding, reps, "fallback")
        lines.append(
            f"| {profile} | {fraction:.0%} | {coding} | {new['oracle']:.0f} | "
            f"{share(old):.2f} / {share(old, 'mean'):.2f}, {old['exceeded']:.3f} | "
            f"{share(new):.2f} / {share(new, 'mean'):.2f}, {new['exceeded']:.3f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
