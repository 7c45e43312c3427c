"""Configurations are explicit and safe: the app opens on the study's active one, says
when its options start a new one, and never switches the study to an empty one."""

from __future__ import annotations

import time
from pathlib import Path

from textual.message import Message
from textual.pilot import Pilot

from scoring import FakeBackend
from scoring.engine import ScoringEngine
from study.score_run import score_study
from study.store import Study
from tests.factories import build_study
from tui.app import CodecurveApp, make_app
from tui.messages import ModelLoaded, ScoringFinished

SIZE = (120, 30)


async def wait_for(pilot: Pilot[None], condition: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.02)


def scored_with_full_context(path: Path) -> tuple[Study, int]:
    """What ``codecurve score STUDY --context full`` leaves: every pair scored under a
    ``full`` configuration, which is the active one."""
    study = build_study(path, n=12, scored=False)
    run = score_study(study, ScoringEngine(FakeBackend(), study.codebook, context="full"))
    assert study.scores.active_config_id() == run.config_id
    assert study.scores.scored_count(run.config_id) == study.pair_count()
    return study, run.config_id


def notes(app: CodecurveApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_review_without_options_opens_on_the_active_configuration(tmp_path: Path) -> None:
    # The bug: the app's default context was "definition", so after
    # `score --context full` a plain `review` opened an empty configuration and made it
    # the active one (screen then saw 0 items).
    study, full = scored_with_full_context(tmp_path / "s.codecurve")
    seen: list[Message] = []
    app = make_app(study, backend_factory=FakeBackend, coder="tester", close_study=False)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, ModelLoaded) for m in seen))
        await pilot.pause()
        loaded = next(m for m in seen if isinstance(m, ModelLoaded))
        assert loaded.config_id == full
        assert app.session.config_id == full
        row = app.review.pair_queue.current
        assert row is not None
        assert row.pick is not None
        status = str(app.review.status_line.render())
        assert f"#{full} fake (fake) · full" in status
        assert not any("new configuration" in n for n in notes(app))
    assert study.scores.active_config_id() == full
    assert len(study.scores.configs()) == 1
    study.close()


async def test_another_context_says_a_new_configuration_starts(tmp_path: Path) -> None:
    study, full = scored_with_full_context(tmp_path / "s.codecurve")
    seen: list[Message] = []
    app = make_app(
        study,
        backend_factory=FakeBackend,
        coder="tester",
        context="definition",
        close_study=False,
    )
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, ModelLoaded) for m in seen))
        await pilot.pause()
        new = next(m for m in seen if isinstance(m, ModelLoaded)).config_id
        assert new != full
        assert any("A new configuration starts" in n for n in notes(app))
        # Still on the scores there are; the study's active configuration is unchanged.
        assert app.session.config_id == full
        assert study.scores.active_config_id() == full
        row = app.review.pair_queue.current
        assert row is not None
        assert row.pick is not None
        status = str(app.review.status_line.render())
        assert f"#{full} fake (fake) · full" in status
        assert f"r scores #{new}" in status
        # Scoring with it makes it the one shown and the active one.
        await pilot.press("r")
        await wait_for(pilot, lambda: any(isinstance(m, ScoringFinished) for m in seen))
        await pilot.pause()
        assert app.session.config_id == new
        assert study.scores.active_config_id() == new
        assert f"#{new} fake (fake) · definition" in str(app.review.status_line.render())
    study.close()


async def test_a_first_model_on_an_unscored_study_is_shown_at_once(tmp_path: Path) -> None:
    study = build_study(tmp_path / "u.codecurve", n=5, scored=False)
    seen: list[Message] = []
    app = make_app(study, backend_factory=FakeBackend, coder="tester", close_study=False)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: any(isinstance(m, ModelLoaded) for m in seen))
        await pilot.pause()
        new = next(m for m in seen if isinstance(m, ModelLoaded)).config_id
        assert app.session.config_id == new
        assert not any("new configuration" in n for n in notes(app))
    # Registered but not activated until something is scored with it.
    assert study.scores.active_config_id() is None
    study.close()
