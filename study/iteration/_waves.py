"""Waves of responses: responses added to a study after it was created.

A wave is one file's responses (:func:`study.intake.responses.read_responses`, the same id and
text column rules as ``codecurve new``). Its new responses are appended (``responses.wave``
says which wave brought each; wave 1 is the study's first file). A response id already in
the study is refused unless the wave *updates*: then the response's text is replaced and
its current decisions are cleared (one ``update`` event per response, whose detail keeps
the replaced text's hash and the decisions it cleared, which stay in the log). A decision
made on another text is never kept as if it were made on this one: the pair is
undecided again, with its history. Scores of the old text become stale and are
recomputed by the next ``codecurve score`` (:func:`study.iteration.revisions.stale_pairs`).

New responses take keys after the existing ones, so the queue lists a later wave after
the earlier ones (in natural id order within the wave).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from codebooks.errors import Remedy
from scoring.score import text_hash
from study.codec import natural_key
from study.errors import StudyError
from study.file import events
from study.intake.responses import ResponseTable
from study.stamps import now

#: How many refused ids an error lists before "and N more".
SHOWN = 10


@dataclass(frozen=True)
class Wave:
    """One batch of responses: its number, source file, time and count."""

    wave: int
    source: str
    at: str
    count: int


@dataclass(frozen=True)
class WaveResult:
    """What adding a wave did."""

    wave: int
    added: tuple[str, ...]
    updated: tuple[str, ...]
    unchanged: tuple[str, ...]
    cleared: int


def read_waves(conn: sqlite3.Connection) -> list[Wave]:
    return [
        Wave(int(w), str(s), str(a), int(c))
        for w, s, a, c in conn.execute("SELECT wave, source, at, count FROM waves ORDER BY wave")
    ]


def _listed(ids: list[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:SHOWN])
    more = len(ids) - SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def check_wave(
    conn: sqlite3.Connection, table: ResponseTable, *, update: bool, path: Path
) -> tuple[list[str], list[str]]:
    """The new ids and the ids already in the study, after checking the file fits.

    Raises:
        StudyError: the file's id column is not the study's, or ids already in the study
            without ``update``.
    """
    row = conn.execute("SELECT value FROM meta WHERE key = 'responses_id_column'").fetchone()
    expected = "" if row is None else str(row[0])
    if expected and table.id_column and table.id_column != expected:
        raise StudyError(
            f"the responses file's id column is {table.id_column!r}, but the study's "
            f"responses are identified by {expected!r}; rename the column or name it as the "
            "id column",
            path=path,
            remedy=Remedy("retry", f"name {expected!r} as the id column", {"id_column": expected}),
        )
    if not len(table):
        raise StudyError("the responses file has no responses to add", path=path)
    known = {str(r[0]) for r in conn.execute("SELECT id FROM responses")}
    existing = [r.id for r in table.responses if r.id in known]
    new = [r.id for r in table.responses if r.id not in known]
    if existing and not update:
        raise StudyError(
            f"{len(existing)} response id(s) already in the study: {_listed(existing)}; "
            "remove them from the file, or replace their texts (their decisions are then "
            "cleared for re-review)",
            path=path,
            remedy=Remedy("retry", "replace their texts", {"update": True}),
        )
    return new, existing


def add_wave(
    conn: sqlite3.Connection, table: ResponseTable, *, update: bool, path: Path
) -> WaveResult:
    """Append ``table`` as the next wave (inside the caller's transaction).

    Raises:
        StudyError: see :func:`check_wave`.
    """
    new, existing = check_wave(conn, table, update=update, path=path)
    at = now()
    wave = int(conn.execute("SELECT COALESCE(MAX(wave), 0) + 1 FROM waves").fetchone()[0])
    source = "" if table.path is None else str(table.path)
    detail = {"wave": wave, "source": source, "added": len(new), "messages": list(table.messages)}
    event_id = events.append(conn, "wave", at=at, detail=json.dumps(detail, ensure_ascii=False))
    by_id = {r.id: r for r in table.responses}
    rid0, pos0 = conn.execute(
        "SELECT COALESCE(MAX(rid), 0) + 1, COALESCE(MAX(pos), -1) + 1 FROM responses"
    ).fetchone()
    order = {rid_text: i for i, rid_text in enumerate(new)}
    conn.executemany(
        "INSERT INTO responses (rid, id, text, attrs, pos, wave) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (
                int(rid0) + k,
                rid_text,
                by_id[rid_text].text,
                json.dumps(dict(by_id[rid_text].attrs), ensure_ascii=False, default=str),
                int(pos0) + order[rid_text],
                wave,
            )
            for k, rid_text in enumerate(sorted(new, key=natural_key))
        ],
    )
    updated, unchanged, cleared = [], [], 0
    for rid_text in existing:
        response = by_id[rid_text]
        rid, old_text = conn.execute(
            "SELECT rid, text FROM responses WHERE id = ?", (rid_text,)
        ).fetchone()
        if old_text == response.text:
            unchanged.append(rid_text)
            continue
        decisions = conn.execute(
            "SELECT c.id, a.coder, a.value, a.source, a.event_id FROM annotations a "
            "JOIN codes c ON c.cid = a.cid WHERE a.rid = ?",
            (rid,),
        ).fetchall()
        events.append(
            conn,
            "update",
            at=at,
            rid=rid,
            detail=json.dumps(
                {
                    "wave": wave,
                    "old_text_hash": text_hash(old_text),
                    "new_text_hash": text_hash(response.text),
                    "cleared": [
                        {"code": c, "coder": w, "value": v, "source": s, "event": e}
                        for c, w, v, s, e in decisions
                    ],
                },
                ensure_ascii=False,
            ),
            batch=event_id,
        )
        conn.execute("DELETE FROM annotations WHERE rid = ?", (rid,))
        conn.execute(
            "UPDATE responses SET text = ?, attrs = ? WHERE rid = ?",
            (
                response.text,
                json.dumps(dict(response.attrs), ensure_ascii=False, default=str),
                rid,
            ),
        )
        updated.append(rid_text)
        cleared += len(decisions)
    conn.execute(
        "INSERT INTO waves (wave, source, at, count, event_id) VALUES (?, ?, ?, ?, ?)",
        (wave, source, at, len(new) + len(updated), event_id),
    )
    return WaveResult(
        wave=wave,
        added=tuple(new),
        updated=tuple(updated),
        unchanged=tuple(unchanged),
        cleared=cleared,
    )


def wave_response_ids(conn: sqlite3.Connection, wave: int) -> list[str]:
    """The ids of the responses a wave added, in key order."""
    return [
        str(r[0])
        for r in conn.execute("SELECT id FROM responses WHERE wave = ? ORDER BY rid", (wave,))
    ]
