"""Read-side SQL for learning from a coder (:mod:`study.analysis`'s learned
configurations): who decided how much, a learned configuration's base, a coder's
decisions of one code, the codebook's snapshots, and which pairs a configuration scored
and kept features for.

Each function reads on the connection it is given (a snapshot or the caller's
transaction) and returns table keys (``rid``, ``cid``, configuration ids).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

#: How many response keys one look-up of :func:`scored_rids` names (well under SQLite's
#: limit on bound parameters).
RID_CHUNK = 500


def human_decision_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """How many decisions of their own (source ``human``) each coder made, by coder in
    order."""
    rows = conn.execute(
        "SELECT coder, COUNT(*) FROM annotations WHERE source = 'human' "
        "GROUP BY coder ORDER BY coder"
    ).fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


def learned_base(conn: sqlite3.Connection, learned_id: int) -> int | None:
    """The base (zero-shot) configuration id recorded for the learned ``learned_id``, or
    None when no fit of it is stored."""
    row = conn.execute(
        "SELECT base_config_id FROM learned WHERE config_id = ? LIMIT 1", (learned_id,)
    ).fetchone()
    return None if row is None else int(row[0])


def human_code_decisions(
    conn: sqlite3.Connection, coder: str, cid: int
) -> list[tuple[int, int, int]]:
    """``coder``'s own (source ``human``) decisions of code ``cid``: ``(rid, value,
    codebook_version)`` in rid order (version 1 where none was recorded)."""
    rows = conn.execute(
        "SELECT rid, value, COALESCE(codebook_version, 1) FROM annotations "
        "WHERE coder = ? AND cid = ? AND source = 'human' ORDER BY rid",
        (coder, cid),
    ).fetchall()
    return [(int(rid), int(value), int(version)) for rid, value, version in rows]


def codebook_snapshots(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    """Every codebook version and its codebook as stored (JSON text)."""
    rows = conn.execute("SELECT version, codebook FROM codebook_versions").fetchall()
    return [(int(version), codebook) for version, codebook in rows]


def scored_rids(
    conn: sqlite3.Connection, config_id: int, cid: int, rids: Sequence[int]
) -> set[int]:
    """Which of ``rids`` have a score of code ``cid`` under ``config_id``.

    The pairs asked about only (a look-up each, :data:`RID_CHUNK` at a time), never the
    code's every scored pair.
    """
    scored: set[int] = set()
    for start in range(0, len(rids), RID_CHUNK):
        part = rids[start : start + RID_CHUNK]
        scored.update(
            int(r[0])
            for r in conn.execute(
                "SELECT rid FROM scores WHERE config_id = ? AND cid = ? "
                f"AND rid IN ({', '.join('?' * len(part))})",
                (config_id, cid, *part),
            )
        )
    return scored


def missing_features(conn: sqlite3.Connection, config_id: int, cid: int) -> tuple[int, int]:
    """How many pairs of code ``cid`` ``config_id`` scored, and how many of them have no
    features kept for the text and definition they were scored on."""
    total, missing = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(NOT EXISTS (SELECT 1 FROM features f WHERE "
        "f.config_id = s.config_id AND f.cid = s.cid AND f.rid = s.rid AND "
        "f.text_hash = s.text_hash AND f.code_hash = s.code_hash)), 0) "
        "FROM scores s WHERE s.config_id = ? AND s.cid = ?",
        (config_id, cid),
    ).fetchone()
    return int(total), int(missing)
