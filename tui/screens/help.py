"""The help screen: every key, generated from the bindings, and how to read the table."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

#: How to read the queue: (term, explanation); a table, so a long explanation wraps
#: within its column at any width instead of under the term.
LEGEND: tuple[tuple[str, str], ...] = (
    (
        "curve",
        "One bar per scale option, lowest option first. A tall bar means low surprisal: "
        "the option the model finds most likely. One tall bar = a clear preference; a flat "
        "curve = the model is torn.",
    ),
    ("pick", "The model's pick (the curve's minimum) and its confidence (p of that option)."),
    ("H", "Normalised entropy, 0 (sure) to 1 (torn). The queue puts high H first."),
    ("coded", "· undecided   ✓ coded by hand   ≈ the model's pick, accepted."),
    ("✎¶", "✎ a note on the pair   ¶ a memo on its whole response (m in the response view)."),
    ("yes/no", "On a yes/no code 1 records Yes (present) and 0 No."),
)


def bindings_table(bindings: Iterable[tuple[str, str]]) -> Table:
    """Key, name and what it does, in columns: the text wraps inside its own column."""
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold cyan", no_wrap=True, justify="right")
    table.add_column(style="bold", no_wrap=True)
    table.add_column(ratio=1)
    for key, description in bindings:
        title, sep, rest = description.partition(": ")
        table.add_row(key, title if sep else "", rest if sep else description)
    return table


def legend_table(legend: Iterable[tuple[str, str]] = LEGEND) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True, justify="right")
    table.add_column(ratio=1)
    for term, text in legend:
        table.add_row(term, text)
    return table


class HelpScreen(ModalScreen[None]):
    """Lists ``(key, description)`` pairs collected from the screen that opened it, and
    how to read what that screen shows (``legend``, under ``heading``)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close", id="help.close"),
    ]

    def __init__(
        self,
        keys: list[tuple[str, str]],
        *,
        legend: Iterable[tuple[str, str]] = LEGEND,
        heading: str = "Reading the queue",
    ) -> None:
        super().__init__()
        self._keys = keys
        self._legend = tuple(legend)
        self._heading = heading

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body", classes="dialog") as body:
            body.border_title = "Keys"
            body.border_subtitle = "esc closes"
            yield Static(bindings_table(self._keys), id="help-keys")
            yield Static(
                Group(
                    Text(self._heading, style="bold"),
                    legend_table(self._legend),
                    Text("Every decision is saved the moment you make it.", style="dim"),
                ),
                id="help-legend",
            )

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
