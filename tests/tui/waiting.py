"""Waiting in Pilot tests for what the app has done, never for a stretch of time."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.pilot import Pilot


async def wait_for(
    pilot: Pilot[None], condition: Callable[[], object], timeout: float = 60.0
) -> None:
    """Let the app run until ``condition()`` holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.02)


async def settle(pilot: Pilot[None]) -> None:
    """Wait until no screening or refit is pending (they wait for a pause in the keys)
    and no worker runs.

    A finished worker may schedule another screening, so this waits until both hold at
    once.
    """
    app = pilot.app

    def pending() -> bool:
        screening = app._screening_timer  # type: ignore[attr-defined]
        learning = app._learning_timer  # type: ignore[attr-defined]  # a refit due
        return screening is not None or learning is not None

    await pilot.pause()
    while True:
        await wait_for(pilot, lambda: not pending())
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not pending() and not any(w.is_running for w in app.workers):
            return
