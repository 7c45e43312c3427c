"""Progress per code, on demand (``p``)."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.session import ReviewSession


def progress_table(progress: dict[str, Any], names: dict[str, str]) -> Table:
    table = Table(show_edge=False, expand=True)
    table.add_column("code")
    table.add_column("decided", justify="right")
    table.add_column("of", justify="right")
    table.add_column("", ratio=1)
    by_code = progress.get("by_code") or {}
    for code_id, entry in by_code.items():
        decided = int(entry.get("decided", 0))
        total = int(entry.get("total", 0))
        share = decided / total if total else 0.0
        bar = "█" * round(share * 20) + "░" * (20 - round(share * 20))
        table.add_row(
            names.get(code_id, code_id), f"{decided:,}", f"{total:,}", f"{bar} {share:.0%}"
        )
    return table


class ProgressScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,p,q", "close", "Close", id="progress.close")
    ]

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
            box.border_subtitle = "esc closes"
            yield Static(progress_table(progress, names))

    def action_close(self) -> None:
        self.dismiss(None)
