"""Scoring configurations and the scores stored under them.

Functions over an open connection; :class:`study.store.Study` runs them inside its
transactions (:meth:`~study.store.Study.snapshot` to read, its writer to change).

A configuration at context ``examples`` has an examples hash
(:attr:`~scoring.score.ScoreConfig.examples_hash`), for which ``configs`` has no column
(schema version 5): it is kept in ``template_hash`` after the template's hash,
``<template hash>+<examples hash>`` (both are hex, so the ``+`` is unambiguous), and
:func:`read_config` splits it again, so that a stored row gives back the configuration
and its key exactly.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from codebooks.model import Scale
from scoring.backend import ModelIdentity
from scoring.score import Pair, Score, ScoreConfig
from study.codec import floats_to_blob
from study.errors import StudyError
from study.file import events
from study.index import StudyIndex
from study.rows import ConfigRow
from study.stamps import now

_SCORE_INSERT = (
    "INSERT INTO scores (config_id, rid, cid, surprisal, probs, on_scale_mass, "
    "entropy, norm_entropy, mode, pick, expected, spread, confidence, off_scale, "
    "token_set, missing, prompt_hash, text_hash, code_hash, truncated, scored_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (config_id, rid, cid) DO NOTHING"
)


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


#: Between the template's hash and the examples hash in ``configs.template_hash``.
EXAMPLES_SEPARATOR = "+"


def stored_template_hash(config: ScoreConfig) -> str:
    """What ``configs.template_hash`` holds for ``config`` (the examples hash folded in)."""
    if not config.examples_hash:
        return config.template_hash
    return f"{config.template_hash}{EXAMPLES_SEPARATOR}{config.examples_hash}"


def split_template_hash(stored: str) -> tuple[str, str]:
    """The template's hash and the examples hash ("" when none) of a stored value."""
    template_hash, _, examples_hash = stored.partition(EXAMPLES_SEPARATOR)
    return template_hash, examples_hash


def add_config(conn: sqlite3.Connection, config: ScoreConfig) -> int:
    """The id of ``config``, inserting it (and its ``config`` event) if new."""
    key = config.key()
    row = conn.execute("SELECT id FROM configs WHERE key = ?", (key,)).fetchone()
    if row is not None:
        return int(row[0])
    m = config.model
    cursor = conn.execute(
        "INSERT INTO configs (key, model_name, model_revision, model_dtype, "
        "model_device, model_backend, template_id, template_hash, context, scale, "
        "strict, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            key,
            m.name,
            m.revision,
            m.dtype,
            m.device,
            m.backend,
            config.template_id,
            stored_template_hash(config),
            config.context,
            json.dumps(config.scale.to_dict()),
            int(config.strict),
            now(),
        ),
    )
    config_id = int(cursor.lastrowid or 0)
    detail: dict[str, str] = {"key": key, "model": m.describe()}
    if config.examples_hash:
        detail["examples"] = config.examples_hash
    events.append(conn, "config", config_id=config_id, detail=json.dumps(detail))
    return config_id


def active_config(conn: sqlite3.Connection) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'active_config'").fetchone()
    return None if row is None else int(row[0])


def read_config(conn: sqlite3.Connection, config_id: int, *, path: Path) -> ConfigRow:
    """A stored configuration.

    Raises:
        StudyError: no such configuration, or a row edited into nonsense.
    """
    row = conn.execute(
        "SELECT id, key, model_name, model_revision, model_dtype, model_device, "
        "model_backend, template_id, template_hash, context, scale, strict, created_at "
        "FROM configs WHERE id = ?",
        (config_id,),
    ).fetchone()
    if row is None:
        raise StudyError(f"no scoring configuration {config_id} in this study", path=path)
    try:
        template_hash, examples_hash = split_template_hash(str(row[8]))
        return ConfigRow(
            id=int(row[0]),
            key=row[1],
            model=ModelIdentity(
                name=row[2], revision=row[3], dtype=row[4], device=row[5], backend=row[6]
            ),
            template_id=row[7],
            template_hash=template_hash,
            context=row[9],
            scale=Scale.from_dict(json.loads(row[10])),
            strict=bool(row[11]),
            created_at=row[12],
            examples_hash=examples_hash,
        )
    except (ValueError, TypeError, KeyError) as exc:
        raise StudyError(
            f"the study file is damaged: configuration {config_id} cannot be read ({exc}) "
            "(restore it from a copy)",
            path=path,
        ) from None


def pending(conn: sqlite3.Connection, index: StudyIndex, config_id: int) -> list[Pair]:
    """The pairs not yet scored under ``config_id``, in response then code order."""
    codable = index.codable_sql
    rows = conn.execute(
        "SELECT r.rid, r.text, c.cid FROM responses r JOIN codes c "
        f"WHERE c.cid IN ({codable}) AND {index.scope.sql('r.rid', 'c.cid')} "
        "AND NOT EXISTS (SELECT 1 FROM scores s "
        "WHERE s.config_id = ? AND s.rid = r.rid AND s.cid = c.cid) "
        "ORDER BY r.rid, c.cid",
        (config_id,),
    ).fetchall()
    return [Pair(index.response_id(rid), text, index.code_at(cid)) for rid, text, cid in rows]


def score_rows(
    index: StudyIndex, config: ConfigRow, scores: Iterable[Score], *, path: Path
) -> list[tuple[Any, ...]]:
    """The ``scores`` rows of ``scores``, with token ids as JSON (not yet a token set).

    Raises:
        StudyError: a score of another configuration, or of an unknown pair.
    """
    stamp = now()
    rows = []
    token_json: dict[Any, str] = {}
    for score in scores:
        if score.config_key != config.key:
            raise StudyError(
                f"a score of configuration {score.config_key} cannot be stored under "
                f"configuration {config.id} ({config.key})",
                path=path,
            )
        curve = score.curve
        rows.append(
            (
                config.id,
                index.response_key(score.response_id),
                index.code_key(score.code_id),
                floats_to_blob(curve.surprisal),
                floats_to_blob(curve.probs),
                float(curve.on_scale_mass),
                float(curve.entropy),
                float(curve.norm_entropy),
                int(curve.mode),
                int(score.prediction),
                float(curve.expected),
                float(curve.spread),
                float(curve.confidence),
                int(curve.off_scale),
                _token_json(score.token_ids, token_json),
                None if not any(score.missing) else json.dumps([bool(m) for m in score.missing]),
                score.prompt_hash,
                score.text_hash,
                score.code_hash,
                int(score.truncated),
                stamp,
            )
        )
    return rows


def insert_scores(
    conn: sqlite3.Connection, rows: list[tuple[Any, ...]], token_sets: dict[str, int]
) -> int:
    """Insert :func:`score_rows`' rows (a pair already scored keeps its score); count new.

    ``token_sets`` caches token-set ids by their JSON; the caller clears it on rollback.
    """
    final = [(*row[:14], _token_set(conn, row[14], token_sets), *row[15:]) for row in rows]
    before = conn.total_changes
    conn.executemany(_SCORE_INSERT, final)
    return conn.total_changes - before


def feature_rows(
    index: StudyIndex, config_id: int, scores: Iterable[Score]
) -> list[tuple[Any, ...]]:
    """The ``features`` rows of the scores that carry features."""
    return [
        (
            config_id,
            index.code_key(score.code_id),
            index.response_key(score.response_id),
            score.text_hash,
            score.code_hash,
            np.asarray(score.features, dtype="<f2").tobytes(),
        )
        for score in scores
        if score.features is not None
    ]


def insert_features(
    conn: sqlite3.Connection, config_id: int, layout: str, rows: list[tuple[Any, ...]]
) -> None:
    """Keep the features of scored pairs (replacing a pair's older ones).

    Features of another layout under the same configuration (a codecurve that defines
    them otherwise) are dropped first: vectors of two layouts are never mixed.
    """
    row = conn.execute("SELECT feature_layout FROM configs WHERE id = ?", (config_id,)).fetchone()
    if row is not None and row[0] != layout:
        conn.execute("DELETE FROM features WHERE config_id = ?", (config_id,))
        conn.execute("UPDATE configs SET feature_layout = ? WHERE id = ?", (layout, config_id))
    conn.executemany(
        "INSERT INTO features (config_id, cid, rid, text_hash, code_hash, vec) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (config_id, cid, rid) DO UPDATE SET "
        "text_hash = excluded.text_hash, code_hash = excluded.code_hash, vec = excluded.vec",
        rows,
    )


def missing_features(
    conn: sqlite3.Connection, index: StudyIndex, config_id: int, layout: str | None = None
) -> list[Pair]:
    """Pairs scored under ``config_id`` without features that match their score (scored
    before features were kept, or by a backend that returned none); every scored pair
    when the features kept are of another layout than ``layout`` (when given: a codecurve
    that defined them otherwise)."""
    codable = index.codable_sql
    kept = conn.execute("SELECT feature_layout FROM configs WHERE id = ?", (config_id,)).fetchone()
    if layout is not None and kept is not None and kept[0] not in (None, layout):
        rows = conn.execute(
            "SELECT r.rid, r.text, s.cid FROM scores s JOIN responses r ON r.rid = s.rid "
            f"WHERE s.config_id = ? AND s.cid IN ({codable}) ORDER BY s.rid, s.cid",
            (config_id,),
        ).fetchall()
        return [Pair(index.response_id(rid), text, index.code_at(cid)) for rid, text, cid in rows]
    rows = conn.execute(
        "SELECT r.rid, r.text, s.cid FROM scores s JOIN responses r ON r.rid = s.rid "
        f"WHERE s.config_id = ? AND s.cid IN ({codable}) AND NOT EXISTS (SELECT 1 FROM "
        "features f WHERE f.config_id = s.config_id AND f.cid = s.cid AND f.rid = s.rid "
        "AND f.text_hash = s.text_hash AND f.code_hash = s.code_hash) ORDER BY s.rid, s.cid",
        (config_id,),
    ).fetchall()
    return [Pair(index.response_id(rid), text, index.code_at(cid)) for rid, text, cid in rows]


def token_ids(conn: sqlite3.Connection, config_id: int, rid: int, cid: int) -> Any:
    row = conn.execute(
        "SELECT t.token_ids FROM scores s LEFT JOIN token_sets t ON t.id = s.token_set "
        "WHERE s.config_id = ? AND s.rid = ? AND s.cid = ?",
        (config_id, rid, cid),
    ).fetchone()
    return None if row is None or row[0] is None else json.loads(row[0])


def _token_set(conn: sqlite3.Connection, blob: str, cache: dict[str, int]) -> int:
    found = cache.get(blob)
    if found is not None:
        return found
    conn.execute("INSERT INTO token_sets (token_ids) VALUES (?) ON CONFLICT DO NOTHING", (blob,))
    token_set = int(
        conn.execute("SELECT id FROM token_sets WHERE token_ids = ?", (blob,)).fetchone()[0]
    )
    cache[blob] = token_set
    return token_set


def _token_json(token_ids: Any, cache: dict[Any, str]) -> str:
    """``Score.token_ids`` as compact JSON; a whole batch shares a handful of them."""
    try:
        return cache[token_ids]
    except (KeyError, TypeError):
        pass
    blob = json.dumps(
        [[[int(t) for t in v] for v in option] for option in token_ids], separators=(",", ":")
    )
    with contextlib.suppress(TypeError):
        cache[token_ids] = blob
    return blob
