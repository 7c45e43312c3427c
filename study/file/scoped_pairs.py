"""The ``scoped_pairs`` table: the study's scope on disk, so that SQL tests a pair with
one index seek.

:class:`study.scope.PairScope` decides which (response, code) pairs a study has; its
:meth:`~study.scope.PairScope.sql` tests a pair of a code scoped to questions by looking
it up in this table (``cid``, ``rid``; only the scoped codes have rows, every other code
applies to every response). A condition built from literal ``rid IN (...)`` lists made
SQLite build a temporary b-tree of every response on each run of each query (3-7 ms on
20,000 responses, whatever the query read).

The table is a copy, so it is written (:func:`sync`) in the transaction of every change
that can change the scope: the study's creation, a codebook revision (scoping added,
changed, removed; codes added or archived), a new wave (new responses, and the updated
attributes of existing ones) and the upgrade to schema 8. A process killed during any
of them leaves the old table with the old codebook and responses.
"""

from __future__ import annotations

import json
import sqlite3

from codebooks.model import Codebook
from study.errors import StudyError
from study.scope import PairScope, attrs_of, question_value


def read_questions(conn: sqlite3.Connection, codebook: Codebook) -> dict[int, str | None] | None:
    """``rid`` -> the question each response answers, when ``codebook`` scopes codes to
    questions (None otherwise: nothing needs them)."""
    if not codebook.scoped or codebook.question_column is None:
        return None
    column = codebook.question_column
    return {
        int(rid): question_value(attrs_of(attrs), column)
        for rid, attrs in conn.execute("SELECT rid, attrs FROM responses")
    }


def file_scope(conn: sqlite3.Connection) -> PairScope | None:
    """The scope of the study in ``conn`` as its tables say (the current codebook snapshot
    in ``meta``, the ``codes`` and the responses), or None before it has a codebook.

    The same pairs as the index's (:func:`study.iteration.revisions.load_index`): the
    codable codes of the current codebook; an archived code is not codable.

    Raises:
        StudyError: the stored codebook cannot be read (a damaged file).
    """
    row = conn.execute("SELECT value FROM meta WHERE key = 'codebook'").fetchone()
    if row is None:
        return None
    try:
        codebook = Codebook.from_dict(json.loads(row[0]))
    except (ValueError, TypeError, KeyError) as exc:
        raise StudyError(
            f"the study file is damaged: its codebook cannot be read ({exc}) "
            "(restore it from a copy)"
        ) from None
    codable = {c.id: c for c in codebook.codable}
    codes = {
        int(cid): codable[str(code_id)]
        for cid, code_id in conn.execute("SELECT cid, id FROM codes ORDER BY cid")
        if str(code_id) in codable
    }
    questions = read_questions(conn, codebook)
    if questions is None:
        questions = {int(r[0]): None for r in conn.execute("SELECT rid FROM responses")}
    return PairScope(codebook, codes, questions)


def has_table(conn: sqlite3.Connection) -> bool:
    """Whether the file has the table (a file built at an older schema, as the tests of
    an upgrade make, has not)."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'scoped_pairs'"
    ).fetchone()
    return found is not None


def sync(conn: sqlite3.Connection, scope: PairScope | None) -> None:
    """Make the table hold exactly ``scope``'s pairs of scoped codes (inside the caller's
    transaction); only the difference is written, so a wave writes its new responses'
    pairs and a revision those of the codes whose scoping changed.

    Args:
        conn: The study, inside a write transaction.
        scope: The scope the study has once the transaction commits (None: no pairs).
    """
    wanted = set() if scope is None else set(scope.scoped_pairs())
    held = {(int(cid), int(rid)) for cid, rid in conn.execute("SELECT cid, rid FROM scoped_pairs")}
    conn.executemany("DELETE FROM scoped_pairs WHERE cid = ? AND rid = ?", sorted(held - wanted))
    conn.executemany("INSERT INTO scoped_pairs (cid, rid) VALUES (?, ?)", sorted(wanted - held))
