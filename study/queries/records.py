"""Read-side SQL for the work floor (analysis, exchange): who decided, where chosen
coders disagree, the blind decisions, the responses' records and the confidences of
given pairs, and the rows the exports' tables are built of (scores, notes, memos,
archived codes, every coder's values). Learning's reads are in
:mod:`study.queries.learning`.

Each function reads on the connection it is given (a snapshot or the caller's
transaction) and returns table keys (``rid``, ``cid``); the callers turn them into ids.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

#: The codes of the current codebook that are archived, as a subquery.
_ARCHIVED = "SELECT cid FROM codes WHERE archived = 1"


def decision_coders(conn: sqlite3.Connection) -> list[str]:
    """Every coder with a decision, sorted (notes alone do not count)."""
    rows = conn.execute("SELECT DISTINCT coder FROM annotations ORDER BY 1").fetchall()
    return [str(r[0]) for r in rows]


def disagreeing_pairs(conn: sqlite3.Connection, coders: Sequence[str]) -> list[tuple[int, int]]:
    """The (rid, cid) pairs of codes not archived on which ``coders`` decided different
    values, in (rid, cid) order."""
    marks = ",".join("?" for _ in coders)
    return [
        (r, c)
        for r, c in conn.execute(
            f"SELECT a.rid, a.cid FROM annotations a WHERE a.coder IN ({marks}) "
            f"AND a.cid NOT IN ({_ARCHIVED}) GROUP BY a.rid, a.cid "
            "HAVING COUNT(DISTINCT a.value) > 1 ORDER BY a.rid, a.cid",
            list(coders),
        ).fetchall()
    ]


def coder_values(
    conn: sqlite3.Connection, coders: Sequence[str], keys: set[tuple[int, int]]
) -> dict[tuple[int, int, str], int]:
    """Each of ``coders``' decided value on the pairs ``keys``, by (rid, cid, coder)."""
    marks = ",".join("?" for _ in coders)
    values: dict[tuple[int, int, str], int] = {}
    for rid, cid, coder, value in conn.execute(
        f"SELECT rid, cid, coder, value FROM annotations WHERE coder IN ({marks})",
        list(coders),
    ):
        if (rid, cid) in keys:
            values[(rid, cid, coder)] = int(value)
    return values


def coder_notes(
    conn: sqlite3.Connection, coders: Sequence[str], keys: set[tuple[int, int]]
) -> dict[tuple[int, int, str], str]:
    """Each of ``coders``' note on the pairs ``keys``, by (rid, cid, coder)."""
    marks = ",".join("?" for _ in coders)
    notes: dict[tuple[int, int, str], str] = {}
    for rid, cid, coder, note in conn.execute(
        f"SELECT rid, cid, coder, note FROM notes WHERE coder IN ({marks})",
        list(coders),
    ):
        if (rid, cid) in keys and note is not None:
            notes[(rid, cid, coder)] = str(note)
    return notes


def response_texts(conn: sqlite3.Connection, rids: Iterable[int]) -> dict[int, str]:
    """The text of each response ``rids``, by rid."""
    wanted = ",".join(str(int(r)) for r in sorted(set(rids)))
    return {
        int(rid): str(text)
        for rid, text in conn.execute(f"SELECT rid, text FROM responses WHERE rid IN ({wanted})")
    }


def pair_confidences(
    conn: sqlite3.Connection, config_id: int, cid: int, rids: Sequence[int]
) -> list[float]:
    """The stored confidence of each scored pair (``rids``, ``cid``) under ``config_id``
    (pairs not scored are left out)."""
    rows = conn.execute(
        "SELECT confidence FROM scores WHERE config_id = ? AND cid = ? "
        "AND rid IN (SELECT value FROM json_each(?))",
        (config_id, cid, json.dumps(list(rids))),
    ).fetchall()
    return [float(r[0]) for r in rows]


def blind_decisions(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """Every blind human decision: ``(rid, cid, coder, value, codebook_version)``."""
    return conn.execute(
        "SELECT rid, cid, coder, value, codebook_version FROM annotations "
        "WHERE blind = 1 AND source = 'human'"
    ).fetchall()


def response_records(conn: sqlite3.Connection) -> list[tuple[str, str, dict[str, Any], int]]:
    """Every response in the study's order: ``(id, text, attributes, wave)`` (wave 1 in a
    file from before waves)."""
    try:
        rows = conn.execute("SELECT id, text, attrs, wave FROM responses ORDER BY pos")
        return [(r[0], r[1], json.loads(r[2]), int(r[3])) for r in rows.fetchall()]
    except sqlite3.OperationalError:  # a file from before waves
        rows = conn.execute("SELECT id, text, attrs FROM responses ORDER BY pos")
        return [(r[0], r[1], json.loads(r[2]), 1) for r in rows.fetchall()]


_DECISIONS = (
    "SELECT a.rid, a.cid, a.value, a.source, a.blind, a.coder, a.decided_at, "
    "COALESCE(a.codebook_version, 1), CASE WHEN a.source = 'delegated' THEN e.batch END "
    "FROM annotations a LEFT JOIN events e ON e.id = a.event_id"
)
_DECISIONS_OLD = (  # a file at a schema without codebook versions or batches
    "SELECT a.rid, a.cid, a.value, a.source, 0, a.coder, a.decided_at, 1, NULL FROM annotations a"
)


def decision_rows(conn: sqlite3.Connection, *, coder: str | None = None) -> list[tuple[Any, ...]]:
    """Every decision (of ``coder``, or everyone's), oldest first, as
    :data:`study.exchange.coders.DECISION_COLUMNS` tuples."""
    where = " WHERE a.coder = ?" if coder is not None else ""
    params = [] if coder is None else [coder]
    order = " ORDER BY a.decided_at, a.event_id"
    try:
        return conn.execute(_DECISIONS + where + order, params).fetchall()
    except sqlite3.OperationalError:
        return conn.execute(_DECISIONS_OLD + where + order, params).fetchall()


def ordered_responses(conn: sqlite3.Connection) -> list[tuple[int, str, str, dict[str, Any]]]:
    """Every response in the study's order: ``(rid, id, text, attributes)``."""
    rows = conn.execute("SELECT rid, id, text, attrs FROM responses ORDER BY pos").fetchall()
    return [(r[0], r[1], r[2], json.loads(r[3])) for r in rows]


def archived_decided_codes(conn: sqlite3.Connection, *, coder: str | None = None) -> list[int]:
    """The ``cid`` of every archived code with a decision (``coder``'s, when given), in
    order; none in a file at a schema without archived codes."""
    sql = (
        "SELECT cid FROM codes WHERE archived = 1 AND cid IN "
        "(SELECT cid FROM annotations" + (" WHERE coder = ?" if coder is not None else "") + ")"
    )
    try:
        rows = conn.execute(sql + " ORDER BY cid", [] if coder is None else [coder])
        return [int(r[0]) for r in rows.fetchall()]
    except sqlite3.OperationalError:  # a file at a schema without archived codes
        return []


def memo_rows(conn: sqlite3.Connection, *, coder: str | None = None) -> list[tuple[Any, ...]]:
    """Every memo (``coder``'s, when given) as ``(rid, coder, note)``, oldest first; none
    in a file at a schema without memos."""
    sql = "SELECT rid, coder, note FROM memos"
    params: list[Any] = []
    if coder is not None:
        sql += " WHERE coder = ?"
        params.append(coder)
    try:
        return conn.execute(sql + " ORDER BY event_id", params).fetchall()
    except sqlite3.OperationalError:  # a file at a schema without memos
        return []


def score_rows(conn: sqlite3.Connection, config_id: int) -> list[tuple[Any, ...]]:
    """Every score stored under ``config_id`` as stored: ``(rid, cid, pick, confidence,
    norm_entropy, entropy, expected, spread, on_scale_mass, off_scale, truncated, probs,
    surprisal)`` (``probs`` and ``surprisal`` the stored blobs)."""
    return conn.execute(
        "SELECT rid, cid, pick, confidence, norm_entropy, entropy, expected, spread, "
        "on_scale_mass, off_scale, truncated, probs, surprisal FROM scores "
        "WHERE config_id = ?",
        (config_id,),
    ).fetchall()


def note_rows(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """Every coder's note on a pair: ``(rid, cid, coder, note)``."""
    return conn.execute("SELECT rid, cid, coder, note FROM notes").fetchall()


def value_rows(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """Every coder's current decision on every pair: ``(rid, cid, coder, value)``."""
    return conn.execute("SELECT rid, cid, coder, value FROM annotations").fetchall()


def scored_pairs(conn: sqlite3.Connection, config_id: int) -> set[tuple[int, int]]:
    """The ``(rid, cid)`` of every pair scored under ``config_id``."""
    return {
        (int(r[0]), int(r[1]))
        for r in conn.execute("SELECT rid, cid FROM scores WHERE config_id = ?", (config_id,))
    }


def decision_coder_count(conn: sqlite3.Connection) -> int:
    """How many coders have a current decision on some pair."""
    return int(conn.execute("SELECT COUNT(DISTINCT coder) FROM annotations").fetchone()[0])


def current_segments(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """The segments of every coder's current decision (those a QDA program's coding
    came with): ``(rid, cid, coder, start, end)`` in text order; none in a file at a
    schema without segments."""
    try:
        return conn.execute(
            'SELECT s.rid, s.cid, s.coder, s.start, s."end" FROM segments s '
            "JOIN annotations a ON a.rid = s.rid AND a.cid = s.cid "
            "AND a.coder = s.coder AND a.event_id = s.event_id "
            'ORDER BY s.rid, s.cid, s.coder, s.start, s."end"'
        ).fetchall()
    except sqlite3.OperationalError:  # a file at a schema without segments
        return []


def blind_flags(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """Every current decision as ``(rid, cid, coder, blind)``."""
    return conn.execute("SELECT rid, cid, coder, blind FROM annotations").fetchall()


def dated_notes(
    conn: sqlite3.Connection, *, coder: str | None = None
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The notes on pairs and the memos on responses as they stand now (``coder``'s,
    when given), each with when it was written: ``(rid, cid, coder, note, at)``, a
    memo's ``cid`` None."""
    where, params = (" WHERE n.coder = ?", [coder]) if coder is not None else ("", [])
    pairs = conn.execute(
        "SELECT n.rid, n.cid, n.coder, n.note, e.at FROM notes n "
        "LEFT JOIN events e ON e.id = n.event_id" + where,
        params,
    ).fetchall()
    memos = conn.execute(
        "SELECT n.rid, NULL, n.coder, n.note, e.at FROM memos n "
        "LEFT JOIN events e ON e.id = n.event_id" + where,
        params,
    ).fetchall()
    return pairs, memos
