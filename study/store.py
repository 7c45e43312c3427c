"""One coding study on disk: :class:`Study`, the handle, and its namespaces.

A study is one SQLite file (schema in :mod:`study.file.schema`) that a team codes at the same
time: any number of handles may write, each as its own coder (one session per coder,
:mod:`study.file.locking`), and any number of read-only handles may look on. SQLite (WAL, a
busy timeout) serialises the writes; each handle notices the others' commits with
:meth:`Study.refresh` (``PRAGMA data_version``). :class:`Study` is
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
    study.evidence     the sentences that moved the model  study.scores.evidence.EvidenceLedger

Below them: :mod:`study.file.events` (the event log's one writer: each kind and its
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

Structure: a codebook revision, a wave of responses or another active configuration made
by another handle is picked up at the start of the next write transaction (or by
:meth:`Study.refresh`): the handle reloads its codebook and index. A decision, note, undo,
import or delegation begun on the older structure is refused
(:class:`~study.errors.StudyChangedError`, nothing written), so no decision is ever stored
for an archived code or under a codebook version its coder did not see.

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
from study.errors import NAME_CODER, StudyChangedError, StudyError, StudyLockedError
from study.file import lifecycle, locking, schema
from study.file.checkpoint import WalCheckpointer
from study.file.locking import CoderLock, Holder, StudyLock, TurnLock
from study.file.readers import Readers
from study.index import StudyIndex
from study.intake.responses import Response, ResponseTable
from study.iteration import revisions
from study.iteration.versions import Versions
from study.log.decision_log import ImportResult
from study.log.decisions import Decisions
from study.log.delegations import Delegations
from study.queries.pairs import Queries
from study.rows import CONSENSUS, StudyUpdate, check_coder
from study.scores.evidence import EvidenceLedger
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
    :attr:`delegations`, :attr:`versions`, :attr:`evidence` (see the module docstring).
    """

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        lock: StudyLock | None,
        coder_lock: CoderLock | None = None,
    ) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = conn
        self._file_lock = lock
        self._coder_lock = coder_lock
        self._mutex = TurnLock()
        #: Per thread: how deep it is in blocks on the writing connection.
        self._on_writer = threading.local()
        self._readers: Readers | None = None
        self._codebook, self._index = self._load_structure(conn)
        self._structure = _structure_stamp(conn)
        self._data_version = _data_version(conn)
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
        self.evidence = EvidenceLedger(self)

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
        codebook_source: Path | None = None,
    ) -> Study:
        """Create a study and open it for writing.

        ``codebook_source``: the file the codebook was read from, recorded (as the
        responses' file is) so that no output of a command ever replaces it.

        The file is built under a temporary name in the same folder and moved into place
        only when complete, so a failure never leaves a half-written study.

        Raises:
            StudyError: the path exists (unless ``overwrite``), or cannot be written.
            StudyLockedError: ``overwrite`` of a study open elsewhere.
        """
        p = Path(path)
        lifecycle.create_file(
            p,
            responses=responses,
            codebook=codebook,
            overwrite=overwrite,
            codebook_source=codebook_source,
        )
        return cls.open(p, durability=durability)

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        read_only: bool = False,
        durability: str = "normal",
        coder: str | None = None,
    ) -> Study:
        """Open a study: for writing (any number of handles at once) or ``read_only``.

        ``coder``: the coder this handle works as (the app, an import of a coder's
        codes): one session per coder at a time, so that two sessions of one coder never
        fight over the coder's undo and blind state. Without a coder (scoring, a codebook
        revision) the handle writes without a session of its own. A reader takes no lock
        and never writes; a study it could not write it opens ``mode=ro`` (so it also
        works on a read-only location).

        ``durability`` is ``normal`` (a returned decision survives a killed process at
        once, a power cut after about a second) or ``full`` (every commit fsynced); see
        :func:`study.file.schema.configure`.

        Raises:
            StudyError: no such file, not a study, a study made by a newer codecurve, a
                damaged file, a coder's name that is empty, has control characters or
                is the consensus coder's.
            StudyLockedError: the coder has the study open in another session (its host,
                pid and since when are named), or the study is being replaced.
        """
        p = Path(path)
        if durability not in schema.DURABILITY:
            raise StudyError(f"durability must be one of {', '.join(schema.DURABILITY)}")
        if coder is not None:
            coder = session_coder(coder)
        lifecycle.check_header(p)
        lock = coder_lock = None
        conn = None
        try:
            if not read_only:
                lock = StudyLock(p)
                lock.acquire()
                if coder is not None:
                    coder_lock = CoderLock(p, coder)
                    coder_lock.acquire()
            conn = lifecycle.connect(p, read_only=read_only, durability=durability)
            study = cls(p, conn, lock, coder_lock)
        except BaseException as exc:
            if conn is not None:
                conn.close()
            if coder_lock is not None:
                coder_lock.release()
            if lock is not None:
                lock.release()
            if isinstance(exc, sqlite3.OperationalError):
                raise StudyError(f"cannot open the study ({exc})", path=p) from None
            if isinstance(exc, sqlite3.DatabaseError):
                raise lifecycle.damaged(p, exc) from None
            raise
        return study

    def close(self) -> None:
        """Close the file and release the handle's locks. Safe to call twice."""
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
            if self._coder_lock is not None:
                self._coder_lock.release()
                self._coder_lock = None
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
    def coder(self) -> str | None:
        """The coder whose session this handle is (``Study.open(coder=...)``), if any."""
        return None if self._coder_lock is None else self._coder_lock.coder

    def sessions(self) -> list[Holder]:
        """The coders with a live session on this study (this handle's own included)."""
        return locking.sessions(self._path)

    def refresh(self) -> StudyUpdate:
        """Whether other handles committed since the last call (``PRAGMA data_version``,
        one cheap read: the app polls it); a changed structure (codebook, waves, active
        configuration) is reloaded, so that :attr:`codebook` and :attr:`index` are the
        study's again."""
        with self._mutex:
            conn = self._connection()
            try:
                version = _data_version(conn)
                if version == self._data_version:
                    return StudyUpdate(changed=False, structure=False)
                self._data_version = version
                return StudyUpdate(changed=True, structure=self._catch_up(conn))
            except sqlite3.DatabaseError as exc:
                raise StudyError(f"cannot read the study ({exc})", path=self._path) from None

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
        """Number of (response, codable code) pairs: where codes are scoped to survey
        questions, only the pairs whose code applies (:mod:`study.scope`)."""
        return self._index.scope.total

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
    def transaction(self, *, current: bool = False) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE ... COMMIT`` transaction, committed before leaving, rolled
        back on an exception.

        Another handle's change of the structure (a codebook revision, a wave, another
        active configuration) is installed first, inside the transaction. ``current``:
        the change was prepared on the structure the handle had before (a decision on
        the codebook its coder saw), so it is refused if the structure changed.

        Raises:
            StudyChangedError: ``current``, and another session changed the structure;
                nothing was written, the handle now has the new structure.
            StudyError: read-only, or the change could not be saved.
        """
        with self._writer() as conn:
            if self._file_lock is None:
                raise StudyError(
                    "the study is open read-only; open it for writing to change it", path=self._path
                )
            with self._file_lock.writing():
                yield from self._write(conn, current=current)

    def _write(self, conn: sqlite3.Connection, *, current: bool) -> Iterator[sqlite3.Connection]:
        """The body of :meth:`transaction`, in the handle's write turn."""
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StudyLockedError(
                f"cannot start a change ({lifecycle.root_cause(exc)}); another session "
                "holds the study's write lock too long",
                path=self._path,
            ) from None
        try:
            if self._catch_up(conn) and current:
                raise StudyChangedError(
                    "the study changed in another session (codebook version "
                    f"{revisions.current_version(conn)}); nothing was saved: look at the "
                    "pair again",
                    path=self._path,
                )
            yield conn
            # This handle's own structural change: known now, not another's news.
            self._structure = _structure_stamp(conn)
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):
                raise StudyError(f"could not save the change ({exc})", path=self._path) from None
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

    def _catch_up(self, conn: sqlite3.Connection) -> bool:
        """Reload the codebook and index if another handle changed the structure."""
        stamp = _structure_stamp(conn)
        if stamp == self._structure:
            return False
        self._codebook, self._index = self._load_structure(conn)
        self._structure = stamp
        self.scores.forget()
        return True

    def _load_structure(self, conn: sqlite3.Connection) -> tuple[Codebook, StudyIndex]:
        row = conn.execute("SELECT value FROM meta WHERE key = 'codebook'").fetchone()
        if row is None:
            raise StudyError("the study has no 'codebook' (damaged file?)", path=self._path)
        try:
            codebook = Codebook.from_dict(json.loads(row[0]))
        except (ValueError, TypeError, KeyError) as exc:
            raise lifecycle.damaged(self._path, f"its codebook cannot be read ({exc})") from None
        return codebook, revisions.load_index(self._path, conn, codebook)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StudyError("the study is closed", path=self._path)
        return self._conn

    def _attrs(self, text: str) -> dict[str, Any]:
        try:
            attrs = json.loads(text)
        except ValueError:
            attrs = None
        if not isinstance(attrs, dict):
            raise lifecycle.damaged(self._path, f"a response's attributes are not a map: {text!r}")
        return attrs


def session_coder(coder: str) -> str:
    """``coder`` checked as the name a session works under.

    Raises:
        StudyError: empty, control characters, or the consensus coder's name (what
            reconciliation records, from any coder's session).
    """
    name = check_coder(coder)
    if name.casefold() == CONSENSUS:
        raise StudyError(
            f"{CONSENSUS!r} is the name reconciliation records settled disagreements "
            "under; open the study as yourself and settle them in the disagreements view",
            remedy=NAME_CODER,
        )
    return name


def _structure_stamp(conn: sqlite3.Connection) -> tuple[Any, ...]:
    """What changes when the study's structure does: the codebook version, the last wave,
    the active configuration (three index lookups)."""
    try:
        row = conn.execute(
            "SELECT (SELECT MAX(version) FROM codebook_versions), (SELECT MAX(wave) FROM waves), "
            "(SELECT value FROM meta WHERE key = 'active_config')"
        ).fetchone()
    except sqlite3.OperationalError:  # a file of a schema before versions and waves
        row = conn.execute("SELECT value FROM meta WHERE key = 'active_config'").fetchone()
    return tuple(row or ())


def _data_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA data_version").fetchone()[0])
