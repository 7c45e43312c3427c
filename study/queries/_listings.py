"""Queue orders that list some pairs only, put in order in Python (:mod:`study.queries.pairs`).

``audit``: the blind audit pairs in the order to code them; ``shared``: the pairs another
coder decided, in the shared sample's seeded random order (:mod:`study.audit.blind`). A listing
is a JSON array of ``[rid, cid]`` that SQLite reads with ``json_each`` (:data:`LISTING`),
so the queue filters and pages it like any other order.
"""

from __future__ import annotations

import json
import sqlite3
import weakref

from study.audit.blind import read_blind_setting, shared_order
from study.audit.sample import read_audit
from study.file import events
from study.view import StudyView

#: Orders that list some pairs only, in an order computed in Python.
LISTED_ORDERS = ("audit", "shared")

#: The audit listing built last, per study handle: (latest audit event, the codes it
#: lists) -> JSON array. A handle's entry goes with it.
_AUDIT_LISTINGS: weakref.WeakKeyDictionary[StudyView, tuple[tuple[int, tuple[str, ...]], str]] = (
    weakref.WeakKeyDictionary()
)

#: The pairs of a listing (a JSON array of ``[rid, cid]``) with their place in it.
LISTING = (
    "SELECT CAST(json_extract(value, '$[0]') AS INTEGER) AS rid, "
    "CAST(json_extract(value, '$[1]') AS INTEGER) AS cid, CAST(key AS INTEGER) AS pos "
    "FROM json_each(?)"
)


def audit_listing(study: StudyView, conn: sqlite3.Connection) -> str:
    """The audit pairs in the order to code them, as a JSON array of ``[rid, cid]``.

    Built once per draw or extension and codebook (the permutation is computed in
    Python), and kept by the study handle.
    """
    latest = events.latest_id(conn, "audit")
    if latest is None:
        return "[]"
    codes = tuple(c.id for c in study.codes)
    key = (int(latest), codes)
    kept = _AUDIT_LISTINGS.get(study)
    if kept is not None and kept[0] == key:
        return kept[1]
    sample = read_audit(conn, study.index)
    assert sample is not None
    known = set(codes)
    listing = json.dumps(
        [
            [study.index.response_key(r), study.index.code_key(c)]
            for r, c in sample.queue()
            if c in known
        ]
    )
    _AUDIT_LISTINGS[study] = (key, listing)
    return listing


def shared_listing(study: StudyView, conn: sqlite3.Connection, coder: str | None) -> str:
    """The pairs another coder than ``coder`` decided, in the shared sample's order."""
    seed = read_blind_setting(conn).seed
    rows = conn.execute(
        "SELECT DISTINCT rid, cid FROM annotations WHERE source != 'delegated' "
        "AND (? IS NULL OR coder != ?)",
        (coder, coder),
    ).fetchall()
    ids = {
        (study.index.response_id(rid), study.index.code_at(cid).id): (int(rid), int(cid))
        for rid, cid in rows
    }
    return json.dumps([list(ids[p]) for p in shared_order(ids, seed=seed)])


def listing(study: StudyView, conn: sqlite3.Connection, order: str, coder: str | None) -> str:
    """The listing of ``order`` (``audit`` or ``shared``)."""
    if order == "audit":
        return audit_listing(study, conn)
    return shared_listing(study, conn, coder)


def audit_responses(study: StudyView, conn: sqlite3.Connection) -> str:
    """The audit sample's responses (rids) in audit order, as a JSON array."""
    seen: dict[int, None] = {}
    for rid, _ in json.loads(audit_listing(study, conn)):
        seen.setdefault(int(rid), None)
    return json.dumps(list(seen))
