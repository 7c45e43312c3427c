"""The configuration comparison, checked against scikit-learn and scipy."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from codebooks.model import Codebook
from scoring.curves import curve_from_logprobs
from scoring.score import Pair, Score, ScoreConfig
from study import ResponseTable, Study
from study.analysis.compare import POOLED, compare_configs, kappa
from study.errors import StudyError
from tests.study.test_revisions import content

N = 40


def noisy_score(pair: Pair, config: ScoreConfig, truth: int, noise: float) -> Score:
    """A curve peaked near ``truth``, blurred by ``noise`` (seeded by pair and config)."""
    scale = pair.code.scale or config.scale
    salt = f"{pair.response_id}/{pair.code.id}/{config.context}"
    rng = np.random.default_rng(int(hashlib.sha256(salt.encode()).hexdigest()[:8], 16))
    values = np.array(scale.values, dtype=float)
    logits = -((values - truth) ** 2) + rng.normal(size=scale.k) * noise
    logprobs = logits - np.log(np.exp(logits).sum()) - 0.05
    curve = curve_from_logprobs(logprobs, scale.values)
    return Score(
        response_id=pair.response_id,
        code_id=pair.code.id,
        config_key=config.key(),
        scale=scale,
        curve=curve,
        token_ids=tuple(((i + 10,),) for i in range(scale.k)),
        missing=(False,) * scale.k,
        prompt="p",
        prompt_hash="p",
        text_hash="t",
        code_hash=pair.code.content_hash(),
        truncated=False,
    )


def truth_of(response_id: str, code: str, k: int) -> int:
    digest = int(hashlib.sha256(f"{response_id}:{code}".encode()).hexdigest()[:6], 16)
    return digest % k + 1 if k > 2 else digest % 2


@pytest.fixture
def prepared(tmp_path: Path, codebook: Codebook, config: ScoreConfig) -> Iterator[Study]:
    responses = ResponseTable.from_texts({f"r{i}": f"answer {i}" for i in range(1, N + 1)})
    study = Study.create(tmp_path / "c.codecurve", responses=responses, codebook=codebook)
    decisions = [
        (rid, code.id, truth_of(rid, code.id, study.codebook.scale_for(code).k))
        for code in study.codes
        for rid in study.response_ids()
    ]
    study.decisions.import_decisions(decisions, coder="ana")
    for context, noise in (("definition", 3.0), ("full", 0.5)):
        cfg = replace(config, context=context)
        cid = study.scores.ensure_config(cfg)
        scores = []
        for pair in study.scores.pending_pairs(cid):
            scale = study.codebook.scale_for(pair.code)
            scores.append(
                noisy_score(pair, cfg, truth_of(pair.response_id, pair.code.id, scale.k), noise)
            )
        study.scores.store(cid, scores)
    yield study
    study.close()


def test_numbers_match_independent_implementations(prepared: Study) -> None:
    result = compare_configs(prepared, resamples=200)
    assert result.coder == "ana"
    assert result.n_pairs == N * 3
    frames = {cid: prepared.queries.annotated_pairs(cid, coder="ana") for cid, _ in result.configs}
    for row in result.rows:
        frame = frames[row.config_id]
        if row.code == POOLED:
            expected = cohen_kappa_score(frame["pick_applies"], frame["applies"])
            assert row.n == N * 3
            assert not row.weighted
        else:
            sub = frame[frame["code_id"] == row.code]
            scale = prepared.codebook.scale_for(prepared.code(row.code))
            weights = "quadratic" if scale.k > 2 else None
            expected = cohen_kappa_score(
                sub["pick"], sub["value"], weights=weights, labels=list(scale.values)
            )
            if scale.k > 2:
                assert row.rho == pytest.approx(spearmanr(sub["pick"], sub["value"]).statistic)
            else:
                assert row.rho is None
            assert row.agreement == pytest.approx((sub["pick_applies"] == sub["applies"]).mean())
            assert row.entropy == pytest.approx(sub["norm_entropy"].mean())
            assert row.off_scale == pytest.approx((1 - sub["on_scale_mass"]).mean())
        assert row.kappa.point == pytest.approx(expected)
        assert row.tier != "-"  # every code and the pool have a screen
        assert row.kappa.low <= row.kappa.point <= row.kappa.high


def test_the_sharper_configuration_is_clearly_better(prepared: Study) -> None:
    result = compare_configs(prepared, resamples=300)
    pooled = [d for d in result.differences if d.code == POOLED]
    assert len(pooled) == 1
    assert pooled[0].kappa.point < 0  # definition (noisy) minus full (sharp)
    assert pooled[0].clear


def test_kappa_agrees_with_sklearn_on_random_ratings() -> None:
    rng = np.random.default_rng(1)
    for k in (2, 3, 5, 7):
        a = rng.integers(0, k, size=60)
        b = np.clip(a + rng.integers(-1, 2, size=60), 0, k - 1)
        for weighted in (False, True):
            ours = kappa(a, b, k, weighted=weighted)
            theirs = cohen_kappa_score(
                a, b, weights="quadratic" if weighted else None, labels=list(range(k))
            )
            assert ours == pytest.approx(theirs)
    assert math.isnan(
        kappa(np.zeros(5, dtype=np.int64), np.zeros(5, dtype=np.int64), 2, weighted=False)
    )


def test_no_decisions_is_one_clear_error(study: Study, config: ScoreConfig) -> None:
    study.scores.ensure_config(config)
    before = content(study.path)
    with pytest.raises(StudyError, match="no decisions to compare with"):
        compare_configs(study)
    assert content(study.path) == before


def test_no_configuration_and_the_audit_sample_are_clear_errors(study: Study) -> None:
    with pytest.raises(StudyError, match="no scoring configurations"):
        compare_configs(study)
    with pytest.raises(StudyError, match="no audit sample drawn"):
        compare_configs(study, sample="audit")
