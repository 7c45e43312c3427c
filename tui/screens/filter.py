"""The filter dialog: which code and which decision status the queue shows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Select

from tui.source import STATUS_LABELS, STATUSES, Query

_ALL = "__all__"


class FilterScreen(ModalScreen[Query | None]):
    """Returns the query with the chosen code and status filters, or None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="filter.cancel")
    ]

    def __init__(self, query: Query, codes: Sequence[tuple[str, str]]) -> None:
        """
        Args:
            query: The queue's query now.
            codes: ``(code id, code name)`` of the codable codes.
        """
        super().__init__()
        self._query = query
        self._codes = codes

    def compose(self) -> ComposeResult:
        code_options = [("Every code", _ALL), *((name, cid) for cid, name in self._codes)]
        status_options = [(STATUS_LABELS[s], s or _ALL) for s in STATUSES]
        with Vertical(classes="dialog", id="filter-dialog") as box:
            box.border_title = "Filter"
            box.border_subtitle = "enter applies · esc cancels"
            yield Label("Code")
            yield Select(
                code_options, value=self._query.code_id or _ALL, allow_blank=False, id="filter-code"
            )
            yield Label("Status")
            yield Select(
                status_options,
                value=self._query.status or _ALL,
                allow_blank=False,
                id="filter-status",
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Apply", variant="primary", id="filter-apply")
                yield Button("Clear", id="filter-clear")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "filter-clear":
            self.dismiss(replace(self._query, code_id=None, status=None))
            return
        code = self.query_one("#filter-code", Select).value
        status = self.query_one("#filter-status", Select).value
        self.dismiss(
            replace(
                self._query,
                code_id=None if code in (_ALL, Select.BLANK) else str(code),
                status=None if status in (_ALL, Select.BLANK) else str(status),
            )
        )

    def action_cancel(self) -> None:
        self.dismiss(None)
