"""One coding study on disk: :class:`Study`, the handle, and its namespaces.

A study is one SQLite file (schema in :mod:`study.file.schema`) opened by one writer at a time
(:mod:`study.file.locking`); any number of read-only handles may look on. :class:`Study` is
the handle: it owns the connection, the writer's lock, the transactions, the index and the
codebook, and reads the responses. The rest is in namespaces it holds, each typed against
the handle's protocol (:class:`study.handle.StudyHandle`)::

    study.scores       configurations and stored scores    study.scores.ledger.Scores
    study.decisions    decisions, notes, memos, undo, log  study.log.decisions.Decisions
    study.queries      the queue, the response mode,       study.queries.pairs.Queries
                       progress, screening input
    study.audit        the blind audit sample              study.audit.sample.Audit
    study.delegations  certified delegation                study.log.delegations.Delegations
    study.versions     codebook revisions, waves           study.iteration.versions.Versions

Below them: :mod:`study.log.events` (the event log's one writer: each kind and its
columns), :mod:`study.file.lifecycle` (create, open, upgrade, check the file),
:mod:`study.index` (response and code ids <-> table keys), :mod:`study.codec` (float
curves as BLOBs, natural id order).

Durability: every change (a decision, a note, an undo, an import, a batch of scores) is one
``BEGIN IMMEDIATE ... COMMIT`` transaction finished before the method returns, in WAL mode:
what a method returned as saved survives a killed process; with ``durability="full"`` also
a power cut, and by default a power cut after about a second (:func:`study.file.schema.configure`).

Decisions are kept per coder: the current one in ``annotations``, every change in the
append-only ``events`` log with the state it replaced. ``study.decisions.undo`` reverts the
coder's latest decision, clearing or note that is not yet undone, restoring exactly the
state before it, and can be repeated to walk further back. Undo is not itself undone (there
is no redo); imports are not on the undo stack.

A damaged file (SQLite reports a malformed page, a hand-edited field makes no sense) is
a :class:`~study.errors.StudyError` saying so, never a raw ``sqlite3`` error.

Thread use: one handle may be shared by threads (the app reads while a worker writes
scores). Writes are serialised by a lock on the one writing connection; a writer's reads
each take a read-only connection of their own (:mod:`study.file.readers`), so that a read
of the whole study in a worker never holds up the coder's next decision.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codebooks.model import Code, Codebook
from study.audit.sample import Audit
from study.codec import blob_to_floats, floats_to_blob, natural_key
from study.errors import StudyError, StudyLockedError
from study.file import lifecycle, schema
from study.file.checkpoint import WalCheckpointer
from study.file.locking import StudyLock
from study.file.readers import Readers
from study.index import StudyIndex
from study.intake.responses import Response, ResponseTable
from study.iteration import revisions
from study.iteration.versions import Versions
from study.log.decision_log import ImportResult
from study.log.decisions import Decisions
from study.log.delegations import Delegations
from study.queries.pairs import Queries
from study.scores.ledger import Scores
from study.stamps import now, software_version

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


class Study:
    """An open study. Use :meth:`create` or :meth:`open`; close it (or use ``with``).

    The handle reads responses and the file's details; the rest is in its namespaces:
    :attr:`scores`, :attr:`decisions`, :attr:`queries`, :attr:`audit`,
    :attr:`delegations`, :attr:`versions` (see the module docstring).
    """

    def __init__(self, path: Path, conn: sqlite3.Connection, lock: StudyLock | None) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = conn
        self._file_lock = lock
        self._mutex = threading.RLock()
        #: Per thread: how deep it is in blocks on the writing connection.
        self._on_writer = threading.local()
        self._readers: Readers | None = None
        try:
            self._codebook = Codebook.from_dict(json.loads(self._meta_value("codebook")))
        except (ValueError, TypeError, KeyError) as exc:
            raise lifecycle.damaged(path, f"its codebook cannot be read ({exc})") from None
        self._index = revisions.load_index(path, conn, self._codebook)
        self._checkpointer: WalCheckpointer | None = None
        if lock is not None and schema.journal_mode(conn) == "wal":
            # The writer checkpoints in the background (see study.schema.configure).
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            self._checkpointer = WalCheckpointer(path)
            self._checkpointer.start()
            self._readers = Readers(lambda: lifecycle.connect_reader(path))
        self.scores = Scores(self)
        self.decisions = Decisions(self, self.scores)
        self.queries = Queries(self)
        self.audit = Audit(self)
        self.delegations = Delegations(self)
        self.versions = Versions(self)

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
        :func:`study.file.schema.configure`.

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
            if self._readers is not None:
                self._readers.close()
                self._readers = None
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
        """Response and code ids with the tables' keys (a revision or a wave renews it)."""
        return self._index

    def install(self, codebook: Codebook, index: StudyIndex) -> None:
        """Use ``codebook`` and ``index`` from now on: what ``study.versions`` calls once
        a revision or a wave is committed."""
        with self._mutex:
            self._codebook, self._index = codebook, index

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
        with self.query() as conn:
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
        with self.query() as conn:
            return dict(conn.execute("SELECT key, value FROM meta"))

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A consistent read of several statements, for queries and exporters.

        Nested calls share the snapshot. The connection is for reading only; a damaged
        page met while reading raises :class:`StudyError`.
        """
        with self.query() as conn:
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

    def pair_count(self) -> int:
        """Number of (response, codable code) pairs."""
        return self._index.response_count * len(self._index.codable_keys)

    def response_ids(self) -> list[str]:
        """Response ids in natural order (``r2`` before ``r10``)."""
        return self._index.response_ids()

    def response(self, response_id: str) -> Response:
        rid = self._index.response_key(response_id)
        with self.query() as conn:
            row = conn.execute(
                "SELECT id, text, attrs FROM responses WHERE rid = ?", (rid,)
            ).fetchone()
        return Response(row[0], row[1], self._attrs(row[2]))

    def responses(self) -> Iterator[Response]:
        """Every response in file order."""
        with self.query() as conn:
            rows = conn.execute("SELECT id, text, attrs FROM responses ORDER BY pos").fetchall()
        for rid_text, text, attrs in rows:
            yield Response(rid_text, text, self._attrs(attrs))

    def code(self, code_id: str) -> Code:
        """A codable code by id or (case-insensitive) name."""
        return self._index.code_at(self._index.code_key(code_id))

    # --- reads and writes, for the namespaces ----------------------------------------

    @contextlib.contextmanager
    def query(self) -> Iterator[sqlite3.Connection]:
        """A connection to read from; a damaged file becomes a StudyError.

        A writer's reads take this thread's read-only connection (they wait for no
        write); inside a write transaction, and on a read-only handle, the handle's own
        connection under its lock.
        """
        readers = self._readers
        if readers is not None and not getattr(self._on_writer, "depth", 0):
            try:
                with readers.connection() as conn:
                    yield conn
            except sqlite3.OperationalError as exc:
                raise StudyError(f"cannot read the study ({exc})", path=self._path) from None
            except sqlite3.ProgrammingError as exc:  # closed meanwhile
                raise StudyError(f"cannot read the study ({exc})", path=self._path) from None
            except sqlite3.DatabaseError as exc:
                raise lifecycle.damaged(self._path, exc) from None
            return
        with self._writer() as conn:
            try:
                yield conn
            except sqlite3.OperationalError as exc:
                raise StudyError(f"cannot read the study ({exc})", path=self._path) from None
            except sqlite3.DatabaseError as exc:
                raise lifecycle.damaged(self._path, exc) from None

    @contextlib.contextmanager
    def _writer(self) -> Iterator[sqlite3.Connection]:
        """The writing connection under the lock; reads in the block stay on it."""
        with self._mutex:
            conn = self._connection()
            self._on_writer.depth = getattr(self._on_writer, "depth", 0) + 1
            try:
                yield conn
            finally:
                self._on_writer.depth -= 1

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE ... COMMIT`` transaction, committed before leaving, rolled
        back on an exception.

        Raises:
            StudyError: read-only, or the change could not be saved.
        """
        with self._writer() as conn:
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
                raise StudyError(f"could not save the change ({exc})", path=self._path) from None

    # --- internals -------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StudyError("the study is closed", path=self._path)
        return self._conn

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
