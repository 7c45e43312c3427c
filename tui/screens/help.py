"""The help screen: every key, generated from the bindings, and how to read the table."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

LEGEND = """\
[b]Reading the queue[/b]
  [b]curve[/b]   one bar per scale option, lowest option first. A [b]tall bar means low
          surprisal[/b]: the option the model finds most likely. One tall bar = a clear
          preference; a flat curve = the model is torn.
  [b]pick[/b]    the model's pick (the curve's minimum) and its confidence (p of that option).
  [b]H[/b]       normalised entropy, 0 (sure) to 1 (torn). The queue puts high H first.
  [b]coded[/b]   · undecided   ✓ coded by hand   ≈ the model's pick, accepted.
  Every decision is saved the moment you make it; there is nothing to save.
"""


def bindings_table(bindings: Iterable[tuple[str, str]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True, justify="right")
    table.add_column()
    for key, description in bindings:
        table.add_row(key, description)
    return table


class HelpScreen(ModalScreen[None]):
    """Lists ``(key, description)`` pairs collected from the screen that opened it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close", id="help.close"),
    ]

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self._keys = keys

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body", classes="dialog") as body:
            body.border_title = "Keys"
            body.border_subtitle = "esc closes"
            yield Static(bindings_table(self._keys), id="help-keys")
            yield Static(Text.from_markup(LEGEND), id="help-legend")

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
