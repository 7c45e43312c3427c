"""One coding study on disk: :class:`Study`.

A study is one SQLite file (schema in :mod:`study.schema`) opened by one writer at a time
(:mod:`study.locking`); any number of read-only handles may look on. :class:`Study` is
the face of the package; the work is done by modules cut by concern::

    study.lifecycle   create, open, upgrade, check the file
    study.index       response and code ids <-> table keys (Study.index)
    study.scores      scoring configurations and stored scores
    study.decisions   the event-sourced decision log
    study.queries     the review queue and its counts
    study.summaries   progress, screening input
    study.codec       float curves as BLOBs, natural id order

Durability: every change (a decision, a note, an undo, an import, a batch of scores) is one
``BEGIN IMMEDIATE ... COMMIT`` transaction finished before the method returns, in WAL mode:
what a method returned as saved survives a killed process; with ``durability="full"`` also
a power cut, and by default a power cut after about a second (:func:`study.schema.configure`).

Decisions are kept per coder: the current one in ``annotations``, every change in the
append-only ``events`` log with the state it replaced. :meth:`Study.undo` reverts the
coder's latest decision, clearing or note that is not yet undone, restoring exactly the
state before it, and can be repeated to walk further back. Undo is not itself undone (there
is no redo); imports are not on the undo stack.

A damaged file (SQLite reports a malformed page, a hand-edited field makes no sense) is
a :class:`~study.errors.StudyError` saying so, never a raw ``sqlite3`` error.

Thread use: one handle may be shared by threads (the app reads while a worker writes
scores); calls are serialised by a lock.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from codebooks.model import Code, Codebook
from scoring.score import Pair, Score, ScoreConfig
from study import decisions, lifecycle, revisions, schema
from study import scores as stored
from study.audit import AuditMethods
from study.checkpoint import WalCheckpointer
from study.codec import blob_to_floats, floats_to_blob, natural_key
from study.decisions import ImportResult, check_coder
from study.delegation_log import DelegationMethods
from study.errors import StudyError, StudyLockedError
from study.index import StudyIndex
from study.iteration import CodebookIteration
from study.locking import StudyLock
from study.queries import PairQueries
from study.responses import Response, ResponseTable
from study.rows import SOURCES, ConfigRow, Decision, Event
from study.stamps import now, software_version
from study.summaries import StudySummaries

#: Suffix of a study file.
SUFFIX = ".codecurve"

# Re-exported: callers imported these from here before the cut.
__all__ = [
    "SUFFIX",
    "ImportResult",
    "Study",
    "blob_to_floats",
    "floats_to_blob",
    "natural_key",
    "now",
    "software_version",
]


class Study(PairQueries, StudySummaries, AuditMethods, DelegationMethods, CodebookIteration):
    """An open study. Use :meth:`create` or :meth:`open`; close it (or use ``with``).

    The queue's queries (:meth:`query_pairs`, :meth:`count_pairs`, :meth:`pair_position`,
    :meth:`response_pairs`) come from :class:`study.queries.PairQueries`, the summaries
    (:meth:`progress`, :meth:`annotated_pairs`) from :class:`study.summaries.StudySummaries`,
    codebook versions and waves from :class:`study.iteration.CodebookIteration`.
    """

    def __init__(self, path: Path, conn: sqlite3.Connection, lock: StudyLock | None) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = conn
        self._file_lock = lock
        self._mutex = threading.RLock()
        try:
            self._codebook = Codebook.from_dict(json.loads(self._meta_value("codebook")))
        except (ValueError, TypeError, KeyError) as exc:
            raise lifecycle.damaged(path, f"its codebook cannot be read ({exc})") from None
        self._index = revisions.load_index(path, conn, self._codebook)
        self._token_sets: dict[str, int] = {}
        self._config_rows: dict[int, ConfigRow] = {}
        self._checkpointer: WalCheckpointer | None = None
        if lock is not None and schema.journal_mode(conn) == "wal":
            # The writer checkpoints in the background (see study.schema.configure).
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            self._checkpointer = WalCheckpointer(path)
            self._checkpointer.start()
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
        lifecycle.create_file(p, responses=responses, codebook=codebook, overwrite=overwrite)
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
            StudyError: no such file, not a study, a study made by a newer codecurve, a
                damaged file.
            StudyLockedError: opened for writing elsewhere (a writer only).
        """
        p = Path(path)
        if durability not in schema.DURABILITY:
            raise StudyError(f"durability must be one of {', '.join(schema.DURABILITY)}")
        lifecycle.check_header(p)
        lock = None
        if not read_only:
            lock = StudyLock(p)
            lock.acquire()
        conn = None
        try:
            conn = lifecycle.connect(p, read_only=read_only, durability=durability)
            study = cls(p, conn, lock)
        except BaseException as exc:
            if conn is not None:
                conn.close()
            if lock is not None:
                lock.release()
            if isinstance(exc, sqlite3.OperationalError):
                raise StudyError(f"cannot open the study ({exc})", path=p) from None
            if isinstance(exc, sqlite3.DatabaseError):
                raise lifecycle.damaged(p, exc) from None
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
    def index(self) -> StudyIndex:
        """Response and code ids with the tables' keys (fixed while the study is open)."""
        return self._index

    @property
    def read_only(self) -> bool:
        return self._file_lock is None

    @property
    def closed(self) -> bool:
        return self._conn is None

    @property
    def codes(self) -> tuple[Code, ...]:
        """The codable codes, in codebook order."""
        return self._index.codable_codes()

    def check(self) -> list[str]:
        """``PRAGMA integrity_check`` and foreign keys; an empty list when all is well."""
        with self._query() as conn:
            return lifecycle.integrity_problems(conn)

    def quick_check(self) -> None:
        """SQLite's quick check of every page (a second or so for a large study).

        Raises:
            StudyError: the file is damaged, with the advice to restore it from a copy.
        """
        with self._mutex:
            lifecycle.quick_check(self._connection(), path=self._path)

    def meta(self) -> dict[str, str]:
        """The ``meta`` table (creation details, codebook snapshot, active configuration)."""
        with self._query() as conn:
            return dict(conn.execute("SELECT key, value FROM meta"))

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A consistent read of several statements, for queries and exporters.

        Nested calls share the snapshot. The connection is for reading only; a damaged
        page met while reading raises :class:`StudyError`.
        """
        with self._query() as conn:
            if conn.in_transaction:
                yield conn
                return
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("COMMIT")

    # --- responses -------------------------------------------------------------------

    def response_count(self) -> int:
        return self._index.response_count

    def response_ids(self) -> list[str]:
        """Response ids in natural order (``r2`` before ``r10``)."""
        return self._index.response_ids()

    def response(self, response_id: str) -> Response:
        rid = self._index.response_key(response_id)
        with self._query() as conn:
            row = conn.execute(
                "SELECT id, text, attrs FROM responses WHERE rid = ?", (rid,)
            ).fetchone()
        return Response(row[0], row[1], self._attrs(row[2]))

    def responses(self) -> Iterator[Response]:
        """Every response in file order."""
        with self._query() as conn:
            rows = conn.execute("SELECT id, text, attrs FROM responses ORDER BY pos").fetchall()
        for rid_text, text, attrs in rows:
            yield Response(rid_text, text, self._attrs(attrs))

    def code(self, code_id: str) -> Code:
        """A codable code by id or (case-insensitive) name."""
        return self._index.code_at(self._index.code_key(code_id))

    # --- configurations and scores (study.scores) --------------------------------------

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
            conn.execute(
                "INSERT INTO events (at, kind, config_id) VALUES (?, 'activate', ?)",
                (now(), config_id),
            )
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
        with self._query() as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM scores WHERE config_id = ?", (config_id,)
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
            return stored.insert_scores(conn, rows, self._token_sets)

    def token_ids(self, config_id: int, response_id: str, code_id: str) -> Any:
        """The token ids a stored score was computed from (nested lists), or ``None``."""
        rid, cid = self._index.response_key(response_id), self._index.code_key(code_id)
        with self._query() as conn:
            return stored.token_ids(conn, config_id, rid, cid)

    # --- decisions (study.decisions) ----------------------------------------------------

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
        blind: bool = False,
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
            blind: The coder decided without seeing the model's answer (the blind
                audit); a blind decision cannot be an accepted pick (``source="model"``).

        Raises:
            StudyError: unknown pair, a value off the scale, a bad source, read-only.
        """
        rid, cid = self._index.response_key(response_id), self._index.code_key(code_id)
        value = decisions.check_value(self._codebook, self._index.code_at(cid), value)
        if source not in SOURCES:
            raise StudyError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
        coder = check_coder(coder)
        if blind and source != "human":
            raise StudyError("a blind decision is the coder's own (source 'human')")
        if config_id is None:
            config_id = self.active_config_id()
        with self._write() as conn:
            return decisions.apply_event(
                conn,
                self._index,
                "record",
                rid,
                cid,
                coder,
                value=value,
                source=source,
                note=note,
                sets_note=note is not None,
                config_id=config_id,
                blind=blind,
            )

    def clear(self, response_id: str, code_id: str, *, coder: str) -> Decision:
        """Take back ``coder``'s decision on a pair (undoable; a note stays)."""
        rid, cid = self._index.response_key(response_id), self._index.code_key(code_id)
        coder = check_coder(coder)
        with self._write() as conn:
            return decisions.apply_event(
                conn, self._index, "clear", rid, cid, coder, value=None, source=None
            )

    def set_note(self, response_id: str, code_id: str, note: str | None, *, coder: str) -> Decision:
        """Set (or with ``None``/empty, remove) ``coder``'s note on a pair (undoable)."""
        rid, cid = self._index.response_key(response_id), self._index.code_key(code_id)
        coder = check_coder(coder)
        with self._write() as conn:
            state = decisions.pair_state(conn, rid, cid, coder)
            return decisions.apply_event(
                conn,
                self._index,
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

    def set_memo(self, response_id: str, note: str | None, *, coder: str) -> Decision:
        """Set (or with ``None``/empty, remove) ``coder``'s memo on a whole response
        (undoable like a note; the returned decision's ``code_id`` is ``""``)."""
        rid = self._index.response_key(response_id)
        coder = check_coder(coder)
        with self._write() as conn:
            return decisions.set_memo(conn, self._index, rid, coder, note)

    def memo(self, response_id: str, *, coder: str | None = None) -> str | None:
        """``coder``'s memo on a response, or (no coder given) the latest of any coder."""
        rid = self._index.response_key(response_id)
        sql = "SELECT note FROM memos WHERE rid = ?"
        params: list[object] = [rid]
        if coder is not None:
            sql += " AND coder = ?"
            params.append(coder)
        with self._query() as conn:
            row = conn.execute(sql + " ORDER BY event_id DESC LIMIT 1", params).fetchone()
        return None if row is None else str(row[0])

    def skip(self, response_id: str, code_id: str, *, coder: str | None = None) -> None:
        """Move past a pair without deciding: nothing is stored (checks the pair exists)."""
        self._index.response_key(response_id)
        self._index.code_key(code_id)

    def undo(self, *, coder: str) -> Decision | None:
        """Revert ``coder``'s latest decision, clearing or note not yet undone.

        Returns:
            The reverted decision as it had been recorded (so the caller can go back to
            its pair), or ``None`` when there is nothing left to undo.
        """
        coder = check_coder(coder)
        with self._write() as conn:
            return decisions.undo_latest(conn, self._index, coder)

    def decision(
        self, response_id: str, code_id: str, *, coder: str | None = None
    ) -> Decision | None:
        """The current decision on a pair: ``coder``'s, or the latest of any coder."""
        rid, cid = self._index.response_key(response_id), self._index.code_key(code_id)
        with self._query() as conn:
            return decisions.current_decision(conn, self._index, rid, cid, coder)

    def note(self, response_id: str, code_id: str, *, coder: str) -> str | None:
        rid, cid = self._index.response_key(response_id), self._index.code_key(code_id)
        with self._query() as conn:
            row = conn.execute(
                "SELECT note FROM notes WHERE rid = ? AND cid = ? AND coder = ?",
                (rid, cid, coder),
            ).fetchone()
        return None if row is None else str(row[0])

    def coders(self) -> list[str]:
        """Everyone with a decision or a note in this study, sorted."""
        with self._query() as conn:
            rows = conn.execute(
                "SELECT coder FROM annotations UNION SELECT coder FROM notes ORDER BY 1"
            ).fetchall()
        return [str(r[0]) for r in rows]

    def decision_count(self, *, coder: str | None = None) -> int:
        with self._query() as conn:
            if coder is None:
                row = conn.execute("SELECT COUNT(*) FROM annotations").fetchone()
            else:
                row = conn.execute(
                    "SELECT COUNT(*) FROM annotations WHERE coder = ?", (coder,)
                ).fetchone()
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
        coder = check_coder(coder)
        resolved = decisions.resolve_items(self._index, self._codebook, items)
        blob = json.dumps(detail, ensure_ascii=False) if detail else None
        with self._write() as conn:
            return decisions.import_resolved(
                conn,
                self._index,
                resolved,
                coder=coder,
                replace=replace,
                detail=blob,
                path=self._path,
            )

    def events(
        self,
        *,
        response_id: str | None = None,
        code_id: str | None = None,
        coder: str | None = None,
    ) -> list[Event]:
        """The event log (audit trail), oldest first, optionally for one pair or coder."""
        rid = None if response_id is None else self._index.response_key(response_id)
        cid = None if code_id is None else self._index.code_key(code_id)
        with self._query() as conn:
            return decisions.read_events(conn, self._index, rid=rid, cid=cid, coder=coder)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction for the study's own modules (the audit, delegation).

        Committed before leaving, rolled back on an exception.

        Raises:
            StudyError: read-only, or the change could not be saved.
        """
        with self._write() as conn:
            yield conn

    # --- internals -------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StudyError("the study is closed", path=self._path)
        return self._conn

    @contextlib.contextmanager
    def _query(self) -> Iterator[sqlite3.Connection]:
        """The connection under the handle's lock; a damaged file becomes a StudyError."""
        with self._mutex:
            conn = self._connection()
            try:
                yield conn
            except sqlite3.OperationalError as exc:
                raise StudyError(f"cannot read the study ({exc})", path=self._path) from None
            except sqlite3.DatabaseError as exc:
                raise lifecycle.damaged(self._path, exc) from None

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
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                self._token_sets.clear()
                if isinstance(exc, sqlite3.OperationalError):
                    raise StudyError(
                        f"could not save the change ({exc})", path=self._path
                    ) from None
                if isinstance(exc, sqlite3.DatabaseError) and not isinstance(
                    exc, sqlite3.IntegrityError
                ):
                    raise lifecycle.damaged(self._path, exc) from None
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                self._token_sets.clear()
                raise StudyError(f"could not save the change ({exc})", path=self._path) from None

    def _meta_value(self, key: str) -> str:
        row = self._connection().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise StudyError(f"the study has no {key!r} (damaged file?)", path=self._path)
        return str(row[0])

    def _attrs(self, text: str) -> dict[str, Any]:
        try:
            attrs = json.loads(text)
        except ValueError:
            attrs = None
        if not isinstance(attrs, dict):
            raise lifecycle.damaged(self._path, f"a response's attributes are not a map: {text!r}")
        return attrs
