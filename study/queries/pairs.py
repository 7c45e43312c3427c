"""Read-side queries of a study: :class:`Queries` (``study.queries``).

The review queue and its counts (pairs), the response mode's pages (response by
response: the order's ranking is kept by :mod:`study.queries._responses`), progress and
the input to screening (columns in :mod:`study.queries._summaries`).

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

import json
from typing import TYPE_CHECKING, Any

from study.codec import blob_to_floats
from study.errors import StudyError
from study.queries._filters import decided_driver, decision_clauses
from study.queries._filters import listed_count as _listed_count
from study.queries._filters import listed_position as _listed_position
from study.queries._filters import pair_filters as _filters
from study.queries._filters import where_sql as _where
from study.queries._listings import (
    LISTED_ORDERS,
    audit_listing,
    listing,
)
from study.queries._listings import (
    LISTING as _LISTING,
)
from study.queries._responses import keyed_ranking, matching_keys, page_keys, ranked_keys
from study.queries._summaries import ANNOTATED_COLUMNS
from study.queries.page_rows import page_rows, pair_scale
from study.rows import ORDERS, STATUSES, PairRow, ResponseRow
from study.view import StudyView

if TYPE_CHECKING:
    import pandas as pd

# Re-exported: callers imported it from here before the cut.
__all__ = ["Queries", "pair_scale"]

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


def _pairs_from(driver: tuple[str, list[Any]] | None, codable: str) -> tuple[str, list[Any]]:
    """FROM clause over every pair (``r``, ``c``), or over the pairs of a
    :func:`~study.queries._filters.decided_driver`, which it then reads first."""
    if driver is None:
        return f"FROM responses r JOIN codes c ON c.cid IN ({codable})", []
    sql, params = driver
    return (
        f"FROM ({sql}) d CROSS JOIN responses r ON r.rid = d.rid "
        f"CROSS JOIN codes c ON c.cid = d.cid AND c.cid IN ({codable})",
        params,
    )


def _scored_from(driver: tuple[str, list[Any]] | None) -> tuple[str, list[Any]]:
    """FROM and WHERE over the scored pairs (``s``) of one configuration (its ``?``
    comes right after the returned parameters), optionally only a driver's pairs."""
    if driver is None:
        return "FROM scores s WHERE s.config_id = ?", []
    sql, params = driver
    return (
        f"FROM ({sql}) d CROSS JOIN scores s ON s.rid = d.rid AND s.cid = d.cid "
        "WHERE s.config_id = ?",
        params,
    )


def _check(order: str | None, status: str | None, offset: int, limit: int) -> None:
    if order is not None and order not in ORDERS:
        raise StudyError(f"unknown order {order!r}; use one of {', '.join(ORDERS)}")
    if status is not None and status not in STATUSES:
        raise StudyError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    if offset < 0 or limit < 0:
        raise StudyError("offset and limit must not be negative")


class Queries:
    """The read-side queries of a study (orders and filters in the module docstring)."""

    def __init__(self, study: StudyView) -> None:
        self._study = study

    def page(
        self,
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
        unscored pairs on the page where the scored ones run out). Under a status only
        decided pairs pass, with few decisions, the keys are read from the decisions
        instead (:func:`~study.queries._filters.decided_driver`).

        Args:
            config_id: The scoring configuration whose scores are shown; ``None`` lists the
                pairs without scores, in id order.
            order: ``entropy``, ``confidence``, ``pick`` or ``id``.
            code_id, status, search, coder: Filters.
            offset, limit: The page.
            wave: Only the responses this wave added (``study.versions.waves()``).
            reverse: Each order backwards (scored pairs still come before unscored ones).
        """
        study = self._study
        _check(order, status, offset, limit)
        if config_id is not None:
            study.scores.config_row(config_id)
        if limit == 0:
            return []
        codable = study.index.codable_sql
        with study.snapshot() as conn:
            audit = audit_listing(study, conn) if status == "review" else "[]"
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
                clauses, params = _filters(study, "l.rid", "l.cid", **filters)
                direction = " DESC" if reverse else ""
                return page_rows(
                    conn,
                    study,
                    config_id,
                    coder,
                    f"SELECT l.rid, l.cid, l.pos FROM ({_LISTING}) l "
                    f"WHERE l.cid IN ({codable}){_where(clauses)} "
                    f"ORDER BY l.pos{direction} LIMIT ? OFFSET ?",
                    [listing(study, conn, order, coder), *params, limit, offset],
                    f"p.pos{direction}",
                )
            driver = decided_driver(
                study, conn, code_id=code_id, status=status, coder=coder, rows=offset + limit
            )
            pairs, pairs_params = _pairs_from(driver, codable)
            if config_id is None or order == "id":
                clauses, params = _filters(study, "r.rid", "c.cid", **filters)
                return page_rows(
                    conn,
                    study,
                    config_id,
                    coder,
                    f"SELECT r.rid, c.cid {pairs} WHERE 1 = 1{_where(clauses)} "
                    f"ORDER BY {_id_order('r', reverse)} LIMIT ? OFFSET ?",
                    [*pairs_params, *params, limit, offset],
                    _id_order("p", reverse),
                )
            clauses, params = _filters(study, "s.rid", "s.cid", **filters)
            scored, scored_params = _scored_from(driver)
            scored_params = [*scored_params, config_id, *params]
            rows = page_rows(
                conn,
                study,
                config_id,
                coder,
                f"SELECT s.rid, s.cid {scored}{_where(clauses)} "
                f"ORDER BY {_order_by(_order_keys(order, reverse))} LIMIT ? OFFSET ?",
                [*scored_params, limit, offset],
                _order_by(_order_keys(order, reverse)),
            )
            if len(rows) < limit:
                # The scored pairs ran out on this page: continue with the unscored ones.
                if rows:
                    scored_total = offset + len(rows)
                else:
                    scored_total = int(
                        conn.execute(
                            f"SELECT COUNT(*) {scored}{_where(clauses)}", scored_params
                        ).fetchone()[0]
                    )
                # Counting the scores costs a pass over them; the driver's few pairs
                # are cheaper to look through for unscored ones.
                if driver is not None or study.scores.scored_count(config_id) < study.pair_count():
                    clauses, params = _filters(study, "r.rid", "c.cid", **filters)
                    rows += page_rows(
                        conn,
                        study,
                        config_id,
                        coder,
                        f"SELECT r.rid, c.cid {pairs} WHERE NOT EXISTS (SELECT 1 FROM scores s "
                        "WHERE s.config_id = ? AND s.rid = r.rid AND s.cid = c.cid)"
                        f"{_where(clauses)} ORDER BY {_id_order('r', reverse)} LIMIT ? OFFSET ?",
                        [
                            *pairs_params,
                            config_id,
                            *params,
                            limit - len(rows),
                            max(0, offset - scored_total),
                        ],
                        _id_order("p", reverse),
                    )
            return rows

    def position(
        self,
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
        """Where the pair is in :meth:`page`'s listing (its offset), or None if the
        filters leave it out.

        One count of the rows that sort before it, so the review app can find a pair that
        moved far (scored while highlighted) without paging through the queue.

        Args:
            config_id: The scoring configuration (as in :meth:`page`).
            response_id, code_id: The pair.
            order: The listing's order.
            code_filter, status, search, coder: The listing's filters (``code_id`` of
                :meth:`page`).
            reverse: The listing's order backwards.
        """
        study = self._study
        _check(order, status, 0, 0)
        if config_id is not None:
            study.scores.config_row(config_id)
        rid, cid = study.index.response_key(response_id), study.index.code_key(code_id)
        codable = study.index.codable_sql
        filters: dict[str, Any] = {
            "code_id": code_filter,
            "status": status,
            "search": search,
            "coder": coder,
            "wave": wave,
        }
        pairs = f"FROM responses r JOIN codes c ON c.cid IN ({codable})"
        earlier = ">" if reverse else "<"  # an id that sorts before, in id order
        with study.snapshot() as conn:
            filters["audit"] = audit_listing(study, conn) if status == "review" else "[]"
            if order in LISTED_ORDERS:
                return _listed_position(
                    study, conn, listing(study, conn, order, coder), rid, cid, filters, reverse
                )
            clauses, params = _filters(study, "r.rid", "c.cid", **filters)
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
            scored_clauses, scored_params = _filters(study, "s.rid", "s.cid", **filters)
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

    def of_response(
        self, config_id: int | None, response_id: str, *, coder: str | None = None
    ) -> list[PairRow]:
        """Every codable code of one response, in codebook order, as queue rows.

        Args:
            config_id: The scoring configuration whose scores are shown (``None``: none).
            response_id: The response.
            coder: Show this coder's decisions (default: the latest decision of any coder).
        """
        study = self._study
        if config_id is not None:
            study.scores.config_row(config_id)
        rid = study.index.response_key(response_id)
        codable = study.index.codable_sql
        with study.snapshot() as conn:
            return page_rows(
                conn,
                study,
                config_id,
                coder,
                f"SELECT r.rid, c.cid FROM responses r JOIN codes c ON c.cid IN ({codable}) "
                f"WHERE r.rid = ? AND {study.index.scope.sql('r.rid', 'c.cid')}",
                [rid],
                "p.cid",
            )

    def count(
        self,
        config_id: int | None,
        *,
        code_id: str | None = None,
        status: str | None = None,
        search: str | None = None,
        coder: str | None = None,
        wave: int | None = None,
        order: str | None = None,
    ) -> int:
        """How many pairs :meth:`page` lists with these filters (all pages).

        Every pair is listed whatever ``config_id``, so the count does not depend on it;
        it depends on ``order`` only for the listings (``audit``, ``shared``).
        """
        study = self._study
        _check(order, status, 0, 0)
        if config_id is not None:
            study.scores.config_row(config_id)
        with study.snapshot() as conn:
            if order in LISTED_ORDERS or status == "review":
                if status == "review" and order not in LISTED_ORDERS:
                    # Undecided, less the audit pairs that are undecided.
                    undecided = self.count(
                        config_id,
                        code_id=code_id,
                        status="undecided",
                        search=search,
                        coder=coder,
                        wave=wave,
                    )
                    listed, status = audit_listing(study, conn), "undecided"
                    return undecided - _listed_count(
                        study, conn, listed, code_id, status, search, coder, wave
                    )
                return _listed_count(
                    study,
                    conn,
                    listing(study, conn, str(order), coder),
                    code_id,
                    status,
                    search,
                    coder,
                    wave,
                    audit=audit_listing(study, conn) if status == "review" else "[]",
                )
            cids = (
                [study.index.code_key(code_id)]
                if code_id is not None
                else list(study.index.codable_keys)
            )
            scope = study.index.scope
            if search or wave is not None:
                folded = (search or "").casefold()
                # Every pair of the matching responses, or (codes scoped to questions)
                # those whose code applies to the response.
                base = int(
                    conn.execute(
                        "SELECT COUNT(*) FROM responses r JOIN codes c "
                        f"ON c.cid IN ({','.join(map(str, cids))}) "
                        f"WHERE {scope.sql('r.rid', 'c.cid')} AND "
                        "(instr(cc_fold(r.text), ?) > 0 OR instr(cc_fold(r.id), ?) > 0) "
                        "AND (? IS NULL OR r.wave = ?)",
                        (folded, folded, wave, wave),
                    ).fetchone()[0]
                )
            else:
                base = sum(scope.count(cid) for cid in cids)
            if status is None:
                return base
            if status == "disagreement":
                clauses, params = _filters(
                    study,
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
                study,
                "a.rid",
                "a.cid",
                code_id=code_id,
                status=None,
                search=search,
                coder=coder,
                wave=wave,
            )
            more, more_params = decision_clauses(status, coder)
            clauses += more
            params += more_params
            decided = int(
                conn.execute(
                    "SELECT COUNT(*) FROM (SELECT DISTINCT a.rid, a.cid FROM annotations a "
                    f"WHERE 1 = 1{_where(clauses)})",
                    params,
                ).fetchone()[0]
            )
            return base - decided if status == "undecided" else decided

    def response_page(
        self,
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
        study = self._study
        with study.snapshot() as conn:
            rids = page_keys(study, conn, config_id, order, reverse, offset, limit)
        return [study.index.response_id(rid) for rid in rids]

    def response_position(
        self,
        config_id: int | None,
        response_id: str,
        *,
        order: str = "entropy",
        reverse: bool = False,
    ) -> int:
        """Index of ``response_id`` in a response order (see :meth:`response_page`)."""
        study = self._study
        rid = study.index.response_key(response_id)
        with study.snapshot() as conn:
            ranking = keyed_ranking(study, conn, config_id, order, reverse)
            if ranking is not None:
                return ranking.places[rid]
            before = "rid > ?" if reverse else "rid < ?"
            row = conn.execute(f"SELECT COUNT(*) FROM responses WHERE {before}", [rid])
            return int(row.fetchone()[0])

    def response_after(
        self,
        config_id: int | None,
        response_id: str,
        *,
        step: int = 1,
        order: str = "entropy",
        reverse: bool = False,
    ) -> str | None:
        """The response ``step`` places after ``response_id`` (before, when negative) in
        a response order; None past either end."""
        study = self._study
        with study.snapshot():  # one read: the position and the page agree
            position = self.response_position(config_id, response_id, order=order, reverse=reverse)
            target = position + step
            if target < 0:
                return None
            page = self.response_page(
                config_id, order=order, reverse=reverse, offset=target, limit=1
            )
        return page[0] if page else None

    def response_step(
        self,
        config_id: int | None,
        response_id: str | None,
        *,
        step: int = 1,
        order: str = "entropy",
        reverse: bool = False,
        code_id: str | None = None,
        status: str | None = None,
        search: str | None = None,
        coder: str | None = None,
        wave: int | None = None,
    ) -> str | None:
        """The ``step``-th response after ``response_id`` (before it, when negative) in a
        response order, counting only the responses with a pair the queue's filters
        select (as in :meth:`page`); ``response_id`` need not be one of them (a response
        just finished), and None starts before the first. None past either end.

        One read of the order's kept ranking and one of the filtered set: a few
        milliseconds on 10,000 responses.
        """
        study = self._study
        with study.snapshot() as conn:
            ranked = ranked_keys(study, conn, config_id, order, reverse)
            members = matching_keys(
                study, conn, code_id=code_id, status=status, search=search, coder=coder, wave=wave
            )
            place = (
                -1
                if response_id is None
                else self.response_position(config_id, response_id, order=order, reverse=reverse)
            )
        if step == 0:
            return response_id
        found = 0
        indexes = range(place + 1, len(ranked)) if step > 0 else range(place - 1, -1, -1)
        for index in indexes:
            rid = ranked[index]
            if members is None or rid in members:
                found += 1
                if found == abs(step):
                    return study.index.response_id(rid)
        return None

    def response_tally(
        self,
        config_id: int | None,
        response_id: str,
        *,
        order: str = "entropy",
        reverse: bool = False,
        code_id: str | None = None,
        status: str | None = None,
        search: str | None = None,
        coder: str | None = None,
        wave: int | None = None,
    ) -> tuple[int, int]:
        """``(place, total)``: how many responses the filters select come before
        ``response_id`` in the order, and how many they select in all."""
        study = self._study
        with study.snapshot() as conn:
            ranked = ranked_keys(study, conn, config_id, order, reverse)
            members = matching_keys(
                study, conn, code_id=code_id, status=status, search=search, coder=coder, wave=wave
            )
            place = self.response_position(config_id, response_id, order=order, reverse=reverse)
        if members is None:
            return place, len(ranked)
        before = sum(1 for rid in ranked[:place] if rid in members)
        return before, len(members)

    def responses(
        self,
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
        study = self._study
        codable = study.index.codable_sql
        with study.snapshot() as conn:
            rids = page_keys(study, conn, config_id, order, reverse, offset, limit)
            if not rids:
                return []
            scores = (
                f"FROM scores s WHERE s.config_id = ? AND s.rid = r.rid AND s.cid IN ({codable})"
            )
            mine = "(? IS NULL OR {}.coder = ?)"
            scope_sql = study.index.scope.sql("a.rid", "a.cid")
            sql = (
                # A snippet needs the start of the text only.
                "SELECT r.rid, substr(r.text, 1, 600), "
                f"(SELECT MAX(s.norm_entropy) {scores}), (SELECT COUNT(*) {scores}), "
                "(SELECT COUNT(DISTINCT a.cid) FROM annotations a WHERE a.rid = r.rid "
                f"AND a.cid IN ({codable}) AND {scope_sql} AND {mine.format('a')}), "
                f"EXISTS (SELECT 1 FROM memos m WHERE m.rid = r.rid AND {mine.format('m')}), "
                "EXISTS (SELECT 1 FROM notes n WHERE n.rid = r.rid "
                f"AND n.cid IN ({codable}) AND {mine.format('n')}) "
                "FROM responses r WHERE r.rid IN (SELECT value FROM json_each(?))"
            )
            config = -1 if config_id is None else config_id
            params = [config, config, coder, coder, coder, coder, coder, coder, json.dumps(rids)]
            found = {int(row[0]): row for row in conn.execute(sql, params)}
        scope = study.index.scope
        codable_keys = study.index.codable_keys
        return [
            ResponseRow(
                response_id=study.index.response_id(rid),
                text=str(found[rid][1]),
                max_entropy=None if found[rid][2] is None else float(found[rid][2]),
                scored=int(found[rid][3]),
                decided=int(found[rid][4]),
                codes=sum(1 for cid in codable_keys if scope.applies(rid, cid)),
                memo=bool(found[rid][5]),
                noted=bool(found[rid][6]),
            )
            for rid in rids
        ]

    def progress(self, config_id: int | None = None, *, coder: str | None = None) -> dict[str, Any]:
        """Decided (and, with a configuration, scored) counts, overall and per code.

        Returns:
            ``{"total", "decided", "undecided", "human", "model", "scored", "by_code"}``
            where ``by_code`` maps each codable code id to the same keys (plus ``name``) for
            that code. ``scored`` is ``None`` without a configuration. A pair decided by
            several coders counts once in ``decided``; ``human``/``model`` count pairs with
            at least one decision of that source.
        """
        study = self._study
        if config_id is not None:
            study.scores.config_row(config_id)
        scope = study.index.scope
        # Only the study's pairs count: with codes scoped to questions, a decision
        # imported for a code on another question's response is not one of them.
        where = f"WHERE {scope.sql('rid', 'cid')}"
        params: list[Any] = []
        if coder is not None:
            where, params = f"{where} AND coder = ?", [coder]
        with study.snapshot() as conn:
            decided = dict(
                conn.execute(
                    "SELECT cid, COUNT(*) FROM (SELECT DISTINCT rid, cid FROM annotations "
                    f"{where}) GROUP BY cid",
                    params,
                ).fetchall()
            )
            by_source: dict[tuple[int, str], int] = {
                (int(cid), str(source)): int(count)
                for cid, source, count in conn.execute(
                    "SELECT cid, source, COUNT(*) FROM (SELECT DISTINCT rid, cid, source FROM "
                    f"annotations {where}) GROUP BY cid, source",
                    params,
                )
            }
            scored: dict[int, int] = {}
            if config_id is not None:
                scored = dict(
                    conn.execute(
                        "SELECT cid, COUNT(*) FROM scores WHERE config_id = ? "
                        f"AND {scope.sql('rid', 'cid')} GROUP BY cid",
                        (config_id,),
                    ).fetchall()
                )
        by_code: dict[str, dict[str, Any]] = {}
        for cid in study.index.codable_keys:
            code = study.index.code_at(cid)
            d = int(decided.get(cid, 0))
            n = scope.count(cid)
            by_code[code.id] = {
                "name": code.name,
                "total": n,
                "decided": d,
                "undecided": n - d,
                "human": by_source.get((cid, "human"), 0),
                "model": by_source.get((cid, "model"), 0),
                "scored": None if config_id is None else int(scored.get(cid, 0)),
            }
        total = scope.total
        decided_total = sum(c["decided"] for c in by_code.values())
        return {
            "total": total,
            "decided": decided_total,
            "undecided": total - decided_total,
            "human": sum(c["human"] for c in by_code.values()),
            "model": sum(c["model"] for c in by_code.values()),
            "scored": None if config_id is None else sum(c["scored"] for c in by_code.values()),
            "by_code": by_code,
        }

    def annotated_pairs(self, config_id: int | None, *, coder: str | None = None) -> pd.DataFrame:
        """Every decision with the model's score of its pair: the input to screening.

        One row per (response, code, coder) decision, ordered by response id, code, coder.
        ``source`` tells a coder's own decision (``human``) from an accepted model pick
        (``model``); screening should normally keep only ``human`` rows, since an accepted
        pick is not independent evidence. Score columns are missing (``NaN``/``None``,
        ``scored`` False) for a pair not scored under ``config_id``.

        Columns: ``ANNOTATED_COLUMNS``. ``applies``/``pick_applies`` reduce the decision and
        the pick to applies / does not apply (value >= the scale's ``applies_from``);
        ``p_applies`` is the model's probability mass on those values; ``scale_values`` are
        the option values matching ``probs``.
        """
        study = self._study
        import pandas as pd  # here, not at the top: the queue's pages must not pay for it

        if config_id is not None:
            study.scores.config_row(config_id)
        where, params = ("WHERE a.coder = ?", [coder]) if coder is not None else ("", [])
        with study.snapshot() as conn:
            rows = conn.execute(
                "SELECT a.rid, a.cid, a.coder, a.value, a.source, a.decided_at, s.pick, s.probs, "
                "s.confidence, s.norm_entropy, s.entropy, s.expected, s.spread, s.on_scale_mass, "
                "s.off_scale, s.truncated FROM annotations a LEFT JOIN scores s "
                "ON s.config_id = ? AND s.rid = a.rid AND s.cid = a.cid "
                f"{where} ORDER BY a.rid, a.cid, a.coder",
                [config_id if config_id is not None else -1, *params],
            ).fetchall()
        records = []
        scope = study.index.scope
        for (
            rid,
            cid,
            who,
            value,
            source,
            at,
            pick,
            probs,
            conf,
            nent,
            ent,
            exp,
            spread,
            mass,
            off,
            trunc,
        ) in rows:
            if not scope.applies(rid, cid):
                # A decision made before a revision scoped its code away from this
                # response's question: kept in the file, no pair of the study now.
                continue
            code = study.index.code_at(cid)
            scale = pair_scale(study, config_id, code)
            p = None if probs is None else blob_to_floats(probs)
            records.append(
                {
                    "response_id": study.index.response_id(rid),
                    "code_id": code.id,
                    "code_name": code.name,
                    "coder": who,
                    "value": int(value),
                    "source": source,
                    "decided_at": at,
                    "applies": bool(scale.applies(int(value))),
                    "scored": p is not None,
                    "pick": None if pick is None else int(pick),
                    "pick_applies": None if pick is None else bool(scale.applies(int(pick))),
                    "probs": p,
                    "p_max": conf,
                    "p_applies": None
                    if p is None
                    else float(
                        sum(
                            pk
                            for pk, v in zip(p, scale.values, strict=False)
                            if v >= scale.threshold
                        )
                    ),
                    "norm_entropy": nent,
                    "entropy": ent,
                    "expected": exp,
                    "spread": spread,
                    "on_scale_mass": mass,
                    "off_scale": None if off is None else bool(off),
                    "truncated": None if trunc is None else bool(trunc),
                    "scale_values": scale.values,
                    "applies_from": scale.threshold,
                }
            )
        return pd.DataFrame.from_records(records, columns=list(ANNOTATED_COLUMNS))
