"""Progress per code, and who else is coding now, on demand (``p``); kept up to date while
it is open (the app tells it when any session commits)."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.table import Table
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.keymap import bindings, key
from tui.live import Teammate, team
from tui.messages import StudyChanged
from tui.session import ReviewSession
from tui.text import printable

#: Cells of the share bar; with its percentage the fourth column is never narrower.
BAR = 20


def progress_table(progress: dict[str, Any], names: dict[str, str]) -> Table:
    """Decided / total per code with a share bar; a long code name is shortened with an
    ellipsis so the bar and its percentage always fit."""
    table = Table(show_edge=False, expand=True)
    table.add_column("code", ratio=1, no_wrap=True, overflow="ellipsis")
    table.add_column("decided", justify="right", no_wrap=True)
    table.add_column("of", justify="right", no_wrap=True)
    table.add_column("", no_wrap=True, min_width=BAR + 5)
    by_code = progress.get("by_code") or {}
    for code_id, entry in by_code.items():
        decided = int(entry.get("decided", 0))
        total = int(entry.get("total", 0))
        share = decided / total if total else 0.0
        filled = round(share * BAR)
        bar = "█" * filled + "░" * (BAR - filled)
        table.add_row(
            printable(names.get(code_id, code_id), single_line=True),
            f"{decided:,}",
            f"{total:,}",
            f"{bar} {share:>4.0%}",
        )
    return table


def team_table(teammates: list[Teammate]) -> Table:
    """The other coders with a session open now and how many decisions each has made
    (names and counts only: never what they decided)."""
    table = Table(show_edge=False, expand=True, title="Also coding now", title_justify="left")
    table.add_column("coder", ratio=1, no_wrap=True, overflow="ellipsis")
    table.add_column("decisions", justify="right", no_wrap=True)
    table.add_column("on", no_wrap=True, overflow="ellipsis")
    for mate in teammates:
        table.add_row(
            printable(mate.coder, single_line=True),
            f"{mate.decided:,}",
            printable(mate.host, single_line=True),
        )
    return table


class ProgressScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings("progress.close")

    def __init__(self, session: ReviewSession) -> None:
        super().__init__()
        self.session = session

    def compose(self) -> ComposeResult:
        names = {c.id: c.name for c in self.session.codebook.codes}
        progress = self.session.progress(scored=True)
        with VerticalScroll(classes="dialog", id="progress-dialog") as box:
            box.border_title = (
                f"Progress: {progress.get('decided', 0):,} of {progress.get('total', 0):,} decided"
            )
            box.border_subtitle = f"{key('progress.close')} closes"
            yield Static(progress_table(progress, names), id="progress-codes")
            teammates = team(self.session.study, coder=self.session.coder)
            if teammates:
                yield Static(team_table(teammates), id="progress-team")
            else:
                yield Static("Nobody else is coding this study now.", id="progress-team")

    @on(StudyChanged)
    async def _study_changed(self) -> None:
        await self.recompose()

    def action_close(self) -> None:
        self.dismiss(None)
