"""The filter bar: which code and which decision status the queue shows.

Docked under the queue like the search bar, so filtering repaints the queue and the
status line only; a modal dialog made every filter cost a repaint of the whole screen
when it closed.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Label, Select

from tui.source import STATUS_LABELS, STATUSES, Query

_ALL = "__all__"


class FilterBar(Horizontal):
    """Two choices, applied as soon as one changes (posts :class:`FilterBar.Changed`)."""

    class Changed(Message):
        """The coder picked another code or status."""

        def __init__(self, code_id: str | None, status: str | None) -> None:
            super().__init__()
            self.code_id = code_id
            self.status = status

    def __init__(self, codes: Sequence[tuple[str, str]], *, id: str | None = None) -> None:
        """
        Args:
            codes: ``(code id, code name)`` of the codable codes.
        """
        super().__init__(id=id)
        self._codes = codes

    def compose(self) -> ComposeResult:
        code_options = [("Every code", _ALL), *((name, cid) for cid, name in self._codes)]
        status_options = [(STATUS_LABELS[s], s or _ALL) for s in STATUSES]
        yield Label("Filter")
        yield Select(code_options, value=_ALL, allow_blank=False, compact=True, id="filter-code")
        yield Select(
            status_options, value=_ALL, allow_blank=False, compact=True, id="filter-status"
        )
        yield Label("esc closes", classes="filter-hint")

    def show(self, query: Query) -> None:
        """Show the choices of ``query`` (the queue, already showing it, ignores them)."""
        self.query_one("#filter-code", Select).value = query.code_id or _ALL
        self.query_one("#filter-status", Select).value = query.status or _ALL

    @on(Select.Changed)
    def _changed(self, event: Select.Changed) -> None:
        event.stop()
        code = self.query_one("#filter-code", Select).value
        status = self.query_one("#filter-status", Select).value
        self.post_message(
            self.Changed(
                None if code in (_ALL, Select.BLANK) else str(code),
                None if status in (_ALL, Select.BLANK) else str(status),
            )
        )
