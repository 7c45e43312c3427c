"""A yes/no dialog before an action that changes many decisions at once."""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.keymap import bindings, key


class ConfirmScreen(ModalScreen[bool]):
    """Returns True when the coder confirms (``confirm.yes``), False otherwise."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("confirm.yes", "confirm.no")

    def __init__(self, title: str, body: RenderableType) -> None:
        """
        Args:
            title: The dialog's title (plain text).
            body: What will happen, in words.
        """
        super().__init__()
        self._title = title
        self._body = body

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="confirm-dialog") as box:
            box.border_title = self._title
            box.border_subtitle = (
                f"{key('confirm.yes', every=True)}: yes · {key('confirm.no', every=True)}: no"
            )
            yield Static(self._body, id="confirm-body")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
