"""The event log: the one writer of the ``events`` table and its generic readers.

``events`` is the study's append-only log (:mod:`study.file.schema`): rows are never
updated or deleted, and every row is written by :func:`append` here. Each kind of event
declares in :data:`KINDS` the columns it may carry and those it must; a call that names
an unknown kind, a column its kind does not carry, or leaves a required column out is a
programming error (``ValueError`` or ``TypeError``), never a silent write. The kinds are
the schema's :data:`~study.file.schema.EVENT_KINDS` (the list SQLite checks); this module
refuses to load when the two disagree.

Every event has ``id``, ``at`` and ``kind``. A decision's ``codebook_version`` is stamped
by a trigger of the schema, so only a ``codebook`` event names it.

The specialised queries of the log (undo's "latest decision not undone", the records of
a batch) stay with the code that owns their meaning (:mod:`study.log.decision_log`).
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from study.file.schema import EVENT_KINDS
from study.rows import Event
from study.stamps import now

if TYPE_CHECKING:
    from study.index import StudyIndex


@dataclass(frozen=True)
class EventKind:
    """What one kind of event carries.

    Attributes:
        columns: The columns it may carry besides ``id``, ``at`` and ``kind``, in the
            order they are written.
        required: Those it must carry (given and not None).
    """

    columns: tuple[str, ...]
    required: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        extra = self.required - set(self.columns)
        if extra:
            raise ValueError(f"required columns {sorted(extra)} are not among the columns")


#: A decision, clearing, note or import: the pair, the new state and the state it replaced.
_DECISION = (
    "coder",
    "rid",
    "cid",
    "value",
    "source",
    "note",
    "sets_note",
    "config_id",
    "prev_value",
    "prev_source",
    "prev_event",
    "prev_note",
    "prev_note_event",
    "detail",
    "blind",
    "batch",
)

#: The kinds of event and what each carries (in :data:`EVENT_KINDS`' order).
KINDS: Mapping[str, EventKind] = MappingProxyType(
    {
        # A study created: counts and the responses' source (JSON).
        "create": EventKind(("detail",), frozenset({"detail"})),
        # A scoring configuration stored: its key and model (JSON).
        "config": EventKind(("config_id", "detail"), frozenset({"config_id", "detail"})),
        "record": EventKind(_DECISION, frozenset({"coder", "rid", "cid", "value", "source"})),
        "clear": EventKind(_DECISION, frozenset({"coder", "rid", "cid"})),
        # ``cid`` None: a memo on the whole response.
        "note": EventKind(_DECISION, frozenset({"coder", "rid"})),
        "import": EventKind(_DECISION, frozenset({"coder", "rid", "cid", "value", "source"})),
        # Reverts event ``undoes``; ``prev_*`` hold the state it replaced in turn.
        "undo": EventKind(
            (
                "coder",
                "rid",
                "cid",
                "value",
                "source",
                "note",
                "sets_note",
                "prev_value",
                "prev_source",
                "prev_event",
                "prev_note",
                "prev_note_event",
                "undoes",
                "batch",
            ),
            frozenset({"coder", "undoes"}),
        ),
        # A draw or extension of the audit sample: seed, sizes (JSON).
        "audit": EventKind(("detail",), frozenset({"detail"})),
        # A delegation applied (the plan as JSON); its records point to it by ``batch``.
        "delegate": EventKind(
            ("coder", "source", "config_id", "detail"),
            frozenset({"coder", "source", "config_id", "detail"}),
        ),
        # A study setting (JSON), by a coder.
        "setting": EventKind(("coder", "detail"), frozenset({"coder", "detail"})),
        "codebook": EventKind(
            ("detail", "codebook_version"), frozenset({"detail", "codebook_version"})
        ),
        # Responses added (JSON); their texts replaced are ``update`` events of its batch.
        "wave": EventKind(("detail",), frozenset({"detail"})),
        "update": EventKind(("rid", "detail", "batch"), frozenset({"rid", "detail", "batch"})),
        "activate": EventKind(("config_id",), frozenset({"config_id"})),
    }
)

if tuple(KINDS) != EVENT_KINDS:
    raise ImportError(
        f"study.file.events declares {list(KINDS)}, the schema checks {list(EVENT_KINDS)}"
    )

#: The columns of ``events`` that every reader may ask for.
COLUMNS = frozenset({"id", "at", "kind", "codebook_version"}).union(
    *(k.columns for k in KINDS.values())
)

#: What an omitted column is written as where NULL is not allowed (``NOT NULL DEFAULT 0``).
_DEFAULTS: Mapping[str, int] = MappingProxyType({"sets_note": 0, "blind": 0})


@dataclass(frozen=True)
class _Writer:
    """A kind's INSERT and what checks and orders its values, built once: the import path
    appends an event per decision."""

    sql: str
    allowed: frozenset[str]
    required: tuple[str, ...]
    blank: Mapping[str, Any]
    ordered: Callable[[Mapping[str, Any]], tuple[Any, ...]]

    @classmethod
    def of(cls, spec: EventKind) -> _Writer:
        columns = spec.columns
        return cls(
            sql=f"INSERT INTO events (at, kind, {', '.join(columns)}) "
            f"VALUES (?, ?{', ?' * len(columns)})",
            allowed=frozenset(columns),
            required=tuple(sorted(spec.required)),
            blank={c: _DEFAULTS.get(c) for c in columns},
            ordered=operator.itemgetter("at", "kind", *columns),
        )


_WRITERS = {name: _Writer.of(spec) for name, spec in KINDS.items()}

#: The SQL condition "event ``e`` was not reverted by an undo".
_STANDING = "NOT EXISTS (SELECT 1 FROM events u WHERE u.undoes = e.id)"


def declared(kind: str) -> EventKind:
    """The declaration of ``kind``.

    Raises:
        ValueError: not a kind of event.
    """
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown event kind {kind!r}; one of {', '.join(KINDS)}") from None


def append(conn: sqlite3.Connection, kind: str, *, at: str | None = None, **columns: Any) -> int:
    """Append one event (inside the caller's transaction); return its id.

    Args:
        conn: The study's connection.
        kind: One of :data:`KINDS`.
        at: Its time stamp (ISO 8601 UTC); now by default.
        **columns: The columns it carries, among those its kind declares.

    Raises:
        ValueError: an unknown kind.
        TypeError: a column the kind does not carry, or a required one missing.
    """
    writer = _WRITERS.get(kind)
    if writer is None:
        raise ValueError(f"unknown event kind {kind!r}; one of {', '.join(KINDS)}")
    if not writer.allowed.issuperset(columns):
        undeclared = sorted(columns.keys() - writer.allowed)
        raise TypeError(f"a {kind!r} event carries no {', '.join(undeclared)}")
    for column in writer.required:
        if columns.get(column) is None:
            missing = [c for c in writer.required if columns.get(c) is None]
            raise TypeError(f"a {kind!r} event needs {', '.join(missing)}")
    if len(columns) < len(writer.allowed):
        columns = {**writer.blank, **columns}
    # ``columns`` is this call's own dict (``**`` made it), so it may take these two.
    columns["at"] = now() if at is None else at
    columns["kind"] = kind
    return int(conn.execute(writer.sql, writer.ordered(columns)).lastrowid or 0)


def of_kind(
    conn: sqlite3.Connection,
    kind: str,
    columns: Sequence[str],
    *,
    standing: bool = False,
    coder: str | None = None,
    newest_first: bool = False,
) -> list[tuple[Any, ...]]:
    """``columns`` of the events of ``kind``, oldest first (or newest first).

    Args:
        standing: Only the events no undo has reverted.
        coder: Only this coder's.

    Raises:
        ValueError: an unknown kind or column.
    """
    declared(kind)
    sql = f"SELECT {_listed(columns)} FROM events e WHERE kind = ?"
    params: list[Any] = [kind]
    if standing:
        sql += f" AND {_STANDING}"
    if coder is not None:
        sql += " AND coder = ?"
        params.append(coder)
    sql += " ORDER BY id DESC" if newest_first else " ORDER BY id"
    return conn.execute(sql, params).fetchall()


def latest_id(conn: sqlite3.Connection, kind: str) -> int | None:
    """The id of the latest event of ``kind`` (None: there is none)."""
    declared(kind)
    row = conn.execute("SELECT MAX(id) FROM events WHERE kind = ?", (kind,)).fetchone()
    return None if row[0] is None else int(row[0])


def event_row(
    conn: sqlite3.Connection, event_id: int, columns: Sequence[str], *, standing: bool = False
) -> tuple[Any, ...] | None:
    """``columns`` of event ``event_id`` (None: no such event, or, ``standing``, undone).

    Raises:
        ValueError: an unknown column.
    """
    sql = f"SELECT {_listed(columns)} FROM events e WHERE id = ?"
    if standing:
        sql += f" AND {_STANDING}"
    row: tuple[Any, ...] | None = conn.execute(sql, (event_id,)).fetchone()
    return row


def read_events(
    conn: sqlite3.Connection,
    index: StudyIndex,
    *,
    rid: int | None = None,
    cid: int | None = None,
    coder: str | None = None,
) -> list[Event]:
    """The event log, oldest first, optionally for one pair or coder."""
    sql = (
        "SELECT id, at, kind, coder, rid, cid, value, source, note, config_id, prev_value, "
        "prev_source, prev_note, undoes, detail FROM events WHERE 1 = 1"
    )
    params: list[Any] = []
    for column, value in (("rid", rid), ("cid", cid), ("coder", coder)):
        if value is not None:
            sql += f" AND {column} = ?"
            params.append(value)
    rows = conn.execute(sql + " ORDER BY id", params).fetchall()
    return [
        Event(
            id=r[0],
            at=r[1],
            kind=r[2],
            coder=r[3],
            response_id=None if r[4] is None else index.response_id(r[4]),
            code_id=None if r[5] is None else index.code_at(r[5]).id,
            value=r[6],
            source=r[7],
            note=r[8],
            config_id=r[9],
            prev_value=r[10],
            prev_source=r[11],
            prev_note=r[12],
            undoes=r[13],
            detail=r[14],
        )
        for r in rows
    ]


def _listed(columns: Sequence[str]) -> str:
    if not columns:
        raise ValueError("no column of events asked for")
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown:
        raise ValueError(f"events has no column {', '.join(unknown)}")
    return ", ".join(columns)
