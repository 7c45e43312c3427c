"""Scoring configurations and stored scores, as methods of :class:`study.store.Study`.

:class:`ScoreMethods` is a mixin: the store provides the connection, its lock and its
transactions (``_query``, ``_write``), the index and the caches; the work is done by
:mod:`study.scores.configurations` (and :mod:`study.iteration.revisions` for scores a
revision made stale).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from scoring.score import Pair, Score, ScoreConfig
from study.index import StudyIndex
from study.iteration import revisions
from study.log import events
from study.rows import ConfigRow
from study.scores import configurations as stored


class ScoreMethods:
    """Configurations (add, activate, read) and their scores (pending, write, read)."""

    _path: Path
    _index: StudyIndex
    _active: int | None
    _config_rows: dict[int, ConfigRow]
    _token_sets: dict[str, int]
    #: Bumped whenever scores are stored, so that summaries over all of a configuration's
    #: scores (the off-scale warning) are read again only when they can have changed.
    _score_generation: int = 0

    @property
    def score_generation(self) -> int:
        """How many times this handle has stored scores (0 until it does)."""
        return self._score_generation

    @property
    def read_only(self) -> bool:
        raise NotImplementedError  # provided by study.store.Study

    def _query(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # provided by study.store.Study

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # provided by study.store.Study

    def ensure_config(self, config: ScoreConfig, *, activate: bool = True) -> int:
        """The id of ``config`` in this study, adding it if new; make it the active one."""
        with self._write() as conn:
            config_id = stored.add_config(conn, config)
            if activate:
                stored.set_meta(conn, "active_config", str(config_id))
        if activate:
            self._active = config_id  # after the commit: a rolled-back change is not cached
        return config_id

    def active_config_id(self) -> int | None:
        """The configuration scores are shown from (the last one scored with), if any."""
        if self._active is not None:
            return self._active  # the writer is the only one who changes it
        with self._query() as conn:
            active = stored.active_config(conn)
        if not self.read_only:
            self._active = active
        return active

    def set_active_config(self, config_id: int) -> None:
        """Choose the configuration the queue and exports use (an ``activate`` event)."""
        self.config_row(config_id)
        with self._write() as conn:
            stored.set_meta(conn, "active_config", str(config_id))
            events.append(conn, "activate", config_id=config_id)
        self._active = config_id

    def config_row(self, config_id: int) -> ConfigRow:
        """A stored configuration by id.

        Raises:
            StudyError: no such configuration.
        """
        cached = self._config_rows.get(config_id)
        if cached is not None:
            return cached
        with self._query() as conn:
            config = stored.read_config(conn, config_id, path=self._path)
        self._config_rows[config_id] = config
        return config

    def configs(self) -> list[ConfigRow]:
        with self._query() as conn:
            ids = [int(r[0]) for r in conn.execute("SELECT id FROM configs ORDER BY id")]
        return [self.config_row(i) for i in ids]

    def pair_count(self) -> int:
        """Number of (response, codable code) pairs."""
        return self._index.response_count * len(self._index.codable_keys)

    def scored_count(self, config_id: int) -> int:
        """Pairs of the current codebook scored under ``config_id`` (the scores of codes
        a revision archived are kept, and not counted: :meth:`pair_count` does not count
        their pairs either)."""
        codable = self._index.codable_sql
        with self._query() as conn:
            row = conn.execute(
                f"SELECT COUNT(*) FROM scores WHERE config_id = ? AND cid IN ({codable})",
                (config_id,),
            ).fetchone()
        return int(row[0])

    def pending_pairs(self, config_id: int) -> list[Pair]:
        """The pairs not yet scored under ``config_id``, in response then code order."""
        self.config_row(config_id)
        with self._query() as conn:
            pending = stored.pending(conn, self._index, config_id)
            return pending + revisions.stale_pairs(conn, self._index, config_id)

    def write_scores(self, config_id: int, scores: Iterable[Score]) -> int:
        """Store scores under ``config_id`` in one transaction; return how many were new.

        A pair already scored under this configuration keeps its first score.

        Raises:
            StudyError: a score from another configuration, or of an unknown pair.
        """
        config = self.config_row(config_id)
        rows = stored.score_rows(self._index, config, scores, path=self._path)
        if not rows:
            return 0
        with self._write() as conn:
            # _write clears the token-set cache on rollback: it never names a row not kept.
            revisions.drop_replaced(conn, rows)
            stored_count = stored.insert_scores(conn, rows, self._token_sets)
        self._score_generation += 1
        return stored_count

    def token_ids(self, config_id: int, response_id: str, code_id: str) -> Any:
        """The token ids a stored score was computed from (nested lists), or ``None``."""
        rid, cid = self._index.response_key(response_id), self._index.code_key(code_id)
        with self._query() as conn:
            return stored.token_ids(conn, config_id, rid, cid)
