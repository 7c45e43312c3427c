"""Coverage of the prevalence intervals by simulation (METHOD.md section 4).

Each repetition draws a study of ``POPULATION`` responses, each applying with the known
probability ``PREVALENCE``, the model's picks (good, biased towards "applies", or at
chance), and a simple random audit sample. The intervals are for the prevalence of the
population the responses come from (``PREVALENCE``), and cover it in 95% of draws; for
the study's own share (a finite population, of which a large audit is a large part) they
are conservative, which is checked one-sided. With ``REPS`` repetitions, the
coverage of a 95% interval is estimated with a standard error of
``sqrt(0.95 * 0.05 / REPS)`` = 1.09 points at 400; the tolerance is 3 of those
(``TOLERANCE`` = 3.3 points), so an honest interval fails this test about once in 400
runs per cell, a broken one (e.g. the plain count under a biased model) always.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from screening.prevalence import audit_proportion, ppi_mean

REPS = 400
LEVEL = 0.95
TOLERANCE = 3 * math.sqrt(LEVEL * (1 - LEVEL) / REPS)
POPULATION = 2000
PREVALENCE = 0.3

#: (P(pick applies | applies), P(pick applies | does not)) of each model.
MODELS = {"good": (0.92, 0.05), "biased": (0.95, 0.40), "chance": (0.5, 0.5)}


def _run(model: str, audit: int, seed: int) -> dict[str, np.ndarray]:
    sensitivity, false_positive = MODELS[model]
    rng = np.random.default_rng(seed)
    truth = rng.random((REPS, POPULATION)) < PREVALENCE
    noise = rng.random((REPS, POPULATION))
    pick = np.where(truth, noise < sensitivity, noise < false_positive).astype(float)
    order = np.argsort(rng.random((REPS, POPULATION)), axis=1)
    own = truth.mean(axis=1)
    out: dict[str, list[float]] = {k: [] for k in ("ppi", "audit", "count", "own", "wp", "wa")}
    for r in range(REPS):
        y = truth[r].astype(float)
        labelled, rest = order[r, :audit], order[r, audit:]
        ppi = ppi_mean(y[labelled], pick[r, labelled], pick[r, rest], level=LEVEL, binary=True)
        alone = audit_proportion(y[labelled], level=LEVEL)
        out["ppi"].append(float(ppi.lower <= PREVALENCE <= ppi.upper))
        out["audit"].append(float(alone.lower <= PREVALENCE <= alone.upper))
        out["own"].append(float(ppi.lower <= own[r] <= ppi.upper))
        # The plain count of final codes: the audit's human values, the model's picks
        # elsewhere, read as if it were a sample of the whole study.
        final = pick[r].copy()
        final[labelled] = y[labelled]
        naive = audit_proportion(final, level=LEVEL)
        out["count"].append(float(naive.lower <= PREVALENCE <= naive.upper))
        out["wp"].append(ppi.upper - ppi.lower)
        out["wa"].append(alone.upper - alone.lower)
    return {k: np.asarray(v) for k, v in out.items()}


@pytest.mark.parametrize("audit", [50, 150, 400])
@pytest.mark.parametrize("model", list(MODELS))
def test_intervals_cover_the_true_prevalence(model: str, audit: int) -> None:
    result = _run(model, audit, seed=list(MODELS).index(model) * 1000 + audit)
    assert abs(result["ppi"].mean() - LEVEL) <= TOLERANCE, result["ppi"].mean()
    assert abs(result["audit"].mean() - LEVEL) <= TOLERANCE, result["audit"].mean()
    assert result["own"].mean() >= LEVEL - TOLERANCE, result["own"].mean()


@pytest.mark.parametrize("audit", [50, 400])
def test_the_plain_count_does_not_cover_when_the_model_is_biased(audit: int) -> None:
    result = _run("biased", audit, seed=20 + audit)
    assert result["count"].mean() < 0.05
    assert result["ppi"].mean() >= LEVEL - TOLERANCE


@pytest.mark.parametrize("audit", [50, 150, 400])
def test_ppi_is_narrower_than_the_audit_alone_when_the_model_is_good(audit: int) -> None:
    result = _run("good", audit, seed=40 + audit)
    assert result["wp"].mean() < 0.75 * result["wa"].mean()


def test_ppi_is_no_wider_than_the_audit_alone_at_chance() -> None:
    # Power tuning sends the weight of useless predictions to about zero.
    result = _run("chance", 150, seed=77)
    assert result["wp"].mean() < 1.05 * result["wa"].mean()
