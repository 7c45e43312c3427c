"""The scoring progress line: a bar bound to done / total, with rate and ETA."""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import Label, ProgressBar

from tui.keymap import key
from tui.messages import Progress
from tui.text import duration

__all__ = ["ScoringProgress", "duration"]


class ScoringProgress(Horizontal):
    """Shown while a scoring run is going; Escape cancels it."""

    progress: reactive[Progress | None] = reactive(None, init=False)
    """The latest progress, or None when no run is going."""

    def compose(self) -> ComposeResult:
        yield Label("Scoring", id="scoring-title")
        yield ProgressBar(total=None, show_eta=False, show_percentage=True, id="scoring-bar")
        yield Label("", id="scoring-rate")

    def watch_progress(self, progress: Progress | None) -> None:
        self.set_class(progress is not None, "-running")
        if progress is None:
            return
        bar = self.query_one(ProgressBar)
        bar.update(total=max(1, progress.total), progress=progress.done)
        rate = f"{progress.rate:.1f}/s" if progress.rate > 0 else "…"
        eta = duration(progress.eta) if progress.done else "?"
        self.query_one("#scoring-rate", Label).update(
            f"{progress.done:,}/{progress.total:,}  {rate}  ETA {eta}  "
            f"[dim]{escape(key('review.cancel'))} cancels[/]"
        )
