"""One coder's review session over a study: no textual here, so it can be tested plainly.

The screens call :class:`ReviewSession` to decide, accept, mark as not applying, undo and
annotate; the rules for each key live here once, and every change is written through to
the study at once (one transaction per decision), so there is never unsaved state. Each
of those calls returns an :data:`Outcome`: :class:`Saved` (durable), :class:`Refused` (the
key does not apply to the pair; nothing written) or :class:`Failed` (the study could not
write it, a full disk for one; nothing changed and the app goes on).
"""

from __future__ import annotations

import getpass
import os
import sqlite3
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from codebooks.model import Code, Codebook, Scale
from study.audit import BlindSetting, blind_setting, set_blind_coding
from study.errors import StudyChangedError, StudyError
from study.rows import Source
from tui.keymap import DECIDE, key, key_range
from tui.source import Query, Row, hide_model, hides_model, is_hidden

if TYPE_CHECKING:
    from study import Study
    from study.log import DelegationPlan
    from study.rows import Decision

#: What a write to the study may raise when it cannot save (full disk, read-only file,
#: a damaged page): the transaction is rolled back and the study stays as it was.
SAVE_ERRORS: tuple[type[Exception], ...] = (OSError, sqlite3.Error, StudyError)

#: What a saved change did to a pair.
ChangeKind = Literal["record", "undo", "note"]


@dataclass(frozen=True)
class Saved:
    """A change now durable in the study.

    Attributes:
        response_id: The pair's response.
        code_id: The pair's code; ``""`` for a memo on the whole response.
        value: The value decided; None for an undo or a note.
        kind: ``record``, ``undo`` or ``note``.
        many: The change touched many pairs (a delegation applied or undone): the pair
            named is only the first.
        source: ``model`` for a pick accepted from the model (it never teaches a learned
            curve), else ``human``.
    """

    response_id: str
    code_id: str
    value: int | None
    kind: ChangeKind = "record"
    many: bool = False
    source: Source = "human"


@dataclass(frozen=True)
class Refused:
    """Nothing was written: the key does not apply to this pair (``message`` says why)."""

    message: str


@dataclass(frozen=True)
class Failed:
    """The study could not save the change; it is unchanged (``message`` says why)."""

    message: str


Outcome = Saved | Refused | Failed


def default_coder() -> str:
    """The OS user name, the coder id when ``--coder`` is not given."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return os.environ.get("USER") or "coder"


def response_rows(study: Study, config_id: int | None, response_id: str) -> list[Row]:
    """Every code's row for one response, in codebook order (one indexed query)."""
    return list(study.queries.of_response(config_id, response_id))


def blind_rows(rows: Sequence[Row], seen: Collection[tuple[str, str]] = ()) -> list[Row]:
    """``rows`` with the model's answer hidden on each one not decided yet, except on
    the pairs in ``seen`` (decided once and taken back: the coder has seen it)."""
    return [
        row
        if row.decision is not None or (row.response_id, row.code_id) in seen
        else hide_model(row)
        for row in rows
    ]


class StudySource:
    """A :class:`~tui.source.PairSource` over one scoring configuration of a study.

    In a blind order (:data:`~tui.source.BLIND_ORDERS`), or for every order when
    ``blind_coding``, rows show ``coder``'s own decisions only and, on a pair ``coder``
    has not decided, no model answer (:func:`~tui.source.hide_model`).
    """

    def __init__(
        self,
        study: Study,
        config_id: int | None,
        *,
        coder: str | None = None,
        blind_coding: bool = False,
        seen: Collection[tuple[str, str]] = (),
    ) -> None:
        self.study = study
        self.config_id = config_id
        self.coder = coder
        self.blind_coding = blind_coding
        #: Pairs whose model answer ``coder`` has seen (``study.decisions.decided_ever``).
        self.seen = seen

    def blind(self, query: Query) -> bool:
        """Whether ``query``'s rows hide the model until the coder decides."""
        return hides_model(query.order, blind_coding=self.blind_coding)

    def _coder(self, query: Query) -> str | None:
        return self.coder if self.blind(query) else None

    def count(self, query: Query) -> int:
        return self.study.queries.count(
            self.config_id,
            code_id=query.code_id,
            status=query.status,
            search=query.search,
            coder=self._coder(query),
            order=query.order,
            wave=query.wave,
        )

    def page(self, query: Query, offset: int, limit: int) -> Sequence[Row]:
        rows: Sequence[Row] = self.study.queries.page(
            self.config_id,
            order=query.order,
            code_id=query.code_id,
            status=query.status,
            search=query.search,
            coder=self._coder(query),
            offset=offset,
            limit=limit,
            reverse=query.reverse,
            wave=query.wave,
        )
        return blind_rows(rows, self.seen) if self.blind(query) else rows

    def position(self, query: Query, key: tuple[str, str]) -> int | None:
        """Index of the pair ``key`` under ``query``, in any order, or None when the
        filters leave it out: one count of the pairs before it (a pair that jumped far,
        scored while highlighted)."""
        response_id, code_id = key
        return self.study.queries.position(
            self.config_id,
            response_id,
            code_id,
            order=query.order,
            code_filter=query.code_id,
            status=query.status,
            search=query.search,
            coder=self._coder(query),
            reverse=query.reverse,
            wave=query.wave,
        )


def own_curves(study: Study, coder: str) -> int | None:
    """The configuration a coder's session opens on: the study's active one, or the
    coder's own learned curves on it where they exist and score every pair it does."""
    active = study.scores.active_config_id()
    if active is None:
        return None
    from study.analysis import learned_config_id
    from study.errors import StudyError
    from study.scores import is_learned

    try:
        if is_learned(study.scores.config_row(active)):
            return active
        learned = learned_config_id(study, active, coder)
    except StudyError:
        return active
    if learned is None or study.scores.scored_count(learned) < study.scores.scored_count(active):
        return active
    return learned


class ReviewSession:
    """The study, the coder and the scoring configuration the queue shows."""

    def __init__(self, study: Study, *, coder: str | None = None) -> None:
        self.study = study
        self.coder = coder or default_coder()
        self.config_id: int | None = own_curves(study, self.coder)
        self.set_codebook(study.codebook)
        #: This coder's blind double coding setting (:mod:`study.audit.blind`).
        self.blind_setting: BlindSetting = blind_setting(study, coder=self.coder)
        self._seen: set[tuple[str, str]] | None = None

    def set_codebook(self, codebook: Codebook) -> None:
        """Code by ``codebook`` (the study's, or its next version after an edit)."""
        self.codebook = codebook
        self.codes: dict[str, Code] = {c.id: c for c in codebook.codable}
        self.scales: dict[str, Scale] = {c.id: codebook.scale_for(c) for c in codebook.codable}

    @property
    def seen(self) -> set[tuple[str, str]]:
        """The pairs whose model answer this coder has seen: decided at some time (read
        once from the log, then kept up to date by :meth:`record`). Undoing a decision
        does not hide the model again, and a new decision there is not blind."""
        if self._seen is None:
            self._seen = self.study.decisions.decided_ever(coder=self.coder)
        return self._seen

    @property
    def blind_coding(self) -> bool:
        """Whether coders code blind to each other and to the model (a study setting)."""
        return self.blind_setting.enabled

    @property
    def source(self) -> StudySource:
        return StudySource(
            self.study,
            self.config_id,
            coder=self.coder,
            blind_coding=self.blind_coding,
            seen=self.seen,
        )

    def hides_model(self, order: str) -> bool:
        """Whether rows in ``order`` hide the model's answer until this coder decides."""
        return hides_model(order, blind_coding=self.blind_coding)

    def code_columns(self, names: list[str]) -> list[str]:
        """Which of the response columns ``names`` hold codes (other coders' decisions:
        :mod:`study.audit._code_columns`)."""
        from study.audit import code_columns

        try:
            return code_columns(self.study, names)
        except (sqlite3.Error, StudyError):  # unreadable now: hide them all, show no codes
            return list(names)

    def toggle_blind_coding(self) -> Outcome:
        """Turn blind double coding on or off for the study (a recorded setting)."""
        try:
            self.blind_setting = set_blind_coding(
                self.study, not self.blind_coding, coder=self.coder
            )
        except SAVE_ERRORS as exc:
            return Failed(_failure("The setting", exc))
        return Saved("", "", None, kind="note", many=True)

    def audit_status(self) -> str | None:
        """``audit 37/150 blind``: this coder's blind audit decisions over the audit
        pairs; None without an audit sample."""
        try:  # one read of the sample (the status line asks after every decision)
            progress = self.study.audit.progress(coder=self.coder)
        except StudyError:  # no audit sample
            return None
        coded = sum(p.progress.coded for p in progress.values())
        size = sum(p.progress.size for p in progress.values())
        return f"audit {coded:,}/{size:,} blind"

    def apply_delegation(self, plan: DelegationPlan) -> Outcome:
        """Record the plan's delegated decisions under this coder's name (one action)."""
        try:
            applied = self.study.delegations.apply(plan, coder=self.coder)
        except SAVE_ERRORS as exc:
            return Failed(_failure("The delegation", exc))
        if not applied.total and not sum(applied.withdrawn.values()):
            return Refused("Nothing to delegate.")
        return Saved("", "", applied.total, kind="record", many=True)

    def code(self, code_id: str) -> Code | None:
        return self.codes.get(code_id)

    def scale(self, code_id: str) -> Scale:
        return self.scales.get(code_id, self.codebook.scale)

    def value_at(self, code_id: str, position: int) -> int | None:
        """The value the digit ``position`` records on the code's scale, if any.

        On a yes/no scale (two options) ``1`` is Yes (present) and ``0`` No, as people
        press them; on a longer scale the digit is the option's 1-based position.
        """
        options = self.scale(code_id).options
        if len(options) == 2:
            return {0: options[0].value, 1: options[1].value}.get(position)
        return options[position - 1].value if 1 <= position <= len(options) else None

    def is_yes_no(self, code_id: str) -> bool:
        """Whether the code is decided on a two-option (yes/no) scale."""
        return self.scale(code_id).k == 2

    def record(self, row: Row, value: int, *, source: Source = "human") -> None:
        """Save a decision (durable when this returns); raises what the study raises.

        A decision on a row whose model answer was hidden is recorded as blind.
        """
        self.study.decisions.record(
            row.response_id,
            row.code_id,
            value,
            coder=self.coder,
            source=source,
            blind=is_hidden(row) and source == "human",
        )
        self.seen.add((row.response_id, row.code_id))

    def undo(self) -> Decision | None:
        """Take back this coder's last decision; None when there is nothing to undo."""
        return self.study.decisions.undo(coder=self.coder)

    def set_note(self, row: Row, note: str) -> None:
        self.study.decisions.set_note(row.response_id, row.code_id, note or None, coder=self.coder)

    # -- the keys' rules, shared by every screen ----------------------------------------

    def decide(self, row: Row, position: int) -> Outcome:
        """Record the option the digit ``position`` stands for (:meth:`value_at`)."""
        value = self.value_at(row.code_id, position)
        if value is None:
            scale = self.scale(row.code_id)
            if scale.k == 2:
                yes, no = scale.options[1].label, scale.options[0].label
                one = f"{key('decide.1')} or {key('decide.yes')}"
                zero = f"{key('decide.0')} or {key('decide.no')}"
                return Refused(f"{scale.name}: press {one} for {yes}, {zero} for {no}.")
            digits = key_range(DECIDE[: scale.k])
            return Refused(f"{scale.name} has {scale.k} options: press {digits}.")
        return self._save(row, lambda: self.record(row, value), value)

    def accept(self, row: Row) -> Outcome:
        """Record the model's pick, as accepted from the model."""
        pick = row.pick
        if is_hidden(row):
            return Refused("Coding blind: the model's pick is hidden until you decide.")
        if pick is None:
            return Refused("This pair is not scored yet: nothing to accept.")
        return self._save(row, lambda: self.record(row, pick, source="model"), pick, source="model")

    def yes_no(self, row: Row, *, yes: bool) -> Outcome:
        """Record Yes or No on a yes/no code; refused on a longer scale."""
        if not self.is_yes_no(row.code_id):
            scale = self.scale(row.code_id)
            yes_no = f"{key('decide.yes')} and {key('decide.no')}"
            digits = key_range(DECIDE[: scale.k])
            return Refused(f"{yes_no} decide yes/no codes; press {digits} on {scale.name}.")
        return self.decide(row, 1 if yes else 0)

    def not_apply(self, row: Row) -> Outcome:
        """Record the scale's lowest option (No, on a binary scale)."""
        value = self.scale(row.code_id).lowest.value
        return self._save(row, lambda: self.record(row, value), value)

    def annotate(self, row: Row, note: str) -> Outcome:
        """Set the pair's note (an empty note clears it)."""
        return self._save(row, lambda: self.set_note(row, note), None, kind="note")

    def segments(self, row: Row) -> tuple[tuple[int, int], ...]:
        """The spans of the response's text that came with the row's decision (a QDA
        program's coded segments), none for a pair not decided or decided here."""
        if row.decision is None or row.coder is None:
            return ()
        return tuple(self.study.decisions.segments(row.response_id, row.code_id, coder=row.coder))

    def memo(self, response_id: str) -> str | None:
        """This coder's memo on a whole response, if any."""
        return self.study.decisions.memo(response_id, coder=self.coder)

    def annotate_response(self, response_id: str, note: str) -> Outcome:
        """Set this coder's memo on the whole response (an empty memo clears it); the
        outcome's ``code_id`` is ``""``."""
        try:
            self.study.decisions.set_memo(response_id, note or None, coder=self.coder)
        except SAVE_ERRORS as exc:
            return Failed(_failure("The memo", exc))
        return Saved(response_id, "", None, kind="note")

    def take_back(self) -> Outcome:
        """Undo this coder's last decision."""
        try:
            decision = self.undo()
        except SAVE_ERRORS as exc:
            return Failed(_failure("The undo", exc))
        if decision is None:
            return Refused("Nothing to undo.")
        many = decision.kind == "delegate"
        return Saved(decision.response_id, decision.code_id, None, kind="undo", many=many)

    def _save(
        self,
        row: Row,
        write: Callable[[], None],
        value: int | None,
        *,
        kind: ChangeKind = "record",
        source: Source = "human",
    ) -> Outcome:
        try:
            write()
        except SAVE_ERRORS as exc:
            what = "The note" if kind == "note" else "The decision"
            return Failed(_failure(what, exc))
        return Saved(row.response_id, row.code_id, value, kind=kind, source=source)

    def progress(self, *, scored: bool = False) -> dict[str, Any]:
        """Decided / total, overall and per code; ``scored`` adds scored counts (a scan
        of the scores, so the status line, refreshed after every key, leaves it out).

        "Decided" counts this coder's own decisions, not the pairs anyone decided: a
        second coder starts at none, whatever the first one did.
        """
        return self.study.queries.progress(self.config_id if scored else None, coder=self.coder)

    def response_rows(self, response_id: str, *, order: str = "id") -> list[Row]:
        """Every code's row for one response, in codebook order; in a blind ``order``
        (or under blind coding) this coder's decisions only, the model's answer hidden
        where they have not decided."""
        if not self.hides_model(order):
            return response_rows(self.study, self.config_id, response_id)
        rows = self.study.queries.of_response(self.config_id, response_id, coder=self.coder)
        return blind_rows(rows, self.seen)


def _failure(what: str, exc: Exception) -> str:
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, StudyChangedError):  # the message says what to do
        return f"{what} was not saved: {detail}."
    return (
        f"{what} was not saved: {detail}. The study is unchanged; "
        "free some space or fix the file, then try again."
    )
