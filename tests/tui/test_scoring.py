"""Live scoring in the app: progress, rows filling in, cancel, failures, a real model."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.pilot import Pilot

from scoring import FakeBackend, ModelNotFoundError
from scoring.backend import Backend
from tests.factories import build_study
from tui.app import CodecurveApp, make_app
from tui.messages import ModelLoaded, ScoringFinished, ScoringProgressed
from tui.source import row_key

SIZE = (100, 30)


async def wait_for(pilot: Pilot[None], condition: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.02)


def errors(app: CodecurveApp) -> list[str]:
    return [n.message for n in app._notifications if n.severity == "error"]


class GatedBackend(FakeBackend):
    """A fake backend whose second batch waits until ``gate`` is set: the test acts while
    one batch is stored and no other can arrive."""

    def __init__(self, **options: Any) -> None:
        super().__init__(gate=threading.Event(), gate_from=1, **options)

    @property
    def opened(self) -> threading.Event:
        assert self.gate is not None
        return self.gate


async def test_r_scores_pending_pairs_with_progress_and_rows_fill_in(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=20, scored=False)
    seen: list[Message] = []
    backend = GatedBackend(delay=0.03)
    app = make_app(
        study,
        backend_factory=lambda: backend,
        coder="tester",
        batch_size=6,
        close_study=True,
    )
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, ModelLoaded) for m in seen))
        queue = app.review.pair_queue
        first = queue.current
        assert first is not None
        assert first.surprisal is None  # nothing scored yet
        await pilot.press("r")
        await wait_for(pilot, lambda: any(isinstance(m, ScoringProgressed) for m in seen))
        # The first batch's reload moves the cursor with its pair; the next batch waits,
        # so a key is measured against a queue that holds still (a batch landing between
        # reading the cursor and pressing j would move it as well: the cursor follows).
        await pilot.pause()
        before = queue.cursor
        expected = queue.row_at(before + 1)
        await pilot.press("j")
        assert queue.cursor == before + 1
        assert queue.current == expected
        backend.opened.set()
        # Keys are still handled while the remaining batches run.
        await pilot.press("k")
        await wait_for(pilot, lambda: any(isinstance(m, ScoringFinished) for m in seen))
        await pilot.pause()
        finished = next(m for m in seen if isinstance(m, ScoringFinished))
        assert (finished.done, finished.total, finished.cancelled) == (60, 60, False)
        progress = [m.progress for m in seen if isinstance(m, ScoringProgressed)]
        assert progress[-1].done == 60
        assert [p.done for p in progress] == sorted(p.done for p in progress)
        assert study.scores.scored_count(app.session.config_id) == 60  # type: ignore[arg-type]
        rows = [queue.row_at(i) for i in range(queue.total)]
        assert all(r is not None and r.surprisal is not None for r in rows)
        entropies = [r.norm_entropy for r in rows if r is not None]
        known = [e for e in entropies if e is not None]
        assert known == entropies  # every row has its entropy
        assert known == sorted(known, reverse=True)
        assert not app.review.scoring_progress.has_class("-running")


async def test_escape_cancels_between_batches(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=20, scored=False)
    seen: list[Message] = []
    backend = GatedBackend()  # the second batch waits until escape has been pressed
    app = make_app(
        study,
        backend_factory=lambda: backend,
        coder="tester",
        batch_size=4,
        score_on_open=True,
        close_study=True,
    )
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, ScoringProgressed) for m in seen))
        assert app.review.scoring_progress.has_class("-running")
        await pilot.press("escape")
        await pilot.pause()
        backend.opened.set()
        await wait_for(pilot, lambda: any(isinstance(m, ScoringFinished) for m in seen))
        finished = next(m for m in seen if isinstance(m, ScoringFinished))
        assert finished.cancelled
        assert 0 < finished.done < 60
        scored = study.scores.scored_count(app.session.config_id)  # type: ignore[arg-type]
        assert scored == finished.done  # every finished batch was written, no more
        assert not app.scoring
        # r picks up where it stopped.
        seen.clear()
        await pilot.press("r")
        await wait_for(pilot, lambda: any(isinstance(m, ScoringFinished) for m in seen), 30)
        finished = next(m for m in seen if isinstance(m, ScoringFinished))
        assert finished.total == 60 - scored
        assert study.scores.scored_count(app.session.config_id) == 60  # type: ignore[arg-type]


async def test_a_missing_model_leaves_manual_coding_possible(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=10)

    def missing() -> Backend:
        raise ModelNotFoundError("no model at /nowhere; check --model")

    app = make_app(study, backend_factory=missing, coder="tester", close_study=True)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert any("could not be loaded" in e for e in errors(app))
        row = app.review.pair_queue.current
        assert row is not None
        await pilot.press("1")
        decision = study.decisions.decision(row.response_id, row.code_id, coder="tester")
        assert decision is not None
        await pilot.press("r")  # tries to load again, fails again, still usable
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.is_running


async def test_a_failing_batch_keeps_the_scores_so_far(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=10, scored=False)
    app = make_app(
        study,
        backend_factory=lambda: FakeBackend(fail_on_call=2),
        coder="tester",
        batch_size=5,
        score_on_open=True,
        close_study=True,
    )
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: bool(errors(app)))
        assert any("Scoring stopped" in e for e in errors(app))
        assert study.scores.scored_count(app.session.config_id) == 10  # type: ignore[arg-type]
        assert not app.scoring
        await pilot.press("x")
        assert study.decisions.count(coder="tester") == 1


@pytest.mark.model
async def test_the_embedded_model_scores_a_few_pairs(tmp_path: Path) -> None:
    from scoring import load_backend

    study = build_study(tmp_path / "s.codecurve", n=2, scored=False)
    seen: list[Message] = []
    app = make_app(
        study,
        backend_factory=lambda: load_backend(None),
        coder="tester",
        score_on_open=True,
        close_study=True,
    )
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, ScoringFinished) for m in seen), 300)
        await pilot.pause()
        finished = next(m for m in seen if isinstance(m, ScoringFinished))
        assert (finished.done, finished.cancelled) == (6, False)
        rows = [app.review.pair_queue.row_at(i) for i in range(6)]
        for row in rows:
            assert row is not None
            assert row.probs is not None
            assert abs(sum(row.probs) - 1.0) < 1e-6
            assert row.pick is not None
        loaded = next(m for m in seen if isinstance(m, ModelLoaded))
        assert "SmolLM2" in loaded.description


@pytest.mark.parametrize("order", ["entropy", "pick", "confidence"])
async def test_the_highlighted_pair_stays_highlighted_while_scores_arrive(
    tmp_path: Path, order: str
) -> None:
    study = build_study(tmp_path / "s.codecurve", n=30, scored=False)
    seen: list[Message] = []
    app = make_app(
        study,
        backend_factory=lambda: FakeBackend(delay=0.08),
        coder="tester",
        batch_size=10,
        close_study=True,
    )
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, ModelLoaded) for m in seen))
        await pilot.pause()
        queue = app.review.pair_queue
        while queue.pair_query.order != order:
            await pilot.press("o")
        await pilot.press("j", "j")
        unscored = queue.current
        assert unscored is not None
        assert unscored.surprisal is None
        key = row_key(unscored)
        await pilot.press("r")
        # The pair is scored in the first batch and jumps to its place in the order;
        # later batches insert rows above it. The cursor follows it all along.
        keys: list[tuple[str, str]] = []
        while not any(isinstance(m, ScoringFinished) for m in seen):
            if (row := queue.current) is not None:
                keys.append(row_key(row))
            await pilot.pause(0.01)
        assert sum(isinstance(m, ScoringProgressed) for m in seen) > 3
        await pilot.pause()
        # On a fast machine the worker may finish before the loop samples once.
        if (row := queue.current) is not None:
            keys.append(row_key(row))
        assert set(keys) == {key}
        current = queue.current
        assert current is not None
        assert row_key(current) == key
        assert current.surprisal is not None
        assert app.review.detail.row is not None
        assert row_key(app.review.detail.row) == key
        assert queue.cursor == next(
            i
            for i in range(queue.total)
            if row_key(queue.row_at(i)) == key  # type: ignore[arg-type]
        )


async def test_quitting_while_the_screening_runs_closes_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import tui.app
    from tui.verdicts import summarise_study

    study = build_study(tmp_path / "s.codecurve", n=10)
    started, release = threading.Event(), threading.Event()
    real = summarise_study

    def slow_summary(*args: object, **kwargs: object) -> object:
        started.set()
        release.wait(10)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tui.app, "summarise_study", slow_summary)
    app = make_app(study, coder="tester", close_study=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, started.is_set)
            screening = [w for w in app.workers if w.group == "screening"]
            assert screening
            assert screening[0].is_running
        # Leaving the context ran unmount: it cancelled the worker and did not raise.
        assert screening[0].is_cancelled
    finally:
        release.set()
        study.close()


async def test_a_coder_waiting_at_the_top_is_taken_to_the_new_top_after_scoring(
    tmp_path: Path,
) -> None:
    study = build_study(tmp_path / "s.codecurve", n=20, scored=False)
    seen: list[Message] = []
    app = make_app(
        study, backend_factory=FakeBackend, coder="tester", batch_size=6, close_study=True
    )
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, ModelLoaded) for m in seen))
        await pilot.pause()
        queue = app.review.pair_queue
        assert queue.cursor == 0
        await pilot.press("r")
        await wait_for(pilot, lambda: any(isinstance(m, ScoringFinished) for m in seen))
        await pilot.pause()
        top = study.queries.page(app.session.config_id, order="entropy", limit=1)[0]
        current = queue.current
        assert current is not None
        assert queue.cursor == 0
        assert row_key(current) == row_key(top)


async def test_r_says_what_the_run_will_cost_at_the_studys_measured_speed(
    tmp_path: Path,
) -> None:
    from study.intake.responses import ResponseTable

    study = build_study(tmp_path / "s.codecurve", n=12, scored=False)
    seen: list[Message] = []
    app = make_app(study, backend_factory=FakeBackend, coder="tester", score_on_open=True)
    async with app.run_test(size=SIZE, message_hook=seen.append, notifications=True) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, ScoringFinished) for m in seen))
        first = [n.message for n in app._notifications if n.message.startswith("Scoring:")]
        assert first == [
            "Scoring: 36 pairs to score; the time is estimated once the first batches are "
            "scored. esc cancels."
        ]
        config_id = study.scores.active_config_id()
        assert config_id is not None
        rate = study.scores.measured_rate(config_id)
        assert rate is not None
        study.versions.add_responses(ResponseTable.from_texts({"w1": "New answer."}))
        seen.clear()
        await pilot.press("r")
        await wait_for(pilot, lambda: any(isinstance(m, ScoringFinished) for m in seen))
        said = [n.message for n in app._notifications if n.message.startswith("Scoring: 3 ")]
        assert len(said) == 1
        assert "3 pairs to score: about " in said[0]
        assert f" at {rate.rate:,.1f} pairs/s" in said[0]
        assert "this configuration's last run" in said[0]
    study.close()
