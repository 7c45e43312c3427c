"""Evidence of scored pairs kept in the study: ``study.evidence``.

The evidence of a pair (:class:`scoring.evidence.Evidence`: its sentences and what
leaving each out did) is stored under the configuration it was measured with, beside
the text and code hashes it was measured on. It is read back only while it still
describes the pair: the pair's score under that configuration has the same hashes, and
so do the study's current text of the response and the current definition of the code.
A rescoring with another configuration, an edited text (a wave's update) or a revised
definition therefore leaves it behind without deleting anything; computing it again
replaces it (it is derived data, not a record of anyone's work).

A learned configuration's evidence is measured on its learned curves
(:mod:`study.analysis._evidence`), and a refit gives a code another curve without
changing its scores' hashes. So the evidence of a learned code is kept with the
parameters' hash of the curve it was measured on (in the ``effects`` JSON: an object
``{"fit": hash, "sentences": [...]}`` where the zero-shot evidence is the bare list), and
is read back only while the code's kept fit (``learned.params_hash``) is the same: a
refit on other decisions leaves it behind, a code learned since leaves behind the
evidence measured on its zero-shot curve.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scoring.evidence import (
    NONE_NO_SENTENCE,
    NONE_ONE_SENTENCE,
    Evidence,
    SentenceEffect,
    applies_probability,
)
from scoring.score import Pair, text_hash
from study.codec import blob_to_floats
from study.errors import StudyError
from study.handle import StudyHandle
from study.stamps import now

_COLUMNS = (
    "e.rid, e.cid, e.text_hash, e.code_hash, e.applies, e.expected, e.sentences, e.effects, "
    "r.text, COALESCE(l.params_hash, '')"
)
_JOIN = (
    "FROM evidence e JOIN scores s ON s.config_id = e.config_id AND s.rid = e.rid "
    "AND s.cid = e.cid AND s.text_hash = e.text_hash AND s.code_hash = e.code_hash "
    "JOIN responses r ON r.rid = e.rid "
    "LEFT JOIN learned l ON l.config_id = e.config_id AND l.cid = e.cid"
)


class EvidenceLedger:
    """Store and read the evidence of a study's pairs (see the module)."""

    def __init__(self, study: StudyHandle) -> None:
        self._study = study

    def store(
        self,
        config_id: int,
        evidence: Iterable[Evidence],
        *,
        fits: Mapping[str, str] | None = None,
    ) -> int:
        """Keep ``evidence`` under ``config_id`` in one transaction (replacing what was
        kept for the same pairs); return how many were kept.

        Args:
            fits: Per code id, the parameters' hash of the learned curve the evidence was
                measured on (a code not in it: the zero-shot curve).
        """
        fit_of = fits or {}
        index = self._study.index
        stamp = now()
        rows = [
            (
                config_id,
                index.code_key(e.code_id),
                index.response_key(e.response_id),
                e.text_hash,
                e.code_hash,
                e.applies,
                e.expected if math.isfinite(e.expected) else None,
                e.total_sentences,
                _effects_json(e, fit_of.get(e.code_id, "")),
                stamp,
            )
            for e in evidence
        ]
        if not rows:
            return 0
        with self._study.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO evidence (config_id, cid, rid, text_hash, code_hash, "
                "applies, expected, sentences, effects, computed_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
        return len(rows)

    def get(self, config_id: int, response_id: str, code_id: str) -> Evidence | None:
        """The pair's valid evidence under ``config_id``, or None (never computed, or
        measured on another text or definition)."""
        index = self._study.index
        try:
            rid, cid = index.response_key(response_id), index.code_key(code_id)
        except StudyError:
            return None
        with self._study.query() as conn:
            row = _select(
                conn, "WHERE e.config_id = ? AND e.rid = ? AND e.cid = ?", (config_id, rid, cid)
            )
        found = self._valid(row)
        return found[0] if found else None

    def for_config(self, config_id: int, *, code_id: str | None = None) -> list[Evidence]:
        """Every valid evidence under ``config_id`` (of one code when given), in response
        then code order."""
        where, params = "WHERE e.config_id = ?", [config_id]
        # (a code unknown to the study raises StudyError, naming it)
        if code_id is not None:
            where += " AND e.cid = ?"
            params.append(self._study.index.code_key(code_id))
        with self._study.query() as conn:
            rows = _select(conn, where + " ORDER BY e.rid, e.cid", tuple(params))
        return self._valid(rows)

    def count(self, config_id: int) -> int:
        """Valid evidence kept under ``config_id``."""
        return len(self.for_config(config_id))

    def to_explain(self, config_id: int, code_ids: Sequence[str]) -> list[tuple[Pair, float]]:
        """The pairs of ``code_ids`` scored under ``config_id`` without valid evidence,
        with their P(applies), the most likely to apply first (ties: response order)."""
        index = self._study.index
        known = {(e.response_id, e.code_id) for e in self.for_config(config_id)}
        cids = [index.code_key(c) for c in code_ids]
        if not cids:
            return []
        marks = ", ".join("?" * len(cids))
        with self._study.query() as conn:
            rows = conn.execute(
                "SELECT s.rid, s.cid, s.probs, s.text_hash, r.text FROM scores s "
                "JOIN responses r ON r.rid = s.rid "
                f"WHERE s.config_id = ? AND s.cid IN ({marks}) ORDER BY s.rid, s.cid",
                (config_id, *cids),
            ).fetchall()
        out: list[tuple[Pair, float]] = []
        for rid, cid, probs, stored_hash, text in rows:
            code = index.code_at(int(cid))
            rid_text = index.response_id(int(rid))
            if (rid_text, code.id) in known or stored_hash != text_hash(text):
                continue  # explained already, or a stale score (rescore first)
            scale = self._study.codebook.scale_for(code)
            p = applies_probability(blob_to_floats(probs), scale)
            out.append((Pair(rid_text, text, code), p if math.isfinite(p) else 0.0))
        out.sort(key=lambda item: -item[1])
        return out

    def _valid(self, rows: list[tuple[Any, ...]]) -> list[Evidence]:
        """The rows measured on the study's current texts and definitions, as evidence."""
        index = self._study.index
        code_hashes: dict[int, str] = {}
        out = []
        for rid, cid, t_hash, c_hash, applies, expected, total, effects, text, fit in rows:
            key = int(cid)
            if key not in code_hashes:
                code_hashes[key] = index.code_at(key).content_hash()
            if c_hash != code_hashes[key] or t_hash != text_hash(str(text)):
                continue
            measured_fit, measured = _effects(str(effects))
            if measured_fit != str(fit):
                continue  # measured on another fit of the learned curve
            base_e = _nan(expected)
            base_p = float(applies)
            sentences = tuple(
                SentenceEffect(
                    int(a), int(b), float(p), _nan(e), base_p - float(p), base_e - _nan(e)
                )
                for a, b, p, e in measured
            )
            out.append(
                Evidence(
                    response_id=index.response_id(int(rid)),
                    code_id=index.code_at(key).id,
                    text_hash=str(t_hash),
                    code_hash=str(c_hash),
                    applies=base_p,
                    expected=base_e,
                    sentences=sentences,
                    total_sentences=int(total),
                    reason=_reason(int(total), sentences),
                )
            )
        return out


def _select(
    conn: sqlite3.Connection, where: str, params: tuple[object, ...]
) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute(f"SELECT {_COLUMNS} {_JOIN} {where}", params)]


def _effects_json(evidence: Evidence, fit: str) -> str:
    sentences = [
        [s.start, s.end, s.applies_without, _finite(s.expected_without)] for s in evidence.sentences
    ]
    return json.dumps({"fit": fit, "sentences": sentences} if fit else sentences)


def _effects(stored: str) -> tuple[str, list[list[Any]]]:
    """The fit's hash ("" for the zero-shot curve) and the sentences of an ``effects``."""
    value = json.loads(stored)
    if isinstance(value, dict):
        return str(value.get("fit", "")), list(value.get("sentences", []))
    return "", list(value)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _nan(value: Any) -> float:
    return math.nan if value is None else float(value)


def _reason(total: int, sentences: tuple[SentenceEffect, ...]) -> str:
    if sentences:
        return ""
    return NONE_ONE_SENTENCE if total == 1 else NONE_NO_SENTENCE
