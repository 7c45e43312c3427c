"""Learned configurations on disk: what a code's curve is fitted on, and its scores.

Functions over an open connection, run inside :class:`study.store.Study`'s
transactions by :mod:`study.analysis._learning`. A learned configuration is a row of
``configs`` like any other (its model identity's backend is :data:`LEARNED_BACKEND`),
so that every analysis reads its scores unchanged; the ``learned`` table says, per code,
what its curve was fitted on and with (schema version 5, :mod:`study.file.schema`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from scoring.backend import ModelIdentity
from scoring.curves import curve_table
from scoring.score import ScoreConfig
from study.file import events
from study.rows import ConfigRow
from study.stamps import now

#: The model identity's backend of a learned configuration.
LEARNED_BACKEND = "learned"

#: Its dtype: what the classifier is.
LEARNED_KIND = "logistic"


def learned_config(base: ConfigRow, coder: str) -> ScoreConfig:
    """The learned configuration of ``coder`` on ``base``: one per base and coder, its
    curves refitted in place as decisions come (the ``learned`` rows and the ``config``
    events keep each fit's provenance)."""
    return ScoreConfig(
        model=ModelIdentity(
            name=f"learned from {coder} on #{base.id}",
            revision=base.key,
            dtype=LEARNED_KIND,
            device="cpu",
            backend=LEARNED_BACKEND,
        ),
        template_id=base.template_id,
        template_hash=base.template_hash,
        context=base.context,
        scale=base.scale,
        strict=base.strict,
    )


def is_learned(config: ConfigRow) -> bool:
    return config.model.backend == LEARNED_BACKEND


@dataclass(frozen=True)
class CodeScores:
    """A code's scores under a configuration, with their features, as arrays.

    Attributes:
        rids: Shape (n,), response keys, ascending.
        logprobs: Shape (n, K), minus the surprisal.
        text_hash, code_hash, prompt_hash: Per pair, the score's identity.
        truncated: Shape (n,).
        token_set: Per pair, its token set id (None: none).
        features: Shape (n, F) float16, or None when the configuration keeps none.
        missing_features: Pairs with a score and no features that match it.
    """

    rids: npt.NDArray[np.int64]
    logprobs: npt.NDArray[np.float64]
    text_hash: tuple[str, ...]
    code_hash: tuple[str, ...]
    prompt_hash: tuple[str, ...]
    truncated: npt.NDArray[np.bool_]
    token_set: tuple[int | None, ...]
    features: npt.NDArray[np.float16] | None
    missing_features: int


def code_scores(
    conn: sqlite3.Connection,
    config_id: int,
    cid: int,
    *,
    with_features: bool,
    known: CodeScores | None = None,
) -> CodeScores:
    """Every score of code ``cid`` under ``config_id``, with its features if asked.

    ``known``: an earlier read of the same code and configuration (:class:`ReadMemory`);
    its features are taken instead of read again when the scores are still of the same
    pairs with the same text and definition, which is what the features are kept for.
    """
    rows = conn.execute(
        "SELECT rid, surprisal, text_hash, code_hash, prompt_hash, truncated, token_set "
        "FROM scores WHERE config_id = ? AND cid = ? ORDER BY rid",
        (config_id, cid),
    ).fetchall()
    n = len(rows)
    rids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
    surprisal = b"".join(r[1] for r in rows)
    k = len(rows[0][1]) // 8 if rows else 0
    logprobs = -np.frombuffer(surprisal, dtype="<f8").reshape(n, k) if n else np.zeros((0, 2))
    text_hash = tuple(r[2] for r in rows)
    code_hash = tuple(r[3] for r in rows)
    features: npt.NDArray[np.float16] | None = None
    missing = 0
    if (
        with_features
        and n
        and known is not None
        and known.features is not None
        and np.array_equal(known.rids, rids)
        and known.text_hash == text_hash
        and known.code_hash == code_hash
    ):
        features = known.features
    elif with_features and n:
        # Read in the index's order and matched here: a join on the five columns cost
        # a look-up of the score per pair.
        found = conn.execute(
            "SELECT rid, text_hash, code_hash, vec FROM features "
            "WHERE config_id = ? AND cid = ? ORDER BY rid",
            (config_id, cid),
        ).fetchall()
        kept = {int(f[0]): f for f in found}
        matched = [kept.get(int(r)) for r in rids]
        good = [
            f is not None and f[1] == text_hash[i] and f[2] == code_hash[i]
            for i, f in enumerate(matched)
        ]
        missing = n - sum(good)
        if not missing:
            width = len(found[0][3]) // 2
            blob = b"".join(f[3] for f in matched if f is not None)
            features = np.frombuffer(blob, dtype="<f2").reshape(n, width)
    return CodeScores(
        rids=rids,
        logprobs=np.asarray(logprobs, dtype=np.float64),
        text_hash=text_hash,
        code_hash=code_hash,
        prompt_hash=tuple(r[4] for r in rows),
        truncated=np.fromiter((bool(r[5]) for r in rows), dtype=bool, count=n),
        token_set=tuple(r[6] for r in rows),
        features=features,
        missing_features=missing,
    )


def fingerprint(conn: sqlite3.Connection, config_id: int, cid: int) -> tuple[Any, ...]:
    """What changes whenever code ``cid``'s scores under ``config_id`` do: their count,
    the sum of their entropies and their earliest and latest ``scored_at``. A rescoring
    writes new stamps, and a pair scored on another text or definition has another
    curve; one pass over the code's rows in SQLite, against reading them all."""
    row = conn.execute(
        "SELECT COUNT(*), TOTAL(entropy), MIN(scored_at), MAX(scored_at) FROM scores "
        "WHERE config_id = ? AND cid = ?",
        (config_id, cid),
    ).fetchone()
    return tuple(row)


class ReadMemory:
    """The last code read for a refit, kept for the next refit of the same code.

    The app refits the code the coder is working on again and again, every few decisions;
    its features (2 KB a pair: 200 MB for a code of 100,000 pairs) are the slow part of
    the read, and they change only when the code is scored again. One code is kept, of
    one configuration and feature layout, with its :func:`fingerprint`: while that is
    unchanged the kept read is the code's scores, taken without reading them again; else
    :func:`code_scores` still takes the kept features where the scores are of the same
    pairs, texts and definition. It also keeps the stamp the last rescoring wrote under
    the learned configuration (:func:`begin_rescoring`).
    Used from one thread at a time (the app's learning worker).
    """

    def __init__(self) -> None:
        self._key: tuple[int, int, str | None] | None = None
        self._scores: CodeScores | None = None
        self._fingerprint: tuple[Any, ...] | None = None
        self._written: tuple[int, str] | None = None

    def recall(self, config_id: int, cid: int, layout: str | None) -> CodeScores | None:
        """The kept read of code ``cid`` under ``config_id`` and ``layout``, if it is the
        one kept."""
        return self._scores if self._key == (config_id, cid, layout) else None

    def current(
        self, config_id: int, cid: int, layout: str | None, fingerprint: tuple[Any, ...]
    ) -> CodeScores | None:
        """The kept read, if it is of this code and its scores' fingerprint is still
        ``fingerprint``."""
        if self._fingerprint != fingerprint:
            return None
        return self.recall(config_id, cid, layout)

    def keep(
        self,
        config_id: int,
        cid: int,
        layout: str | None,
        scores: CodeScores,
        fingerprint: tuple[Any, ...] | None = None,
    ) -> None:
        """Keep ``scores`` (replacing what was kept) when it holds features."""
        if scores is self._scores:
            return
        self.forget()
        if scores.features is not None:
            self._key, self._scores = (config_id, cid, layout), scores
            self._fingerprint = fingerprint

    def wrote(self, learned_id: int, stamp: str) -> None:
        """The kept read's curves were written whole under ``learned_id``, stamped ``stamp``."""
        self._written = (learned_id, stamp)

    def written(self, learned_id: int) -> str | None:
        """The stamp of the last whole rescoring of the kept read under ``learned_id``."""
        if self._written is None or self._written[0] != learned_id:
            return None
        return self._written[1]

    def forget(self) -> None:
        self._key, self._scores, self._fingerprint, self._written = None, None, None, None


#: Score rows written per transaction when a code is rescored: a coder's decision waits
#: for at most one such write, never for the whole code's (the study's threads take the
#: writer in turns). Each commit writes every index page the block touched, and a block
#: touches most of a code's index pages: at 100,000 pairs, blocks of 2,000 rows made the
#: app's refit 3.8 s against 2.7 s, for a decision's median wait of 7 ms against 23 ms
#: (the longest about 0.12 s either way: the refit's Python holds the GIL meanwhile).
WRITE_ROWS = 5000


def learned_rows(
    config_id: int,
    cid: int,
    base: CodeScores,
    logprobs: npt.NDArray[np.float64],
    values: Sequence[int],
    *,
    in_place: bool,
    start: int = 0,
    stamp: str | None = None,
) -> list[tuple[Any, ...]]:
    """The ``scores`` rows of code ``cid`` under ``config_id``: curves from ``logprobs``
    (shape (m, K), one row per pair of ``base`` from its row ``start`` on, whose identity
    they keep), shaped for :func:`write_rows`: with ``in_place``, the curve's columns and
    the key only (an update binds no value it does not set), else every column.
    ``stamp``: when they were scored (default now).

    An update's rows come least sure first, in the order of the queue's indexes (its
    entropy order, and near enough its confidence and pick orders), so that SQLite moves
    each index's entries page after page rather than at random: at 100,000 pairs the
    app's refit was faster in eight of nine alternated pairs of runs, by a median factor
    of 1.16 (medians 2.63 s against 3.03 s in rid order). An insert's come in rid order,
    the table's own."""
    table = curve_table(logprobs, [float(v) for v in values])
    stamp = now() if stamp is None else stamp
    n, k = table.probs.shape
    rows = slice(start, start + n)
    rids = base.rids[rows]
    if in_place:
        order = np.argsort(-table.norm_entropy, kind="stable")
        table, rids = table.take(order), rids[order]
    width = 8 * k
    surprisal = table.surprisal.astype("<f8").tobytes()
    probs = table.probs.astype("<f8").tobytes()
    columns: list[Any] = [
        [surprisal[i * width : (i + 1) * width] for i in range(n)],
        [probs[i * width : (i + 1) * width] for i in range(n)],
        table.on_scale_mass.tolist(),
        table.entropy.tolist(),
        table.norm_entropy.tolist(),
        table.mode.tolist(),
        np.asarray(values)[table.mode].tolist(),
        table.expected.tolist(),
        table.spread.tolist(),
        table.confidence.tolist(),
        table.off_scale.astype(int).tolist(),
        [None] * n,  # missing
        [stamp] * n,
        [config_id] * n,
        rids.tolist(),
        [cid] * n,
    ]
    if not in_place:
        columns += [
            list(base.token_set[rows]),
            list(base.prompt_hash[rows]),
            list(base.text_hash[rows]),
            list(base.code_hash[rows]),
            base.truncated[rows].astype(int).tolist(),
        ]
    return list(zip(*columns, strict=True))


def begin_rescoring(
    conn: sqlite3.Connection,
    config_id: int,
    cid: int,
    base: CodeScores,
    *,
    written: str | None = None,
) -> bool:
    """Mark code ``cid``'s fit under ``config_id`` as being written (its ``params_hash``
    emptied until :func:`record_fit`), and say whether its scores can be updated in
    place: they are of the same pairs, with the same identity (prompt, text and code
    hashes, truncation) and token sets, as ``base``'s (a refit). Else (a first fit, a new
    wave, a rescored base) they are dropped, to be inserted.

    ``written``: the stamp of the last rescoring from ``base`` itself
    (:meth:`ReadMemory.written`): when every row of the code bears it, and as many as
    ``base`` has, they are those rows, and nothing more is read.

    An update in place sets the curve's columns only: never the key nor ``token_set``,
    the one column with a foreign key, so that SQLite looks up no parent row per pair; it
    spares the primary key's b-tree a delete and an insert too.
    The rows are then written in blocks of :data:`WRITE_ROWS`, each its own transaction,
    so that a coder's decision never waits for a whole code; a code whose writing was
    interrupted (a killed process) is known by its empty hash and refitted whole.
    """
    conn.execute(
        "UPDATE learned SET params_hash = '' WHERE config_id = ? AND cid = ?", (config_id, cid)
    )
    if written is not None:
        count, first, last = conn.execute(
            "SELECT COUNT(*), MIN(scored_at), MAX(scored_at) FROM scores "
            "WHERE config_id = ? AND cid = ?",
            (config_id, cid),
        ).fetchone()
        if count == len(base.rids) and first == last == written:
            return True
    stored = conn.execute(
        "SELECT rid, token_set, prompt_hash, text_hash, code_hash, truncated FROM scores "
        "WHERE config_id = ? AND cid = ? ORDER BY rid",
        (config_id, cid),
    ).fetchall()
    same = len(stored) == len(base.rids) and stored == list(
        zip(
            base.rids.tolist(),
            base.token_set,
            base.prompt_hash,
            base.text_hash,
            base.code_hash,
            base.truncated.astype(int).tolist(),
            strict=True,
        )
    )
    if not same and stored:
        conn.execute("DELETE FROM scores WHERE config_id = ? AND cid = ?", (config_id, cid))
    return same


def copy_base_scores(conn: sqlite3.Connection, config_id: int, base_id: int, cid: int) -> int:
    """Give code ``cid`` its base configuration's (zero-shot) curves under the learned
    ``config_id`` where it has none yet, so that every code of the active learned
    configuration is scored; the count copied."""
    before = conn.total_changes
    conn.execute(
        "INSERT INTO scores (config_id, rid, cid, surprisal, probs, on_scale_mass, entropy, "
        "norm_entropy, mode, pick, expected, spread, confidence, off_scale, token_set, "
        "missing, prompt_hash, text_hash, code_hash, truncated, scored_at) "
        "SELECT ?, rid, cid, surprisal, probs, on_scale_mass, entropy, norm_entropy, mode, "
        "pick, expected, spread, confidence, off_scale, token_set, missing, prompt_hash, "
        "text_hash, code_hash, truncated, scored_at FROM scores "
        "WHERE config_id = ? AND cid = ? ON CONFLICT (config_id, rid, cid) DO NOTHING",
        (config_id, base_id, cid),
    )
    return conn.total_changes - before


def write_rows(
    conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]], *, in_place: bool
) -> None:
    """Write :func:`learned_rows`' rows: update them in place where
    :func:`begin_rescoring` said they can be, else insert them."""
    conn.executemany(_UPDATE if in_place else _INSERT, rows)


#: The columns :func:`learned_rows` fills, in its order: the curve's, then the key, then
#: (for an insert only) the identity the rows share with their base's and ``token_set``.
_SET = ("surprisal", "probs", "on_scale_mass", "entropy", "norm_entropy", "mode", "pick",
        "expected", "spread", "confidence", "off_scale", "missing", "scored_at")  # fmt: skip
_KEY = ("config_id", "rid", "cid")
_KEPT = ("token_set", "prompt_hash", "text_hash", "code_hash", "truncated")
_COLUMNS = _SET + _KEY + _KEPT

_INSERT = f"INSERT INTO scores ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"

#: An update in place leaves the key, the identity the rows were checked to share with
#: the base's, and ``token_set`` (its foreign key) as they are.
_UPDATE = (
    "UPDATE scores SET "
    + ", ".join(f"{name} = ?" for name in _SET)
    + " WHERE "
    + " AND ".join(f"{name} = ?" for name in _KEY)
)


@dataclass(frozen=True)
class LearnedRow:
    """What one code's learned curve was fitted on (a ``learned`` row).

    ``counts`` maps each scale value to its decisions; ``penalty`` and ``cv_auroc`` are
    None for a code that kept its zero-shot curve (``inputs`` says why). An empty
    ``params_hash`` on a learned code: its rescoring was interrupted (:func:`begin_rescoring`).
    """

    config_id: int
    code_id: str
    base_config_id: int
    coder: str
    codebook_version: int
    counts: Mapping[int, int]
    inputs: str
    penalty: float | None
    cv_auroc: float | None
    params_hash: str
    fitted_at: str

    @property
    def learned(self) -> bool:
        return self.penalty is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "code_id": self.code_id,
            "base_config": self.base_config_id,
            "coder": self.coder,
            "codebook_version": self.codebook_version,
            "counts": {str(k): v for k, v in self.counts.items()},
            "inputs": self.inputs,
            "penalty": self.penalty,
            "cv_auroc": self.cv_auroc,
            "params_hash": self.params_hash,
            "fitted_at": self.fitted_at,
        }


def record_fit(conn: sqlite3.Connection, row: LearnedRow, cid: int) -> None:
    """Keep a code's fit (replacing its previous one) and log it as a ``config`` event."""
    event = events.append(
        conn,
        "config",
        config_id=row.config_id,
        detail=json.dumps({"learned": row.to_dict()}, sort_keys=True),
    )
    conn.execute(
        "INSERT INTO learned (config_id, cid, base_config_id, coder, codebook_version, "
        "counts, inputs, penalty, cv_auroc, params_hash, fitted_at, event_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (config_id, cid) DO UPDATE "
        "SET base_config_id = excluded.base_config_id, coder = excluded.coder, "
        "codebook_version = excluded.codebook_version, counts = excluded.counts, "
        "inputs = excluded.inputs, penalty = excluded.penalty, cv_auroc = excluded.cv_auroc, "
        "params_hash = excluded.params_hash, fitted_at = excluded.fitted_at, "
        "event_id = excluded.event_id",
        (
            row.config_id,
            cid,
            row.base_config_id,
            row.coder,
            row.codebook_version,
            json.dumps({str(k): v for k, v in row.counts.items()}),
            row.inputs,
            row.penalty,
            row.cv_auroc,
            row.params_hash,
            row.fitted_at,
            event,
        ),
    )


def read_fits(
    conn: sqlite3.Connection, config_id: int, code_ids: Mapping[int, str]
) -> list[LearnedRow]:
    """The fits of a learned configuration, in code order (codes not in ``code_ids``, the
    archived ones, left out)."""
    rows = conn.execute(
        "SELECT cid, base_config_id, coder, codebook_version, counts, inputs, penalty, "
        "cv_auroc, params_hash, fitted_at FROM learned WHERE config_id = ? ORDER BY cid",
        (config_id,),
    ).fetchall()
    return [
        LearnedRow(
            config_id=config_id,
            code_id=code_ids[int(r[0])],
            base_config_id=int(r[1]),
            coder=str(r[2]),
            codebook_version=int(r[3]),
            counts={int(k): int(v) for k, v in json.loads(r[4]).items()},
            inputs=str(r[5]),
            penalty=None if r[6] is None else float(r[6]),
            cv_auroc=None if r[7] is None else float(r[7]),
            params_hash=str(r[8]),
            fitted_at=str(r[9]),
        )
        for r in rows
        if int(r[0]) in code_ids
    ]
