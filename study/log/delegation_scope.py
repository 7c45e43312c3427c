"""The pairs a delegation plan counts, read once for every code of a configuration.

:func:`study.log.delegations.barred`, :func:`~study.log.delegations.outside_audit` and
:func:`~study.log.delegations.delegable` answer for one code, each with its own queries
over the whole configuration's scores and the whole study's responses. A plan over m
codes asks them m times. :class:`DelegationScope` reads the configuration's scores
(response, code, confidence), the study's responses, the audit sample and the pairs with
a decision that is not delegated once, under one snapshot, and answers the same three
questions per code with numpy, with the same results.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import numpy as np

from study.audit.sample import AuditSample, read_audit
from study.index import StudyIndex
from study.iteration import revisions
from study.log.delegations import Barred

_Array = np.ndarray[Any, Any]


class DelegationScope:
    """A configuration's scores and a study's decided pairs, read once for a plan.

    Build it inside one snapshot; every answer then comes from what it read.
    """

    def __init__(self, conn: sqlite3.Connection, index: StudyIndex, config_id: int) -> None:
        self._conn = conn
        self._index = index
        self._config_id = config_id
        self._sample: AuditSample | None = read_audit(conn, index)
        # No ORDER BY: the covering index on confidence answers it without reading the
        # scores' rows (their curves); sorted by code here.
        rows = conn.execute(
            "SELECT cid, rid, confidence FROM scores WHERE config_id = ?", (config_id,)
        ).fetchall()
        table = np.array(rows, dtype=[("cid", np.int64), ("rid", np.int64), ("p", float)])
        table = table[np.lexsort((table["rid"], table["cid"]))]
        self._cids = table["cid"]
        self._rids = table["rid"]
        self._confidence = table["p"]
        self._everyone = np.fromiter(
            (int(r[0]) for r in conn.execute("SELECT rid FROM responses")), dtype=np.int64
        )
        coded: dict[int, list[int]] = {}
        for rid, cid in conn.execute(
            "SELECT rid, cid FROM annotations WHERE source != 'delegated'"
        ).fetchall():
            coded.setdefault(int(cid), []).append(int(rid))
        self._coded = {cid: np.unique(np.asarray(r, dtype=np.int64)) for cid, r in coded.items()}
        if self._sample is None:
            self._new = np.zeros(0, dtype=np.int64)
        else:
            drawn = np.asarray(
                [index.response_key(r) for r in self._sample.permutation], dtype=np.int64
            )
            self._new = np.setdiff1d(self._everyone, drawn)
        self._barred: dict[int, _Array] = {}

    def _scores_of(self, cid: int) -> slice:
        lo, hi = np.searchsorted(self._cids, [cid, cid + 1])
        return slice(int(lo), int(hi))

    def _coded_of(self, cid: int) -> _Array:
        return self._coded.get(cid, np.zeros(0, dtype=np.int64))

    def _population(self, cid: int) -> _Array:
        """The responses code ``cid`` applies to (all of them unless it is scoped to
        survey questions, :mod:`study.scope`)."""
        if not self._index.scope.scoped:
            return self._everyone
        return np.intersect1d(
            self._everyone, np.fromiter(self._index.scope.rids(cid), dtype=np.int64)
        )

    def _audit_of(self, code_id: str) -> _Array:
        if self._sample is None:
            return np.zeros(0, dtype=np.int64)
        keys = [self._index.response_key(r) for r in self._sample.pairs(code_id)]
        return np.asarray(keys, dtype=np.int64)

    def barred(self, code_id: str) -> Barred:
        """:func:`study.log.delegations.barred` of ``code_id``."""
        cid = self._index.code_key(code_id)
        audit = np.unique(self._audit_of(code_id))
        outside = np.setdiff1d(self._everyone, self._population(cid))
        new = np.setdiff1d(self._new, outside)
        stale = np.setdiff1d(
            np.fromiter(
                revisions.stale_keys(self._conn, self._index, self._config_id, cid),
                dtype=np.int64,
            ),
            np.union1d(audit, new),
        )
        keys = np.union1d(np.union1d(np.union1d(audit, new), stale), outside)
        self._barred[cid] = keys
        coded = self._coded_of(cid)
        return Barred(
            json.dumps([int(k) for k in keys]),
            int(np.setdiff1d(new, coded).size),
            int(np.setdiff1d(stale, coded).size),
        )

    def _barred_keys(self, code_id: str, cid: int) -> _Array:
        if cid not in self._barred:
            self.barred(code_id)
        return self._barred[cid]

    def outside_audit(self, code_id: str) -> tuple[_Array, _Array]:
        """:func:`study.log.delegations.outside_audit` of ``code_id`` with its
        :meth:`barred` pairs: the confidences and which are uncoded (in response order)."""
        cid = self._index.code_key(code_id)
        at = self._scores_of(cid)
        rids = self._rids[at]
        keep = ~np.isin(rids, self._barred_keys(code_id, cid))
        uncoded = ~np.isin(rids[keep], self._coded_of(cid))
        return self._confidence[at][keep], uncoded

    def delegable(self, code_id: str, threshold: float | None) -> tuple[int, int, int]:
        """:func:`study.log.delegations.delegable` of ``code_id`` with its :meth:`barred`
        pairs: ``(uncoded, unscored, at_or_above)``."""
        cid = self._index.code_key(code_id)
        audit = self._audit_of(code_id)
        coded = self._coded_of(cid)
        population = self._population(cid)
        free = ~np.isin(population, coded) & ~np.isin(population, audit)
        uncoded = int(free.sum())
        at = self._scores_of(cid)
        rids = self._rids[at]
        fresh = ~np.isin(rids, coded)
        scored = int((fresh & ~np.isin(rids, audit)).sum())
        above = 0
        if threshold is not None:
            high = self._confidence[at] >= threshold
            above = int((high & fresh & ~np.isin(rids, self._barred_keys(code_id, cid))).sum())
        return uncoded, uncoded - scored, above

    def confidence_of(self, code_id: str, response_ids: list[str]) -> _Array:
        """The confidence of ``code_id``'s scored pairs among ``response_ids`` (unscored
        ones left out), in response order."""
        cid = self._index.code_key(code_id)
        at = self._scores_of(cid)
        wanted = np.asarray([self._index.response_key(r) for r in response_ids], dtype=np.int64)
        return self._confidence[at][np.isin(self._rids[at], wanted)]
