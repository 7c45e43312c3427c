"""The kappa ceiling ``bench_learning`` prints beside each mean, against a simulation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from benchmarks.bench_learning import kappa_ceiling


@pytest.mark.parametrize(("auroc", "prevalence"), [(0.82, 0.186), (0.80, 0.064), (0.9, 0.4)])
def test_the_ceiling_is_the_best_kappa_of_a_binormal_ranking(
    auroc: float, prevalence: float
) -> None:
    from scipy.stats import norm

    rng = np.random.default_rng(7)
    n = 200_000
    truth = rng.random(n) < prevalence
    scores = rng.standard_normal(n) + np.sqrt(2) * norm.ppf(auroc) * truth
    assert roc_auc_score(truth, scores) == pytest.approx(auroc, abs=0.005)
    best = max(cohen_kappa_score(truth, scores > cut) for cut in np.linspace(-1.0, 4.0, 101))
    # Monte Carlo: kappa's standard error at n = 200,000 is under 0.004; the grid of
    # cut-offs (steps of 0.05) loses less than 0.002 near the best one.
    assert kappa_ceiling(auroc, prevalence) == pytest.approx(best, abs=0.012)


def test_a_ranking_at_chance_allows_no_agreement_beyond_chance() -> None:
    assert kappa_ceiling(0.5, 0.2) == pytest.approx(0.0, abs=1e-6)
    assert kappa_ceiling(0.84, 0.15) > kappa_ceiling(0.80, 0.15)
