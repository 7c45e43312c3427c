"""The main screen: the queue, the detail pane (or the screening panel) and the status line.

Every decision goes through :class:`~tui.session.ReviewSession` (saved before the screen
changes), then the queue reloads the page on screen and the cursor moves to the next
undecided pair.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar, cast

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Vertical
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Input

from tui.screens.filter import KEYS as FILTER_KEYS
from tui.screens.filter import FilterBar
from tui.session import ReviewSession
from tui.source import ORDER_LABELS, STATUS_LABELS, Query, Row, row_key
from tui.widgets.detail import DetailPane
from tui.widgets.keys import KeyBar
from tui.widgets.progress import ScoringProgress
from tui.widgets.queue import PairQueue
from tui.widgets.screening import ScreeningPanel
from tui.widgets.status import StatusLine

if TYPE_CHECKING:
    from tui.app import CodecurveApp

#: Width from which the detail pane sits beside the queue instead of below it.
WIDE = 130

DECIDE_BINDINGS: list[BindingType] = [
    Binding("1", "decide(1)", "Code", key_display="1-9", id="decide.1"),
    *(
        Binding(str(i), f"decide({i})", f"Record scale value {i}", show=False, id=f"decide.{i}")
        for i in range(2, 10)
    ),
]


class ReviewScreen(Screen[None]):
    """Entropy-ordered queue of pairs with keyboard coding."""

    # In the order the key bar shows them; where the line is too short it leaves out
    # keys from the end of the list, but always shows help and quit.
    BINDINGS: ClassVar[list[BindingType]] = [
        *DECIDE_BINDINGS,
        Binding("a", "accept", "Accept", id="accept"),
        Binding("x", "not_apply", "Not apply", id="not_apply"),
        Binding("space", "skip", "Skip", id="skip"),
        Binding("u,backspace", "undo", "Undo", key_display="u", id="undo"),
        Binding("s", "toggle_screening", "Screening", id="screening"),
        Binding("r", "score", "Score", id="score"),
        Binding("f", "filter", "Filter", id="filter"),
        Binding("slash", "search", "Search", key_display="/", id="search"),
        Binding("o", "cycle_order", "Order", id="order"),
        Binding("n", "note", "Note", id="note"),
        Binding("enter", "open_response", "Response", id="open_response"),
        Binding("e", "export", "Export", id="export"),
        Binding("p", "progress", "Progress", id="progress"),
        # Not in the key bar: the app's own tab binding would put it first.
        Binding("tab", "switch_pane", "Pane", show=False, id="switch_pane"),
        Binding("escape", "cancel", "Cancel scoring", show=False, id="cancel"),
        Binding("question_mark", "help", "Help", key_display="?", id="help"),
        Binding("q", "app.quit", "Quit", id="quit"),
    ]

    def __init__(self, session: ReviewSession) -> None:
        super().__init__()
        self.session = session
        self._history: list[tuple[tuple[str, str], int]] = []
        self._agreement: tuple[float, int] | None = None
        self._model_state = ""
        #: Set when the study changed while another screen was on top.
        self.stale = False
        self.filter_bar = FilterBar(
            [(c.id, c.name) for c in session.codebook.codable],
            on_change=self._apply_filter,
            on_close=self._close_filter,
            on_redraw=self._redraw_filter_bar,
            on_miss=lambda: self.app.bell(),
        )

    @property
    def codecurve(self) -> CodecurveApp:
        from tui.app import CodecurveApp

        return cast(CodecurveApp, self.app)

    # -- typed accessors ---------------------------------------------------------------

    @property
    def pair_queue(self) -> PairQueue:
        return self.query_one(PairQueue)

    @property
    def detail(self) -> DetailPane:
        return self.query_one(DetailPane)

    @property
    def screening(self) -> ScreeningPanel:
        return self.query_one(ScreeningPanel)

    @property
    def scoring_progress(self) -> ScoringProgress:
        return self.query_one(ScoringProgress)

    @property
    def status_line(self) -> StatusLine:
        return self.query_one(StatusLine)

    @property
    def search_input(self) -> Input:
        return self.query_one("#search", Input)

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        session = self.session
        with Container(id="main"):
            with Vertical(id="queue-box") as box:
                box.border_title = session.codebook.name
                yield PairQueue(
                    session.source,
                    scales=session.scales,
                    on_highlight=self._show_row,
                    id="queue",
                )
                yield Input(
                    placeholder="Search response text, enter to apply, esc to clear",
                    id="search",
                )
            with ContentSwitcher(initial="detail", id="side"):
                yield DetailPane(coder=session.coder, id="detail")
                yield ScreeningPanel(id="screening")
        yield ScoringProgress()
        yield StatusLine()
        yield KeyBar()

    def on_mount(self) -> None:
        self.status_line.filter_bar = self.filter_bar
        self.pair_queue.reload()
        self.pair_queue.focus()
        self.update_status()

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width >= WIDE, "-wide")

    def on_screen_resume(self) -> None:
        # Decisions made in the response view: show them. A dialog changes nothing here
        # by itself (its result is applied by its callback), so it costs no reload.
        if self.stale:
            self.stale = False
            self.pair_queue.reload()
            self.update_status()

    # -- queue and detail --------------------------------------------------------------

    def _show_row(self, index: int, row: Row | None) -> None:
        """Show the highlighted row in the detail pane (called by the queue directly)."""
        detail = self.detail
        if row is not None and detail.row == row:
            return
        code = self.session.code(row.code_id) if row is not None else None
        scale = self.session.scale(row.code_id) if row is not None else None
        path = self.session.codebook.path_of(code) if code is not None else ()
        detail.show(row, code, scale, path)

    def update_status(self) -> None:
        progress = self.session.progress()
        query = self.pair_queue.pair_query
        self.status_line.show(
            decided=int(progress.get("decided", 0)),
            total=int(progress.get("total", 0)),
            agreement=self._agreement,
            order=ORDER_LABELS.get(query.order, query.order),
            filters=self._describe_filters(query),
            model=self._model_state,
        )

    def set_model_state(self, text: str) -> None:
        self._model_state = text
        self.update_status()

    def set_agreement(self, agreement: tuple[float, int] | None) -> None:
        self._agreement = agreement
        self.update_status()

    def _describe_filters(self, query: Query) -> str:
        parts = []
        if query.code_id is not None:
            code = self.session.code(query.code_id)
            parts.append(code.name if code else query.code_id)
        if query.status is not None:
            parts.append(STATUS_LABELS[query.status])
        if query.search:
            parts.append(f"“{query.search}”")
        return ", ".join(parts)

    def set_query(self, query: Query) -> None:
        self.pair_queue.set_query(query)
        self.update_status()

    # -- decisions ---------------------------------------------------------------------

    def _current(self) -> Row | None:
        row = self.pair_queue.current
        if row is None:
            self.app.bell()
        return row

    def decide(self, row: Row, value: int, *, source: str = "human") -> None:
        """Save ``value`` for ``row``, then refresh and move to the next undecided pair."""
        queue = self.pair_queue
        index = queue.cursor
        self.session.record(row, value, source=source)
        self._history.append((row_key(row), index))
        self.codecurve.decision_saved(row.response_id, row.code_id, value)
        self._refresh_after_change(index, highlight=False)
        following = queue.next_undecided(index)
        queue.move_to(following if following is not None else index)
        self.update_status()

    def _refresh_after_change(self, index: int, *, highlight: bool = True) -> None:
        """Show the study's new state after a decision or undo on row ``index``."""
        queue = self.pair_queue
        if queue.pair_query.status is None:
            queue.refresh_row(index, highlight=highlight)  # rows and order are unchanged
        else:
            queue.reload()  # the row joins or leaves the filtered set

    def action_decide(self, position: int) -> None:
        row = self._current()
        if row is None:
            return
        value = self.session.value_at(row.code_id, position)
        if value is None:
            scale = self.session.scale(row.code_id)
            self.notify(
                f"{scale.name} has {scale.k} options: press 1-{scale.k}.",
                severity="warning",
                timeout=3,
            )
            return
        self.decide(row, value)

    def action_accept(self) -> None:
        row = self._current()
        if row is None:
            return
        if row.pick is None:
            self.notify(
                "This pair is not scored yet: nothing to accept.", severity="warning", timeout=3
            )
            return
        self.decide(row, row.pick, source="model")

    def action_not_apply(self) -> None:
        row = self._current()
        if row is not None:
            self.decide(row, self.session.scale(row.code_id).lowest.value)

    def action_skip(self) -> None:
        queue = self.pair_queue
        following = queue.next_undecided(queue.cursor + 1)
        queue.move_to(following if following is not None else queue.cursor + 1)

    def action_undo(self) -> None:
        decision = self.session.undo()
        if decision is None:
            self.notify("Nothing to undo.", timeout=2)
            return
        key = (decision.response_id, decision.code_id)
        queue = self.pair_queue
        near = queue.cursor
        while self._history:
            hkey, hindex = self._history.pop()
            if hkey == key:
                near = hindex
                break
        if queue.pair_query.status is None:
            row = queue.row_at(near)
            if row is not None and row_key(row) == key:
                queue.refresh_row(near, highlight=False)
                index: int | None = near
            else:
                queue.reload(recount=False)
                index = queue.index_of(key, near)
        else:
            queue.reload()
            index = queue.index_of(key, near)
        queue.move_to(index if index is not None else near)
        self.codecurve.decision_saved(decision.response_id, decision.code_id, None, undone=True)
        self.update_status()
        if index is None:
            code = self.session.code(decision.code_id)
            name = code.name if code else decision.code_id
            self.notify(f"Undone: {decision.response_id} · {name} (not in this view)", timeout=3)

    def action_note(self) -> None:
        from tui.screens.note import NoteScreen

        row = self._current()
        if row is None:
            return

        def save(note: str | None) -> None:
            if note is None:
                return
            self.session.set_note(row, note)
            self._refresh_after_change(self.pair_queue.cursor)
            self.codecurve.decision_saved(row.response_id, row.code_id, row.decision)

        title = f"{row.response_id} · {row.code_name}"
        self.app.push_screen(NoteScreen(title, row.note), save)

    # -- navigation, order, filters ----------------------------------------------------

    def action_switch_pane(self) -> None:
        if self.pair_queue.has_focus:
            side = self.query_one(ContentSwitcher).current
            target = self.detail if side == "detail" else self.screening
            target.focus()
        else:
            self.pair_queue.focus()

    def action_open_response(self) -> None:
        from tui.screens.response import ResponseScreen

        row = self._current()
        if row is not None:
            self.app.push_screen(ResponseScreen(self.session, row.response_id, row.code_id))

    def action_cycle_order(self) -> None:
        # The status line names the order: no notification to wait for.
        self.set_query(self.pair_queue.pair_query.next_order())

    def action_filter(self) -> None:
        self.filter_bar.open(self.pair_queue.pair_query)
        self.query_one(KeyBar).show_keys(FILTER_KEYS)

    def on_key(self, event: events.Key) -> None:
        # The filter bar takes no focus (a focus change restyles half the screen): while
        # it is open, the keys it knows are its own, before any binding sees them.
        bar = self.filter_bar
        if bar.is_open and bar.take_key(event.key, event.character):
            event.stop()
            event.prevent_default()

    def _apply_filter(self, code_id: str | None, status: str | None) -> None:
        """Show the pairs of ``code_id`` and ``status`` (called by the filter bar)."""
        query = replace(self.pair_queue.pair_query, code_id=code_id, status=status)
        if query != self.pair_queue.pair_query:
            self.set_query(query)

    def _redraw_filter_bar(self) -> None:
        self.status_line.refresh()

    def _close_filter(self) -> None:
        self.filter_bar.close()
        self.query_one(KeyBar).show_keys(None)

    def action_search(self) -> None:
        search = self.search_input
        search.add_class("-open")
        search.value = self.pair_queue.pair_query.search or ""
        search.focus()

    @on(Input.Submitted, "#search")
    def _apply_search(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        self.set_query(replace(self.pair_queue.pair_query, search=text or None))
        if not text:
            self.search_input.remove_class("-open")
        self.pair_queue.focus()

    def _close_search(self) -> None:
        search = self.search_input
        search.value = ""
        search.remove_class("-open")
        if self.pair_queue.pair_query.search:
            self.set_query(replace(self.pair_queue.pair_query, search=None))
        self.pair_queue.focus()

    def action_cancel(self) -> None:
        if self.filter_bar.is_open:
            self._close_filter()
            return
        if self.search_input.has_focus or self.search_input.has_class("-open"):
            self._close_search()
            return
        if self.codecurve.cancel_scoring():
            self.notify("Cancelling after this batch…", timeout=2)
            return
        if self.pair_queue.pair_query.filtered:
            query = self.pair_queue.pair_query
            self.set_query(Query(order=query.order))

    # -- panels and dialogs ------------------------------------------------------------

    def action_toggle_screening(self) -> None:
        switcher = self.query_one(ContentSwitcher)
        if switcher.current == "screening":
            switcher.current = "detail"
        else:
            switcher.current = "screening"
            self.codecurve.refresh_screening()

    def action_export(self) -> None:
        self.codecurve.open_export()

    def action_score(self) -> None:
        self.codecurve.start_scoring()

    def action_progress(self) -> None:
        from tui.screens.progress import ProgressScreen

        self.app.push_screen(ProgressScreen(self.session))

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen

        keys: list[tuple[str, str]] = []
        seen: set[str] = set()
        for binding in (*self.BINDINGS, *PairQueue.BINDINGS, *self.app.BINDINGS):
            if not isinstance(binding, Binding) or binding.action in seen:
                continue
            seen.add(binding.action)
            if binding.id == "decide.1":
                keys.append(("1-9", "Record that scale value (1 = lowest; on No/Yes 1=No 2=Yes)"))
                continue
            if binding.id and binding.id.startswith("decide."):
                continue
            display = ", ".join(
                self.app.get_key_display(replace(binding, key=k, key_display=None))
                for k in binding.key.split(",")
            )
            keys.append((display, HELP_TEXT.get(binding.action, binding.description)))
        keys.append(("ctrl+p", "Command palette: every action by name"))
        self.app.push_screen(HelpScreen(keys))


HELP_TEXT = {
    "accept": "Accept the model's pick",
    "not_apply": "Does not apply (the scale's lowest option, or No)",
    "skip": "Skip to the next undecided pair (nothing is saved)",
    "undo": "Undo your last decision (repeatable)",
    "note": "Add or edit a note on the pair",
    "open_response": "Open the response: every code's curve and decision",
    "switch_pane": "Switch between the queue and the detail pane",
    "cycle_order": "Cycle the order: uncertainty, id, model's pick, confidence",
    "filter": "Filter by code and status: ←→ change, ↑↓ field, a letter jumps, ⏎ closes",
    "search": "Search the response text",
    "toggle_screening": "Screening panel: can the model's confidence be trusted?",
    "export": "Export the coded data",
    "score": "Score (or re-score) the pending pairs",
    "cancel": "Cancel scoring; close the search; clear filters",
    "progress": "Progress per code",
    "help": "This help",
    "app.quit": "Quit (everything is already saved)",
    "cursor_down": "Next pair",
    "cursor_up": "Previous pair",
    "page_down": "Page down",
    "page_up": "Page up",
    "first": "First pair",
    "last": "Last pair",
}
