"""The screening waits for the coder to pause: a key puts a pending screening off again."""

from __future__ import annotations

import pytest

import tui.app as app_module
from study.store import Study
from tests.tui.waiting import settle, wait_for
from tui.app import make_app


def screening_runs(app: app_module.CodecurveApp) -> int:
    return sum(1 for w in app.workers if w.group == "screening")


async def test_a_screening_due_after_a_key_waits_for_a_pause(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Long enough never to come due by itself: the test calls the timer's callback.
    monkeypatch.setattr(app_module, "HIDDEN_SCREENING_DELAY", 3600.0)
    app = make_app(study, coder="tester")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: app.screening_summary is not None)  # the first, at once
        await pilot.press("1")  # a decision: a screening after a pause
        await pilot.pause()  # (not settle(): it waits for the screening)
        assert app._screening_timer is not None
        before = app.screening_summary
        await pilot.press("j")
        app._screening_due()  # due now, but a key came within the delay
        assert app._screening_timer is not None  # waits on
        await pilot.pause()
        await app.workers.wait_for_complete()
        assert app.screening_summary is before  # not screened
        app._last_key -= 3600.0  # no key for the whole delay
        app._screening_due()
        assert app._screening_timer is None
        await wait_for(pilot, lambda: app.screening_summary is not before)


async def test_the_screening_runs_once_the_keys_stop(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: app.screening_summary is not None)
        before = app.screening_summary
        await pilot.press("1", "j", "k")
        await wait_for(pilot, lambda: app.screening_summary is not before, timeout=30)
        assert app._screening_timer is None
