"""Scoring configurations and stored scores of a study: :class:`Scores` (``study.scores``).

The handle (:class:`study.handle.StudyHandle`) provides the connection and its
transactions; the work is done by :mod:`study.scores.configurations` (and
:mod:`study.iteration.revisions` for scores a revision made stale). The active
configuration, the configuration rows and the token-set ids are cached here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from scoring.score import Pair, Score, ScoreConfig
from study.errors import StudyError
from study.file import events
from study.handle import StudyHandle
from study.iteration import revisions
from study.rows import ConfigRow, ScoringRate
from study.scores import configurations as stored

#: The ``meta`` key of a configuration's measured scoring speed (its id follows).
RATE_KEY = "score_rate:"

#: Fewest pairs a run must score for its speed to be kept.
MIN_RATE_PAIRS = 8


class Scores:
    """Configurations (add, activate, read) and their scores (pending, store, read)."""

    def __init__(self, study: StudyHandle) -> None:
        self._study = study
        self._active: int | None = None
        self._config_rows: dict[int, ConfigRow] = {}
        self._token_sets: dict[str, int] = {}
        #: Bumped whenever scores are stored, so that summaries over all of a
        #: configuration's scores (the off-scale warning) are read again only when they
        #: can have changed.
        self._generation = 0

    @property
    def generation(self) -> int:
        """How many times this handle has stored scores (0 until it does)."""
        return self._generation

    def touch(self) -> None:
        """Note that scores were written elsewhere (a learned configuration rescored),
        so that summaries over them are read again."""
        self._generation += 1

    def ensure_config(self, config: ScoreConfig, *, activate: bool = True) -> int:
        """The id of ``config`` in this study, adding it if new; make it the active one."""
        with self._study.transaction() as conn:
            config_id = stored.add_config(conn, config)
            if activate:
                stored.set_meta(conn, "active_config", str(config_id))
        if activate:
            self._active = config_id  # after the commit: a rolled-back change is not cached
        return config_id

    def record_rate(self, config_id: int, *, pairs: int, seconds: float) -> None:
        """Keep how fast a run of ``config_id`` scored (the estimate of the next run's
        time); a run of fewer than a few pairs says too little and is not kept."""
        if pairs < MIN_RATE_PAIRS or seconds <= 0:
            return
        value = json.dumps({"rate": pairs / seconds, "pairs": pairs})
        with self._study.transaction() as conn:
            stored.set_meta(conn, f"{RATE_KEY}{config_id}", value)

    def measured_rate(self, config_id: int) -> ScoringRate | None:
        """The speed measured on the last run of ``config_id``; else on the last run of
        another configuration of the same model on the same device and backend (the
        one with the highest id); None when none has run."""
        row = self.config_row(config_id)
        with self._study.query() as conn:
            kept = conn.execute(
                "SELECT key, value FROM meta WHERE key LIKE ?", (f"{RATE_KEY}%",)
            ).fetchall()
        rates: dict[int, ScoringRate] = {}
        for key, value in kept:
            try:
                other = int(str(key).removeprefix(RATE_KEY))
                data = json.loads(value)
                rates[other] = ScoringRate(float(data["rate"]), int(data["pairs"]), other)
            except (ValueError, KeyError, TypeError):
                continue  # an unreadable entry is no measurement
        if config_id in rates:
            return rates[config_id]
        model = row.model
        for other in sorted(rates, reverse=True):
            try:
                them = self.config_row(other).model
            except StudyError:
                continue
            if (them.name, them.device, them.backend) == (model.name, model.device, model.backend):
                return rates[other]
        return None

    def forget(self) -> None:
        """Read the active configuration again: another session may have changed it
        (the handle calls this when it notices)."""
        self._active = None

    def active_config_id(self) -> int | None:
        """The configuration scores are shown from (the last one scored with), if any."""
        if self._active is not None:
            return self._active  # another session's change is noticed by the handle
        with self._study.query() as conn:
            active = stored.active_config(conn)
        if not self._study.read_only:
            self._active = active
        return active

    def set_active(self, config_id: int) -> None:
        """Choose the configuration the queue and exports use (an ``activate`` event)."""
        self.config_row(config_id)
        with self._study.transaction() as conn:
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
        with self._study.query() as conn:
            config = stored.read_config(conn, config_id, path=self._study.path)
        self._config_rows[config_id] = config
        return config

    def configs(self) -> list[ConfigRow]:
        with self._study.query() as conn:
            ids = [int(r[0]) for r in conn.execute("SELECT id FROM configs ORDER BY id")]
        return [self.config_row(i) for i in ids]

    def scored_count(self, config_id: int) -> int:
        """Pairs of the current codebook scored under ``config_id`` (the scores of codes
        a revision archived are kept, and not counted: the handle's ``pair_count`` does
        not count their pairs either)."""
        codable = self._study.index.codable_sql
        with self._study.query() as conn:
            row = conn.execute(
                f"SELECT COUNT(*) FROM scores WHERE config_id = ? AND cid IN ({codable}) "
                f"AND {self._study.index.scope.sql('rid', 'cid')}",
                (config_id,),
            ).fetchone()
        return int(row[0])

    def pending_pairs(
        self, config_id: int, *, features: bool = False, layout: str | None = None
    ) -> list[Pair]:
        """The pairs not yet scored under ``config_id``, in response then code order.

        With ``features``, also the pairs scored without the model's features (before
        they were kept), or with features of another ``layout`` than the backend's (when
        given): scoring them again keeps their score and adds the features.
        """
        self.config_row(config_id)
        index = self._study.index
        with self._study.query() as conn:
            pending = stored.pending(conn, index, config_id)
            pending += revisions.stale_pairs(conn, index, config_id)
            if features:
                known = {(p.response_id, p.code.id) for p in pending}
                pending += [
                    p
                    for p in stored.missing_features(conn, index, config_id, layout)
                    if (p.response_id, p.code.id) not in known
                ]
            return pending

    def feature_layout(self, config_id: int) -> str | None:
        """The layout of the features kept under ``config_id`` (None: none kept)."""
        with self._study.query() as conn:
            row = conn.execute(
                "SELECT feature_layout FROM configs WHERE id = ?", (config_id,)
            ).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def store(
        self, config_id: int, scores: Iterable[Score], *, feature_layout: str | None = None
    ) -> int:
        """Store scores under ``config_id`` in one transaction; return how many were new.

        A pair already scored under this configuration keeps its first score. With a
        ``feature_layout``, the scores' features are kept too (a pair scored before
        gets them beside its first score).

        Raises:
            StudyError: a score from another configuration, or of an unknown pair.
        """
        config = self.config_row(config_id)
        scores = list(scores)
        rows = stored.score_rows(self._study.index, config, scores, path=self._study.path)
        if not rows:
            return 0
        features = (
            stored.feature_rows(self._study.index, config_id, scores)
            if feature_layout is not None
            else []
        )
        try:
            with self._study.transaction() as conn:
                revisions.drop_replaced(conn, rows)
                stored_count = stored.insert_scores(conn, rows, self._token_sets)
                if features and feature_layout is not None:
                    stored.insert_features(conn, config_id, feature_layout, features)
        except BaseException:
            # Rolled back: the cache must never name a token set that was not kept.
            self._token_sets.clear()
            raise
        self._generation += 1
        return stored_count

    def token_ids(self, config_id: int, response_id: str, code_id: str) -> Any:
        """The token ids a stored score was computed from (nested lists), or ``None``."""
        index = self._study.index
        rid, cid = index.response_key(response_id), index.code_key(code_id)
        with self._study.query() as conn:
            return stored.token_ids(conn, config_id, rid, cid)
