"""The coders' decisions: an append-only event log and the state it leads to.

Every change of a decision or a note is one row of ``events`` holding the state it
replaced (``prev_*``); ``annotations`` and ``notes`` hold the current state. Undo appends
an ``undo`` event and restores the state the undone event recorded as replaced.
Events are written through :func:`study.file.events.append`, the log's one writer.

Functions over a connection inside the caller's transaction (:class:`study.store.Study`
opens it); they check nothing the caller already did (ids resolved, values on the scale).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codebooks.errors import Remedy
from codebooks.model import Code, Codebook
from study.errors import StudyError
from study.file import events
from study.file.events import read_events as read_events  # the audit trail, for the handle
from study.index import StudyIndex
from study.rows import Decision
from study.stamps import now

log = logging.getLogger(__name__)

_MAX_LISTED = 5


@dataclass(frozen=True)
class ImportResult:
    """What :meth:`study.log.decisions.Decisions.import_decisions` did."""

    added: int
    changed: int
    unchanged: int
    notes: int = 0


@dataclass(frozen=True)
class PairState:
    """One coder's decision and note on a pair, with the events that set them."""

    value: int | None
    source: str | None
    event: int | None
    note: str | None
    note_event: int | None


def check_value(codebook: Codebook, code: Code, value: Any) -> int:
    """``value`` as a value of ``code``'s scale.

    Raises:
        StudyError: not an integer, or not on the scale.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise StudyError(f"a decision is a scale value (an integer), not {value!r}")
    scale = codebook.scale_for(code)
    if int(value) not in scale.values:
        raise StudyError(
            f"{int(value)} is not a value of scale {scale.name} {list(scale.values)} "
            f"of code {code.name!r}"
        )
    return int(value)


def resolve_items(
    index: StudyIndex, codebook: Codebook, items: Sequence[tuple[str, str, int]]
) -> list[tuple[int, int, int]]:
    """``(response_id, code_id, value)`` items as ``(rid, cid, value)``, all checked.

    Raises:
        StudyError: an unknown pair or a value off its code's scale.
    """
    resolved = []
    for response_id, code_id, value in items:
        rid, cid = index.response_key(response_id), index.code_key(code_id)
        code = index.code_at(cid)
        index.scope.check(rid, cid, response=response_id, code=code)
        scale = codebook.scale_for(code)
        if value not in scale.values:
            raise StudyError(
                f"{value} is not a value of scale {scale.name} for code "
                f"{code.name!r} (response {response_id!r})"
            )
        resolved.append((rid, cid, int(value)))
    return resolved


def pair_state(conn: sqlite3.Connection, rid: int, cid: int, coder: str) -> PairState:
    a = conn.execute(
        "SELECT value, source, event_id FROM annotations WHERE rid = ? AND cid = ? AND coder = ?",
        (rid, cid, coder),
    ).fetchone()
    n = conn.execute(
        "SELECT note, event_id FROM notes WHERE rid = ? AND cid = ? AND coder = ?",
        (rid, cid, coder),
    ).fetchone()
    return PairState(
        value=None if a is None else int(a[0]),
        source=None if a is None else str(a[1]),
        event=None if a is None else int(a[2]),
        note=None if n is None else str(n[0]),
        note_event=None if n is None else int(n[1]),
    )


def apply_event(
    conn: sqlite3.Connection,
    index: StudyIndex,
    kind: str,
    rid: int,
    cid: int,
    coder: str,
    *,
    value: int | None,
    source: str | None,
    note: str | None = None,
    sets_note: bool = False,
    keep_decision: bool = False,
    config_id: int | None = None,
    detail: str | None = None,
    blind: bool = False,
    batch: int | None = None,
) -> Decision:
    """Append one event and bring ``annotations``/``notes`` to the state it describes.

    ``blind``: the coder decided without seeing the model's answer (or the decision was
    imported); kept on the event and the decision. ``batch``: the event this record
    belongs to when one action made many (a delegation), undone together with it.
    """
    prev = pair_state(conn, rid, cid, coder)
    note = note or None  # an empty note removes it
    stamp = now()
    event_id = events.append(
        conn,
        kind,
        at=stamp,
        coder=coder,
        rid=rid,
        cid=cid,
        value=value,
        source=source,
        note=note if sets_note else None,
        sets_note=int(sets_note),
        config_id=config_id,
        prev_value=prev.value,
        prev_source=prev.source,
        prev_event=prev.event,
        prev_note=prev.note,
        prev_note_event=prev.note_event,
        detail=detail,
        blind=int(blind),
        batch=batch,
    )
    if not keep_decision:
        if value is None:
            _delete_annotation(conn, rid, cid, coder)
        else:
            assert source is not None
            _upsert_annotation(
                conn, rid, cid, coder, value, source, config_id, event_id, stamp, blind=blind
            )
    if sets_note:
        _put_note(conn, rid, cid, coder, note, event_id)
    return Decision(
        id=event_id,
        response_id=index.response_id(rid),
        code_id=index.code_at(cid).id,
        value=value,
        source=source,
        coder=coder,
        note=note if sets_note else prev.note,
        at=stamp,
        kind=kind,
    )


def undo_latest(conn: sqlite3.Connection, index: StudyIndex, coder: str) -> Decision | None:
    """Revert ``coder``'s latest decision, clearing or note not yet undone (see module)."""
    row = conn.execute(
        "SELECT id, kind, rid, cid, value, source, note, at, sets_note, prev_value, "
        "prev_source, prev_event, prev_note, prev_note_event FROM events e "
        "WHERE coder = ? AND kind IN ('record', 'clear', 'note', 'delegate') "
        "AND batch IS NULL AND NOT EXISTS (SELECT 1 FROM events u WHERE u.undoes = e.id) "
        "AND NOT EXISTS (SELECT 1 FROM events w WHERE w.kind = 'update' AND w.rid = e.rid "
        "AND w.id > e.id) "  # a decision on a replaced text is never restored
        "ORDER BY id DESC LIMIT 1",
        (coder,),
    ).fetchone()
    if row is None:
        return None
    if row[1] == "delegate":
        return undo_batch(conn, index, int(row[0]))
    (event_id, kind, rid, cid, value, source, note, at, sets_note) = row[:9]
    (prev_value, prev_source, prev_event, prev_note, prev_note_event) = row[9:]
    if cid is None:
        return _undo_memo(conn, index, coder, event_id, rid, note, at, prev_note, prev_note_event)
    current = pair_state(conn, rid, cid, coder)
    undo_id = events.append(
        conn,
        "undo",
        coder=coder,
        rid=rid,
        cid=cid,
        value=prev_value,
        source=prev_source,
        note=prev_note if sets_note else current.note,
        sets_note=int(bool(sets_note)),
        prev_value=current.value,
        prev_source=current.source,
        prev_event=current.event,
        prev_note=current.note,
        prev_note_event=current.note_event,
        undoes=event_id,
    )
    if kind != "note":
        _restore(conn, rid, cid, coder, prev_value, prev_source, prev_event)
    if sets_note:
        _put_note(conn, rid, cid, coder, prev_note, prev_note_event)
    log.debug("undo of event %s by %s (event %s)", event_id, coder, undo_id)
    return Decision(
        id=int(event_id),
        response_id=index.response_id(rid),
        code_id=index.code_at(cid).id,
        value=value,
        source=source,
        coder=coder,
        note=note,
        at=at,
        kind=kind,
    )


def import_resolved(
    conn: sqlite3.Connection,
    index: StudyIndex,
    resolved: Sequence[tuple[int, int, int]],
    *,
    coder: str,
    replace: bool,
    detail: str | None,
    path: Path,
    sources: Mapping[tuple[int, int], str] | None = None,
    unblind: Collection[tuple[int, int]] = (),
) -> ImportResult:
    """Store ``(rid, cid, value)`` decisions of ``coder`` as ``import`` events, all or none
    (of source ``human``, or what ``sources`` gives for the pair). A ``human`` decision
    counts as blind unless its pair is in ``unblind`` (a record that says it was made
    after seeing the model).

    Raises:
        StudyError: conflicts with the coder's decisions (unless ``replace``).
    """
    existing = {
        (rid, cid): int(value)
        for rid, cid, value in conn.execute(
            "SELECT rid, cid, value FROM annotations WHERE coder = ?", (coder,)
        )
    }
    conflicts = [
        (rid, cid, old, value)
        for rid, cid, value in resolved
        if (old := existing.get((rid, cid))) is not None and old != value
    ]
    if conflicts and not replace:
        shown = "; ".join(
            f"{index.response_id(r)!r}/{index.code_at(c).id}: {old} here, {new} in the file"
            for r, c, old, new in conflicts[:_MAX_LISTED]
        )
        more = f" and {len(conflicts) - _MAX_LISTED} more" if len(conflicts) > _MAX_LISTED else ""
        raise StudyError(
            f"{len(conflicts)} pair(s) already decided differently by {coder!r}: "
            f"{shown}{more}; nothing imported (replacing them overwrites them)",
            path=path,
            remedy=Remedy("retry", "replace the decisions", {"replace": True}),
        )
    added = changed = unchanged = 0
    for rid, cid, value in resolved:
        old = existing.get((rid, cid))
        if old == value:
            unchanged += 1
            continue
        source = (sources or {}).get((rid, cid), "human")
        apply_event(
            conn,
            index,
            "import",
            rid,
            cid,
            coder,
            value=value,
            source=source,
            detail=detail,
            # A coder's own imported decisions are independent of the model (METHOD.md 3);
            # a pick accepted from the model, or delegated to it, is not.
            blind=source == "human" and (rid, cid) not in unblind,
        )
        existing[(rid, cid)] = value
        if old is None:
            added += 1
        else:
            changed += 1
    return ImportResult(added=added, changed=changed, unchanged=unchanged)


def undo_batch(conn: sqlite3.Connection, index: StudyIndex, batch_id: int) -> Decision | None:
    """Undo a batch event (a delegation) and every record it made, as one action.

    Each record is reverted only while it is still its pair's current decision: a pair
    decided again after the batch keeps that later decision. Appends an ``undo`` event
    for the batch and one per reverted record, grouped under it through ``batch``.

    Returns:
        The batch event as a :class:`Decision` of kind ``delegate`` (its pair is the
        first record's; value ``None``), or ``None`` if it was already undone.
    """
    head = events.event_row(conn, batch_id, ("kind", "coder", "at"), standing=True)
    if head is None:
        return None
    kind, coder, at = head
    undo_id = events.append(conn, "undo", coder=coder, undoes=batch_id)
    members = conn.execute(
        "SELECT id, rid, cid, coder, prev_value, prev_source, prev_event FROM events "
        "WHERE batch = ? ORDER BY id DESC",
        (batch_id,),
    ).fetchall()
    for event_id, rid, cid, who, prev_value, prev_source, prev_event in members:
        current = pair_state(conn, rid, cid, who)
        if not _still_current(conn, event_id, rid, cid, who, current):
            continue  # decided again since: the later decision stands
        events.append(
            conn,
            "undo",
            coder=who,
            rid=rid,
            cid=cid,
            value=prev_value,
            source=prev_source,
            prev_value=current.value,
            prev_source=current.source,
            prev_event=current.event,
            undoes=event_id,
            batch=undo_id,
        )
        _restore(conn, rid, cid, who, prev_value, prev_source, prev_event)
    first = members[-1] if members else None
    return Decision(
        id=batch_id,
        response_id="" if first is None else index.response_id(first[1]),
        code_id="" if first is None else index.code_at(first[2]).id,
        value=None,
        source="delegated",
        coder=str(coder or ""),
        note=None,
        at=str(at),
        kind=str(kind),
    )


def _still_current(
    conn: sqlite3.Connection, event_id: int, rid: int, cid: int, coder: str, current: PairState
) -> bool:
    """Whether the pair is still in the state event ``event_id`` left it in."""
    if current.value is not None:
        return current.event == event_id
    later = conn.execute(
        "SELECT 1 FROM events WHERE rid = ? AND cid = ? AND coder = ? AND id > ? "
        "AND kind IN ('record', 'clear', 'import') LIMIT 1",
        (rid, cid, coder, event_id),
    ).fetchone()
    return later is None


def current_decision(
    conn: sqlite3.Connection, index: StudyIndex, rid: int, cid: int, coder: str | None
) -> Decision | None:
    """The current decision on a pair: ``coder``'s, or the latest of any coder."""
    sql = (
        "SELECT a.event_id, a.value, a.source, a.coder, a.decided_at, n.note "
        "FROM annotations a LEFT JOIN notes n ON n.rid = a.rid AND n.cid = a.cid "
        "AND n.coder = a.coder WHERE a.rid = ? AND a.cid = ?"
    )
    params: list[Any] = [rid, cid]
    if coder is not None:
        sql += " AND a.coder = ?"
        params.append(coder)
    sql += " ORDER BY a.decided_at DESC, a.event_id DESC LIMIT 1"
    row = conn.execute(sql, params).fetchone()
    if row is None:
        return None
    return Decision(
        id=int(row[0]),
        response_id=index.response_id(rid),
        code_id=index.code_at(cid).id,
        value=int(row[1]),
        source=row[2],
        coder=row[3],
        note=row[5],
        at=row[4],
    )


def _restore(
    conn: sqlite3.Connection,
    rid: int,
    cid: int,
    coder: str,
    prev_value: int | None,
    prev_source: str | None,
    prev_event: int | None,
) -> None:
    """Put back the decision an undone event replaced (none: delete it), with its time,
    configuration and blind flag as the event that made it recorded them."""
    if prev_value is None:
        _delete_annotation(conn, rid, cid, coder)
        return
    # A decision always has a source and the event that made it.
    assert prev_source is not None
    assert prev_event is not None
    made = events.event_row(conn, prev_event, ("at", "config_id", "blind"))
    assert made is not None  # the log is never deleted from
    at_prev, config_prev, blind_prev = made
    _upsert_annotation(
        conn,
        rid,
        cid,
        coder,
        prev_value,
        prev_source,
        config_prev,
        prev_event,
        at_prev,
        blind=bool(blind_prev),
    )


def _delete_annotation(conn: sqlite3.Connection, rid: int, cid: int, coder: str) -> None:
    conn.execute(
        "DELETE FROM annotations WHERE rid = ? AND cid = ? AND coder = ?", (rid, cid, coder)
    )


def _upsert_annotation(
    conn: sqlite3.Connection,
    rid: int,
    cid: int,
    coder: str,
    value: int,
    source: str,
    config_id: int | None,
    event_id: int,
    at: str,
    *,
    blind: bool = False,
) -> None:
    conn.execute(
        "INSERT INTO annotations (rid, cid, coder, value, source, config_id, event_id, "
        "decided_at, blind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (rid, cid, coder) "
        "DO UPDATE SET value = excluded.value, source = excluded.source, "
        "config_id = excluded.config_id, event_id = excluded.event_id, "
        "decided_at = excluded.decided_at, blind = excluded.blind",
        (rid, cid, coder, value, source, config_id, event_id, at, int(blind)),
    )


def _put_note(
    conn: sqlite3.Connection, rid: int, cid: int, coder: str, note: str | None, event_id: int | None
) -> None:
    if note is None or event_id is None:
        conn.execute("DELETE FROM notes WHERE rid = ? AND cid = ? AND coder = ?", (rid, cid, coder))
    else:
        conn.execute(
            "INSERT INTO notes (rid, cid, coder, note, event_id) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (rid, cid, coder) DO UPDATE SET note = excluded.note, "
            "event_id = excluded.event_id",
            (rid, cid, coder, note, event_id),
        )


def memo_state(conn: sqlite3.Connection, rid: int, coder: str) -> tuple[str | None, int | None]:
    """``coder``'s memo on response ``rid`` and the event that set it (None, None: none)."""
    row = conn.execute(
        "SELECT note, event_id FROM memos WHERE rid = ? AND coder = ?", (rid, coder)
    ).fetchone()
    return (None, None) if row is None else (str(row[0]), int(row[1]))


def set_memo(
    conn: sqlite3.Connection, index: StudyIndex, rid: int, coder: str, note: str | None
) -> Decision:
    """Append a ``note`` event with no code and set (or, empty, remove) the memo."""
    prev_note, prev_event = memo_state(conn, rid, coder)
    note = note or None
    stamp = now()
    event_id = events.append(
        conn,
        "note",
        at=stamp,
        coder=coder,
        rid=rid,
        note=note,
        sets_note=1,
        prev_note=prev_note,
        prev_note_event=prev_event,
    )
    _put_memo(conn, rid, coder, note, event_id)
    return Decision(event_id, index.response_id(rid), "", None, None, coder, note, stamp, "note")


def _undo_memo(
    conn: sqlite3.Connection,
    index: StudyIndex,
    coder: str,
    event_id: int,
    rid: int,
    note: str | None,
    at: str,
    prev_note: str | None,
    prev_note_event: int | None,
) -> Decision:
    """Undo a memo event: the memo it replaced comes back."""
    current, current_event = memo_state(conn, rid, coder)
    events.append(
        conn,
        "undo",
        coder=coder,
        rid=rid,
        note=prev_note,
        sets_note=1,
        prev_note=current,
        prev_note_event=current_event,
        undoes=event_id,
    )
    _put_memo(conn, rid, coder, prev_note, prev_note_event)
    return Decision(int(event_id), index.response_id(rid), "", None, None, coder, note, at, "note")


def _put_memo(
    conn: sqlite3.Connection, rid: int, coder: str, note: str | None, event_id: int | None
) -> None:
    if note is None or event_id is None:
        conn.execute("DELETE FROM memos WHERE rid = ? AND coder = ?", (rid, coder))
    else:
        conn.execute(
            "INSERT INTO memos (rid, coder, note, event_id) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (rid, coder) DO UPDATE SET note = excluded.note, "
            "event_id = excluded.event_id",
            (rid, coder, note, event_id),
        )
