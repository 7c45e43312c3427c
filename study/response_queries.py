"""Read-side queries of a study, response by response: the response mode's order.

The response mode (:mod:`tui.screens.response`) steps through responses rather than
(response, code) pairs; these methods page and place responses in a response order.
A mixin of :class:`study.store.Study`, like :class:`study.queries.PairQueries`.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from study.errors import StudyError
from study.index import StudyView
from study.listings import audit_responses

#: Orders of the response-by-response mode: the SQL that gives each response its sort
#: key (responses without a key follow, in id order), and whether the key sorts
#: descending; ``None`` orders by id alone. Another order (an audit permutation) is one
#: more entry.
RESPONSE_ORDER_KEYS: dict[str, tuple[str, bool] | None] = {
    "entropy": (
        "SELECT rid, MAX(norm_entropy) AS k FROM scores WHERE config_id = ? GROUP BY rid",
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

#: The response orders, in the order the app cycles through them.
RESPONSE_ORDERS: tuple[str, ...] = tuple(RESPONSE_ORDER_KEYS)


def _response_order(
    config_id: int | None,
    order: str,
    *,
    reverse: bool,
    study: StudyView | None = None,
    conn: sqlite3.Connection | None = None,
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
        assert study is not None
        assert conn is not None
        param = audit_responses(study, conn)
    return (
        f"responses r LEFT JOIN ({key_sql}) m ON m.rid = r.rid",
        f"m.k IS NULL, m.k {direction}, {rid}",
        [param],
    )


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
            order: One of :data:`RESPONSE_ORDERS`: ``entropy`` puts the response whose
                least sure code is least sure first (highest normalised entropy across
                its codes; unscored responses follow in id order); ``id`` natural order;
                ``audit`` the audit sample's responses in their random order (the
                others follow in id order).
            reverse: The order backwards.
            offset: Responses to skip.
            limit: Most responses returned.
        """
        if offset < 0 or limit < 0:
            raise StudyError("offset and limit must not be negative")
        with self.snapshot() as conn:
            source, order_by, params = _response_order(
                config_id, order, reverse=reverse, study=self, conn=conn
            )
            rows = conn.execute(
                f"SELECT r.rid FROM {source} ORDER BY {order_by} LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
        return [self.index.response_id(int(row[0])) for row in rows]

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
            source, order_by, params = _response_order(
                config_id, order, reverse=reverse, study=self, conn=conn
            )
            if order_by in ("r.rid", "r.rid DESC"):
                before = "r.rid > ?" if reverse else "r.rid < ?"
                row = conn.execute(f"SELECT COUNT(*) FROM responses r WHERE {before}", [rid])
                return int(row.fetchone()[0])
            row = conn.execute(
                f"SELECT pos FROM (SELECT r.rid AS rid, ROW_NUMBER() OVER (ORDER BY {order_by}) "
                f"- 1 AS pos FROM {source}) WHERE rid = ?",
                [*params, rid],
            )
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
