"""Read-side queries of a study: the review queue and its counts.

Designed for 10,000 responses x 20 codes (200,000 pairs) and more: every order of the
queue is an index walk that stops after one page (indexes in :mod:`study.file.schema`), and
counts come from the small ``annotations`` table rather than a scan of every pair.

The queue lists every (response, codable code) pair. Under a configuration, the scored
pairs come first in the chosen order; pairs not yet scored follow in id order (order
``id`` interleaves them, since it does not depend on scores). Orders:

``entropy``     normalised entropy, highest (least sure) first; ties by response id in
                natural order, then code order.
``confidence``  ``max_k p_k``, lowest first; same ties.
``pick``        the model's pick (scale value), highest first, then confidence,
                highest first; same ties.
``id``          response id (natural order), then code order.
``audit``       only the blind audit pairs, in the order to code them
                (:meth:`study.audit.sample.AuditSample.queue`: responses in their random
                audit order, a response's codes together).
``shared``      only the pairs a coder other than ``coder`` decided (not delegated),
                in the seeded random order of :func:`study.audit.blind.shared_order`.

The last two are listings: their pairs are put in order in Python (a few thousand at
most) and handed to SQLite as one JSON array, filtered and paged there. The audit
listing is kept per draw (:func:`audit_listing`).

Filters: ``code_id``; ``status`` ``undecided`` (no decision), ``decided`` (any),
``human`` or ``model`` (a decision of that source), ``disagreement`` (two coders other
than ``consensus`` decided different values), ``review`` (left for review: undecided
and not an audit pair, what a delegation leaves to people); ``search``, a case-insensitive
substring of the response text or id; ``coder`` restricts decisions to one coder (by
default any coder's decision counts, and a row shows the latest).
"""

from __future__ import annotations

from typing import Any

from study.errors import StudyError
from study.index import StudyView
from study.queries.filters import listed_count as _listed_count
from study.queries.filters import listed_position as _listed_position
from study.queries.filters import pair_filters as _filters
from study.queries.filters import where_sql as _where
from study.queries.listings import (
    LISTED_ORDERS,
    audit_listing,
    listing,
)
from study.queries.listings import (
    LISTING as _LISTING,
)
from study.queries.page_rows import page_rows, pair_scale
from study.rows import ORDERS, STATUSES, PairRow

# Re-exported: callers imported it from here before the cut.
__all__ = ["PairQueries", "pair_scale"]

#: The score columns of each order, with True where they sort descending (the indexes in
#: :mod:`study.schema` follow these; a reversed order walks them backwards).
_ORDER_KEYS = {
    "entropy": (("norm_entropy", True), ("rid", False), ("cid", False)),
    "confidence": (("confidence", False), ("rid", False), ("cid", False)),
    "pick": (("pick", True), ("confidence", True), ("rid", False), ("cid", False)),
}


def _order_keys(order: str, reverse: bool) -> tuple[tuple[str, bool], ...]:
    """The score columns of ``order``, every direction flipped when ``reverse``."""
    return tuple((column, descending != reverse) for column, descending in _ORDER_KEYS[order])


def _order_by(keys: tuple[tuple[str, bool], ...]) -> str:
    return ", ".join(f"s.{column}{' DESC' if descending else ''}" for column, descending in keys)


def _id_order(prefix: str, reverse: bool) -> str:
    """ORDER BY of id order over ``prefix.rid, prefix.cid`` (``r``/``c`` or ``p``)."""
    rid, cid = (f"{prefix}.rid", f"{prefix}.cid") if prefix == "p" else ("r.rid", "c.cid")
    return f"{rid} DESC, {cid} DESC" if reverse else f"{rid}, {cid}"


def _sorts_before(keys: tuple[tuple[str, bool], ...], values: list[Any]) -> tuple[str, list[Any]]:
    """SQL for "the score row ``s`` sorts before the row with ``values``" in an order."""
    terms: list[str] = []
    params: list[Any] = []
    for i, (column, descending) in enumerate(keys):
        equal = [f"s.{c} = ?" for c, _ in keys[:i]]
        terms.append(
            "(" + " AND ".join([*equal, f"s.{column} {'>' if descending else '<'} ?"]) + ")"
        )
        params += [*values[:i], values[i]]
    return "(" + " OR ".join(terms) + ")", params


def _check(order: str | None, status: str | None, offset: int, limit: int) -> None:
    if order is not None and order not in ORDERS:
        raise StudyError(f"unknown order {order!r}; use one of {', '.join(ORDERS)}")
    if status is not None and status not in STATUSES:
        raise StudyError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    if offset < 0 or limit < 0:
        raise StudyError("offset and limit must not be negative")


class PairQueries:
    """The read-side queries, as methods of :class:`study.store.Study` (a mixin).

    Each method uses only the study's public face (:class:`study.index.StudyView`).
    """

    def query_pairs(
        self: StudyView,
        config_id: int | None,
        *,
        order: str = "entropy",
        code_id: str | None = None,
        status: str | None = None,
        search: str | None = None,
        coder: str | None = None,
        offset: int = 0,
        limit: int = 100,
        wave: int | None = None,
        reverse: bool = False,
    ) -> list[PairRow]:
        """One page of the queue (orders and filters in the module docstring).

        A page is one query: the page's keys, taken in order by an index walk, joined with
        their scores, decisions, notes and response texts (plus a second query for the
        unscored pairs on the page where the scored ones run out).

        Args:
            study: The open self.
            config_id: The scoring configuration whose scores are shown; ``None`` lists the
                pairs without scores, in id order.
            order: ``entropy``, ``confidence``, ``pick`` or ``id``.
            code_id, status, search, coder: Filters.
            offset, limit: The page.
            wave: Only the responses this wave added (:meth:`Study.waves`).
            reverse: Each order backwards (scored pairs still come before unscored ones).
        """
        _check(order, status, offset, limit)
        if config_id is not None:
            self.config_row(config_id)
        if limit == 0:
            return []
        codable = self.index.codable_sql
        with self.snapshot() as conn:
            audit = audit_listing(self, conn) if status == "review" else "[]"
            # The same filters on each of the listings below, under their own aliases.
            filters: dict[str, Any] = {
                "code_id": code_id,
                "status": status,
                "search": search,
                "coder": coder,
                "wave": wave,
                "audit": audit,
            }
            if order in LISTED_ORDERS:
                clauses, params = _filters(self, "l.rid", "l.cid", **filters)
                direction = " DESC" if reverse else ""
                return page_rows(
                    conn,
                    self,
                    config_id,
                    coder,
                    f"SELECT l.rid, l.cid, l.pos FROM ({_LISTING}) l "
                    f"WHERE l.cid IN ({codable}){_where(clauses)} "
                    f"ORDER BY l.pos{direction} LIMIT ? OFFSET ?",
                    [listing(self, conn, order, coder), *params, limit, offset],
                    f"p.pos{direction}",
                )
            if config_id is None or order == "id":
                clauses, params = _filters(self, "r.rid", "c.cid", **filters)
                return page_rows(
                    conn,
                    self,
                    config_id,
                    coder,
                    f"SELECT r.rid, c.cid FROM responses r JOIN codes c ON c.cid IN ({codable}) "
                    f"WHERE 1 = 1{_where(clauses)} ORDER BY {_id_order('r', reverse)} "
                    "LIMIT ? OFFSET ?",
                    [*params, limit, offset],
                    _id_order("p", reverse),
                )
            clauses, params = _filters(self, "s.rid", "s.cid", **filters)
            rows = page_rows(
                conn,
                self,
                config_id,
                coder,
                f"SELECT s.rid, s.cid FROM scores s WHERE s.config_id = ?{_where(clauses)} "
                f"ORDER BY {_order_by(_order_keys(order, reverse))} LIMIT ? OFFSET ?",
                [config_id, *params, limit, offset],
                _order_by(_order_keys(order, reverse)),
            )
            if len(rows) < limit:
                # The scored pairs ran out on this page: continue with the unscored ones.
                if rows:
                    scored_total = offset + len(rows)
                else:
                    scored_total = int(
                        conn.execute(
                            f"SELECT COUNT(*) FROM scores s WHERE s.config_id = ?{_where(clauses)}",
                            (config_id, *params),
                        ).fetchone()[0]
                    )
                if self.scored_count(config_id) < self.pair_count():
                    clauses, params = _filters(self, "r.rid", "c.cid", **filters)
                    rows += page_rows(
                        conn,
                        self,
                        config_id,
                        coder,
                        "SELECT r.rid, c.cid FROM responses r JOIN codes c "
                        f"ON c.cid IN ({codable}) WHERE NOT EXISTS (SELECT 1 FROM scores s "
                        "WHERE s.config_id = ? AND s.rid = r.rid AND s.cid = c.cid)"
                        f"{_where(clauses)} ORDER BY {_id_order('r', reverse)} LIMIT ? OFFSET ?",
                        [config_id, *params, limit - len(rows), max(0, offset - scored_total)],
                        _id_order("p", reverse),
                    )
            return rows

    def pair_position(
        self: StudyView,
        config_id: int | None,
        response_id: str,
        code_id: str,
        *,
        order: str = "entropy",
        code_filter: str | None = None,
        status: str | None = None,
        search: str | None = None,
        coder: str | None = None,
        wave: int | None = None,
        reverse: bool = False,
    ) -> int | None:
        """Where the pair is in :func:`query_pairs`'s listing (its offset), or None if the
        filters leave it out.

        One count of the rows that sort before it, so the review app can find a pair that
        moved far (scored while highlighted) without paging through the queue.

        Args:
            study: The open self.
            config_id: The scoring configuration (as in :func:`query_pairs`).
            response_id, code_id: The pair.
            order: The listing's order.
            code_filter, status, search, coder: The listing's filters (``code_id`` of
                :func:`query_pairs`).
            reverse: The listing's order backwards.
        """
        _check(order, status, 0, 0)
        if config_id is not None:
            self.config_row(config_id)
        rid, cid = self.index.response_key(response_id), self.index.code_key(code_id)
        codable = self.index.codable_sql
        filters: dict[str, Any] = {
            "code_id": code_filter,
            "status": status,
            "search": search,
            "coder": coder,
            "wave": wave,
        }
        pairs = f"FROM responses r JOIN codes c ON c.cid IN ({codable})"
        earlier = ">" if reverse else "<"  # an id that sorts before, in id order
        with self.snapshot() as conn:
            filters["audit"] = audit_listing(self, conn) if status == "review" else "[]"
            if order in LISTED_ORDERS:
                return _listed_position(
                    self, conn, listing(self, conn, order, coder), rid, cid, filters, reverse
                )
            clauses, params = _filters(self, "r.rid", "c.cid", **filters)
            listed = conn.execute(
                f"SELECT 1 {pairs} WHERE r.rid = ? AND c.cid = ?{_where(clauses)}",
                [rid, cid, *params],
            ).fetchone()
            if listed is None:
                return None
            if config_id is None or order == "id":
                return int(
                    conn.execute(
                        f"SELECT COUNT(*) {pairs} WHERE (r.rid, c.cid) {earlier} (?, ?)"
                        f"{_where(clauses)}",
                        [rid, cid, *params],
                    ).fetchone()[0]
                )
            keys = _order_keys(order, reverse)
            columns = ", ".join(c for c, _ in keys)
            mine = conn.execute(
                f"SELECT {columns} FROM scores WHERE config_id = ? AND rid = ? AND cid = ?",
                (config_id, rid, cid),
            ).fetchone()
            scored_clauses, scored_params = _filters(self, "s.rid", "s.cid", **filters)
            scored = f"FROM scores s WHERE s.config_id = ?{_where(scored_clauses)}"
            if mine is not None:
                before, before_params = _sorts_before(keys, list(mine))
                return int(
                    conn.execute(
                        f"SELECT COUNT(*) {scored} AND {before}",
                        [config_id, *scored_params, *before_params],
                    ).fetchone()[0]
                )
            # Unscored pairs follow every scored one, in id order.
            scored_total = int(
                conn.execute(f"SELECT COUNT(*) {scored}", [config_id, *scored_params]).fetchone()[0]
            )
            unscored_before = int(
                conn.execute(
                    f"SELECT COUNT(*) {pairs} WHERE (r.rid, c.cid) {earlier} (?, ?) AND NOT EXISTS "
                    "(SELECT 1 FROM scores s WHERE s.config_id = ? AND s.rid = r.rid "
                    f"AND s.cid = c.cid){_where(clauses)}",
                    [rid, cid, config_id, *params],
                ).fetchone()[0]
            )
            return scored_total + unscored_before

    def response_pairs(
        self: StudyView, config_id: int | None, response_id: str, *, coder: str | None = None
    ) -> list[PairRow]:
        """Every codable code of one response, in codebook order, as queue rows.

        Args:
            study: The open self.
            config_id: The scoring configuration whose scores are shown (``None``: none).
            response_id: The response.
            coder: Show this coder's decisions (default: the latest decision of any coder).
        """
        if config_id is not None:
            self.config_row(config_id)
        rid = self.index.response_key(response_id)
        codable = self.index.codable_sql
        with self.snapshot() as conn:
            return page_rows(
                conn,
                self,
                config_id,
                coder,
                f"SELECT r.rid, c.cid FROM responses r JOIN codes c ON c.cid IN ({codable}) "
                "WHERE r.rid = ?",
                [rid],
                "p.cid",
            )

    def count_pairs(
        self: StudyView,
        config_id: int | None,
        *,
        code_id: str | None = None,
        status: str | None = None,
        search: str | None = None,
        coder: str | None = None,
        wave: int | None = None,
        order: str | None = None,
    ) -> int:
        """How many pairs :func:`query_pairs` lists with these filters (all pages).

        Every pair is listed whatever ``config_id``, so the count does not depend on it;
        it depends on ``order`` only for the listings (``audit``, ``shared``).
        """
        _check(order, status, 0, 0)
        if config_id is not None:
            self.config_row(config_id)
        with self.snapshot() as conn:
            if order in LISTED_ORDERS or status == "review":
                if status == "review" and order not in LISTED_ORDERS:
                    # Undecided, less the audit pairs that are undecided.
                    undecided = PairQueries.count_pairs(
                        self,
                        config_id,
                        code_id=code_id,
                        status="undecided",
                        search=search,
                        coder=coder,
                        wave=wave,
                    )
                    listed, status = audit_listing(self, conn), "undecided"
                    return undecided - _listed_count(
                        self, conn, listed, code_id, status, search, coder, wave
                    )
                return _listed_count(
                    self,
                    conn,
                    listing(self, conn, str(order), coder),
                    code_id,
                    status,
                    search,
                    coder,
                    wave,
                    audit=audit_listing(self, conn) if status == "review" else "[]",
                )
            codes = 1 if code_id is not None else len(self.index.codable_keys)
            if code_id is not None:
                self.index.code_key(code_id)
            if search or wave is not None:
                folded = (search or "").casefold()
                responses = int(
                    conn.execute(
                        "SELECT COUNT(*) FROM responses WHERE (instr(cc_fold(text), ?) > 0 "
                        "OR instr(cc_fold(id), ?) > 0) AND (? IS NULL OR wave = ?)",
                        (folded, folded, wave, wave),
                    ).fetchone()[0]
                )
            else:
                responses = self.response_count()
            base = responses * codes
            if status is None:
                return base
            if status == "disagreement":
                clauses, params = _filters(
                    self,
                    "p.rid",
                    "p.cid",
                    code_id=code_id,
                    status=status,
                    search=search,
                    coder=None,
                    wave=wave,
                )
                return int(
                    conn.execute(
                        "SELECT COUNT(*) FROM (SELECT DISTINCT rid, cid FROM annotations) p "
                        f"WHERE 1 = 1{_where(clauses)}",
                        params,
                    ).fetchone()[0]
                )
            clauses, params = _filters(
                self,
                "a.rid",
                "a.cid",
                code_id=code_id,
                status=None,
                search=search,
                coder=coder,
                wave=wave,
            )
            if coder is not None:
                clauses.append("a.coder = ?")
                params.append(coder)
            if status in ("human", "model"):
                clauses.append("a.source = ?")
                params.append(status)
            decided = int(
                conn.execute(
                    "SELECT COUNT(*) FROM (SELECT DISTINCT a.rid, a.cid FROM annotations a "
                    f"WHERE 1 = 1{_where(clauses)})",
                    params,
                ).fetchone()[0]
            )
            return base - decided if status == "undecided" else decided
