"""The response view: one response with every code's curve and decision.

For coding a response across the whole codebook: the same keys as the queue record,
accept, undo and annotate the highlighted code (the session holds the rules, the same as
the queue's); after a decision the cursor moves to the response's next undecided code.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static

from tui.screens.outcomes import report
from tui.screens.small import TooSmall
from tui.session import Outcome, ReviewSession
from tui.source import Row
from tui.text import markup_safe, one_line, printable
from tui.widgets.curve import CurveChart, spark
from tui.widgets.detail import code_text
from tui.widgets.keys import KeyBar
from tui.widgets.queue import status_text, value_label

#: The smallest terminal the view draws in (columns, lines); below it, it says so.
MINIMUM = (50, 16)


class ResponseScreen(Screen[None]):
    """Every code of one response."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "decide(1)", "Code", key_display="1-9", id="response.decide.1"),
        *(
            Binding(
                str(i),
                f"decide({i})",
                f"Record scale value {i}",
                show=False,
                id=f"response.decide.{i}",
            )
            for i in range(2, 10)
        ),
        Binding("a", "accept", "Accept", id="response.accept"),
        Binding("x", "not_apply", "Not apply", id="response.not_apply"),
        Binding("u,backspace", "undo", "Undo", key_display="u", id="response.undo"),
        Binding("n", "note", "Note", id="response.note"),
        Binding("j", "cursor(1)", "Next code", show=False, id="response.down"),
        Binding("k", "cursor(-1)", "Previous code", show=False, id="response.up"),
        Binding("escape,enter,q", "back", "Back", key_display="esc", id="response.back"),
    ]

    def __init__(
        self, session: ReviewSession, response_id: str, code_id: str | None = None
    ) -> None:
        super().__init__()
        self.session = session
        self.response_id = response_id
        self._initial_code = code_id
        self._rows: list[Row] = []

    @property
    def codes_table(self) -> DataTable[object]:
        return self.query_one("#response-codes", DataTable)

    @property
    def rows(self) -> list[Row]:
        return self._rows

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="response-text-box") as box:
            box.border_title = f"Response {markup_safe(self.response_id)}"
            yield Static(id="response-text")
        yield DataTable(id="response-codes", cursor_type="row", zebra_stripes=True)
        with Vertical(id="response-detail"):
            yield Static(id="response-code")
            yield CurveChart(id="response-curve")
        yield KeyBar()
        yield TooSmall(MINIMUM)

    def on_resize(self, event: events.Resize) -> None:
        self.query_one(TooSmall).check(event.size.width, event.size.height)

    def on_mount(self) -> None:
        table = self.codes_table
        table.add_columns("code", "curve", "pick", "conf", "H", "coded", "note")
        self._load()
        if self._rows:
            self.query_one("#response-text", Static).update(Text(printable(self._rows[0].text)))
        start = next((i for i, r in enumerate(self._rows) if r.code_id == self._initial_code), 0)
        table.move_cursor(row=start, animate=False)
        table.focus()

    def _load(self) -> None:
        table = self.codes_table
        cursor = table.cursor_row
        self._rows = self.session.response_rows(self.response_id)
        table.clear()
        for row in self._rows:
            scale = self.session.scale(row.code_id)
            table.add_row(
                Text(printable(row.code_name, single_line=True)),
                Text(spark(row.surprisal), style="cyan")
                if row.surprisal is not None
                else Text("·" * scale.k, style="dim"),
                Text(printable(row.pick_label or "", single_line=True)),
                "" if row.confidence is None else f"{row.confidence:.2f}",
                "" if row.norm_entropy is None else f"{row.norm_entropy:.2f}",
                Text(
                    printable(status_text(row, value_label(scale, row.decision)), single_line=True)
                ),
                "✎" if row.note else "",
                key=row.code_id,
            )
        if self._rows:
            table.move_cursor(row=min(cursor, len(self._rows) - 1), animate=False)

    def current(self) -> Row | None:
        index = self.codes_table.cursor_row
        return self._rows[index] if 0 <= index < len(self._rows) else None

    @on(DataTable.RowHighlighted)
    def _show_code(self, event: DataTable.RowHighlighted) -> None:
        row = self.current()
        if row is None:
            return
        code = self.session.code(row.code_id)
        scale = self.session.scale(row.code_id)
        if code is not None:
            self.query_one("#response-code", Static).update(code_text(code))
        self.query_one("#response-curve", CurveChart).show(
            scale=scale,
            surprisal=row.surprisal,
            probs=row.probs,
            pick=row.pick,
            decision=row.decision,
        )

    def _decided(self, outcome: Outcome) -> None:
        """After a decision: say so, reload, move to the response's next undecided code."""
        if report(self, outcome) is None:
            return
        index = self.codes_table.cursor_row
        self._load()
        order = list(range(index + 1, len(self._rows))) + list(range(index + 1))
        following = next((i for i in order if self._rows[i].decision is None), index)
        self.codes_table.move_cursor(row=following, animate=False)

    def action_decide(self, position: int) -> None:
        if (row := self.current()) is not None:
            self._decided(self.session.decide(row, position))

    def action_accept(self) -> None:
        if (row := self.current()) is not None:
            self._decided(self.session.accept(row))

    def action_not_apply(self) -> None:
        if (row := self.current()) is not None:
            self._decided(self.session.not_apply(row))

    def action_undo(self) -> None:
        undone = report(self, self.session.take_back())
        if undone is None:
            return
        self._load()
        if undone.response_id == self.response_id:
            index = next((i for i, r in enumerate(self._rows) if r.code_id == undone.code_id), None)
            if index is not None:
                self.codes_table.move_cursor(row=index, animate=False)
        else:
            self.notify(f"Undone on response {markup_safe(undone.response_id)}")

    def action_note(self) -> None:
        from tui.screens.note import NoteScreen

        row = self.current()
        if row is None:
            return

        def save(note: str | None) -> None:
            if note is not None and report(self, self.session.annotate(row, note)) is not None:
                self._load()

        self.app.push_screen(
            NoteScreen(f"{one_line(row.response_id)} · {one_line(row.code_name)}", row.note), save
        )

    def action_cursor(self, step: int) -> None:
        table = self.codes_table
        table.move_cursor(row=max(0, min(len(self._rows) - 1, table.cursor_row + step)))

    def action_back(self) -> None:
        self.dismiss(None)
