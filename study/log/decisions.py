"""Decisions, notes, memos and the event log of a study: :class:`Decisions` (``study.decisions``).

The handle (:class:`study.handle.StudyHandle`) provides the connection, its transactions,
the codebook and the index, and :class:`study.scores.ledger.Scores` the active
configuration; the work is done by :mod:`study.log.decision_log` (the event-sourced log).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace as replace_result
from typing import Any

from study.errors import StudyError
from study.file.schema import DECISION_SOURCES
from study.handle import StudyHandle
from study.index import StudyIndex
from study.log import decision_log as decisions
from study.log.decision_log import ImportResult
from study.rows import SOURCES, Decision, Event, check_coder
from study.scores.ledger import Scores


class Decisions:
    """Recording, clearing, noting, undoing and importing decisions; reading the log."""

    def __init__(self, study: StudyHandle, scores: Scores) -> None:
        self._study = study
        self._scores = scores

    @property
    def _index(self) -> StudyIndex:
        return self._study.index  # a revision or a wave renews it: read it each time

    def record(
        self,
        response_id: str,
        code_id: str,
        value: int,
        *,
        coder: str,
        source: str = "human",
        note: str | None = None,
        config_id: int | None = None,
        blind: bool = False,
    ) -> Decision:
        """Record ``coder``'s decision on a pair, durably, before returning.

        Args:
            response_id: The response.
            code_id: The code, by id or name.
            value: A value of the code's scale.
            coder: Who decides (non-empty).
            source: ``human``, or ``model`` when the coder accepted the model's pick.
            note: A note to set with the decision (``None`` leaves the note as it is).
            config_id: The configuration whose pick was shown (defaults to the active one).
            blind: The coder decided without seeing the model's answer (the blind
                audit); a blind decision cannot be an accepted pick (``source="model"``).

        Raises:
            StudyError: unknown pair, a value off the scale, a bad source, read-only.
        """
        rid, cid = self._index.response_key(response_id), self._index.code_key(code_id)
        self._index.scope.check(rid, cid, response=response_id, code=self._index.code_at(cid))
        value = decisions.check_value(self._study.codebook, self._index.code_at(cid), value)
        if source not in SOURCES:
            raise StudyError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
        coder = check_coder(coder)
        if blind and source != "human":
            raise StudyError("a blind decision is the coder's own (source 'human')")
        if config_id is None:
            config_id = self._scores.active_config_id()
        with self._study.transaction(current=True) as conn:
            return decisions.apply_event(
                conn,
                self._index,
                "record",
                rid,
                cid,
                coder,
                value=value,
                source=source,
                note=note,
                sets_note=note is not None,
                config_id=config_id,
                blind=blind,
            )

    def clear(self, response_id: str, code_id: str, *, coder: str) -> Decision:
        """Take back ``coder``'s decision on a pair (undoable; a note stays)."""
        rid, cid = self._index.response_key(response_id), self._index.code_key(code_id)
        coder = check_coder(coder)
        with self._study.transaction(current=True) as conn:
            return decisions.apply_event(
                conn, self._index, "clear", rid, cid, coder, value=None, source=None
            )

    def set_note(self, response_id: str, code_id: str, note: str | None, *, coder: str) -> Decision:
        """Set (or with ``None``/empty, remove) ``coder``'s note on a pair (undoable)."""
        rid, cid = self._index.response_key(response_id), self._index.code_key(code_id)
        coder = check_coder(coder)
        with self._study.transaction(current=True) as conn:
            state = decisions.pair_state(conn, rid, cid, coder)
            return decisions.apply_event(
                conn,
                self._index,
                "note",
                rid,
                cid,
                coder,
                value=state.value,
                source=state.source,
                note=note,
                sets_note=True,
                keep_decision=True,
            )

    def set_memo(self, response_id: str, note: str | None, *, coder: str) -> Decision:
        """Set (or with ``None``/empty, remove) ``coder``'s memo on a whole response
        (undoable like a note; the returned decision's ``code_id`` is ``""``)."""
        rid = self._index.response_key(response_id)
        coder = check_coder(coder)
        with self._study.transaction(current=True) as conn:
            return decisions.set_memo(conn, self._index, rid, coder, note)

    def memo(self, response_id: str, *, coder: str | None = None) -> str | None:
        """``coder``'s memo on a response, or (no coder given) the latest of any coder."""
        rid = self._index.response_key(response_id)
        sql = "SELECT note FROM memos WHERE rid = ?"
        params: list[object] = [rid]
        if coder is not None:
            sql += " AND coder = ?"
            params.append(coder)
        with self._study.query() as conn:
            row = conn.execute(sql + " ORDER BY event_id DESC LIMIT 1", params).fetchone()
        return None if row is None else str(row[0])

    def decided_ever(self, *, coder: str) -> set[tuple[str, str]]:
        """``(response_id, code_id)`` of every pair ``coder`` has decided at some time,
        a decision since taken back included: the pairs where the coder has seen the
        model's answer (the app shows it once a pair is decided), so a decision there can
        no longer be blind."""
        with self._study.query() as conn:
            rows = conn.execute(
                "SELECT DISTINCT rid, cid FROM events WHERE kind = 'record' AND coder = ? "
                "AND rid IS NOT NULL AND cid IS NOT NULL",
                (coder,),
            ).fetchall()
        return {(self._index.response_id(rid), self._index.code_at(cid).id) for rid, cid in rows}

    def skip(self, response_id: str, code_id: str, *, coder: str | None = None) -> None:
        """Move past a pair without deciding: nothing is stored (checks the pair exists)."""
        self._index.response_key(response_id)
        self._index.code_key(code_id)

    def undo(self, *, coder: str) -> Decision | None:
        """Revert ``coder``'s latest decision, clearing or note not yet undone.

        Returns:
            The reverted decision as it had been recorded (so the caller can go back to
            its pair), or ``None`` when there is nothing left to undo.
        """
        coder = check_coder(coder)
        with self._study.transaction(current=True) as conn:
            return decisions.undo_latest(conn, self._index, coder)

    def decision(
        self, response_id: str, code_id: str, *, coder: str | None = None
    ) -> Decision | None:
        """The current decision on a pair: ``coder``'s, or the latest of any coder."""
        rid, cid = self._index.response_key(response_id), self._index.code_key(code_id)
        with self._study.query() as conn:
            return decisions.current_decision(conn, self._index, rid, cid, coder)

    def note(self, response_id: str, code_id: str, *, coder: str) -> str | None:
        rid, cid = self._index.response_key(response_id), self._index.code_key(code_id)
        with self._study.query() as conn:
            row = conn.execute(
                "SELECT note FROM notes WHERE rid = ? AND cid = ? AND coder = ?",
                (rid, cid, coder),
            ).fetchone()
        return None if row is None else str(row[0])

    def coders(self) -> list[str]:
        """Everyone with a decision or a note in this study, sorted."""
        with self._study.query() as conn:
            rows = conn.execute(
                "SELECT coder FROM annotations UNION SELECT coder FROM notes ORDER BY 1"
            ).fetchall()
        return [str(r[0]) for r in rows]

    def count(self, *, coder: str | None = None) -> int:
        with self._study.query() as conn:
            if coder is None:
                row = conn.execute("SELECT COUNT(*) FROM annotations").fetchone()
            else:
                row = conn.execute(
                    "SELECT COUNT(*) FROM annotations WHERE coder = ?", (coder,)
                ).fetchone()
        return int(row[0])

    def import_decisions(
        self,
        items: Sequence[tuple[str, str, int]],
        *,
        coder: str,
        replace: bool = False,
        detail: dict[str, Any] | None = None,
        sources: Mapping[tuple[str, str], str] | None = None,
        unblind: Iterable[tuple[str, str]] = (),
        notes: Sequence[tuple[str, str | None, str, str]] = (),
        segments: Mapping[tuple[str, str], Sequence[tuple[int, int]]] | None = None,
    ) -> ImportResult:
        """Store many ``(response_id, code_id, value)`` decisions of one coder, all or none.

        Each stored decision is an ``import`` event, of source ``human`` unless
        ``sources`` says otherwise for its pair (``model``: a pick the coder accepted
        from the model, ``delegated``: as a project codecurve wrote records them); only
        ``human`` ones count as blind, except the pairs in ``unblind`` (a record that
        says they were decided after seeing the model). Imports are not on the undo stack. A pair
        ``coder`` already decided differently is a conflict: the whole import is refused
        unless ``replace``.

        ``notes`` (``(response_id, code_id or None, coder, text)``: a pair's note, or with
        no code a memo on the response) are stored in the same transaction, so that a
        process killed meanwhile stores all or nothing; a note already as given is not
        stored again (``ImportResult.notes`` counts those stored).

        ``segments`` (``(response_id, code_id) -> [(start, end), ...]``: the spans of the
        response's text a QDA program coded) are kept with the decision they came with,
        in the same transaction (:meth:`segments`).

        Raises:
            StudyError: unknown pairs, values off the scale, an unknown source,
                conflicts; nothing is stored.
        """
        coder = check_coder(coder)
        resolved = decisions.resolve_items(self._index, self._study.codebook, items)
        keyed: dict[tuple[int, int], str] = {}
        for (response_id, code_id), source in (sources or {}).items():
            if source not in DECISION_SOURCES:
                raise StudyError(
                    f"unknown decision source {source!r} for {response_id!r}/{code_id}; "
                    f"use one of {', '.join(DECISION_SOURCES)}"
                )
            key = (self._index.response_key(response_id), self._index.code_key(code_id))
            keyed[key] = source
        seen = {(self._index.response_key(r), self._index.code_key(c)) for r, c in unblind}
        blob = json.dumps(detail, ensure_ascii=False) if detail else None
        keyed_notes = [
            (
                self._index.response_key(rid),
                None if cid is None else self._index.code_key(cid),
                check_coder(who),
                text,
            )
            for rid, cid, who, text in notes
        ]
        keyed_segments: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for (response_id, code_id), spans in (segments or {}).items():
            if spans:
                key = (self._index.response_key(response_id), self._index.code_key(code_id))
                keyed_segments[key] = sorted(set(spans))
        if keyed_segments:
            with self._study.query() as conn:
                # SQLite's length() of a text counts characters (code points), as offsets do.
                lengths = dict(conn.execute("SELECT rid, length(text) FROM responses").fetchall())
            for (rid, cid), spans in keyed_segments.items():
                bad = [(a, b) for a, b in spans if not 0 <= a <= b <= lengths[rid]]
                if bad:
                    raise StudyError(
                        f"a segment {bad[0][0]}..{bad[0][1]} of "
                        f"{self._index.response_id(rid)!r}/{self._index.code_at(cid).id} lies "
                        f"outside its text (0..{lengths[rid]})"
                    )
        with self._study.transaction(current=True) as conn:
            result = decisions.import_resolved(
                conn,
                self._index,
                resolved,
                coder=coder,
                replace=replace,
                detail=blob,
                path=self._study.path,
                sources=keyed,
                unblind=seen,
            )
            stored = sum(self._put_note(conn, *note) for note in keyed_notes)
            for (rid, cid), spans in keyed_segments.items():
                self._put_segments(conn, rid, cid, coder, spans)
            return replace_result(result, notes=stored)

    def _put_segments(
        self,
        conn: sqlite3.Connection,
        rid: int,
        cid: int,
        coder: str,
        spans: Sequence[tuple[int, int]],
    ) -> None:
        """Keep ``spans`` with the coder's current decision of the pair."""
        row = conn.execute(
            "SELECT event_id FROM annotations WHERE rid = ? AND cid = ? AND coder = ?",
            (rid, cid, coder),
        ).fetchone()
        if row is None:
            return
        conn.executemany(
            'INSERT OR IGNORE INTO segments (rid, cid, coder, event_id, start, "end") '
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(rid, cid, coder, int(row[0]), int(a), int(b)) for a, b in spans],
        )

    def segments(self, response_id: str, code_id: str, *, coder: str) -> list[tuple[int, int]]:
        """The spans of the response's text that came with ``coder``'s current decision
        of the pair (a QDA program's coded segments), in text order; none for a decision
        made in codecurve, or made again since."""
        rid, cid = self._index.response_key(response_id), self._index.code_key(code_id)
        with self._study.query() as conn:
            try:
                rows = conn.execute(
                    'SELECT s.start, s."end" FROM segments s JOIN annotations a '
                    "ON a.rid = s.rid AND a.cid = s.cid AND a.coder = s.coder "
                    "AND a.event_id = s.event_id "
                    'WHERE s.rid = ? AND s.cid = ? AND s.coder = ? ORDER BY s.start, s."end"',
                    (rid, cid, coder),
                ).fetchall()
            except sqlite3.OperationalError:  # a file at a schema without segments
                return []
        return [(int(a), int(b)) for a, b in rows]

    def _put_note(self, conn: sqlite3.Connection, rid: int, cid: int | None, coder: str,
                  text: str) -> bool:  # fmt: skip
        """Store one imported note or memo unless it is already as given."""
        if cid is None:
            if decisions.memo_state(conn, rid, coder)[0] == text:
                return False
            decisions.set_memo(conn, self._index, rid, coder, text)
            return True
        state = decisions.pair_state(conn, rid, cid, coder)
        if state.note == text:
            return False
        decisions.apply_event(conn, self._index, "note", rid, cid, coder, value=state.value,
                              source=state.source, note=text, sets_note=True,
                              keep_decision=True)  # fmt: skip
        return True

    def events(
        self,
        *,
        response_id: str | None = None,
        code_id: str | None = None,
        coder: str | None = None,
    ) -> list[Event]:
        """The event log (audit trail), oldest first, optionally for one pair or coder."""
        rid = None if response_id is None else self._index.response_key(response_id)
        cid = None if code_id is None else self._index.code_key(code_id)
        with self._study.query() as conn:
            return decisions.read_events(conn, self._index, rid=rid, cid=cid, coder=coder)
