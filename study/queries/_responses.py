"""The response mode's orders: responses of a study ranked, paged and placed.

The response mode (:mod:`tui.screens.response`) and the response list
(:mod:`tui.screens.responses`) step through responses rather than (response, code)
pairs; the queries of :class:`study.queries.pairs.Queries` (``response_page``,
``response_position``, ``response_after``, ``responses``) page and place them with
these functions.

Ordering by a key (the highest entropy across a response's codes) aggregates every score
of the configuration: about 50 ms on 150,000 pairs, too slow for every key press. The
ranking is therefore kept per study handle (:func:`keyed_ranking`) until scores are stored,
the codes or responses change, or another connection commits; a page, a position and a
step are then lookups.
"""

from __future__ import annotations

import sqlite3
import weakref
from dataclasses import dataclass
from typing import Any

from study.errors import StudyError
from study.queries._filters import pair_filters, where_sql
from study.queries._listings import audit_listing, audit_responses
from study.rows import RESPONSE_ORDERS
from study.view import StudyView

__all__ = [
    "RESPONSE_ORDERS",
    "RESPONSE_ORDER_KEYS",
    "keyed_ranking",
    "matching_keys",
    "page_keys",
    "ranked_keys",
]

#: Orders of the response-by-response mode: the SQL that gives each response its sort
#: key (responses without a key follow, in id order), and whether the key sorts
#: descending; ``None`` orders by id alone. Another order (an audit permutation) is one
#: more entry. ``{codable}`` stands for the codable codes' keys.
RESPONSE_ORDER_KEYS: dict[str, tuple[str, bool] | None] = {
    # Over the codable codes only: a code a revision removed keeps its scores, but its
    # entropy no longer says how sure the model is about the response.
    "entropy": (
        "SELECT rid, MAX(norm_entropy) AS k FROM scores WHERE config_id = ? "
        "AND cid IN ({codable}) GROUP BY rid",
        True,
    ),
    "id": None,
    # The audit's responses in their random order (the parameter: their rids, a JSON
    # array; see _response_order); the other responses follow in id order.
    "audit": (
        "SELECT CAST(value AS INTEGER) AS rid, CAST(key AS INTEGER) AS k FROM json_each(?)",
        False,
    ),
}


@dataclass(frozen=True)
class _Ranking:
    """Every response of a keyed order, in order (``rids``), and each one's place."""

    rids: tuple[int, ...]
    places: dict[int, int]


#: Rankings read, per study handle: (configuration, order, reverse, what they depend
#: on) -> the ranking. A handle's entry goes with it.
_RANKINGS: weakref.WeakKeyDictionary[StudyView, dict[tuple[Any, ...], _Ranking]] = (
    weakref.WeakKeyDictionary()
)

#: Most rankings kept per handle (each order, both ways, for a configuration or two).
_RANKINGS_KEPT = 8


def _response_order(
    config_id: int | None,
    order: str,
    *,
    reverse: bool,
    study: StudyView,
    conn: sqlite3.Connection,
) -> tuple[str, str, list[Any]]:
    """FROM and ORDER BY of responses ``r`` in a response order, and their parameters
    (the ``audit`` order reads the sample through ``study`` and ``conn``)."""
    if order not in RESPONSE_ORDER_KEYS:
        raise StudyError(
            f"unknown response order {order!r}; use one of {', '.join(RESPONSE_ORDERS)}"
        )
    keyed = RESPONSE_ORDER_KEYS[order]
    rid = "r.rid DESC" if reverse else "r.rid"
    if keyed is None:
        return "responses r", rid, []
    key_sql, descending = keyed
    direction = "DESC" if descending != reverse else ""
    param: Any = -1 if config_id is None else config_id
    if order == "audit":
        param = audit_responses(study, conn)
    keyed_sql = key_sql.format(codable=study.index.codable_sql)
    return (
        f"responses r LEFT JOIN ({keyed_sql}) m ON m.rid = r.rid",
        f"m.k IS NULL, m.k {direction}, {rid}",
        [param],
    )


def keyed_ranking(
    study: StudyView,
    conn: sqlite3.Connection,
    config_id: int | None,
    order: str,
    reverse: bool,
) -> _Ranking | None:
    """The whole ranking of a keyed order (read once, then kept); None for id order,
    which an index walk pages as fast.

    Kept until this handle stores scores (:attr:`study.scores.ledger.Scores.generation`), the
    codable codes or the responses change, or another connection commits
    (``PRAGMA data_version``).
    """
    source, order_by, params = _response_order(
        config_id, order, reverse=reverse, study=study, conn=conn
    )
    if not params:
        return None
    version = int(conn.execute("PRAGMA data_version").fetchone()[0])
    key = (
        config_id,
        order,
        reverse,
        tuple(params),
        study.scores.generation,
        study.index.codable_keys,
        study.response_count(),
        version,
    )
    kept = _RANKINGS.setdefault(study, {})
    ranking = kept.get(key)
    if ranking is None:
        rids = tuple(
            int(row[0])
            for row in conn.execute(f"SELECT r.rid FROM {source} ORDER BY {order_by}", params)
        )
        ranking = _Ranking(rids, {rid: place for place, rid in enumerate(rids)})
        if len(kept) >= _RANKINGS_KEPT:
            kept.clear()
        kept[key] = ranking
    return ranking


def page_keys(
    study: StudyView,
    conn: sqlite3.Connection,
    config_id: int | None,
    order: str,
    reverse: bool,
    offset: int,
    limit: int,
) -> list[int]:
    """The rids ``offset .. offset + limit`` of a response order."""
    if offset < 0 or limit < 0:
        raise StudyError("offset and limit must not be negative")
    ranking = keyed_ranking(study, conn, config_id, order, reverse)
    if ranking is not None:
        return list(ranking.rids[offset : offset + limit])
    direction = " DESC" if reverse else ""
    rows = conn.execute(
        f"SELECT rid FROM responses ORDER BY rid{direction} LIMIT ? OFFSET ?", [limit, offset]
    )
    return [int(row[0]) for row in rows]


def ranked_keys(
    study: StudyView,
    conn: sqlite3.Connection,
    config_id: int | None,
    order: str,
    reverse: bool,
) -> tuple[int, ...]:
    """Every rid of a response order, in order (a keyed one is the kept ranking)."""
    ranking = keyed_ranking(study, conn, config_id, order, reverse)
    if ranking is not None:
        return ranking.rids
    direction = " DESC" if reverse else ""
    rows = conn.execute(f"SELECT rid FROM responses ORDER BY rid{direction}")
    return tuple(int(row[0]) for row in rows)


def matching_keys(
    study: StudyView,
    conn: sqlite3.Connection,
    *,
    code_id: str | None,
    status: str | None,
    search: str | None,
    coder: str | None,
    wave: int | None,
) -> frozenset[int] | None:
    """The rids with at least one codable pair the queue's filters select; None when
    there is no filter (every response)."""
    if code_id is None and status is None and not search and wave is None:
        return None
    if status == "undecided":
        return _with_undecided(study, conn, code_id=code_id, search=search, coder=coder, wave=wave)
    audit = audit_listing(study, conn) if status == "review" else "[]"
    clauses, params = pair_filters(
        study,
        "r.rid",
        "c.cid",
        code_id=code_id,
        status=status,
        search=search,
        coder=coder,
        wave=wave,
        audit=audit,
    )
    rows = conn.execute(
        "SELECT DISTINCT r.rid FROM responses r JOIN codes c "
        f"ON c.cid IN ({study.index.codable_sql}) WHERE 1 = 1{where_sql(clauses)}",
        params,
    )
    return frozenset(int(row[0]) for row in rows)


def _with_undecided(
    study: StudyView,
    conn: sqlite3.Connection,
    *,
    code_id: str | None,
    search: str | None,
    coder: str | None,
    wave: int | None,
) -> frozenset[int]:
    """The rids with an undecided pair (of ``code_id``, or of any codable code): every
    response the other filters keep, less those decided on every such code. A read of
    the small ``annotations`` table, not a probe per pair (which costs some 80 ms on
    30,000 pairs, too slow for a key)."""
    if code_id is not None:
        cids: tuple[int, ...] = (study.index.code_key(code_id),)
    else:
        cids = study.index.codable_keys
    codes, count = ",".join(map(str, cids)), len(cids)
    mine = " AND a.coder = ?" if coder is not None else ""
    scope = study.index.scope
    if scope.scoped:
        # A response is complete when every code that applies to its question is decided.
        decided = dict(
            conn.execute(
                f"SELECT a.rid, COUNT(DISTINCT a.cid) FROM annotations a WHERE a.cid IN "
                f"({codes}) AND {scope.sql('a.rid', 'a.cid')}{mine} GROUP BY a.rid",
                [coder] if coder is not None else [],
            ).fetchall()
        )
        needed: dict[str | None, int] = {}
        complete = set()
        for rid in study.index.response_ids_by_key():
            question = scope.question_of(rid)
            if question not in needed:
                needed[question] = sum(1 for c in cids if scope.applies(rid, c))
            if decided.get(rid, 0) >= needed[question]:
                complete.add(rid)
    else:
        complete = {
            int(row[0])
            for row in conn.execute(
                f"SELECT a.rid FROM annotations a WHERE a.cid IN ({codes}){mine} "
                "GROUP BY a.rid HAVING COUNT(DISTINCT a.cid) >= ?",
                [*([coder] if coder is not None else []), count],
            )
        }
    clauses: list[str] = []
    params: list[Any] = []
    if wave is not None:
        clauses.append("wave = ?")
        params.append(wave)
    if search:
        folded = search.casefold()
        clauses.append("(instr(cc_fold(text), ?) > 0 OR instr(cc_fold(id), ?) > 0)")
        params += [folded, folded]
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    kept = conn.execute(f"SELECT rid FROM responses{where}", params)
    return frozenset(rid for (rid,) in kept if rid not in complete)
