"""Score a study's pending pairs, storing each batch as soon as it is finished.

:func:`score_study` is the one loop the command line (``codecurve score STUDY``) and
the app's scoring worker share. The engine's configuration becomes the study's active
one; only pairs without a score under it are sent to the model, and every finished
batch is one committed transaction, so an interrupted run (an error, Ctrl-C, a kill)
keeps what it finished and the next run starts where it stopped: a pair already scored
is never computed again. One process scores a study at a time (the scoring lock); the
others see the scores arrive.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scoring.errors import ScoringCancelled
from study.errors import StudyError
from study.file.locking import ScoringLock

if TYPE_CHECKING:
    from scoring.engine import BatchResult, ScoringEngine
    from study.store import Study


#: Seconds of scoring between two records of the run's speed (kept also when it ends).
KEEP_RATE_EVERY = 30.0


@dataclass(frozen=True)
class ScoreProgress:
    """Where a study's scoring run stands after a batch.

    Attributes:
        batch: The engine's result for the batch just stored.
        stored: Scores stored by this run so far.
        scored: Pairs of the study scored under the configuration (earlier runs too).
        total: Pairs of the study.
    """

    batch: BatchResult
    stored: int
    scored: int
    total: int


@dataclass(frozen=True)
class ScoreRun:
    """What :func:`score_study` did."""

    config_id: int
    pending: int
    stored: int
    already: int
    total: int


def score_study(
    study: Study,
    engine: ScoringEngine,
    *,
    started: Callable[[int, int], None] | None = None,
    progress: Callable[[ScoreProgress], None] | None = None,
    cancel: threading.Event | None = None,
    activate: bool = True,
) -> ScoreRun:
    """Score the pairs of ``study`` not yet scored under ``engine``'s configuration.

    Args:
        study: A study open for writing.
        engine: Built on ``study.codebook`` (its scale and codes are the study's).
        started: Called once before the first batch with the configuration's id and
            the number of pairs to score.
        progress: Called after each stored batch.
        cancel: Checked between batches; when set, the run stops and
            :class:`~scoring.errors.ScoringCancelled` is raised (stored batches stay).
        activate: Make the configuration the active one (the queue's and exports').

    Scoring runs in one process at a time (:class:`~study.file.locking.ScoringLock`);
    other sessions see the scores arrive as each batch is stored.

    Raises:
        StudyError: the engine's codebook is not the study's.
        StudyLockedError: the study is being scored in another session (named).
        ScoringError: the model failed; the batches before the failure are stored.
        ScoringCancelled: ``cancel`` was set.
    """
    if engine.codebook.content_hash() != study.codebook.content_hash():
        raise StudyError(
            "the scoring engine was built on another codebook than the study's", path=study.path
        )
    with ScoringLock(study.path, coder=study.coder or ""):
        return _score(study, engine, started=started, progress=progress, cancel=cancel,
                      activate=activate)  # fmt: skip


def _score(
    study: Study,
    engine: ScoringEngine,
    *,
    started: Callable[[int, int], None] | None,
    progress: Callable[[ScoreProgress], None] | None,
    cancel: threading.Event | None,
    activate: bool,
) -> ScoreRun:
    """The run itself, under the study's scoring lock."""
    config_id = study.scores.ensure_config(engine.config, activate=activate)
    pending = study.scores.pending_pairs(
        config_id, features=engine.captures_features, layout=engine.feature_layout
    )
    total = study.pair_count()
    already = total - len(pending)
    if started is not None:
        started(config_id, len(pending))
    stored = 0
    batches = engine.iter_batches(pending)
    last: BatchResult | None = None
    kept_at = 0.0
    done = False
    try:
        for batch in batches:
            stored += study.scores.store(
                config_id, batch.scores, feature_layout=engine.feature_layout
            )
            last = batch
            if batch.elapsed - kept_at >= KEEP_RATE_EVERY:
                # A run killed later still leaves its speed for the next one's estimate.
                _keep_rate(study, config_id, batch)
                kept_at = batch.elapsed
            if progress is not None:
                progress(ScoreProgress(batch, stored, already + stored, total))
            if cancel is not None and cancel.is_set() and already + stored < total:
                _keep_rate(study, config_id, last)
                raise ScoringCancelled(
                    f"scoring cancelled after {stored} pairs; {already + stored} of {total} "
                    "are scored and kept"
                )
        done = True
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()
        if not done and last is not None:
            # Interrupted (Ctrl-C, a model's failure): the speed so far is still the best
            # estimate of the run that resumes it.
            with contextlib.suppress(StudyError, sqlite3.Error, OSError):
                _keep_rate(study, config_id, last)
    _keep_rate(study, config_id, last)
    return ScoreRun(
        config_id=config_id, pending=len(pending), stored=stored, already=already, total=total
    )


def _keep_rate(study: Study, config_id: int, last: BatchResult | None) -> None:
    """Keep the run's speed for the next run's estimate: the pairs the model scored (not
    those its cache answered) over the run's time, as the engine measures it."""
    if last is not None and last.rate > 0:
        scored = round(last.rate * last.elapsed)
        study.scores.record_rate(config_id, pairs=scored, seconds=last.elapsed)
