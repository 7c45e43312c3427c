"""The note dialog: add or edit the coder's note on one pair."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from tui.keymap import bindings, key
from tui.text import kept_unless_edited, printable


class NoteScreen(ModalScreen[str | None]):
    """Returns the new note (``""`` removes it), or None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("dialog.cancel")

    def __init__(self, title: str, note: str | None) -> None:
        super().__init__()
        self._title = title
        self._note = note or ""
        # A note from a project file may hold escape sequences: shown as stand-ins, and
        # saved unchanged unless edited.
        self._shown = printable(self._note, single_line=True)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="note-dialog") as box:
            box.border_title = "Note"
            box.border_subtitle = f"enter saves · {key('dialog.cancel')} cancels"
            yield Label(Text(printable(self._title, single_line=True)), classes="dialog-subtitle")
            yield Input(self._shown, placeholder="Why, or what to revisit…", id="note-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(kept_unless_edited(event.value, self._shown, self._note).strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
