"""The queue's filters as SQL, and counting and placing pairs in a listing.

Shared by :mod:`study.queries.pairs` (every order) and the listed orders of
:mod:`study.queries._listings`.
"""

from __future__ import annotations

import sqlite3
from math import isqrt
from typing import Any

from study.queries._listings import LISTING
from study.rows import CONSENSUS
from study.view import StudyView


def pair_filters(
    study: StudyView,
    rid: str,
    cid: str,
    *,
    code_id: str | None,
    status: str | None,
    search: str | None,
    coder: str | None,
    wave: int | None = None,
    audit: str = "[]",
) -> tuple[list[str], list[Any]]:
    """SQL conditions (and their parameters) on a pair whose keys are ``rid``/``cid``.

    ``audit``: the audit listing (:func:`audit_listing`), which status ``review`` needs.
    """
    # A code a codebook revision removed (archived) keeps its decisions but leaves the queue.
    clauses: list[str] = [f"{cid} NOT IN (SELECT cid FROM codes WHERE archived = 1)"]
    params: list[Any] = []
    scope = study.index.scope
    if scope.scoped:  # only the pairs whose code applies to the response's question
        clauses.append(scope.sql(rid, cid))
    if wave is not None:
        clauses.append(f"{rid} IN (SELECT rid FROM responses WHERE wave = ?)")
        params.append(wave)
    if code_id is not None:
        clauses.append(f"{cid} = ?")
        params.append(study.index.code_key(code_id))
    if status == "disagreement":
        clauses.append(disagreement_sql(rid, cid))
        params += [CONSENSUS, CONSENSUS]
    elif status is not None:
        sub = f"SELECT 1 FROM annotations a WHERE a.rid = {rid} AND a.cid = {cid}"
        if coder is not None:
            sub += " AND a.coder = ?"
            params.append(coder)
        if status in ("human", "model"):
            sub += " AND a.source = ?"
            params.append(status)
        clauses.append(
            f"NOT EXISTS ({sub})" if status in ("undecided", "review") else f"EXISTS ({sub})"
        )
        if status == "review":
            clauses.append(f"({rid}, {cid}) NOT IN (SELECT rid, cid FROM ({LISTING}))")
            params.append(audit)
    if search:
        folded = search.casefold()
        clauses.append(
            f"{rid} IN (SELECT rid FROM responses WHERE instr(cc_fold(text), ?) > 0 "
            "OR instr(cc_fold(id), ?) > 0)"
        )
        params += [folded, folded]
    return clauses, params


#: Statuses only a decided pair passes: its pairs are among the ``annotations``.
ANNOTATED_STATUSES = frozenset({"decided", "human", "model", "disagreement"})


def decision_clauses(status: str | None, coder: str | None) -> tuple[list[str], list[Any]]:
    """SQL conditions on a decision ``a`` (an ``annotations`` row): ``coder``'s, and of
    the source ``status`` names (``human``, ``model``), where given."""
    clauses: list[str] = []
    params: list[Any] = []
    if coder is not None:
        clauses.append("a.coder = ?")
        params.append(coder)
    if status in ("human", "model"):
        clauses.append("a.source = ?")
        params.append(status)
    return clauses, params


def decided_driver(
    study: StudyView,
    conn: sqlite3.Connection,
    *,
    code_id: str | None,
    status: str | None,
    coder: str | None,
    rows: int,
) -> tuple[str, list[Any]] | None:
    """The pairs that may pass a decided ``status``, as SQL (``rid``, ``cid``), when they
    are few; None when the status needs no decision, or when there are many.

    A page of such a status walks its order's index and tests every pair for a
    decision: with few decisions it passes nearly every pair of the study to fill one
    page (a second or more on a million pairs, and as long to find none). Starting
    from the decisions instead costs their number (joined to their scores and sorted).
    The switch is where the two costs meet: the walk tests about ``rows * pairs /
    decisions`` pairs to show ``rows`` (the page's offset plus its limit); the
    decisions' own rows are counted up to that bound, never past it.
    """
    if status not in ANNOTATED_STATUSES:
        return None
    clauses: list[str] = []
    params: list[Any] = []
    if code_id is not None:
        clauses.append("a.cid = ?")
        params.append(study.index.code_key(code_id))
    if status != "disagreement":
        more, more_params = decision_clauses(status, coder)
        clauses += more
        params += more_params
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    scope = study.index.scope
    pairs = scope.count(study.index.code_key(code_id)) if code_id is not None else scope.total
    bound = max(256, isqrt(max(1, rows) * pairs // 3))
    decided = conn.execute(
        f"SELECT COUNT(*) FROM (SELECT 1 FROM annotations a{where} LIMIT ?)", [*params, bound]
    ).fetchone()[0]
    if decided >= bound:
        return None
    return f"SELECT DISTINCT a.rid, a.cid FROM annotations a{where}", params


def disagreement_sql(rid: str, cid: str) -> str:
    """SQL: two coders other than the consensus coder (two ``?``) decided the pair
    differently."""
    return (
        f"EXISTS (SELECT 1 FROM annotations a JOIN annotations b ON b.rid = a.rid "
        f"AND b.cid = a.cid AND b.value <> a.value WHERE a.rid = {rid} AND a.cid = {cid} "
        "AND a.coder <> ? AND b.coder <> ?)"
    )


def where_sql(clauses: list[str]) -> str:
    return "".join(f" AND {c}" for c in clauses)


def listed_count(
    study: StudyView,
    conn: sqlite3.Connection,
    listing: str,
    code_id: str | None,
    status: str | None,
    search: str | None,
    coder: str | None,
    wave: int | None,
    *,
    audit: str = "[]",
) -> int:
    """How many pairs of a listing pass the filters."""
    clauses, params = pair_filters(
        study,
        "l.rid",
        "l.cid",
        code_id=code_id,
        status=status,
        search=search,
        coder=coder,
        wave=wave,
        audit=audit,
    )
    codable = study.index.codable_sql
    return int(
        conn.execute(
            f"SELECT COUNT(*) FROM ({LISTING}) l WHERE l.cid IN ({codable}){where_sql(clauses)}",
            [listing, *params],
        ).fetchone()[0]
    )


def listed_position(
    study: StudyView,
    conn: sqlite3.Connection,
    listing: str,
    rid: int,
    cid: int,
    filters: dict[str, Any],
    reverse: bool,
) -> int | None:
    """Offset of pair ``(rid, cid)`` in a filtered listing, or None when it is not in it."""
    clauses, params = pair_filters(study, "l.rid", "l.cid", **filters)
    codable = study.index.codable_sql
    base = f"FROM ({LISTING}) l WHERE l.cid IN ({codable}){where_sql(clauses)}"
    mine = conn.execute(
        f"SELECT l.pos {base} AND l.rid = ? AND l.cid = ?", [listing, *params, rid, cid]
    ).fetchone()
    if mine is None:
        return None
    return int(
        conn.execute(
            f"SELECT COUNT(*) {base} AND l.pos {'>' if reverse else '<'} ?",
            [listing, *params, int(mine[0])],
        ).fetchone()[0]
    )
