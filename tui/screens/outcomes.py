"""What a screen does with a session's outcome: one rule for every screen that decides."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen

from tui.messages import AnnotationSaved
from tui.session import Outcome, Refused, Saved


def report(screen: Screen[Any], outcome: Outcome) -> Saved | None:
    """Post :class:`~tui.messages.AnnotationSaved` for a saved change and return it;
    otherwise say why nothing was saved (a warning, or an error that keeps the app
    going) and return None."""
    if isinstance(outcome, Saved):
        screen.post_message(AnnotationSaved.of(outcome))
        return outcome
    if isinstance(outcome, Refused):
        screen.notify(outcome.message, severity="warning", timeout=3)
    else:
        screen.notify(outcome.message, title="Not saved", severity="error", timeout=20)
    return None
