"""One coding study on disk: :class:`Study`.

A study is one SQLite file (schema in :mod:`study.schema`) opened by one writer at a time
(:mod:`study.locking`); any number of read-only handles may look on.

Durability: every change (a decision, a note, an undo, an import, a batch of scores) is one
``BEGIN IMMEDIATE ... COMMIT`` transaction finished before the method returns, in WAL mode:
what a method returned as saved survives a killed process; with ``durability="full"`` also
a power cut, and by default a power cut after about a second (:func:`study.schema.configure`).

Decisions are kept per coder: the current one in ``annotations``, every change in the
append-only ``events`` log with the state it replaced. :meth:`Study.undo` reverts the
coder's latest decision, clearing or note that is not yet undone, restoring exactly the
state before it, and can be repeated to walk further back. Undo is not itself undone (there
is no redo); imports are not on the undo stack.

Thread use: one handle may be shared by threads (the app reads while a worker writes
scores); calls are serialised by a lock.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import sqlite3
import struct
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from codebooks.errors import CodebookError
from codebooks.model import Code, Codebook, Scale
from scoring.backend import ModelIdentity
from scoring.score import Pair, Score, ScoreConfig
from study import schema
from study.checkpoint import WalCheckpointer
from study.errors import StudyError, StudyLockedError
from study.locking import StudyLock
from study.responses import Response, ResponseTable
from study.rows import SOURCES, ConfigRow, Decision, Event, PairRow

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

#: Suffix of a study file.
SUFFIX = ".codecurve"

_SQLITE_MAGIC = b"SQLite format 3\x00"
_MAX_LISTED = 5


def now() -> str:
    """The current time as ISO 8601 UTC with microseconds (the study's time stamps)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def natural_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """Sort key putting ``r2`` before ``r10``: digit runs compare as numbers."""
    parts = re.split(r"(\d+)", text)
    key = []
    for i, part in enumerate(parts):
        if i % 2:
            key.append((0, int(part), part))
        elif part:
            key.append((1, 0, part))
    return tuple(key)


def floats_to_blob(values: Any) -> bytes:
    return np.asarray(values, dtype="<f8").tobytes()


def blob_to_floats(blob: bytes) -> tuple[float, ...]:
    # struct, not numpy: a queue page decodes two curves a row, and this is 10x faster.
    return struct.unpack(f"<{len(blob) // 8}d", blob)


@dataclass(frozen=True)
class ImportResult:
    """What :meth:`Study.import_decisions` did."""

    added: int
    changed: int
    unchanged: int


class Study:
    """An open study. Use :meth:`create` or :meth:`open`; close it (or use ``with``)."""

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        lock: StudyLock | None,
    ) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = conn
        self._file_lock = lock
        self._mutex = threading.RLock()
        self._codebook = Codebook.from_dict(json.loads(self._meta_value("codebook")))
        self._rid_of: dict[str, int] = {}
        self._id_of: dict[int, str] = {}
        for rid, rid_text in conn.execute("SELECT rid, id FROM responses"):
            self._rid_of[rid_text] = rid
            self._id_of[rid] = rid_text
        self._cid_of: dict[str, int] = {}
        self._code_of: dict[int, Code] = {}
        by_id = {c.id: c for c in self._codebook.codes}
        for cid, code_id in conn.execute("SELECT cid, id FROM codes ORDER BY cid"):
            self._cid_of[code_id] = cid
            self._code_of[cid] = by_id[code_id]
        self._codable_cids = tuple(cid for cid, c in self._code_of.items() if c.codable)
        self._token_sets: dict[str, int] = {}
        self._config_rows: dict[int, ConfigRow] = {}
        self._checkpointer: WalCheckpointer | None = None
        self._active: int | None = None

    # --- lifecycle -------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | Path,
        *,
        responses: ResponseTable,
        codebook: Codebook,
        overwrite: bool = False,
        durability: str = "normal",
    ) -> Study:
        """Create a study and open it for writing.

        The file is built under a temporary name in the same folder and moved into place
        only when complete, so a failure never leaves a half-written study.

        Raises:
            StudyError: the path exists (unless ``overwrite``), or cannot be written.
            StudyLockedError: ``overwrite`` of a study open elsewhere.
        """
        p = Path(path)
        if p.is_dir():
            raise StudyError("is a directory; give a file name such as study.codecurve", path=p)
        if p.exists() and not overwrite:
            raise StudyError(
                "already exists; choose another name, or --force to replace it", path=p
            )
        if not codebook.codable:
            raise StudyError(f"codebook {codebook.name!r} has no codable codes", path=p)
        if not len(responses):
            raise StudyError("there are no responses to put in the study", path=p)
        if not p.parent.exists():
            raise StudyError(f"folder {p.parent} does not exist", path=p)
        tmp = p.with_name(f".{p.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        try:
            _build(tmp, responses=responses, codebook=codebook)
            lock = StudyLock(p)
            lock.acquire()
            try:
                # A -wal left beside a removed study would be replayed into the new file.
                for suffix in ("-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(p.with_name(p.name + suffix))
                if overwrite:
                    os.replace(tmp, p)
                else:
                    try:
                        os.link(tmp, p)  # refuses to replace a file created meanwhile
                    except FileExistsError:
                        raise StudyError("already exists; choose another name", path=p) from None
                    except OSError:  # a file system without hard links
                        if p.exists():
                            raise StudyError(
                                "already exists; choose another name", path=p
                            ) from None
                        os.replace(tmp, p)
                _fsync_dir(p.parent)
            finally:
                lock.release()
        except OSError as exc:
            raise StudyError(f"cannot write the study ({exc.strerror or exc})", path=p) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        log.info("created study %s: %d responses, %d codes", p, len(responses), len(codebook.codes))
        return cls.open(p, durability=durability)

    @classmethod
    def open(
        cls, path: str | Path, *, read_only: bool = False, durability: str = "normal"
    ) -> Study:
        """Open a study: for writing (one handle at a time) or ``read_only``.

        ``durability`` is ``normal`` (a returned decision survives a killed process at
        once, a power cut after about a second) or ``full`` (every commit fsynced); see
        :func:`study.schema.configure`.

        Raises:
            StudyError: no such file, not a study, a study made by a newer codecurve.
            StudyLockedError: opened for writing elsewhere (a writer only).
        """
        p = Path(path)
        if durability not in schema.DURABILITY:
            raise StudyError(f"durability must be one of {', '.join(schema.DURABILITY)}")
        _check_header(p)
        lock = None
        if not read_only:
            lock = StudyLock(p)
            lock.acquire()
        conn = None
        try:
            conn = sqlite3.connect(
                str(p), isolation_level=None, check_same_thread=False, timeout=5.0
            )
            schema.configure(conn, durability=durability)
            app_id = schema.application_id(conn)
            if app_id != schema.APPLICATION_ID:
                raise StudyError("is an SQLite file but not a codecurve study", path=p)
            ver = schema.version(conn)
            if ver > schema.SCHEMA_VERSION:
                raise StudyError(
                    f"was written by a newer codecurve (schema {ver}, this one reads up to "
                    f"{schema.SCHEMA_VERSION}); upgrade codecurve",
                    path=p,
                )
            if ver < schema.SCHEMA_VERSION:
                if read_only:
                    raise StudyError(
                        f"uses the older schema {ver}; open it once for writing to upgrade it",
                        path=p,
                    )
                applied = schema.migrate(conn)
                log.info("upgraded %s to schema %s", p, applied)
            if read_only:
                conn.execute("PRAGMA query_only = ON")
            conn.create_function("cc_fold", 1, _fold, deterministic=True)
            study = cls(p, conn, lock)
            if not read_only and schema.journal_mode(conn) == "wal":
                conn.execute("PRAGMA wal_autocheckpoint = 0")
                study._checkpointer = WalCheckpointer(p)
                study._checkpointer.start()
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            if lock is not None:
                lock.release()
            raise StudyError(f"cannot open the study ({exc})", path=p) from None
        except BaseException:
            if conn is not None:
                conn.close()
            if lock is not None:
                lock.release()
            raise
        return study

    def close(self) -> None:
        """Close the file and release the writer's lock. Safe to call twice."""
        with self._mutex:
            if self._checkpointer is not None:
                self._checkpointer.stop()
                self._checkpointer = None
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()
            if self._file_lock is not None:
                self._file_lock.release()
                self._file_lock = None

    def __enter__(self) -> Study:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else ("read-only" if self.read_only else "open")
        return f"<Study {self._path} ({state})>"

    @property
    def path(self) -> Path:
        return self._path

    @property
    def codebook(self) -> Codebook:
        return self._codebook

    @property
    def read_only(self) -> bool:
        return self._file_lock is None

    @property
    def closed(self) -> bool:
        return self._conn is None

    @property
    def codes(self) -> tuple[Code, ...]:
        """The codable codes, in codebook order."""
        return tuple(self._code_of[cid] for cid in self._codable_cids)

    def check(self) -> list[str]:
        """``PRAGMA integrity_check`` and foreign keys; an empty list when all is well."""
        with self._mutex:
            conn = self._connection()
            rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
            problems = [] if rows == ["ok"] else rows
            problems += [
                f"foreign key: {tuple(r)}" for r in conn.execute("PRAGMA foreign_key_check")
            ]
            return problems

    def meta(self) -> dict[str, str]:
        """The ``meta`` table (creation details, codebook snapshot, active configuration)."""
        with self._mutex:
            return dict(self._connection().execute("SELECT key, value FROM meta"))

    # --- responses -------------------------------------------------------------------

    def response_count(self) -> int:
        return len(self._rid_of)

    def response_ids(self) -> list[str]:
        """Response ids in natural order (``r2`` before ``r10``)."""
        return [self._id_of[rid] for rid in sorted(self._id_of)]

    def response(self, response_id: str) -> Response:
        rid = self._rid(response_id)
        with self._mutex:
            row = (
                self._connection()
                .execute("SELECT id, text, attrs FROM responses WHERE rid = ?", (rid,))
                .fetchone()
            )
        return Response(row[0], row[1], json.loads(row[2]))

    def responses(self) -> Iterator[Response]:
        """Every response in file order."""
        with self._mutex:
            rows = (
                self._connection()
                .execute("SELECT id, text, attrs FROM responses ORDER BY pos")
                .fetchall()
            )
        for rid_text, text, attrs in rows:
            yield Response(rid_text, text, json.loads(attrs))

    def code(self, code_id: str) -> Code:
        """A codable code by id or (case-insensitive) name."""
        return self._code_of[self._cid(code_id)]

    # --- configurations --------------------------------------------------------------

    def ensure_config(self, config: ScoreConfig, *, activate: bool = True) -> int:
        """The id of ``config`` in this study, adding it if new; make it the active one."""
        key = config.key()
        with self._write() as conn:
            row = conn.execute("SELECT id FROM configs WHERE key = ?", (key,)).fetchone()
            if row is None:
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
                        config.template_hash,
                        config.context,
                        json.dumps(config.scale.to_dict()),
                        int(config.strict),
                        now(),
                    ),
                )
                config_id = int(cursor.lastrowid or 0)
                conn.execute(
                    "INSERT INTO events (at, kind, config_id, detail) VALUES (?, 'config', ?, ?)",
                    (now(), config_id, json.dumps({"key": key, "model": m.describe()})),
                )
            else:
                config_id = int(row[0])
            if activate:
                _set_meta(conn, "active_config", str(config_id))
        if activate:
            self._active = config_id  # after the commit: a rolled-back change is not cached
        return config_id

    def active_config_id(self) -> int | None:
        """The configuration scores are shown from (the last one scored with), if any."""
        if self._active is not None:
            return self._active  # the writer is the only one who changes it
        with self._mutex:
            row = (
                self._connection()
                .execute("SELECT value FROM meta WHERE key = 'active_config'")
                .fetchone()
            )
        active = None if row is None else int(row[0])
        if not self.read_only:
            self._active = active
        return active

    def set_active_config(self, config_id: int) -> None:
        self.config_row(config_id)
        with self._write() as conn:
            _set_meta(conn, "active_config", str(config_id))
        self._active = config_id

    def config_row(self, config_id: int) -> ConfigRow:
        """A stored configuration by id.

        Raises:
            StudyError: no such configuration.
        """
        cached = self._config_rows.get(config_id)
        if cached is not None:
            return cached
        with self._mutex:
            row = (
                self._connection()
                .execute(
                    "SELECT id, key, model_name, model_revision, model_dtype, model_device, "
                    "model_backend, template_id, template_hash, context, scale, strict, created_at "
                    "FROM configs WHERE id = ?",
                    (config_id,),
                )
                .fetchone()
            )
        if row is None:
            raise StudyError(f"no scoring configuration {config_id} in this study", path=self._path)
        config = ConfigRow(
            id=int(row[0]),
            key=row[1],
            model=ModelIdentity(
                name=row[2], revision=row[3], dtype=row[4], device=row[5], backend=row[6]
            ),
            template_id=row[7],
            template_hash=row[8],
            context=row[9],
            scale=Scale.from_dict(json.loads(row[10])),
            strict=bool(row[11]),
            created_at=row[12],
        )
        self._config_rows[config_id] = config
        return config

    def configs(self) -> list[ConfigRow]:
        with self._mutex:
            ids = [
                int(r[0]) for r in self._connection().execute("SELECT id FROM configs ORDER BY id")
            ]
        return [self.config_row(i) for i in ids]

    # --- scores ----------------------------------------------------------------------

    def pair_count(self) -> int:
        """Number of (response, codable code) pairs."""
        return len(self._rid_of) * len(self._codable_cids)

    def scored_count(self, config_id: int) -> int:
        with self._mutex:
            row = (
                self._connection()
                .execute("SELECT COUNT(*) FROM scores WHERE config_id = ?", (config_id,))
                .fetchone()
            )
        return int(row[0])

    def pending_pairs(self, config_id: int) -> list[Pair]:
        """The pairs not yet scored under ``config_id``, in response then code order."""
        self.config_row(config_id)
        codable = ",".join(str(c) for c in self._codable_cids)
        with self._mutex:
            rows = (
                self._connection()
                .execute(
                    "SELECT r.rid, r.text, c.cid FROM responses r JOIN codes c "
                    f"WHERE c.cid IN ({codable}) AND NOT EXISTS (SELECT 1 FROM scores s "
                    "WHERE s.config_id = ? AND s.rid = r.rid AND s.cid = c.cid) "
                    "ORDER BY r.rid, c.cid",
                    (config_id,),
                )
                .fetchall()
            )
        return [Pair(self._id_of[rid], text, self._code_of[cid]) for rid, text, cid in rows]

    def write_scores(self, config_id: int, scores: Iterable[Score]) -> int:
        """Store scores under ``config_id`` in one transaction; return how many were new.

        A pair already scored under this configuration keeps its first score.

        Raises:
            StudyError: a score from another configuration, or of an unknown pair.
        """
        config = self.config_row(config_id)
        stamp = now()
        rows = []
        token_json: dict[Any, str] = {}
        for score in scores:
            if score.config_key != config.key:
                raise StudyError(
                    f"a score of configuration {score.config_key} cannot be stored under "
                    f"configuration {config_id} ({config.key})",
                    path=self._path,
                )
            curve = score.curve
            rows.append(
                (
                    config_id,
                    self._rid(score.response_id),
                    self._cid(score.code_id),
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
                    None
                    if not any(score.missing)
                    else json.dumps([bool(m) for m in score.missing]),
                    score.prompt_hash,
                    score.text_hash,
                    score.code_hash,
                    int(score.truncated),
                    stamp,
                )
            )
        if not rows:
            return 0
        with self._write() as conn:
            final = [(*row[:14], self._token_set(conn, row[14]), *row[15:]) for row in rows]
            before = conn.total_changes
            conn.executemany(
                "INSERT INTO scores (config_id, rid, cid, surprisal, probs, on_scale_mass, "
                "entropy, norm_entropy, mode, pick, expected, spread, confidence, off_scale, "
                "token_set, missing, prompt_hash, text_hash, code_hash, truncated, scored_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (config_id, rid, cid) DO NOTHING",
                final,
            )
            return conn.total_changes - before

    def token_ids(self, config_id: int, response_id: str, code_id: str) -> Any:
        """The token ids a stored score was computed from (nested lists), or ``None``."""
        with self._mutex:
            row = (
                self._connection()
                .execute(
                    "SELECT t.token_ids FROM scores s LEFT JOIN token_sets t ON t.id = s.token_set "
                    "WHERE s.config_id = ? AND s.rid = ? AND s.cid = ?",
                    (config_id, self._rid(response_id), self._cid(code_id)),
                )
                .fetchone()
            )
        return None if row is None or row[0] is None else json.loads(row[0])

    def _token_set(self, conn: sqlite3.Connection, blob: str) -> int:
        found = self._token_sets.get(blob)
        if found is not None:
            return found
        conn.execute(
            "INSERT INTO token_sets (token_ids) VALUES (?) ON CONFLICT DO NOTHING", (blob,)
        )
        token_set = int(
            conn.execute("SELECT id FROM token_sets WHERE token_ids = ?", (blob,)).fetchone()[0]
        )
        # _write clears this cache on rollback, so it never names a row that was not kept.
        self._token_sets[blob] = token_set
        return token_set

    # --- decisions -------------------------------------------------------------------

    def record(
        self,
        response_id: str,
        code_id: str,
        value: int,
        *,
        coder: str,
        source: str = "human",
        note: str | None = None,
        config_id: int | None = None,
    ) -> Decision:
        """Record ``coder``'s decision on a pair, durably, before returning.

        Args:
            response_id: The response.
            code_id: The code, by id or name.
            value: A value of the code's scale.
            coder: Who decides (non-empty).
            source: ``human``, or ``model`` when the coder accepted the model's pick.
            note: A note to set with the decision (``None`` leaves the note as it is).
            config_id: The configuration whose pick was shown (defaults to the active one).

        Raises:
            StudyError: unknown pair, a value off the scale, a bad source, read-only.
        """
        rid, cid = self._rid(response_id), self._cid(code_id)
        code = self._code_of[cid]
        scale = self._codebook.scale_for(code)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise StudyError(f"a decision is a scale value (an integer), not {value!r}")
        value = int(value)
        if value not in scale.values:
            raise StudyError(
                f"{value} is not a value of scale {scale.name} {list(scale.values)} "
                f"of code {code.name!r}"
            )
        if source not in SOURCES:
            raise StudyError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
        coder = _check_coder(coder)
        if config_id is None:
            config_id = self.active_config_id()
        with self._write() as conn:
            return self._apply(
                conn,
                "record",
                rid,
                cid,
                coder,
                value=value,
                source=source,
                note=note,
                sets_note=note is not None,
                config_id=config_id,
            )

    def clear(self, response_id: str, code_id: str, *, coder: str) -> Decision:
        """Take back ``coder``'s decision on a pair (undoable; a note stays)."""
        rid, cid = self._rid(response_id), self._cid(code_id)
        coder = _check_coder(coder)
        with self._write() as conn:
            return self._apply(conn, "clear", rid, cid, coder, value=None, source=None)

    def set_note(self, response_id: str, code_id: str, note: str | None, *, coder: str) -> Decision:
        """Set (or with ``None``/empty, remove) ``coder``'s note on a pair (undoable)."""
        rid, cid = self._rid(response_id), self._cid(code_id)
        coder = _check_coder(coder)
        with self._write() as conn:
            state = self._state(conn, rid, cid, coder)
            return self._apply(
                conn,
                "note",
                rid,
                cid,
                coder,
                value=state.value,
                source=state.source,
                note=note,
                sets_note=True,
                keep_decision=True,
            )

    def skip(self, response_id: str, code_id: str, *, coder: str | None = None) -> None:
        """Move past a pair without deciding: nothing is stored (checks the pair exists)."""
        self._rid(response_id)
        self._cid(code_id)

    def undo(self, *, coder: str) -> Decision | None:
        """Revert ``coder``'s latest decision, clearing or note not yet undone.

        Returns:
            The reverted decision as it had been recorded (so the caller can go back to
            its pair), or ``None`` when there is nothing left to undo.
        """
        coder = _check_coder(coder)
        with self._write() as conn:
            row = conn.execute(
                "SELECT id, kind, rid, cid, value, source, note, at, sets_note, prev_value, "
                "prev_source, prev_event, prev_note, prev_note_event FROM events e "
                "WHERE coder = ? AND kind IN ('record', 'clear', 'note') "
                "AND NOT EXISTS (SELECT 1 FROM events u WHERE u.undoes = e.id) "
                "ORDER BY id DESC LIMIT 1",
                (coder,),
            ).fetchone()
            if row is None:
                return None
            (
                event_id,
                kind,
                rid,
                cid,
                value,
                source,
                note,
                at,
                sets_note,
                prev_value,
                prev_source,
                prev_event,
                prev_note,
                prev_note_event,
            ) = row
            current = self._state(conn, rid, cid, coder)
            stamp = now()
            cursor = conn.execute(
                "INSERT INTO events (at, kind, coder, rid, cid, value, source, note, sets_note, "
                "prev_value, prev_source, prev_event, prev_note, prev_note_event, undoes) "
                "VALUES (?, 'undo', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    stamp,
                    coder,
                    rid,
                    cid,
                    prev_value,
                    prev_source,
                    prev_note if sets_note else current.note,
                    int(bool(sets_note)),
                    current.value,
                    current.source,
                    current.event,
                    current.note,
                    current.note_event,
                    event_id,
                ),
            )
            if kind != "note":
                if prev_value is None:
                    conn.execute(
                        "DELETE FROM annotations WHERE rid = ? AND cid = ? AND coder = ?",
                        (rid, cid, coder),
                    )
                else:
                    at_prev, config_prev = conn.execute(
                        "SELECT at, config_id FROM events WHERE id = ?", (prev_event,)
                    ).fetchone()
                    _upsert_annotation(
                        conn,
                        rid,
                        cid,
                        coder,
                        prev_value,
                        prev_source,
                        config_prev,
                        prev_event,
                        at_prev,
                    )
            if sets_note:
                _put_note(conn, rid, cid, coder, prev_note, prev_note_event)
            log.debug("undo of event %s by %s (event %s)", event_id, coder, cursor.lastrowid)
        return Decision(
            id=int(event_id),
            response_id=self._id_of[rid],
            code_id=self._code_of[cid].id,
            value=value,
            source=source,
            coder=coder,
            note=note,
            at=at,
            kind=kind,
        )

    def decision(
        self, response_id: str, code_id: str, *, coder: str | None = None
    ) -> Decision | None:
        """The current decision on a pair: ``coder``'s, or the latest of any coder."""
        rid, cid = self._rid(response_id), self._cid(code_id)
        sql = (
            "SELECT a.event_id, a.value, a.source, a.coder, a.decided_at, n.note "
            "FROM annotations a LEFT JOIN notes n ON n.rid = a.rid AND n.cid = a.cid "
            "AND n.coder = a.coder WHERE a.rid = ? AND a.cid = ?"
        )
        params: list[Any] = [rid, cid]
        if coder is not None:
            sql += " AND a.coder = ?"
            params.append(coder)
        sql += " ORDER BY a.decided_at DESC, a.event_id DESC LIMIT 1"
        with self._mutex:
            row = self._connection().execute(sql, params).fetchone()
        if row is None:
            return None
        return Decision(
            id=int(row[0]),
            response_id=self._id_of[rid],
            code_id=self._code_of[cid].id,
            value=int(row[1]),
            source=row[2],
            coder=row[3],
            note=row[5],
            at=row[4],
        )

    def note(self, response_id: str, code_id: str, *, coder: str) -> str | None:
        rid, cid = self._rid(response_id), self._cid(code_id)
        with self._mutex:
            row = (
                self._connection()
                .execute(
                    "SELECT note FROM notes WHERE rid = ? AND cid = ? AND coder = ?",
                    (rid, cid, coder),
                )
                .fetchone()
            )
        return None if row is None else str(row[0])

    def coders(self) -> list[str]:
        """Everyone with a decision or a note in this study, sorted."""
        with self._mutex:
            rows = (
                self._connection()
                .execute("SELECT coder FROM annotations UNION SELECT coder FROM notes ORDER BY 1")
                .fetchall()
            )
        return [str(r[0]) for r in rows]

    def decision_count(self, *, coder: str | None = None) -> int:
        with self._mutex:
            if coder is None:
                row = self._connection().execute("SELECT COUNT(*) FROM annotations").fetchone()
            else:
                row = (
                    self._connection()
                    .execute("SELECT COUNT(*) FROM annotations WHERE coder = ?", (coder,))
                    .fetchone()
                )
        return int(row[0])

    def import_decisions(
        self,
        items: Sequence[tuple[str, str, int]],
        *,
        coder: str,
        replace: bool = False,
        detail: dict[str, Any] | None = None,
    ) -> ImportResult:
        """Store many ``(response_id, code_id, value)`` decisions of one coder, all or none.

        Each stored decision is an ``import`` event (source ``human``); imports are not on
        the undo stack. A pair ``coder`` already decided differently is a conflict: the
        whole import is refused unless ``replace``.

        Raises:
            StudyError: unknown pairs, values off the scale, conflicts; nothing is stored.
        """
        coder = _check_coder(coder)
        resolved = []
        for response_id, code_id, value in items:
            rid, cid = self._rid(response_id), self._cid(code_id)
            scale = self._codebook.scale_for(self._code_of[cid])
            if value not in scale.values:
                raise StudyError(
                    f"{value} is not a value of scale {scale.name} for code "
                    f"{self._code_of[cid].name!r} (response {response_id!r})"
                )
            resolved.append((rid, cid, int(value)))
        added = changed = unchanged = 0
        blob = json.dumps(detail, ensure_ascii=False) if detail else None
        with self._write() as conn:
            existing = {
                (rid, cid): int(value)
                for rid, cid, value in conn.execute(
                    "SELECT rid, cid, value FROM annotations WHERE coder = ?", (coder,)
                )
            }
            conflicts = [
                (rid, cid, old, value)
                for rid, cid, value in resolved
                if (old := existing.get((rid, cid))) is not None and old != value
            ]
            if conflicts and not replace:
                shown = "; ".join(
                    f"{self._id_of[r]!r}/{self._code_of[c].id}: {old} here, {new} in the file"
                    for r, c, old, new in conflicts[:_MAX_LISTED]
                )
                more = (
                    f" and {len(conflicts) - _MAX_LISTED} more"
                    if len(conflicts) > _MAX_LISTED
                    else ""
                )
                raise StudyError(
                    f"{len(conflicts)} pair(s) already decided differently by {coder!r}: "
                    f"{shown}{more}; nothing imported (use --replace to overwrite them)",
                    path=self._path,
                )
            for rid, cid, value in resolved:
                old = existing.get((rid, cid))
                if old == value:
                    unchanged += 1
                    continue
                self._apply(
                    conn, "import", rid, cid, coder, value=value, source="human", detail=blob
                )
                existing[(rid, cid)] = value
                if old is None:
                    added += 1
                else:
                    changed += 1
        return ImportResult(added=added, changed=changed, unchanged=unchanged)

    def events(
        self,
        *,
        response_id: str | None = None,
        code_id: str | None = None,
        coder: str | None = None,
    ) -> list[Event]:
        """The event log (audit trail), oldest first, optionally for one pair or coder."""
        sql = (
            "SELECT id, at, kind, coder, rid, cid, value, source, note, config_id, prev_value, "
            "prev_source, prev_note, undoes, detail FROM events WHERE 1 = 1"
        )
        params: list[Any] = []
        if response_id is not None:
            sql += " AND rid = ?"
            params.append(self._rid(response_id))
        if code_id is not None:
            sql += " AND cid = ?"
            params.append(self._cid(code_id))
        if coder is not None:
            sql += " AND coder = ?"
            params.append(coder)
        sql += " ORDER BY id"
        with self._mutex:
            rows = self._connection().execute(sql, params).fetchall()
        return [
            Event(
                id=r[0],
                at=r[1],
                kind=r[2],
                coder=r[3],
                response_id=None if r[4] is None else self._id_of[r[4]],
                code_id=None if r[5] is None else self._code_of[r[5]].id,
                value=r[6],
                source=r[7],
                note=r[8],
                config_id=r[9],
                prev_value=r[10],
                prev_source=r[11],
                prev_note=r[12],
                undoes=r[13],
                detail=r[14],
            )
            for r in rows
        ]

    # --- queries (study.queries) -------------------------------------------------------

    def query_pairs(
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
    ) -> list[PairRow]:
        """One page of the review queue (see :func:`study.queries.query_pairs`)."""
        from study import queries

        return queries.query_pairs(
            self,
            config_id,
            order=order,
            code_id=code_id,
            status=status,
            search=search,
            coder=coder,
            offset=offset,
            limit=limit,
        )

    def response_pairs(
        self, config_id: int | None, response_id: str, *, coder: str | None = None
    ) -> list[PairRow]:
        """Every codable code of one response, in codebook order, with its score and decision.

        See :func:`study.queries.response_pairs`.
        """
        from study import queries

        return queries.response_pairs(self, config_id, response_id, coder=coder)

    def count_pairs(
        self,
        config_id: int | None,
        *,
        code_id: str | None = None,
        status: str | None = None,
        search: str | None = None,
        coder: str | None = None,
    ) -> int:
        """How many pairs :meth:`query_pairs` would list with these filters."""
        from study import queries

        return queries.count_pairs(
            self, config_id, code_id=code_id, status=status, search=search, coder=coder
        )

    def pair_position(
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
    ) -> int | None:
        """The pair's offset in :meth:`query_pairs` (see :func:`study.queries.pair_position`)."""
        from study import queries

        return queries.pair_position(
            self,
            config_id,
            response_id,
            code_id,
            order=order,
            code_filter=code_filter,
            status=status,
            search=search,
            coder=coder,
        )

    def progress(self, config_id: int | None = None, *, coder: str | None = None) -> dict[str, Any]:
        """Decided and scored counts, overall and per code (see :func:`study.queries.progress`)."""
        from study import queries

        return queries.progress(self, config_id, coder=coder)

    def annotated_pairs(self, config_id: int | None, *, coder: str | None = None) -> pd.DataFrame:
        """Decided pairs with the model's scores: the input to screening."""
        from study import queries

        return queries.annotated_pairs(self, config_id, coder=coder)

    # --- internals -------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StudyError("the study is closed", path=self._path)
        return self._conn

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE ... COMMIT`` transaction, committed before leaving."""
        with self._mutex:
            conn = self._connection()
            if self._file_lock is None:
                raise StudyError(
                    "the study is open read-only; open it for writing to change it", path=self._path
                )
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StudyLockedError(f"cannot start a change ({exc})", path=self._path) from None
            try:
                yield conn
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                self._token_sets.clear()
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                self._token_sets.clear()
                raise StudyError(f"could not save the change ({exc})", path=self._path) from None

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several statements (nested calls share it)."""
        with self._mutex:
            conn = self._connection()
            if conn.in_transaction:
                yield conn
                return
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("COMMIT")

    def _rid(self, response_id: str) -> int:
        rid = self._rid_of.get(str(response_id))
        if rid is None:
            raise StudyError(f"no response with id {response_id!r} in this study", path=self._path)
        return rid

    def _cid(self, code_id: str) -> int:
        cid = self._cid_of.get(code_id)
        if cid is None:
            try:
                cid = self._cid_of[self._codebook.code(code_id).id]
            except CodebookError:
                raise StudyError(
                    f"no code {code_id!r} in the study's codebook {self._codebook.name!r}",
                    path=self._path,
                ) from None
        if not self._code_of[cid].codable:
            raise StudyError(
                f"code {self._code_of[cid].name!r} is a category that only groups codes; "
                "it cannot be decided",
                path=self._path,
            )
        return cid

    def _meta_value(self, key: str) -> str:
        row = self._connection().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise StudyError(f"the study has no {key!r} (damaged file?)", path=self._path)
        return str(row[0])

    def _state(self, conn: sqlite3.Connection, rid: int, cid: int, coder: str) -> _PairState:
        a = conn.execute(
            "SELECT value, source, event_id FROM annotations "
            "WHERE rid = ? AND cid = ? AND coder = ?",
            (rid, cid, coder),
        ).fetchone()
        n = conn.execute(
            "SELECT note, event_id FROM notes WHERE rid = ? AND cid = ? AND coder = ?",
            (rid, cid, coder),
        ).fetchone()
        return _PairState(
            value=None if a is None else int(a[0]),
            source=None if a is None else str(a[1]),
            event=None if a is None else int(a[2]),
            note=None if n is None else str(n[0]),
            note_event=None if n is None else int(n[1]),
        )

    def _apply(
        self,
        conn: sqlite3.Connection,
        kind: str,
        rid: int,
        cid: int,
        coder: str,
        *,
        value: int | None,
        source: str | None,
        note: str | None = None,
        sets_note: bool = False,
        keep_decision: bool = False,
        config_id: int | None = None,
        detail: str | None = None,
    ) -> Decision:
        """Append one event and bring ``annotations``/``notes`` to the state it describes."""
        prev = self._state(conn, rid, cid, coder)
        note = note or None  # an empty note removes it
        stamp = now()
        cursor = conn.execute(
            "INSERT INTO events (at, kind, coder, rid, cid, value, source, note, sets_note, "
            "config_id, prev_value, prev_source, prev_event, prev_note, prev_note_event, detail) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                stamp,
                kind,
                coder,
                rid,
                cid,
                value,
                source,
                note if sets_note else None,
                int(sets_note),
                config_id,
                prev.value,
                prev.source,
                prev.event,
                prev.note,
                prev.note_event,
                detail,
            ),
        )
        event_id = int(cursor.lastrowid or 0)
        if not keep_decision:
            if value is None:
                conn.execute(
                    "DELETE FROM annotations WHERE rid = ? AND cid = ? AND coder = ?",
                    (rid, cid, coder),
                )
            else:
                assert source is not None
                _upsert_annotation(conn, rid, cid, coder, value, source, config_id, event_id, stamp)
        if sets_note:
            _put_note(conn, rid, cid, coder, note, event_id)
        return Decision(
            id=event_id,
            response_id=self._id_of[rid],
            code_id=self._code_of[cid].id,
            value=value,
            source=source,
            coder=coder,
            note=note if sets_note else prev.note,
            at=stamp,
            kind=kind,
        )


@dataclass(frozen=True)
class _PairState:
    value: int | None
    source: str | None
    event: int | None
    note: str | None
    note_event: int | None


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


def _upsert_annotation(
    conn: sqlite3.Connection,
    rid: int,
    cid: int,
    coder: str,
    value: int,
    source: str,
    config_id: int | None,
    event_id: int,
    at: str,
) -> None:
    conn.execute(
        "INSERT INTO annotations (rid, cid, coder, value, source, config_id, event_id, decided_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (rid, cid, coder) DO UPDATE SET "
        "value = excluded.value, source = excluded.source, config_id = excluded.config_id, "
        "event_id = excluded.event_id, decided_at = excluded.decided_at",
        (rid, cid, coder, value, source, config_id, event_id, at),
    )


def _put_note(
    conn: sqlite3.Connection, rid: int, cid: int, coder: str, note: str | None, event_id: int | None
) -> None:
    if note is None or event_id is None:
        conn.execute("DELETE FROM notes WHERE rid = ? AND cid = ? AND coder = ?", (rid, cid, coder))
    else:
        conn.execute(
            "INSERT INTO notes (rid, cid, coder, note, event_id) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (rid, cid, coder) DO UPDATE SET note = excluded.note, "
            "event_id = excluded.event_id",
            (rid, cid, coder, note, event_id),
        )


def _set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def _check_coder(coder: str) -> str:
    if not isinstance(coder, str) or not coder.strip():
        raise StudyError("a decision needs a coder's name (--coder NAME)")
    return coder.strip()


def _fold(text: str | None) -> str | None:
    return None if text is None else text.casefold()


def _check_header(p: Path) -> None:
    try:
        with open(p, "rb") as handle:
            head = handle.read(len(_SQLITE_MAGIC))
    except FileNotFoundError:
        raise StudyError(
            "no such study; create one with 'codecurve new STUDY --responses FILE --codebook FILE'",
            path=p,
        ) from None
    except IsADirectoryError:
        raise StudyError("is a directory, not a study file", path=p) from None
    except OSError as exc:
        raise StudyError(f"cannot read the study ({exc.strerror or exc})", path=p) from None
    if head != _SQLITE_MAGIC:
        raise StudyError("is not a codecurve study (not an SQLite file)", path=p)


def _fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def software_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("codecurve")
    except PackageNotFoundError:
        return "0+unknown"


def _build(tmp: Path, *, responses: ResponseTable, codebook: Codebook) -> None:
    """Write a complete study into ``tmp`` (closed and fsynced on return)."""
    conn = sqlite3.connect(str(tmp), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = MEMORY")
        conn.execute("PRAGMA synchronous = OFF")  # the file is fsynced once, below
        conn.execute("PRAGMA foreign_keys = ON")
        schema.initialise(conn)
        ordered = sorted(responses.responses, key=lambda r: natural_key(r.id))
        position = {r.id: i for i, r in enumerate(responses.responses)}
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO responses (rid, id, text, attrs, pos) VALUES (?, ?, ?, ?, ?)",
            (
                (
                    rid,
                    r.id,
                    r.text,
                    json.dumps(dict(r.attrs), ensure_ascii=False, default=str),
                    position[r.id],
                )
                for rid, r in enumerate(ordered, start=1)
            ),
        )
        conn.executemany(
            "INSERT INTO codes (cid, id, name, codable) VALUES (?, ?, ?, ?)",
            ((cid, c.id, c.name, int(c.codable)) for cid, c in enumerate(codebook.codes, start=1)),
        )
        created = now()
        meta = {
            "codebook": json.dumps(codebook.to_dict(), ensure_ascii=False),
            "codebook_hash": codebook.content_hash(),
            "created_at": created,
            "created_by": f"codecurve {software_version()}",
            "responses_source": "" if responses.path is None else str(responses.path),
            "responses_id_column": responses.id_column or "",
            "responses_text_column": responses.text_column or "",
        }
        conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
        conn.execute(
            "INSERT INTO events (at, kind, detail) VALUES (?, 'create', ?)",
            (
                created,
                json.dumps(
                    {
                        "responses": len(responses),
                        "codes": len(codebook.codes),
                        "source": meta["responses_source"],
                        "messages": list(responses.messages),
                    },
                    ensure_ascii=False,
                ),
            ),
        )
        conn.execute("COMMIT")
        conn.execute("PRAGMA journal_mode = WAL")
    finally:
        conn.close()
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
