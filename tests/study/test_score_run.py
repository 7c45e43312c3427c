"""Scoring into a study: each batch stored at once, an interrupted run resumes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebooks.model import Codebook
from scoring import FakeBackend, ScoringEngine
from scoring.errors import ScoringCancelled, ScoringError
from study import ResponseTable, Study, StudyError
from study.score_run import ScoreProgress, score_study


@pytest.fixture
def big(tmp_path: Path, codebook: Codebook) -> Iterator[Study]:
    texts = {f"b{i}": f"answer number {i} about pay and colleagues" for i in range(20)}
    study = Study.create(
        tmp_path / "b.codecurve", responses=ResponseTable.from_texts(texts), codebook=codebook
    )
    yield study
    study.close()


def prompts_sent(backend: FakeBackend) -> int:
    return sum(len(b) for b in backend.batches)


def test_failure_then_resume_never_recomputes(big: Study) -> None:
    total = big.pair_count()  # 20 responses x 3 codes
    failing = FakeBackend(fail_on_call=3)
    engine = ScoringEngine(failing, big.codebook, batch_size=4)
    with pytest.raises(ScoringError, match="fake failure"):
        score_study(big, engine)
    config_id = big.scores.active_config_id()
    assert config_id is not None
    kept = big.scores.scored_count(config_id)
    assert kept == 3 * 4  # the three batches before the failure
    first_prompts = {p for batch in failing.batches[:3] for p in batch}

    backend = FakeBackend()  # same identity: same configuration
    engine = ScoringEngine(backend, big.codebook, batch_size=4)
    run = score_study(big, engine)
    assert (run.config_id, run.already, run.stored, run.total) == (
        config_id,
        kept,
        total - kept,
        total,
    )
    assert prompts_sent(backend) == total - kept
    assert not first_prompts & {p for batch in backend.batches for p in batch}
    assert big.scores.scored_count(config_id) == total

    again = FakeBackend()
    run = score_study(big, ScoringEngine(again, big.codebook, batch_size=4))
    assert (run.stored, again.calls) == (0, 0)


def test_cancel_between_batches_keeps_them(big: Study) -> None:
    cancel = threading.Event()
    seen: list[ScoreProgress] = []

    def progress(step: ScoreProgress) -> None:
        seen.append(step)
        if len(seen) == 2:
            cancel.set()

    backend = FakeBackend()
    with pytest.raises(ScoringCancelled):
        score_study(
            big,
            ScoringEngine(backend, big.codebook, batch_size=5),
            progress=progress,
            cancel=cancel,
        )
    config_id = big.scores.active_config_id()
    assert config_id is not None
    assert big.scores.scored_count(config_id) == 10 == seen[-1].scored
    assert backend.calls == 2
    resumed = FakeBackend()
    score_study(big, ScoringEngine(resumed, big.codebook, batch_size=5))
    assert prompts_sent(resumed) == big.pair_count() - 10


def test_scores_match_the_engine(big: Study) -> None:
    engine = ScoringEngine(FakeBackend(), big.codebook, batch_size=7)
    run = score_study(big, engine)
    row = big.queries.page(run.config_id, order="id", limit=1)[0]
    assert big.scores.pending_pairs(run.config_id) == []
    pair = next(
        p for p in _all_pairs(big) if (p.response_id, p.code.id) == (row.response_id, row.code_id)
    )
    fresh = ScoringEngine(FakeBackend(), big.codebook).score([pair])[0]
    assert row.probs == pytest.approx(tuple(fresh.curve.probs))
    assert row.pick == fresh.prediction
    assert big.scores.config_row(run.config_id).key == fresh.config_key


def _all_pairs(study: Study) -> list:  # type: ignore[type-arg]
    from scoring.score import Pair

    return [Pair(r.id, r.text, c) for r in study.responses() for c in study.codes]


def test_engine_on_another_codebook_is_refused(big: Study, codebook: Codebook) -> None:
    from dataclasses import replace

    other = replace(codebook, name="other")
    with pytest.raises(StudyError, match="another codebook"):
        score_study(big, ScoringEngine(FakeBackend(), other))


def test_an_interrupted_run_keeps_its_speed_for_the_next_estimate(big: Study) -> None:
    """Ctrl-C (or a model's failure) mid-run: the speed measured so far is kept, so the
    run that resumes estimates its time from it, not from nothing."""
    config_id = big.scores.ensure_config(
        ScoringEngine(FakeBackend(), big.codebook, batch_size=4).config
    )
    assert big.scores.measured_rate(config_id) is None

    def interrupt(step: ScoreProgress) -> None:
        if step.stored >= 40:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        score_study(
            big, ScoringEngine(FakeBackend(), big.codebook, batch_size=4), progress=interrupt
        )
    rate = big.scores.measured_rate(config_id)
    assert rate is not None
    assert rate.rate > 0
    assert rate.pairs > 0
