"""The main screen: the queue, the detail pane (or the screening panel) and the status line.

Every decision goes through :class:`~tui.session.ReviewSession` (saved before the screen
changes); the screen posts :class:`~tui.messages.AnnotationSaved`, then the queue reloads
the page on screen and the cursor moves to the next undecided pair. The screen never
calls the app: app-wide keys are bound to the app's actions (``app.score``), and what the
screen did is told by message. The blind audit's and blind coding's rules come from its
:class:`~tui.screens.blind.BlindWork`. Where the highlighted code's learned curve stands
is the app's :class:`~tui.learning.Learner`'s to say, and the status line shows it
unless the queue hides the model (the blind audit, blind coding).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Container, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Input

from codebooks.model import Code, Scale
from study.rows import CONSENSUS, Status
from tui.keymap import DECIDE, bindings, hidden, key
from tui.messages import (
    AuditRequested,
    DelegationRequested,
    ReviewLeftRequested,
    ScreeningShown,
    StudyChanged,
)
from tui.screens.blind import BlindWork
from tui.screens.filter import KEYS as FILTER_KEYS
from tui.screens.filter import FilterBar
from tui.screens.help import LEGEND
from tui.screens.outcomes import report
from tui.screens.small import TooSmall
from tui.session import Outcome, ReviewSession
from tui.source import (
    MODEL_ORDERS,
    ORDER_LABELS,
    STATUS_LABELS,
    PairSource,
    Query,
    Row,
    is_hidden,
    row_key,
)
from tui.text import markup_safe, one_line, plural
from tui.widgets.detail import DetailPane
from tui.widgets.keys import KeyBar, decide_label
from tui.widgets.progress import ScoringProgress
from tui.widgets.queue import PairQueue
from tui.widgets.screening import ScreeningPanel
from tui.widgets.status import StatusLine

if TYPE_CHECKING:
    from scoring.evidence import Evidence
    from study.analysis import Comparison
    from study.log import DelegationPlan
    from tui.evidence import EvidenceBook
    from tui.learning import Learner
    from tui.messages import Progress
    from tui.verdicts import ScreeningSummary

#: Width from which the detail pane sits beside the queue instead of below it.
WIDE = 130

#: The smallest terminal the screen draws in (columns, lines); below it, it says so.
MINIMUM = (60, 18)

#: The widgets the screen holds once composed (see ``ReviewScreen._held``).
_HELD = (PairQueue, DetailPane, ScreeningPanel, ScoringProgress, StatusLine)
HeldT = TypeVar("HeldT", bound=Widget)


class ReviewScreen(Screen[None]):
    """Entropy-ordered queue of pairs with keyboard coding."""

    # In the key bar's order: where the line is too short it leaves out keys from the
    # end of the list, but always shows help and quit.
    BINDINGS: ClassVar[list[BindingType]] = bindings(
        *DECIDE,
        "review.accept",
        "review.not_apply",
        "review.skip",
        "review.undo",
        "review.screening",
        "review.score",
        "review.filter",
        "review.search",
        "review.order",
        "review.blind_coding",
        "review.reverse_order",
        "review.note",
        "review.open_response",
        "review.response_mode",
        "review.response_list",
        "review.disagreements",
        "review.export",
        "review.progress",
        "review.findings",
        "review.edit_code",
        "code.add",
        "review.choose_config",
        "review.learn",
        "review.evidence",
        "review.switch_pane",
        "review.cancel",
        "app.help",
        "review.quit",
    ) + hidden("screening.delegate")
    HELP_HEADING = "Reading the queue"
    HELP_LEGEND = LEGEND

    def __init__(
        self,
        session: ReviewSession,
        *,
        learning: Learner | None = None,
        evidence: EvidenceBook | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        self.blind = BlindWork(session)
        self.learning = learning
        self.evidence = evidence
        self._history: list[tuple[tuple[str, str], int]] = []
        self._agreement: tuple[float, int, float] | None = None
        self._model_state = ""
        self._blind_model_state = ""
        # The queue was sorted again by refitted curves: the next decision goes on to the
        # most uncertain undecided pair of the new order, not the next one below.
        self._resorted = False
        self._top_at_start: tuple[str, str] | None = None
        self._preparing = False
        self._reading_ahead = False
        # The widgets the app updates on every key, held once composed (a query of the
        # screen's tree per access cost every key a walk of it).
        self._widgets: dict[type[Widget], Widget] = {}
        #: Set when the study changed while another screen was on top.
        self.stale = False
        self.filter_bar = FilterBar(
            [(c.id, c.name) for c in session.codebook.codable],
            on_change=self._apply_filter,
            on_close=self._close_filter,
            on_redraw=self._redraw_filter_bar,
            on_miss=lambda: self.app.bell(),
            waves=[w.wave for w in session.study.versions.waves()],
            on_wave=self._apply_wave,
        )

    # -- typed accessors ---------------------------------------------------------------

    def _held(self, kind: type[HeldT]) -> HeldT:
        widget = self._widgets.get(kind)
        if isinstance(widget, kind):
            return widget
        return self.query_one(kind)  # not composed yet: NoMatches, as a query says

    def _hold(self, widget: HeldT) -> HeldT:
        self._widgets[type(widget)] = widget
        return widget

    @property
    def pair_queue(self) -> PairQueue:
        return self._held(PairQueue)

    @property
    def detail(self) -> DetailPane:
        return self._held(DetailPane)

    @property
    def screening(self) -> ScreeningPanel:
        return self._held(ScreeningPanel)

    @property
    def scoring_progress(self) -> ScoringProgress:
        return self._held(ScoringProgress)

    @property
    def status_line(self) -> StatusLine:
        return self._held(StatusLine)

    @property
    def search_input(self) -> Input:
        return self.query_one("#search", Input)

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        session = self.session
        with Container(id="main"):
            with Vertical(id="queue-box") as box:
                box.border_title = markup_safe(session.codebook.name)
                yield self._hold(
                    PairQueue(
                        session.source,
                        scales=session.scales,
                        on_highlight=self._show_row,
                        id="queue",
                    )
                )
                yield Input(
                    placeholder=(
                        f"Search response text, enter to apply, {key('review.cancel')} to clear"
                    ),
                    id="search",
                )
            with ContentSwitcher(initial="detail", id="side"):
                yield self._hold(
                    DetailPane(coder=session.coder, question=session.codebook.question, id="detail")
                )
                yield self._hold(ScreeningPanel(id="screening"))
        yield self._hold(ScoringProgress())
        yield self._hold(StatusLine())
        yield KeyBar()
        yield TooSmall(MINIMUM)

    def on_mount(self) -> None:
        self.query_one(KeyBar).relabel({"decide(1)": decide_label(self.session.scales.values())})
        self.status_line.filter_bar = self.filter_bar
        self.pair_queue.reload()
        self.first_undecided()
        self.pair_queue.focus()
        self.update_status()

    def scoring_started(self) -> None:
        """A scoring run began: remember whether the coder was at the top of the queue."""
        queue = self.pair_queue
        row = queue.current
        self._top_at_start = row_key(row) if row is not None and queue.cursor == 0 else None

    def scoring_finished(self) -> None:
        """A scoring run ended: a coder who waited at the top of the queue is taken to
        the new top, the most uncertain undecided pair; one who went down the queue
        stays on their pair (the queue followed it)."""
        top, self._top_at_start = self._top_at_start, None
        row = self.pair_queue.current
        if top is not None and row is not None and row_key(row) == top:
            self.first_undecided()

    # -- what the app asks of the screen (never of its widgets) ------------------------

    def show_source(self, source: PairSource, *, follow: bool = False) -> None:
        """Show the pairs of ``source`` (another configuration, a changed codebook);
        ``follow``: the highlighted pair stays highlighted where the new order puts it."""
        self.pair_queue.set_source(source, follow=follow)

    def reload_queue(self, *, follow: bool = False) -> None:
        """Read the queue again (new scores or decisions elsewhere)."""
        self.pair_queue.reload(follow=follow)

    def show_scoring(self, progress: Progress | None) -> None:
        """Where a scoring run stands (None: no run; the bar goes)."""
        self.scoring_progress.progress = progress

    def clear_detail(self) -> None:
        """Empty the detail pane until the cursor's pair is shown again."""
        self.detail.show(None, None, None)

    def show_screening(self, summary: ScreeningSummary) -> None:
        self.screening.show(summary)

    def show_comparison(self, comparison: Comparison | None, note: str) -> None:
        self.screening.show_comparison(comparison, note)

    def show_plan(self, plan: DelegationPlan | None, note: str, audit: str | None) -> None:
        self.screening.show_plan(plan, note, audit)

    def show_undecided_of(self, code_id: str | None) -> None:
        """The undecided pairs of one code (None: every code), in the queue's order, the
        queue focused."""
        self.set_query(replace(self.pair_queue.pair_query, code_id=code_id, status="undecided"))
        self.pair_queue.focus()

    @property
    def current_row(self) -> Row | None:
        """The pair under the cursor, if any."""
        return self.pair_queue.current

    @property
    def order(self) -> str:
        """The queue's order (``entropy``, ``id``, ...)."""
        return self.pair_queue.pair_query.order

    def first_undecided(self) -> None:
        """Put the cursor on the first undecided pair of the order (the most uncertain
        one in the default order): where to start after opening or scoring."""
        queue = self.pair_queue
        index = queue.next_undecided(0)
        queue.move_to(index if index is not None else 0)

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width >= WIDE, "-wide")
        self.query_one(TooSmall).check(event.size.width, event.size.height)

    @property
    def composed(self) -> bool:
        """Whether the screen's widgets are there (not yet while it mounts, no longer
        while the app shuts down)."""
        # Every widget the app updates: they are removed one by one on shutdown.
        return len(self._widgets) == len(_HELD) and all(
            widget.is_attached for widget in self._widgets.values()
        )

    @on(StudyChanged)
    def _study_changed(self, message: StudyChanged) -> None:
        # Posted while another screen is on top: catch up when this one is shown again
        # (a screen under the top one counts as "current" to Textual, and repainting it
        # would repaint the screen above on every decision made there).
        if not self.composed:
            return
        if self.is_active:
            self._catch_up()
        else:
            self.stale = True

    def on_screen_resume(self) -> None:
        # Decisions made in the response view: show them. A dialog changes nothing here
        # by itself (its result is applied by its callback), so it costs no reload.
        if self.stale:
            self._catch_up()

    def _catch_up(self) -> None:
        self.stale = False
        self.pair_queue.reload()
        self.update_status()

    # -- queue and detail --------------------------------------------------------------

    def _show_row(self, index: int, row: Row | None) -> None:
        """Show the highlighted row in the detail pane (called by the queue directly)."""
        detail = self.detail
        if row is not None and detail.row == row:
            return
        detail.show(row, *self._about(row))
        if self.learning is not None and self.composed:
            self.status_line.show_learning(self._learning_status(row))
        if row is not None and not self._preparing:
            # While the coder reads, render the pairs a key can show next.
            self._preparing = True
            self.call_after_refresh(self._prepare_neighbours)

    def _about(
        self, row: Row | None
    ) -> tuple[
        Code | None, Scale | None, tuple[str, ...], tuple[tuple[int, int], ...], Evidence | None
    ]:
        """The code, scale, place in the hierarchy, coded segments and evidence (which
        sentence moved the model) the detail pane shows ``row`` with."""
        if row is None:
            return None, None, (), (), None
        code = self.session.code(row.code_id)
        path = self.session.codebook.path_of(code) if code is not None else ()
        evidence = self.evidence.of(row) if self.evidence is not None else None
        segments = self.session.segments(row)
        return code, self.session.scale(row.code_id), path, segments, evidence

    def _prepare_neighbours(self) -> None:
        """Render ahead the rows above and below the cursor in the detail pane (the next
        move, or the next undecided pair after a decision, then costs no rendering)."""
        self._preparing = False
        if not self.composed:
            return
        queue, detail = self.pair_queue, self.detail
        for index in (queue.cursor + 1, queue.cursor - 1):
            row = queue.row_at(index)
            if row is not None:
                detail.prepare(row, *self._about(row))
        if self.evidence is not None:
            # Measured in the background where none is kept: this pair, then the next
            # ones a key shows.
            rows = (queue.row_at(i) for i in (queue.cursor, queue.cursor + 1, queue.cursor - 1))
            self.evidence.want(rows)
        # Then, in a turn of its own (a key that came meanwhile goes first), the order
        # ``o`` shows next.
        self.call_later(self._read_ahead_order)

    def _read_ahead_order(self) -> None:
        """Read and render what ``o`` shows next (its count, first page and top row),
        while the coder reads: the first visit of an order then costs no query, and the
        key only composes the screen. A decision drops it (the queue's rows changed), and
        the next row shown reads it again."""
        if not self.composed or self.filter_bar.is_open:
            return  # the bar reads its own choices ahead
        queue = self.pair_queue
        query = queue.pair_query.next_order(skip=self.blind.unavailable_orders())
        if query != queue.pair_query:
            row = queue.read_ahead(query)
            if row is not None:
                self.detail.prepare(row, *self._about(row))

    def evidence_arrived(self, pairs: set[tuple[str, str]]) -> None:
        """The evidence of ``pairs`` was measured: show it if the pair shown is one."""
        if not self.composed:
            return
        row = self.pair_queue.current
        if row is not None and row_key(row) in pairs:
            self.detail.show(row, *self._about(row))

    def action_toggle_evidence(self) -> None:
        """Mark the sentences that moved the model in the detail pane, or hide them."""
        detail = self.detail
        detail.set_evidence_shown(not detail.evidence_shown)
        if detail.evidence_shown and self.session.hides_model(self.pair_queue.pair_query.order):
            said = "Coding blind: what moved the model shows once you decide a pair."
        elif detail.evidence_shown:
            said = "The sentences that moved the model are marked."
        else:
            said = "The sentences that moved the model are not marked."
        self.notify(said, timeout=2)

    def update_status(self) -> None:
        progress = self.session.progress()
        query = self.pair_queue.pair_query
        mode = []
        if query.order == "audit":
            mode.append(self.session.audit_status() or "no audit sample")
        if self.session.blind_coding:
            mode.append("blind coding")
        # Agreement with a learned curve's picks is measured on the decisions it learned
        # from, and flatters it: the line shows its cross-validated AUROC instead.
        learned = self.learning is not None and self.learning.shows_learned()
        self.status_line.show(
            decided=int(progress.get("decided", 0)),
            total=int(progress.get("total", 0)),
            agreement=None if learned else self._agreement,
            # "reversed" first: a narrow status line cuts its end off.
            order=("reversed: " if query.reverse else "")
            + ORDER_LABELS.get(query.order, query.order),
            filters=self._describe_filters(query),
            model=self._blind_model_state if self.session.blind_coding else self._model_state,
            mode=" · ".join(mode),
            learning=self._learning_status(self.pair_queue.current),
        )

    def _learning_status(self, row: Row | None) -> tuple[str, str]:
        """Where the code of ``row``'s learned curve stands, for the status line; nothing
        while the queue hides the model (the learning still runs, unseen)."""
        if self.learning is None or row is None:
            return "", ""
        if self.session.hides_model(self.pair_queue.pair_query.order):
            return "", ""
        return self.learning.status(row.code_id)

    def update_learning(self) -> None:
        """Say again where the highlighted code's learned curve stands (the rest of the
        status line as it was)."""
        self.status_line.show_learning(self._learning_status(self.pair_queue.current))

    def learned_order(self) -> None:
        """The queue now follows refitted curves (the highlighted pair kept): the next
        decision goes on to the most uncertain undecided pair of the new order."""
        self._resorted = True
        self.update_status()

    def codes_changed(self) -> None:
        """The codebook has a new version (a code added or edited): the queue and the
        filter bar offer its codes."""
        self.filter_bar.set_codes([(c.id, c.name) for c in self.session.codebook.codable])
        self.pair_queue.reload()
        self.update_status()

    def set_stale(self, keys: frozenset[tuple[str, str]]) -> None:
        """Draw the curves of ``keys`` greyed: scores from an older text of their code."""
        self.pair_queue.stale_keys = keys
        self.pair_queue.refresh()
        self.detail.set_stale(keys)

    def set_model_state(self, text: str, *, blind: str | None = None) -> None:
        """The status line's model part; ``blind``: its words under blind coding (a
        learned configuration's without the word of what it learned)."""
        self._model_state = text
        self._blind_model_state = text if blind is None else blind
        self.update_status()

    def set_agreement(self, agreement: tuple[float, int, float] | None) -> None:
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
        if query.wave is not None:
            parts.append(f"wave {query.wave}")
        return ", ".join(parts)

    def set_query(self, query: Query) -> None:
        searched = query.search != self.pair_queue.pair_query.search
        self.pair_queue.set_query(query)
        self.detail.set_search(query.search)
        subtitle = ""
        if query.search:
            count = plural(self.pair_queue.total, "match", "matches")
            subtitle = f"{count} for “{markup_safe(query.search)}”"
            if searched:
                self.notify(f"{count} for “{one_line(query.search)}”", timeout=3, markup=False)
        box = self.query_one("#queue-box", Vertical)
        # Setting a border's text repaints the whole box, even to the same text.
        if (box.border_subtitle or "") != subtitle:
            box.border_subtitle = subtitle
        self.update_status()

    # -- decisions ---------------------------------------------------------------------

    def _current(self) -> Row | None:
        row = self.pair_queue.current
        if row is None:
            self.app.bell()
        return row

    def _decided(self, row: Row, outcome: Outcome) -> None:
        """After a decision on ``row``: say so, refresh, move to the next undecided pair."""
        saved = report(self, outcome)
        if saved is None:
            return
        queue = self.pair_queue
        index = queue.cursor
        self._history.append((row_key(row), index))
        self._refresh_after_change(index, highlight=False)
        if is_hidden(row) and (said := self.blind.revealed(saved.response_id, saved.code_id)):
            self.notify(said, timeout=2, markup=False)
        resorted, self._resorted = self._resorted, False
        start = 0 if resorted and queue.pair_query.order in MODEL_ORDERS else index
        following = queue.next_undecided(start)
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
        if (row := self._current()) is not None:
            self._decided(row, self.session.decide(row, position))

    def action_yes_no(self, yes: bool) -> None:
        if (row := self._current()) is not None:
            self._decided(row, self.session.yes_no(row, yes=yes))

    def action_accept(self) -> None:
        if (row := self._current()) is not None:
            self._decided(row, self.session.accept(row))

    def action_not_apply(self) -> None:
        if (row := self._current()) is not None:
            self._decided(row, self.session.not_apply(row))

    def action_skip(self) -> None:
        queue = self.pair_queue
        following = queue.next_undecided(queue.cursor + 1)
        queue.move_to(following if following is not None else queue.cursor + 1)

    def action_undo(self) -> None:
        undone = report(self, self.session.take_back())
        if undone is None:
            return
        if undone.many:  # a delegation, taken back as one action
            self.pair_queue.reload()
            self.update_status()
            self.notify("Undone: the delegation (every pair it recorded).", timeout=3)
            return
        if not undone.code_id:  # a memo on a whole response
            self.notify(f"Undone: the memo on {one_line(undone.response_id)}", markup=False)
            return
        key = (undone.response_id, undone.code_id)
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
        self.update_status()
        if index is None:
            code = self.session.code(undone.code_id)
            name = one_line(code.name if code else undone.code_id)
            self.notify(
                f"Undone: {one_line(undone.response_id)} · {name} (not in this view)",
                timeout=3,
                markup=False,
            )

    def action_note(self) -> None:
        from tui.screens.note import NoteScreen

        row = self._current()
        if row is None:
            return

        def save(note: str | None) -> None:
            if note is not None and report(self, self.session.annotate(row, note)) is not None:
                self._refresh_after_change(self.pair_queue.cursor)

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
        if row is not None and self.pair_queue.pair_query.status == "disagreement":
            self.action_disagreements()
            return
        if row is not None:
            # ] and [ there follow responses in the queue's order where one exists.
            query = self.pair_queue.pair_query
            order = query.order if query.order in ("entropy", "audit") else "id"
            self.app.push_screen(
                ResponseScreen(
                    self.session,
                    row.response_id,
                    row.code_id,
                    order=order,
                    reverse=query.reverse,
                    filters=query,
                )
            )

    def action_disagreements(self) -> None:
        """Reconcile: the coders' disagreements side by side, from the highlighted pair."""
        from tui.screens.disagreements import DisagreementsScreen

        row = self._current()
        start = None if row is None else (row.response_id, row.code_id)
        self.app.push_screen(DisagreementsScreen(self.session, start=start))

    def action_response_mode(self) -> None:
        """Code response by response, the one whose least sure code is least sure first,
        among the responses the queue's filters select (the first with a code left)."""
        from tui.screens.response import ResponseScreen

        session = self.session
        query = self.pair_queue.pair_query
        # The blind audit's responses in audit order when the queue walks the audit;
        # under blind coding, id order (an uncertainty order would give the model away).
        order = query.order
        if order != "audit":
            order = "id" if session.blind_coding else "entropy"
        coder = session.coder if session.hides_model(order) else None
        filters: dict[str, Any] = {
            "code_id": query.code_id,
            "search": query.search,
            "wave": query.wave,
            "coder": coder,
        }
        queries = session.study.queries
        first = queries.response_step(
            session.config_id,
            None,
            order=order,
            status=query.status or "undecided",
            **filters,
        )
        if first is None:  # nothing left to decide there: the first one the filter shows
            first = queries.response_step(
                session.config_id, None, order=order, status=query.status, **filters
            )
        if first is None:
            self.app.bell()
            self.notify("No response matches the filter.", timeout=3)
            return
        self.app.push_screen(ResponseScreen(session, first, order=order, filters=query))

    def action_response_list(self) -> None:
        """The responses, one a line, to choose which to code (:mod:`.responses`)."""
        from tui.screens.responses import ResponsesScreen
        from tui.widgets.response_list import ResponseQuery

        # As ``v``: the audit's responses when the queue walks the audit.
        audit = self.pair_queue.pair_query.order == "audit"
        query = ResponseQuery(order="audit") if audit else None
        self.app.push_screen(ResponsesScreen(self.session, query=query))

    def action_reverse_order(self) -> None:
        self.set_query(self.pair_queue.pair_query.reversed())

    def action_cycle_order(self) -> None:
        # The status line names the order: no notification to wait for.
        query = self.pair_queue.pair_query.next_order(skip=self.blind.unavailable_orders())
        self.set_query(query)
        if query.order in ("audit", "shared"):
            self.first_undecided()

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

    def _apply_filter(self, code_id: str | None, status: Status | None) -> None:
        """Show the pairs of ``code_id`` and ``status`` (called by the filter bar)."""
        if (
            status == "disagreement"
            and len([c for c in self.session.study.decisions.coders() if c != CONSENSUS]) < 2
        ):
            self.notify("Disagreements need the decisions of two coders; this study has fewer.")
        query = replace(self.pair_queue.pair_query, code_id=code_id, status=status)
        if query != self.pair_queue.pair_query:
            self.set_query(query)

    def _apply_wave(self, wave: int | None) -> None:
        """Show the pairs of the responses wave ``wave`` added (called by the filter bar)."""
        query = replace(self.pair_queue.pair_query, wave=wave)
        if query != self.pair_queue.pair_query:
            self.set_query(query)

    def _redraw_filter_bar(self) -> None:
        self.status_line.redraw()
        if self.filter_bar.is_open and not self._reading_ahead:
            self._reading_ahead = True
            self.call_after_refresh(self._read_ahead_filters)

    def _read_ahead_filters(
        self, todo: list[tuple[str | None, Status | None]] | None = None
    ) -> None:
        """While the filter bar is open, read and render what its next arrow key shows,
        one choice per turn of the message loop (as the detail pane renders the rows
        beside the cursor): stepping through the codes then costs no query."""
        bar, queue = self.filter_bar, self.pair_queue
        if todo is None:
            self._reading_ahead = False
            todo = bar.neighbours()
        if not (self.composed and bar.is_open and todo):
            return
        code_id, status = todo[0]
        row = queue.read_ahead(replace(queue.pair_query, code_id=code_id, status=status))
        if row is not None:
            self.detail.prepare(row, *self._about(row))
        if todo[1:]:
            self.call_later(self._read_ahead_filters, todo[1:])

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

    async def action_cancel(self) -> None:
        if self.filter_bar.is_open:
            self._close_filter()
            return
        if self.search_input.has_focus or self.search_input.has_class("-open"):
            self._close_search()
            return
        if self.scoring_progress.progress is not None:  # a scoring run is going
            await self.app.run_action("cancel_scoring")
            return
        if self.pair_queue.pair_query.filtered:
            query = self.pair_queue.pair_query
            self.set_query(Query(order=query.order, reverse=query.reverse))

    # -- blind work --------------------------------------------------------------------

    def show_audit(self) -> None:
        """The blind audit: its pairs in their random order, from the first undecided."""
        if not self.blind.has_audit:
            self.notify(
                "No audit sample yet: draw one with 'codecurve audit STUDY --draw'.",
                severity="warning",
                timeout=5,
            )
            return
        self.set_query(Query(order="audit"))
        self.first_undecided()
        self.pair_queue.focus()

    def on_audit_requested(self, message: AuditRequested) -> None:
        message.stop()
        self.show_audit()

    def on_review_left_requested(self, message: ReviewLeftRequested) -> None:
        message.stop()
        self.set_query(self.blind.review_left())
        self.pair_queue.focus()

    def on_delegation_requested(self, message: DelegationRequested) -> None:
        from tui.plans import confirm_text
        from tui.screens.confirm import ConfirmScreen

        message.stop()
        plan = message.plan

        def apply(yes: bool | None) -> None:
            if not yes:
                self.notify("Nothing delegated.", timeout=2)
                return
            saved = report(self, self.session.apply_delegation(plan))
            if saved is not None:
                self.pair_queue.reload()
                self.update_status()
                self.notify(
                    f"Delegated {plural(saved.value or 0, 'pair')} to the model; "
                    f"{key('review.undo')} undoes.",
                    timeout=4,
                )

        self.app.push_screen(ConfirmScreen("Apply the delegation?", confirm_text(plan)), apply)

    def action_toggle_blind_coding(self) -> None:
        """Turn blind double coding on or off for the study (recorded in its log)."""
        if report(self, self.session.toggle_blind_coding()) is None:
            return
        query = self.blind.within_blind_coding(self.pair_queue.pair_query)
        self.pair_queue.set_source(self.session.source)
        self.set_query(query)
        self.notify(
            "Blind coding on: other coders' decisions and the model stay hidden until you "
            "decide a pair."
            if self.session.blind_coding
            else "Blind coding off.",
            timeout=4,
        )

    # -- panels and dialogs ------------------------------------------------------------

    @property
    def screening_shown(self) -> bool:
        """Whether the screening panel is the pane on show (its plan and comparison are
        only worth computing then)."""
        return self.query_one(ContentSwitcher).current == "screening"

    def action_delegate(self) -> None:
        """``d`` with the queue focused: the panel's delegation when it is on show (it
        says why there is nothing to delegate), else the panel, with a word on why."""
        if self.screening_shown:
            self.screening.action_delegate()
            return
        self.action_toggle_screening()
        self.notify(
            "The delegation plan is in the screening panel: read it, then press d to apply it.",
            timeout=4,
        )

    def action_toggle_screening(self) -> None:
        switcher = self.query_one(ContentSwitcher)
        if switcher.current == "screening":
            switcher.current = "detail"
        else:
            switcher.current = "screening"
            self.post_message(ScreeningShown())

    def action_progress(self) -> None:
        from tui.screens.progress import ProgressScreen

        self.app.push_screen(ProgressScreen(self.session))

    def action_findings(self) -> None:
        from tui.screens.findings import FindingsScreen

        self.app.push_screen(FindingsScreen(self.session))
