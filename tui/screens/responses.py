"""The response list: one line per response, to choose which response to code next.

Opened from the review screen (``V``). Each line sums a response up across its codes
(:class:`~study.rows.ResponseRow`): the least sure code's entropy, how many codes are
decided, a note or memo. ``o`` / ``O`` change the order as in the pair queue (the
response orders: least sure code first, id, blind audit). ``enter`` opens the response
view (:mod:`tui.screens.response`) on the highlighted response, whose ``]`` / ``[``
continue in the list's order; back here, the list is read again (the decided counts
changed) with the cursor on the response the view was showing.

In a blind order (the audit) or under blind coding the counts, notes and memo are the
coder's own, and a response not decided across every code shows no entropy: the model's
answer stays hidden until the coder decides, as in the pair queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import Screen

from study.rows import RESPONSE_ORDERS, ResponseRow
from tui.keymap import bindings
from tui.messages import StudyChanged
from tui.screens.outcomes import report
from tui.screens.response import RESPONSE_ORDER_LABELS, ResponseScreen
from tui.screens.small import TooSmall
from tui.session import ReviewSession
from tui.text import one_line, plural
from tui.widgets.keys import KeyBar
from tui.widgets.response_list import ResponseList, ResponseQuery

#: The smallest terminal the list draws in (columns, lines); below it, it says so.
MINIMUM = (50, 10)

#: How to read the list, for the help screen.
LEGEND: tuple[tuple[str, str], ...] = (
    (
        "H",
        "The response's least sure code: the highest normalised entropy across its codes, "
        "0 (sure) to 1 (torn). blind: hidden until you decide every code (blind audit, "
        "blind coding).",
    ),
    ("coded", "Codes decided / codes to decide; green when the response is done."),
    ("✎¶", "✎ a note on one of its codes   ¶ a memo on the whole response."),
)


class StudyResponses:
    """A :class:`~tui.widgets.response_list.ResponseSource` over the session's study.

    In a blind order (or under blind coding) rows count the coder's own decisions and
    carry no entropy until the coder has decided every code of the response.
    """

    def __init__(self, session: ReviewSession) -> None:
        self.session = session

    def blind(self, query: ResponseQuery) -> bool:
        return self.session.hides_model(query.order)

    def count(self, query: ResponseQuery) -> int:
        return self.session.study.response_count()

    def page(self, query: ResponseQuery, offset: int, limit: int) -> Sequence[ResponseRow]:
        blind = self.blind(query)
        rows = self.session.study.queries.responses(
            self.session.config_id,
            order=query.order,
            reverse=query.reverse,
            offset=offset,
            limit=limit,
            coder=self.session.coder if blind else None,
        )
        if not blind:
            return rows
        return [row if row.complete else replace(row, max_entropy=None) for row in rows]

    def position(self, query: ResponseQuery, response_id: str) -> int:
        return self.session.study.queries.response_position(
            self.session.config_id, response_id, order=query.order, reverse=query.reverse
        )


class ResponsesScreen(Screen[None]):
    """Every response, one a line, in a response order."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(
        "responses.open",
        "responses.order",
        "responses.reverse",
        "response.memo",
        "app.help",
        "response.back",
    )
    HELP_HEADING = "Reading the list"
    HELP_LEGEND = LEGEND

    def __init__(self, session: ReviewSession, *, query: ResponseQuery | None = None) -> None:
        """
        Args:
            session: The review session (the study, the coder, the configuration).
            query: The order to start in (default: least sure code first; id order under
                blind coding, where an uncertainty order would give the model away).
        """
        super().__init__()
        self.session = session
        default = ResponseQuery(order="id" if session.blind_coding else "entropy")
        self._query = query or default
        #: Set when the study changed while another screen was on top.
        self.stale = False

    @property
    def response_list(self) -> ResponseList:
        return self.query_one(ResponseList)

    def compose(self) -> ComposeResult:
        with Vertical(id="responses-box") as box:
            box.border_title = "Responses"
            yield ResponseList(
                StudyResponses(self.session),
                query=self._query,
                on_highlight=self._highlighted,
                id="responses",
            )
        yield KeyBar()
        yield TooSmall(MINIMUM)

    def on_mount(self) -> None:
        listing = self.response_list
        listing.reload()
        # As the queue of pairs opens on the first undecided pair: the first response
        # with a code left to decide.
        if (first := listing.next_where(0, lambda row: not row.complete)) is not None:
            # Once laid out: before, the list has no height to scroll within.
            self.call_after_refresh(listing.move_to, first)
        listing.focus()

    def on_resize(self, event: events.Resize) -> None:
        self.query_one(TooSmall).check(event.size.width, event.size.height)

    def _highlighted(self, index: int, row: ResponseRow | None) -> None:
        """Say where the cursor is and in which order (called by the list)."""
        listing = self.response_list
        query = listing.response_query
        label = RESPONSE_ORDER_LABELS.get(query.order, query.order)
        if query.reverse:
            label = f"reversed: {label}"
        where = f"{index + 1:,} of {plural(listing.total, 'response')}" if row else "no responses"
        parts = [where, label]
        if listing.blind:
            parts.append("blind")
        self.query_one("#responses-box", Vertical).border_subtitle = " · ".join(parts)

    # -- the study changed ------------------------------------------------------------

    @on(StudyChanged)
    def _study_changed(self, message: StudyChanged) -> None:
        # Under another screen (the response view), catch up once when shown again: a
        # screen just below the top one counts as "current" to Textual.
        if self.is_active:
            self.response_list.reload()
        else:
            self.stale = True

    def on_screen_resume(self) -> None:
        if self.stale:
            self.stale = False
            current = self.response_list.current
            self.response_list.reload(at=None if current is None else current.response_id)

    # -- actions ----------------------------------------------------------------------

    def action_open(self) -> None:
        row = self.response_list.current
        if row is None:
            self.app.bell()
            return
        query = self.response_list.response_query
        view = ResponseScreen(
            self.session, row.response_id, order=query.order, reverse=query.reverse
        )

        def back(_: None) -> None:
            # Where the coder left the view: its response, in its order (O there too).
            self.stale = False
            order = next((o for o in RESPONSE_ORDERS if o == view.order), query.order)
            followed = ResponseQuery(order=order, reverse=view.reverse)
            if followed != self.response_list.response_query:
                self.response_list.set_query(followed, at=view.response_id)
            else:
                self.response_list.reload(at=view.response_id)

        self.app.push_screen(view, back)

    def unavailable_orders(self) -> set[str]:
        """Orders ``o`` passes over now: the audit without an audit sample, and the
        uncertainty order under blind coding (it would give the model away)."""
        skip: set[str] = set()
        if self.session.study.audit.sample() is None:
            skip.add("audit")
        if self.session.blind_coding:
            skip.add("entropy")
        return skip

    def action_cycle_order(self) -> None:
        listing = self.response_list
        listing.set_query(listing.response_query.next_order(skip=self.unavailable_orders()))

    def action_reverse(self) -> None:
        listing = self.response_list
        listing.set_query(listing.response_query.reversed())

    def action_memo(self) -> None:
        from tui.screens.note import NoteScreen

        listing = self.response_list
        row = listing.current
        if row is None:
            self.app.bell()
            return
        index, response_id = listing.cursor, row.response_id

        def save(note: str | None) -> None:
            if note is None:
                return
            if report(self, self.session.annotate_response(response_id, note)) is not None:
                listing.reread_row(index)

        title = f"{one_line(response_id)} · the whole response"
        self.app.push_screen(NoteScreen(title, self.session.memo(response_id)), save)

    def action_back(self) -> None:
        self.dismiss(None)
