"""The app's scoring state machine (:class:`tui.scorer.Scorer`) alone, without an app:
one run at a time, an edit during a run is rescored once after it, and both wait for
the model, which loads once.

The fake workers hold each run on an event the test releases; the run's end comes back
to the test as the app's worker posts ScoringFinished, and the test hands it to the
scorer as the app's handler does. Nothing waits on time.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from scoring import FakeBackend
from scoring.engine import ScoringEngine
from tests.factories import CODEBOOK
from tui.scorer import BackendFactory, Run, Scorer
from tui.screens.code_editor import edited_codebook

EDITED = edited_codebook(CODEBOOK, "pay", {"definition": "Money, and only money."})


@dataclass
class FakeWorkers:
    """The app's model and scoring workers: each run is a thread held until released."""

    loads: int = 0
    runs: list[tuple[ScoringEngine, bool]] = field(default_factory=list)
    ended: queue.Queue[int] = field(default_factory=queue.Queue)
    _releases: list[threading.Event] = field(default_factory=list)

    def load(self, factory: BackendFactory) -> None:
        factory()
        self.loads += 1

    def run(self, engine: ScoringEngine, activate: bool) -> None:
        self.runs.append((engine, activate))
        release = threading.Event()
        self._releases.append(release)
        number = len(self.runs)

        def hold() -> None:
            release.wait()
            self.ended.put(number)

        threading.Thread(target=hold, daemon=True).start()

    def release(self, scorer: Scorer, *, cancelled: bool = False) -> bool:
        """Let the latest run end; hand its end to the scorer as the app does."""
        self._releases[-1].set()
        assert self.ended.get(timeout=30) == len(self.runs)
        return scorer.finished(cancelled=cancelled)

    def release_all(self) -> None:
        for release in self._releases:
            release.set()


@pytest.fixture
def workers() -> Iterator[FakeWorkers]:
    fake = FakeWorkers()
    yield fake
    fake.release_all()


def loaded(workers: FakeWorkers) -> Scorer:
    """A scorer whose model is loaded (nothing running)."""
    scorer = Scorer(FakeBackend, load=workers.load, run=workers.run)
    assert scorer.load()
    scorer.model_loaded(ScoringEngine(FakeBackend(), CODEBOOK), config_id=1)
    assert scorer.resume(CODEBOOK) is None
    return scorer


def test_no_second_run_starts_while_one_is_running(workers: FakeWorkers) -> None:
    scorer = loaded(workers)
    assert scorer.start() is Run.STARTED
    assert scorer.scoring
    assert scorer.start() is Run.BUSY
    assert len(workers.runs) == 1
    assert workers.runs[0][1] is True  # r activates the engine's configuration
    assert workers.release(scorer) is False  # nothing waits
    assert not scorer.scoring
    assert scorer.start() is Run.STARTED  # once it ended, r scores again
    assert len(workers.runs) == 2


def test_an_edit_during_a_run_is_rescored_once_after_it(workers: FakeWorkers) -> None:
    scorer = loaded(workers)
    assert scorer.start() is Run.STARTED
    first = workers.runs[0][0]
    assert scorer.request_rescore(EDITED) is Run.BUSY
    assert scorer.request_rescore(EDITED) is Run.BUSY  # a second edit: still one rescoring
    assert scorer.rescore_requested
    assert len(workers.runs) == 1
    assert workers.release(scorer) is True  # the rescoring waits to start now
    assert scorer.resume(EDITED) is Run.STARTED
    assert scorer.scoring
    assert scorer.rescoring
    assert not scorer.rescore_requested
    assert len(workers.runs) == 2
    engine, activate = workers.runs[1]
    assert activate is False  # an edit changes no configuration
    assert engine is not first
    assert engine.codebook.content_hash() == EDITED.content_hash()
    assert engine.backend is first.backend  # the model is not loaded again
    assert scorer.engine is engine
    assert workers.release(scorer) is False
    assert (scorer.scoring, scorer.rescoring) == (False, False)
    assert scorer.resume(EDITED) is None  # nothing waits any more
    assert len(workers.runs) == 2


def test_a_rescoring_does_not_follow_a_cancelled_run(workers: FakeWorkers) -> None:
    scorer = loaded(workers)
    scorer.start()
    assert scorer.request_rescore(EDITED) is Run.BUSY
    assert workers.release(scorer, cancelled=True) is False
    assert scorer.rescore_requested  # kept: it follows the next run the coder starts
    assert scorer.start() is Run.STARTED
    assert workers.release(scorer) is True


def test_an_unchanged_codebook_reuses_the_engine(workers: FakeWorkers) -> None:
    scorer = loaded(workers)
    engine = scorer.engine
    assert scorer.request_rescore(CODEBOOK) is Run.STARTED
    assert workers.runs == [(engine, False)]


def test_requests_wait_for_the_model_which_loads_once(workers: FakeWorkers) -> None:
    scorer = Scorer(FakeBackend, load=workers.load, run=workers.run)
    assert scorer.start() is Run.LOADING
    assert scorer.loading
    assert scorer.start() is Run.WAITING
    assert scorer.request_rescore(EDITED) is Run.WAITING
    assert workers.loads == 1
    assert workers.runs == []
    scorer.model_loaded(ScoringEngine(FakeBackend(), EDITED), config_id=2)
    assert not scorer.loading
    assert scorer.loaded_config == 2
    assert scorer.resume(EDITED) is Run.STARTED  # the run of the pending pairs first
    assert workers.runs[0][1] is True
    assert workers.release(scorer) is True  # then the rescoring
    assert scorer.resume(EDITED) is Run.STARTED
    assert workers.runs[1][1] is False


def test_a_failed_load_drops_the_waiting_run_and_a_later_one_loads_again(
    workers: FakeWorkers,
) -> None:
    scorer = Scorer(FakeBackend, load=workers.load, run=workers.run)
    assert scorer.load(score=True)
    assert scorer.score_requested
    scorer.model_failed()
    assert not scorer.score_requested
    assert not scorer.loading
    assert scorer.start() is Run.LOADING
    assert workers.loads == 2


def test_a_stopped_worker_frees_the_scorer(workers: FakeWorkers) -> None:
    scorer = loaded(workers)
    scorer.request_rescore(EDITED)
    assert scorer.rescoring
    scorer.stopped()
    assert (scorer.scoring, scorer.rescoring) == (False, False)
    assert scorer.start() is Run.STARTED


def test_without_a_model_nothing_is_scored_or_kept_waiting(workers: FakeWorkers) -> None:
    scorer = Scorer(None, load=workers.load, run=workers.run)
    assert not scorer.has_model
    assert scorer.load(score=True) is False
    assert scorer.start() is Run.NO_MODEL
    assert scorer.request_rescore(EDITED) is Run.NO_MODEL
    assert not scorer.rescore_requested
    assert scorer.resume(EDITED) is None
    assert (workers.loads, workers.runs) == (0, [])
