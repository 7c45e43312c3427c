"""Rows of the review queue: one page of pairs read from SQLite as :class:`PairRow`.

Shared by the pair queries (:mod:`study.queries.pairs`); :func:`pair_scale` also by the
summaries and export frames.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from codebooks.model import Code, Scale
from study.codec import blob_to_floats
from study.rows import PairRow
from study.view import StudyView


def pair_scale(study: StudyView, config_id: int | None, code: Code) -> Scale:
    """The scale a pair is read on: the code's own, else the configuration's or codebook's."""
    if config_id is None:
        return study.codebook.scale_for(code)
    return code.scale or study.scores.config_row(config_id).scale


def page_rows(
    conn: sqlite3.Connection,
    study: StudyView,
    config_id: int | None,
    coder: str | None,
    keys_sql: str,
    keys_params: list[Any],
    order_sql: str,
) -> list[PairRow]:
    """The rows of the pairs ``keys_sql`` selects (``rid``, ``cid``), in ``order_sql``.

    ``keys_sql`` runs first, as a subquery (its ``LIMIT`` keeps the joins to one page);
    ``order_sql`` orders the page again by the same keys, over ``p`` (the page) and ``s``
    (its scores). A row shows the latest decision (of ``coder``, if given) and the note of
    that decision's coder; without a decision, ``coder``'s note, or else the latest note;
    and whether the response has a memo (``coder``'s, or else any coder's).
    """
    coder_filter = " AND a.coder = ?" if coder is not None else ""
    sql = (
        "SELECT p.rid, p.cid, r.text, s.surprisal, s.probs, s.pick, s.confidence, "
        "s.norm_entropy, s.off_scale, s.expected, s.spread, s.on_scale_mass, s.truncated, "
        "d.value, d.source, d.coder, d.decided_at, "
        "(SELECT n.note FROM notes n WHERE n.rid = p.rid AND n.cid = p.cid "
        "AND (COALESCE(d.coder, ?) IS NULL OR n.coder = COALESCE(d.coder, ?)) "
        "ORDER BY n.event_id DESC LIMIT 1), "
        # A memo on the response: coder's, or any coder's (memos' key is (rid, coder)).
        "EXISTS (SELECT 1 FROM memos m WHERE m.rid = p.rid AND (? IS NULL OR m.coder = ?)) "
        f"FROM ({keys_sql}) p JOIN responses r ON r.rid = p.rid "
        "LEFT JOIN scores s ON s.config_id = ? AND s.rid = p.rid AND s.cid = p.cid "
        "LEFT JOIN annotations d ON d.rid = p.rid AND d.cid = p.cid AND d.coder = "
        "(SELECT a.coder FROM annotations a WHERE a.rid = p.rid AND a.cid = p.cid"
        f"{coder_filter} ORDER BY a.decided_at DESC, a.event_id DESC LIMIT 1) "
        f"ORDER BY {order_sql}"
    )
    # The parameters in the order their ``?`` appear: note, memo, keys, scores, decision.
    params: list[Any] = [coder] * 4 + [*keys_params, -1 if config_id is None else config_id]
    if coder is not None:
        params.append(coder)
    return [pair_row(study, config_id, row) for row in conn.execute(sql, params)]


def pair_row(study: StudyView, config_id: int | None, row: tuple[Any, ...]) -> PairRow:
    """One row of :func:`page_rows`'s query as a :class:`PairRow`."""
    (rid, cid, text, surprisal, probs, pick, confidence, norm_entropy, off_scale) = row[:9]
    (expected, spread, on_scale_mass, truncated, value, source, who, at, note, memo) = row[9:]
    code = study.index.code_at(cid)
    scored = probs is not None
    return PairRow(
        response_id=study.index.response_id(rid),
        code_id=code.id,
        code_name=code.name,
        text=str(text),
        surprisal=blob_to_floats(surprisal) if scored else None,
        probs=blob_to_floats(probs) if scored else None,
        pick=int(pick) if scored else None,
        pick_label=pair_scale(study, config_id, code).label_of(int(pick)) if scored else None,
        confidence=float(confidence) if scored else None,
        norm_entropy=float(norm_entropy) if scored else None,
        off_scale=bool(off_scale) if scored else None,
        decision=None if value is None else int(value),
        source=None if value is None else str(source),
        coder=None if value is None else str(who),
        note=None if note is None else str(note),
        decided_at=None if value is None else str(at),
        expected=float(expected) if scored else None,
        spread=float(spread) if scored else None,
        on_scale_mass=float(on_scale_mass) if scored else None,
        truncated=bool(truncated) if scored else None,
        memo=bool(memo),
    )
