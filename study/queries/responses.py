"""Read-side queries of a study, response by response: the response mode's order.

The response mode (:mod:`tui.screens.response`) and the response list
(:mod:`tui.screens.responses`) step through responses rather than (response, code)
pairs; these methods page and place responses in a response order and summarise a page
of them. A mixin of :class:`study.store.Study`, like :class:`study.queries.pairs.PairQueries`.

Ordering by a key (the highest entropy across a response's codes) aggregates every score
of the configuration: about 50 ms on 150,000 pairs, too slow for every key press. The
ranking is therefore kept per study handle (:func:`_ranking`) until scores are stored,
the codes or responses change, or another connection commits; a page, a position and a
step are then lookups.
"""

from __future__ import annotations

import json
import sqlite3
import weakref
from dataclasses import dataclass
from typing import Any

from study.errors import StudyError
from study.index import StudyView
from study.queries.listings import audit_responses
from study.rows import RESPONSE_ORDERS, ResponseRow

__all__ = ["RESPONSE_ORDERS", "RESPONSE_ORDER_KEYS", "ResponseQueries"]

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


def _ranking(
    study: StudyView,
    conn: sqlite3.Connection,
    config_id: int | None,
    order: str,
    reverse: bool,
) -> _Ranking | None:
    """The whole ranking of a keyed order (read once, then kept); None for id order,
    which an index walk pages as fast.

    Kept until this handle stores scores (:attr:`StudyView.score_generation`), the
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
        study.score_generation,
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


def _page_keys(
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
    ranking = _ranking(study, conn, config_id, order, reverse)
    if ranking is not None:
        return list(ranking.rids[offset : offset + limit])
    direction = " DESC" if reverse else ""
    rows = conn.execute(
        f"SELECT rid FROM responses ORDER BY rid{direction} LIMIT ? OFFSET ?", [limit, offset]
    )
    return [int(row[0]) for row in rows]


class ResponseQueries:
    """The response-level queries, as methods of :class:`study.store.Study` (a mixin).

    Each method uses only the study's public face (:class:`study.index.StudyView`).
    """

    def response_page(
        self: StudyView,
        config_id: int | None,
        *,
        order: str = "entropy",
        reverse: bool = False,
        offset: int = 0,
        limit: int = 40,
    ) -> list[str]:
        """Response ids ``offset .. offset + limit`` in a response order.

        Args:
            config_id: The configuration whose scores order them (``None``: id order).
            order: One of :data:`~study.rows.RESPONSE_ORDERS`: ``entropy`` puts the
                response whose least sure code is least sure first (highest normalised
                entropy across its codable codes; unscored responses follow in id
                order); ``id`` natural order; ``audit`` the audit sample's responses in
                their random order (the others follow in id order).
            reverse: The order backwards.
            offset: Responses to skip.
            limit: Most responses returned.
        """
        with self.snapshot() as conn:
            rids = _page_keys(self, conn, config_id, order, reverse, offset, limit)
        return [self.index.response_id(rid) for rid in rids]

    def response_position(
        self: StudyView,
        config_id: int | None,
        response_id: str,
        *,
        order: str = "entropy",
        reverse: bool = False,
    ) -> int:
        """Index of ``response_id`` in a response order (see :meth:`response_page`)."""
        rid = self.index.response_key(response_id)
        with self.snapshot() as conn:
            ranking = _ranking(self, conn, config_id, order, reverse)
            if ranking is not None:
                return ranking.places[rid]
            before = "rid > ?" if reverse else "rid < ?"
            row = conn.execute(f"SELECT COUNT(*) FROM responses WHERE {before}", [rid])
            return int(row.fetchone()[0])

    def response_after(
        self: StudyView,
        config_id: int | None,
        response_id: str,
        *,
        step: int = 1,
        order: str = "entropy",
        reverse: bool = False,
    ) -> str | None:
        """The response ``step`` places after ``response_id`` (before, when negative) in
        a response order; None past either end."""
        with self.snapshot():  # one read: the position and the page agree
            position = ResponseQueries.response_position(
                self, config_id, response_id, order=order, reverse=reverse
            )
            target = position + step
            if target < 0:
                return None
            page = ResponseQueries.response_page(
                self, config_id, order=order, reverse=reverse, offset=target, limit=1
            )
        return page[0] if page else None

    def query_responses(
        self: StudyView,
        config_id: int | None,
        *,
        order: str = "entropy",
        reverse: bool = False,
        offset: int = 0,
        limit: int = 40,
        coder: str | None = None,
    ) -> list[ResponseRow]:
        """One page of the response list: the responses of :meth:`response_page` (same
        order, same page), each summed up across its codes.

        One query for the page, each count an index seek per response: a page costs the
        same on 10,000 responses as on 10.

        Args:
            config_id: The configuration whose scores are summed up (and order them).
            order, reverse, offset, limit: As in :meth:`response_page`.
            coder: Count this coder's decisions, notes and memo only (default: any
                coder's, as the queue shows the latest decision of any coder).
        """
        codable = self.index.codable_sql
        with self.snapshot() as conn:
            rids = _page_keys(self, conn, config_id, order, reverse, offset, limit)
            if not rids:
                return []
            scores = (
                f"FROM scores s WHERE s.config_id = ? AND s.rid = r.rid AND s.cid IN ({codable})"
            )
            mine = "(? IS NULL OR {}.coder = ?)"
            sql = (
                # A snippet needs the start of the text only.
                "SELECT r.rid, substr(r.text, 1, 600), "
                f"(SELECT MAX(s.norm_entropy) {scores}), (SELECT COUNT(*) {scores}), "
                "(SELECT COUNT(DISTINCT a.cid) FROM annotations a WHERE a.rid = r.rid "
                f"AND a.cid IN ({codable}) AND {mine.format('a')}), "
                f"EXISTS (SELECT 1 FROM memos m WHERE m.rid = r.rid AND {mine.format('m')}), "
                "EXISTS (SELECT 1 FROM notes n WHERE n.rid = r.rid "
                f"AND n.cid IN ({codable}) AND {mine.format('n')}) "
                "FROM responses r WHERE r.rid IN (SELECT value FROM json_each(?))"
            )
            config = -1 if config_id is None else config_id
            params = [config, config, coder, coder, coder, coder, coder, coder, json.dumps(rids)]
            found = {int(row[0]): row for row in conn.execute(sql, params)}
        count = len(self.index.codable_keys)
        return [
            ResponseRow(
                response_id=self.index.response_id(rid),
                text=str(found[rid][1]),
                max_entropy=None if found[rid][2] is None else float(found[rid][2]),
                scored=int(found[rid][3]),
                decided=int(found[rid][4]),
                codes=count,
                memo=bool(found[rid][5]),
                noted=bool(found[rid][6]),
            )
            for rid in rids
        ]
