"""Reconciliation: the pairs the coders decided differently, side by side, and the consensus.

One row per disagreement (:func:`study.analysis._reconcile.disagreements`): each compared coder's
decision, then the consensus coder's. Below, the highlighted pair's response and each
coder's decision with their note. ``1``-``9`` take the decision of the coder with that
number as the consensus, ``v`` records another value (with a note), ``c`` edits the
consensus note, ``u`` undoes the consensus coder's last change, ``w`` chooses the
coders compared. Between the header and the table, the compared coders' agreement per
code (kappa and alpha with intervals, as ``codecurve agreement``). Every change is a
decision of source ``human`` by the consensus coder (:data:`study.rows.CONSENSUS` unless
told otherwise), saved at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Input, Label, Static

from codebooks.model import Scale
from study.analysis import Disagreement, disagreements, resolved_count
from study.errors import StudyError
from study.rows import CONSENSUS
from tui.keymap import TAKE, bindings, key, key_range
from tui.remedies import said
from tui.screens.outcomes import report
from tui.session import SAVE_ERRORS, Failed, Outcome, ReviewSession, Saved
from tui.text import kept_unless_edited, one_line, printable
from tui.widgets.agreement import AgreementPanel
from tui.widgets.keys import KeyBar


def _label(scale: Scale, value: int | None) -> str:
    """``3 Often``: a value and its name; the digits alone where no option has it."""
    if value is None:
        return "—"
    return f"{value} {scale.label_of(value)}" if scale.option_of(value) else str(value)


def parse_value(scale: Scale, typed: str) -> int | None:
    """The scale value ``typed`` names (its number or, case-insensitively, its label)."""
    word = typed.strip().casefold()
    for option in scale.options:
        if word in (str(option.value), option.label.casefold()):
            return option.value
    return None


class ConsensusValueScreen(ModalScreen[tuple[int, str] | None]):
    """Asks for a consensus value and an optional note; None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("dialog.cancel")

    def __init__(self, title: str, scale: Scale, note: str | None) -> None:
        super().__init__()
        self._title = title
        self._scale = scale
        self._note = note or ""
        self._shown_note = printable(self._note, single_line=True)  # saved as is unless edited

    def compose(self) -> ComposeResult:
        options = ", ".join(f"{o.value} {o.label}" for o in self._scale.options)
        with Vertical(classes="dialog", id="consensus-dialog") as box:
            box.border_title = "Consensus value"
            box.border_subtitle = f"enter saves · {key('dialog.cancel')} cancels"
            yield Label(Text(printable(self._title, single_line=True)), classes="dialog-subtitle")
            yield Label(Text(printable(f"{self._scale.name}: {options}", single_line=True)))
            yield Input(placeholder="value (number or label)", id="consensus-value")
            yield Input(self._shown_note, placeholder="note: why (optional)", id="consensus-note")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        typed = self.query_one("#consensus-value", Input).value
        value = parse_value(self._scale, typed)
        if value is None:
            self.notify(
                printable(f"{typed!r} is not a value of {self._scale.name}", single_line=True),
                severity="warning",
                markup=False,
            )
            self.query_one("#consensus-value", Input).focus()
            return
        typed_note = self.query_one("#consensus-note", Input).value
        note = kept_unless_edited(typed_note, self._shown_note, self._note)
        self.dismiss((value, note.strip()))

    def action_cancel(self) -> None:
        self.dismiss(None)


class CodersScreen(ModalScreen[list[str] | None]):
    """Asks which coders to compare (comma-separated; empty: every coder)."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("dialog.cancel")

    def __init__(self, coders: Sequence[str], known: Sequence[str]) -> None:
        super().__init__()
        self._coders = ", ".join(coders)
        self._shown_coders = printable(self._coders, single_line=True)  # names as is unless edited
        self._known = ", ".join(known)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="coders-dialog") as box:
            box.border_title = "Coders compared"
            box.border_subtitle = f"enter applies · {key('dialog.cancel')} cancels"
            yield Label(Text(printable(f"coders: {self._known}", single_line=True)))
            yield Input(
                self._shown_coders, placeholder="ana, ben (empty: every coder)", id="coders"
            )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        typed = kept_unless_edited(event.value, self._shown_coders, self._coders)
        self.dismiss([c.strip() for c in typed.split(",") if c.strip()])

    def action_cancel(self) -> None:
        self.dismiss(None)


class DisagreementsScreen(Screen[None]):
    """The disagreements between coders and the keys that settle them."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(
        *TAKE,
        "reconcile.value",
        "review.note",
        "review.undo",
        "reconcile.coders",
        "app.help",
        "reconcile.close",
    )

    def __init__(
        self,
        session: ReviewSession,
        *,
        coders: Sequence[str] | None = None,
        consensus: str = CONSENSUS,
        start: tuple[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        self.consensus = ReviewSession(session.study, coder=consensus)
        self.coders: list[str] | None = None if coders is None else list(coders)
        self.items: list[Disagreement] = []
        self.problem: str | None = None
        self._start = start

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#reconcile-table", DataTable)

    def compose(self) -> ComposeResult:
        yield Static(id="reconcile-head")
        yield AgreementPanel(id="reconcile-agreement")
        yield DataTable(id="reconcile-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="reconcile-detail")
        yield KeyBar()

    def on_mount(self) -> None:
        self.load(self._start)
        self.measure_agreement()
        self.table.focus()

    # -- data ----------------------------------------------------------------------

    def compared(self) -> list[str]:
        if self.items:
            return [view.coder for view in self.items[0].views]
        return list(self.coders or [])

    def load(self, keep: tuple[str, str] | None = None) -> None:
        """Read the disagreements again and show them, the cursor on ``keep`` if listed."""
        if keep is None and self.items and self.table.row_count:
            item = self.current()
            keep = None if item is None else (item.response_id, item.code_id)
        try:
            self.items = disagreements(
                self.session.study, coders=self.coders, consensus=self.consensus.coder
            )
            self.problem = None
        except StudyError as exc:
            self.items = []
            self.problem = said(exc)
        table = self.table
        table.clear(columns=True)
        coders = [] if self.problem else self._coder_names()
        table.add_columns(
            "Response",
            "Code",
            *(f"{i} {one_line(c)}" for i, c in enumerate(coders, 1)),
            one_line(self.consensus.coder),
        )
        for item in self.items:
            scale = self.session.scale(item.code_id)
            code = self.session.code(item.code_id)
            table.add_row(
                Text(one_line(item.response_id)),
                Text(one_line(code.name if code else item.code_id)),
                *(Text(_label(scale, view.value)) for view in item.views),
                Text(_label(scale, item.consensus), style="bold" if item.resolved else "dim"),
                key=f"{item.response_id}\x00{item.code_id}",
            )
        if keep is not None:
            for i, item in enumerate(self.items):
                if (item.response_id, item.code_id) == keep:
                    table.move_cursor(row=i)
                    break
        self._head()
        self._detail()

    def measure_agreement(self) -> None:
        """The compared coders' agreement per code, below the header (off the event loop).

        The consensus coder's decisions are not compared, so a consensus leaves it as it is.
        """
        panel = self.query_one(AgreementPanel)
        if self.problem is not None:
            panel.post_message(AgreementPanel.Measured(None, self.problem))
            return
        panel.measure(self.session.study, self._coder_names())

    def _coder_names(self) -> list[str]:
        if self.items:
            return [view.coder for view in self.items[0].views]
        from study.analysis import compared_coders

        return list(
            compared_coders(self.session.study, coders=self.coders, consensus=self.consensus.coder)
        )

    def current(self) -> Disagreement | None:
        row = self.table.cursor_row
        return self.items[row] if 0 <= row < len(self.items) else None

    # -- drawing -------------------------------------------------------------------

    def progress_text(self) -> str:
        """``12 of 48 disagreements resolved`` (or why there are none to show)."""
        if self.problem is not None:
            return self.problem
        total = len(self.items)
        if total == 0:
            return "No disagreements between " + ", ".join(self._coder_names())
        return f"{resolved_count(self.items)} of {total} disagreements resolved"

    def _head(self) -> None:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(printable(self.progress_text(), single_line=True), style="bold")
        if self.problem is None:
            coders = " · ".join(f"{i} {c}" for i, c in enumerate(self._coder_names(), 1))
            text.append(
                printable(
                    f"\ncoders {coders} · consensus: {self.consensus.coder}", single_line=False
                )
            )
        self.query_one("#reconcile-head", Static).update(text)

    def _detail(self) -> None:
        item = self.current()
        detail = self.query_one("#reconcile-detail", Static)
        if item is None:
            detail.update("")
            return
        scale = self.session.scale(item.code_id)
        code = self.session.code(item.code_id)
        text = Text()
        name = code.name if code else item.code_id
        text.append(printable(f"{item.response_id} · {name}", single_line=True), style="bold")
        text.append("\n" + printable(item.text) + "\n")
        for i, view in enumerate(item.views, 1):
            text.append(f"\n{i} ", style="bold")
            text.append(printable(view.coder, single_line=True) + ": ", style="bold")
            text.append(_label(scale, view.value))
            if view.note:
                text.append("  " + printable(view.note, single_line=True), style="italic")
        text.append("\n= ", style="bold")
        text.append(printable(self.consensus.coder, single_line=True) + ": ", style="bold")
        text.append(_label(scale, item.consensus) if item.resolved else "not yet decided")
        if item.consensus_note:
            text.append("  " + printable(item.consensus_note, single_line=True), style="italic")
        detail.update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail()

    # -- keys ----------------------------------------------------------------------

    def _saved(self, outcome: Outcome, *, advance: bool = True) -> None:
        """Show a saved consensus and (``advance``) move on to the next unresolved one."""
        if report(self, outcome) is None:
            return
        self.load()
        if not advance:
            return
        here = self.table.cursor_row
        following = next(
            (i for i in range(here + 1, len(self.items)) if not self.items[i].resolved), None
        )
        if following is not None:
            self.table.move_cursor(row=following)

    def _write(self, item: Disagreement, value: int, note: str | None) -> Outcome:
        try:
            self.session.study.decisions.record(
                item.response_id, item.code_id, value, coder=self.consensus.coder, note=note
            )
        except SAVE_ERRORS as exc:
            return Failed(f"The consensus was not saved: {exc}. The study is unchanged.")
        return Saved(item.response_id, item.code_id, value)

    def action_take(self, position: int) -> None:
        item = self.current()
        if item is None:
            self.app.bell()
            return
        if not 1 <= position <= len(item.views):
            coders = len(item.views)
            self.notify(f"There are {coders} coders: press {key_range(TAKE[:coders])}.")
            return
        view = item.views[position - 1]
        if view.value is None:
            self.notify(
                printable(f"{view.coder} did not decide this pair.", single_line=True),
                severity="warning",
                markup=False,
            )
            return
        self._saved(self._write(item, view.value, None))

    def action_set_value(self) -> None:
        item = self.current()
        if item is None:
            self.app.bell()
            return
        scale = self.session.scale(item.code_id)

        def save(answer: tuple[int, str] | None) -> None:
            if answer is not None:
                self._saved(self._write(item, answer[0], answer[1] or None))

        title = f"{item.response_id} · {item.code_id}"
        self.app.push_screen(ConsensusValueScreen(title, scale, item.consensus_note), save)

    def action_note(self) -> None:
        from tui.screens.note import NoteScreen

        item = self.current()
        if item is None:
            self.app.bell()
            return
        row = self.session.study.queries.of_response(None, item.response_id)
        pair = next((r for r in row if r.code_id == item.code_id), None)
        if pair is None:
            return

        def save(note: str | None) -> None:
            if note is not None:
                self._saved(self.consensus.annotate(pair, note), advance=False)

        title = f"{item.response_id} · {item.code_id} ({self.consensus.coder})"
        self.app.push_screen(NoteScreen(title, item.consensus_note), save)

    def action_undo(self) -> None:
        outcome = self.consensus.take_back()
        if isinstance(outcome, Saved):
            report(self, outcome)
            self.load((outcome.response_id, outcome.code_id))
        else:
            report(self, outcome)

    def action_coders(self) -> None:
        known = [c for c in self.session.study.decisions.coders() if c != self.consensus.coder]

        def apply(coders: list[str] | None) -> None:
            if coders is None:
                return
            self.coders = coders or None
            self.load()
            self.measure_agreement()

        self.app.push_screen(CodersScreen(self.compared(), known), apply)

    def action_close(self) -> None:
        self.app.pop_screen()
