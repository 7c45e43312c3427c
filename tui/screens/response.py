"""The response view: one response with its other columns and every code's curve and decision.

Three ways in: ``enter`` on a pair of the queue opens its response, the response mode
(``v``) codes response by response, in a response order (the response whose least sure
code is least sure first, or by id), and ``enter`` on the list of responses (``V``,
:mod:`tui.screens.responses`) opens the one chosen. Each way ``]`` / ``[`` go to the next / previous
response of that order, so a response is read once and decided across the whole codebook:
``up`` / ``down`` move between codes, the scale's digits decide (on a yes/no code ``1`` or
``y`` is Yes, ``0`` or ``n`` No), and after a decision the cursor moves to the response's
next undecided code. The session holds the rules, the same as the queue's.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static

from tui.keymap import DECIDE, bindings, key
from tui.messages import StudyChanged
from tui.screens.help import LEGEND
from tui.screens.outcomes import report
from tui.screens.small import TooSmall
from tui.session import Outcome, ReviewSession
from tui.source import STATUS_LABELS, Query, Row, is_hidden
from tui.text import markup_safe, one_line, printable, shown_part
from tui.widgets.curve import CurveChart, spark
from tui.widgets.detail import HIDDEN_TEXT, code_text, decided_by, question_text
from tui.widgets.keys import KeyBar, decide_label
from tui.widgets.queue import value_label

#: The smallest terminal the view draws in (columns, lines); below it, it says so.
MINIMUM = (50, 16)

#: How each response order is named on screen.
RESPONSE_ORDER_LABELS: dict[str, str] = {
    "entropy": "least sure code first",
    "id": "response id",
    "audit": "blind audit",
}

#: Widths of the table's fixed columns: curve, pick, conf, H, coded, note.
FIXED = {"curve": 9, "pick": 8, "conf": 4, "H": 4, "coded": 7, "note": 4}


def coded_text(row: Row, label: str | None) -> Text:
    """The decision with its value (``✓ Yes``, ``≈ No`` accepted), or ``·``."""
    if row.decision is None:
        return Text("·", style="dim")
    mark, style = ("≈", "blue") if row.source == "model" else ("✓", "bold green")
    value = printable(label if label is not None else str(row.decision), single_line=True)
    return Text(f"{mark} {value}", style=style)


class ResponseScreen(Screen[None]):
    """Every code of one response, and the way to the next response."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(
        *DECIDE,
        "review.accept",
        "review.not_apply",
        "review.undo",
        "response.next",
        "response.previous",
        "review.note",
        "response.memo",
        "response.reverse",
        "response.next_code",
        "response.previous_code",
        "response.tick",
        "response.record_ticks",
        "code.add",
        "app.help",
        "response.back",
    )
    HELP_HEADING = "Reading the queue"
    HELP_LEGEND = LEGEND

    def __init__(
        self,
        session: ReviewSession,
        response_id: str,
        code_id: str | None = None,
        *,
        order: str = "id",
        reverse: bool = False,
        filters: Query | None = None,
    ) -> None:
        """
        Args:
            session: The review session (decisions go through it).
            response_id: The response shown first.
            code_id: The code highlighted first (default: the first undecided one).
            order: The response order ``]`` and ``[`` follow (``study.queries.pairs``'s
                ``RESPONSE_ORDERS``).
            reverse: That order backwards.
            filters: The queue's filters (code, status, search, wave): ``]`` and ``[``
                visit only the responses with a pair they select, ``]`` only those with
                an undecided pair among them (the work left) unless the filter asks for
                a status itself. None: every response (the list of responses).
        """
        super().__init__()
        self.session = session
        self.response_id = response_id
        self.order = order
        self.reverse = reverse
        self.filters = filters
        #: The checklist: the yes/no codes ticked on this response (``space``), recorded
        #: Yes by ``enter`` with the other undecided yes/no codes No.
        self.ticked: set[str] = set()
        self._initial_code = code_id
        self._rows: list[Row] = []
        self._width = 0
        #: Whether a response column holds codes, by name (asked of the study once).
        self._code_columns: dict[str, bool] = {}

    @property
    def codes_table(self) -> DataTable[object]:
        return self.query_one("#response-codes", DataTable)

    @property
    def rows(self) -> list[Row]:
        return self._rows

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="response-text-box"):
            yield Static(id="response-text")
            yield Static(id="response-attrs")
        yield DataTable(id="response-codes", cursor_type="row", zebra_stripes=True)
        # The question and the curve first: a long definition is cut at the pane's
        # foot, never them.
        with Vertical(id="response-detail"):
            yield Static(id="response-code")
            yield CurveChart(id="response-curve")
            yield Static(id="response-criteria")
        yield KeyBar()
        yield TooSmall(MINIMUM)

    @on(StudyChanged)
    def _study_changed(self, message: StudyChanged) -> None:
        """Scores arrived (a new code's, say) while this view is on top: show them."""
        if self.is_current and self._rows:
            self._refresh_rows()

    def on_screen_resume(self) -> None:
        # A code added (or edited) from here: its row joins the table.
        if {r.code_id for r in self._rows} != set(self.session.codes):
            self._refresh_rows()

    def _refresh_rows(self) -> None:
        current = self.current()
        self._load()
        self._show_place()  # a new code leaves more responses with codes left
        keys = [r.code_id for r in self._rows]
        self._select(keys.index(current.code_id) if current and current.code_id in keys else 0)

    def on_resize(self, event: events.Resize) -> None:
        self.query_one(TooSmall).check(event.size.width, event.size.height)
        if event.size.width != self._width:
            self._width = event.size.width
            self._columns()
            self._load()
            self._select(self.codes_table.cursor_row)

    def on_mount(self) -> None:
        self.query_one(KeyBar).relabel({"decide(1)": decide_label(self.session.scales.values())})
        self._width = self.app.size.width
        self._columns()
        self._open(self.response_id, self._initial_code)
        self.codes_table.focus()

    def _columns(self) -> None:
        """The table's columns for the width: the code's name takes what the others
        leave, so the coded value and the note marker stay on screen at 80 columns."""
        table = self.codes_table
        table.clear(columns=True)
        fixed = sum(FIXED.values()) + 2 * (len(FIXED) + 1) + 4
        table.add_column("code", width=max(8, self._width - fixed), key="code")
        for name, width in FIXED.items():
            table.add_column(name, width=width, key=name)

    # -- which response ---------------------------------------------------------------

    def _open(self, response_id: str, code_id: str | None = None) -> None:
        """Show ``response_id``, highlighting ``code_id`` or its first undecided code."""
        self.response_id = response_id
        self.ticked = set()
        self._load()
        rows = self._rows
        start = next((i for i, r in enumerate(rows) if r.code_id == code_id), None)
        if start is None:
            start = next((i for i, r in enumerate(rows) if r.decision is None), 0)
        self._select(start)
        self._show_response()

    def _walk(self, *, forward: bool) -> dict[str, Any]:
        """The filters ``]`` (``forward``) or ``[`` and the position follow."""
        filters = self.filters
        if filters is None:
            return {}
        status = filters.status
        if forward and status is None:
            status = "undecided"
        session = self.session
        return {
            "code_id": filters.code_id,
            "status": status,
            "search": filters.search,
            "wave": filters.wave,
            "coder": session.coder if session.hides_model(self.order) else None,
        }

    def _place_text(self) -> str:
        """Where the response stands: ``3 of 60 · wave 2 · 41 with codes left``."""
        queries = self.session.study.queries
        config_id = self.session.config_id
        where: dict[str, Any] = {"order": self.order, "reverse": self.reverse}
        place, total = queries.response_tally(
            config_id, self.response_id, **where, **self._walk(forward=False)
        )
        parts = [f"{place + 1:,} of {total:,}"]
        filters = self.filters
        if filters is not None:
            described = [
                f"wave {filters.wave}" if filters.wave is not None else "",
                self.session.codes[filters.code_id].name
                if filters.code_id in self.session.codes
                else "",
                STATUS_LABELS[filters.status] if filters.status is not None else "",
                f"“{filters.search}”" if filters.search else "",
            ]
            parts.extend(markup_safe(one_line(d)) for d in described if d)
            if filters.status is None:
                _, left = queries.response_tally(
                    config_id, self.response_id, **where, **self._walk(forward=True)
                )
                parts.append(f"{left:,} with codes left")
        return " · ".join(parts)

    def _show_place(self) -> None:
        """The response's place in the walk, and the walk, under its text."""
        label = RESPONSE_ORDER_LABELS.get(self.order, self.order)
        if self.reverse:
            label = f"reversed: {label}"
        box = self.query_one("#response-text-box", VerticalScroll)
        box.border_subtitle = (
            f"{self._place_text()} · {markup_safe(label)} · "
            f"{markup_safe(key('response.next'))} next"
        )

    def _show_response(self) -> None:
        study = self.session.study
        response = study.response(self.response_id)
        box = self.query_one("#response-text-box", VerticalScroll)
        box.border_title = f"Response {markup_safe(self.response_id)}"
        self._show_place()
        self.query_one("#response-text", Static).update(Text(printable(shown_part(response.text))))
        attrs = attributes_text(response.attrs, hidden=self._hidden_columns(response.attrs))
        memo = self.session.memo(self.response_id)
        if memo:
            if attrs:
                attrs.append("\n")
            attrs.append("✎ memo: ", style="bold yellow")
            attrs.append(printable(memo))
        self.query_one("#response-attrs", Static).update(attrs)
        box.scroll_home(animate=False)

    def _hidden_columns(self, attrs: Any) -> list[str]:
        """The response's columns that hold codes, while this coder works blind: other
        coders' decisions, hidden with the rest of them."""
        if not self.session.hides_model(self.order):
            return []
        names = [str(n) for n in dict(attrs or {})]
        unknown = [n for n in names if n not in self._code_columns]
        if unknown:
            coded = set(self.session.code_columns(unknown))
            self._code_columns.update({n: n in coded for n in unknown})
        return [n for n in names if self._code_columns[n]]

    def _load(self) -> None:
        """Read the response's rows again and redraw the table, keeping the cursor's
        place; the table's own moves meanwhile draw no code (:meth:`_select` does, once).
        """
        table = self.codes_table
        cursor = table.cursor_row
        rows = self.session.response_rows(self.response_id, order=self.order)
        if self.order == "entropy":
            # As the order says: the least sure code first (unscored ones last).
            rows.sort(key=lambda r: -1.0 if r.norm_entropy is None else -r.norm_entropy)
        self._rows = rows
        with self.prevent(DataTable.RowHighlighted):
            self._fill(table)
            if self._rows:
                table.move_cursor(row=max(0, min(cursor, len(self._rows) - 1)), animate=False)

    def _fill(self, table: DataTable[object]) -> None:
        table.clear()
        for row in self._rows:
            scale = self.session.scale(row.code_id)
            if is_hidden(row):
                curve = Text("blind", style="dim")
            elif row.surprisal is not None:
                curve = Text(spark(row.surprisal), style="cyan")
            else:
                curve = Text("·" * scale.k, style="dim")
            table.add_row(
                Text(printable(row.code_name, single_line=True)),
                curve,
                Text(printable(row.pick_label or "", single_line=True)),
                "" if row.confidence is None else f"{row.confidence:.2f}",
                "" if row.norm_entropy is None else f"{row.norm_entropy:.2f}",
                Text("☑ tick", style="bold cyan")
                if row.code_id in self.ticked
                else coded_text(row, value_label(scale, row.decision)),
                "✎" if row.note else "",
                key=row.code_id,
            )

    def _select(self, index: int) -> None:
        """Highlight code ``index`` (clamped) and draw it, once."""
        if self._rows:
            with self.prevent(DataTable.RowHighlighted):
                row = max(0, min(index, len(self._rows) - 1))
                self.codes_table.move_cursor(row=row, animate=False)
        self._show_code()

    def current(self) -> Row | None:
        index = self.codes_table.cursor_row
        return self._rows[index] if 0 <= index < len(self._rows) else None

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_code()

    def _show_code(self) -> None:
        row = self.current()
        if row is None:
            return
        code = self.session.code(row.code_id)
        scale = self.session.scale(row.code_id)
        if code is not None:
            text = question_text(self.session.codebook.question, code.name)
            if scale.k == 2:
                yes, no = scale.options[1].label, scale.options[0].label
                text.append(
                    f"  1 or y: {printable(yes, single_line=True)} · "
                    f"0 or n: {printable(no, single_line=True)} · space ticks, "
                    f"⏎ records ticks {printable(yes, single_line=True)}, the rest "
                    f"{printable(no, single_line=True)}",
                    style="dim",
                )
            self.query_one("#response-code", Static).update(text)
            self.query_one("#response-criteria", Static).update(code_text(code))
        chart = self.query_one("#response-curve", CurveChart)
        if is_hidden(row):
            chart.update(Text(HIDDEN_TEXT, style="dim italic"))
            return
        chart.show(
            scale=scale,
            surprisal=row.surprisal,
            probs=row.probs,
            pick=row.pick,
            decision=row.decision,
            decided_by=decided_by(row, self.session.coder),
        )

    def action_response(self, step: int) -> None:
        """Go ``step`` responses along the order (``]`` next, ``[`` previous), among the
        responses the queue's filters select; ``]`` passes over finished ones."""
        target = self.session.study.queries.response_step(
            self.session.config_id,
            self.response_id,
            step=step,
            order=self.order,
            reverse=self.reverse,
            **self._walk(forward=step > 0),
        )
        if target is None:
            self.app.bell()
            if step > 0:
                said = (
                    "No response further on has a code left to decide."
                    if self.filters is not None and self.filters.status is None
                    else "This is the last response."
                )
            else:
                said = "This is the first response."
            self.notify(said, timeout=2)
            return
        self._open(target)

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self._show_response()

    # -- decisions --------------------------------------------------------------------

    def _decided(self, outcome: Outcome) -> None:
        """After a decision: say so, reload, move to the response's next undecided code."""
        if report(self, outcome) is None:
            return
        index = self.codes_table.cursor_row
        self._load()
        order = list(range(index + 1, len(self._rows))) + list(range(index + 1))
        following = next((i for i in order if self._rows[i].decision is None), index)
        self._select(following)

    def action_decide(self, position: int) -> None:
        if (row := self.current()) is not None:
            self._decided(self.session.decide(row, position))

    def action_yes_no(self, yes: bool) -> None:
        if (row := self.current()) is not None:
            self._decided(self.session.yes_no(row, yes=yes))

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
        if undone.response_id != self.response_id or not undone.code_id:
            self._open(undone.response_id, undone.code_id or None)  # a memo: show it again
            return
        self._load()
        index = next((i for i, r in enumerate(self._rows) if r.code_id == undone.code_id), None)
        self._select(self.codes_table.cursor_row if index is None else index)

    def action_note(self) -> None:
        from tui.screens.note import NoteScreen

        row = self.current()
        if row is None:
            return

        def save(note: str | None) -> None:
            if note is not None and report(self, self.session.annotate(row, note)) is not None:
                self._load()
                self._select(self.codes_table.cursor_row)

        title = f"{one_line(row.response_id)} · {one_line(row.code_name)}"
        self.app.push_screen(NoteScreen(title, row.note), save)

    def action_memo(self) -> None:
        from tui.screens.note import NoteScreen

        response_id = self.response_id

        def save(note: str | None) -> None:
            if note is None:
                return
            saved = report(self, self.session.annotate_response(response_id, note))
            if saved is not None and self.response_id == response_id:
                self._show_response()

        title = f"{one_line(response_id)} · the whole response"
        self.app.push_screen(NoteScreen(title, self.session.memo(response_id)), save)

    # -- the checklist ----------------------------------------------------------------

    def action_tick(self) -> None:
        """Tick (or untick) the highlighted code, and stay on it: a checklist of the codes
        that apply, for yes/no codes only (an ordinal scale has no single "applies"; its
        codes are decided with their digits). The cursor moves only with the arrows, so
        that a tick lands on the code the coder sees highlighted (one that also moved on
        put a quick second tick on the next code)."""
        row = self.current()
        if row is None:
            return
        if not self.session.is_yes_no(row.code_id):
            self.notify(
                f"The checklist is for yes/no codes: decide {one_line(row.code_name)} "
                "with the digits of its scale.",
                severity="warning",
                timeout=4,
                markup=False,
            )
            return
        self.ticked ^= {row.code_id}
        index = self.codes_table.cursor_row
        scale = self.session.scale(row.code_id)
        cell = (
            Text("☑ tick", style="bold cyan")
            if row.code_id in self.ticked
            else coded_text(row, value_label(scale, row.decision))
        )
        self.codes_table.update_cell(row.code_id, "coded", cell)
        self._select(index)

    def action_record_ticks(self) -> None:
        """Record the checklist: each ticked code Yes, each undecided yes/no code not
        ticked No (a decided one is left as it is); ordinal codes are left undecided and
        named. Then on to the next response, once this one has nothing left."""
        session = self.session
        yes = no = 0
        for row in list(self._rows):
            if not session.is_yes_no(row.code_id):
                continue
            ticked = row.code_id in self.ticked
            if not ticked and row.decision is not None:
                continue
            if ticked and row.decision == session.scale(row.code_id).options[1].value:
                continue  # already Yes
            if report(self, session.yes_no(row, yes=ticked)) is None:
                self.ticked.clear()
                self._load()
                return
            yes, no = (yes + 1, no) if ticked else (yes, no + 1)
        self.ticked = set()
        self._load()
        left = [r for r in self._rows if r.decision is None]
        said = f"Recorded {yes:,} Yes and {no:,} No; u takes them back one by one."
        if left:
            names = ", ".join(one_line(r.code_name) for r in left[:3])
            more = f" and {len(left) - 3:,} more" if len(left) > 3 else ""
            self.notify(
                f"{said} Still to decide with their digits: {names}{more}.",
                timeout=5,
                markup=False,
            )
            self._select(next(i for i, r in enumerate(self._rows) if r.decision is None))
            return
        self.notify(said, timeout=3, markup=False)
        self.action_response(1)

    def action_cursor(self, step: int) -> None:
        table = self.codes_table
        table.move_cursor(row=max(0, min(len(self._rows) - 1, table.cursor_row + step)))

    def action_back(self) -> None:
        self.dismiss(None)


def attributes_text(attrs: Any, *, hidden: list[str] | tuple[str, ...] = ()) -> Text:
    """The response's other columns (the survey question, service, site), one a line;
    those ``hidden`` are named at the end, their values left out."""
    text = Text()
    for name, value in dict(attrs or {}).items():
        if value is None or value == "" or str(name) in hidden:
            continue
        if text:
            text.append("\n")
        text.append(f"{one_line(str(name))}: ", style="bold dim")
        text.append(one_line(str(value)))
    if hidden:
        if text:
            text.append("\n")
        names = ", ".join(one_line(str(n)) for n in hidden)
        text.append(f"hidden while you code blind (they hold codes): {names}", style="dim italic")
    return text
