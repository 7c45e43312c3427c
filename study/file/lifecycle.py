"""A study file's life: built whole under a temporary name, opened, upgraded, checked.

:class:`study.store.Study` calls these; they hold no state of their own.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import sqlite3
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from codebooks.errors import Remedy
from codebooks.files import remove_stale_temporaries
from codebooks.model import Codebook
from study.codec import natural_key
from study.errors import NEW, REPLACE, StudyError
from study.file import events, schema, scoped_pairs
from study.file.locking import StudyLock
from study.intake.responses import ResponseTable
from study.scope import check_scope
from study.stamps import now, software_version

log = logging.getLogger(__name__)

SQLITE_MAGIC = b"SQLite format 3\x00"

#: Fixed forever: a study made before ``study_uuid`` was stored takes its UUID from this
#: and its creation time, so the GUIDs of its exported projects never change.
STUDY_NAMESPACE = uuid.UUID("b7d3e0a4-91c2-5f1e-8a6d-2c0de6c0b0de")

#: How a damaged file is reported, whatever noticed it.
DAMAGED = "the study file is damaged: {detail} (restore it from a copy)"


def damaged(path: Path, detail: object) -> StudyError:
    """The error for a study whose file SQLite (or its content) shows to be damaged."""
    return StudyError(DAMAGED.format(detail=detail), path=path)


def create_file(
    p: Path,
    *,
    responses: ResponseTable,
    codebook: Codebook,
    overwrite: bool = False,
    fill: Callable[[Path], None] | None = None,
    codebook_source: Path | None = None,
) -> None:
    """Build a complete study at ``p`` (see :meth:`study.store.Study.create`).

    Args:
        p: The study to create.
        responses: Its responses.
        codebook: Its codebook.
        overwrite: Replace an existing study.
        fill: Called with the finished temporary file before it is moved into place (to
            add decisions and notes, closing what it opened); whatever it raises leaves
            nothing behind.
        codebook_source: The file the codebook was read from (recorded in ``meta``).
    """
    if p.is_dir():
        raise StudyError("is a directory; give a file name such as study.codecurve", path=p)
    if p.exists() and not overwrite:
        raise StudyError(
            "already exists; choose another name, or replace it", path=p, remedy=REPLACE
        )
    if not codebook.codable:
        raise StudyError(f"codebook {codebook.name!r} has no codable codes", path=p)
    if not len(responses):
        raise StudyError("there are no responses to put in the study", path=p)
    try:
        check_scope(
            codebook,
            (r.attrs for r in responses.responses),
            columns=responses.attribute_columns,
        )
    except StudyError as exc:
        raise StudyError(exc.message, path=responses.path) from None
    if not p.parent.exists():
        raise StudyError(f"folder {p.parent} does not exist", path=p)
    # A study half-built by a killed 'new' is left under its temporary name: removed
    # once its writer is gone.
    remove_stale_temporaries(p.parent)
    tmp = p.with_name(f".{p.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        build(tmp, responses=responses, codebook=codebook, codebook_source=codebook_source)
        if fill is not None:
            fill(tmp)
            fsync_file(tmp)
        lock = StudyLock(p, exclusive=True)  # never replace a study open elsewhere
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
                        raise StudyError("already exists; choose another name", path=p) from None
                    os.replace(tmp, p)
            fsync_dir(p.parent)
        finally:
            lock.release()
    except OSError as exc:
        raise StudyError(f"cannot write the study ({exc.strerror or exc})", path=p) from None
    except sqlite3.Error as exc:  # the folder is read-only or the disk full
        raise StudyError(f"cannot write the study ({root_cause(exc)})", path=p) from None
    finally:
        for leftover in (tmp, *(tmp.with_name(tmp.name + s) for s in ("-wal", "-shm", ".lock"))):
            with contextlib.suppress(OSError):
                os.unlink(leftover)
    log.info("created study %s: %d responses, %d codes", p, len(responses), len(codebook.codes))


def root_cause(exc: BaseException) -> BaseException:
    """The first database or OS error behind ``exc``.

    SQLite rolls a transaction back itself when the disk is full; the ``ROLLBACK`` that
    follows then fails with "no transaction is active", hiding the reason in the
    exception's context.
    """
    seen = {id(exc)}
    cause = exc
    while True:
        inner = cause.__cause__ or cause.__context__
        if not isinstance(inner, (sqlite3.Error, OSError)) or id(inner) in seen:
            return cause
        seen.add(id(inner))
        cause = inner


def study_uuid(meta: Mapping[str, str], *, name: str = "") -> uuid.UUID:
    """The study's UUID: stored at creation, or derived from its creation time.

    Exported projects take their GUIDs from it, so that exporting again updates the same
    project in a QDA program.
    """
    stored = meta.get("study_uuid", "")
    try:
        return uuid.UUID(stored)
    except ValueError:
        return uuid.uuid5(STUDY_NAMESPACE, meta.get("created_at") or f"name:{name}")


def connect(p: Path, *, read_only: bool, durability: str) -> sqlite3.Connection:
    """Connect to an existing study, check it is one this codecurve reads, upgrade it.

    The caller holds the study's shared lock unless ``read_only``; a reader never writes
    and opens a study it could not write read-only (:func:`reader_uri`).

    Raises:
        StudyError: not a study, an unfinished or newer one, an older one opened read-only.
        sqlite3.DatabaseError: the file could not be read.
    """
    conn = sqlite3.connect(
        reader_uri(p) if read_only else str(p),
        isolation_level=None,
        check_same_thread=False,
        timeout=5.0,
        uri=read_only,
    )
    try:
        schema.configure(conn, durability=durability, read_only=read_only)
        if schema.application_id(conn) != schema.APPLICATION_ID:
            raise StudyError("is an SQLite file but not a codecurve study", path=p)
        ver = schema.version(conn)
        if ver > schema.SCHEMA_VERSION:
            raise StudyError(
                f"was written by a newer codecurve (schema {ver}, this one reads up to "
                f"{schema.SCHEMA_VERSION}); upgrade codecurve",
                path=p,
            )
        if ver < 0:
            raise StudyError(
                f"is marked as a codecurve study but has no schema version this codecurve "
                f"knows (user_version {ver}); it is not a study codecurve wrote, or it was "
                "edited by hand",
                path=p,
            )
        if ver == 0:
            # Marked as a study but never given its tables: nothing to upgrade from.
            raise StudyError(
                "is an unfinished codecurve study (schema 0, no tables); create it again",
                path=p,
                remedy=NEW,
            )
        if ver < schema.SCHEMA_VERSION:
            if read_only:
                raise StudyError(
                    f"uses the older schema {ver}; open it once for writing (for example "
                    "to review it) to upgrade it",
                    path=p,
                    remedy=Remedy("review", "open it for review"),
                )
            applied = schema.migrate(conn)
            log.info("upgraded %s to schema %s", p, applied)
        if not read_only:
            _store_uuid(conn, name=p.name)
        if read_only:
            conn.execute("PRAGMA query_only = ON")
        conn.create_function("cc_fold", 1, _fold, deterministic=True)
    except BaseException:
        conn.close()
        raise
    return conn


def reader_uri(p: Path) -> str:
    """The URI a reader opens ``p`` with (``query_only`` keeps every reader from writing).

    Where the study can be written it is opened as usual, so that the last connection to
    close folds the WAL back and removes it (a ``mode=ro`` connection would leave the
    ``-wal`` and ``-shm`` files behind). Where it cannot (a read-only file system, a copy
    on a DVD), ``mode=ro``; in a folder nobody may write also ``immutable=1``, since no
    writer can be there and SQLite could not make the WAL's shared-memory file beside it,
    unless a WAL left by a killed writer holds decisions (SQLite reads it read-only then).
    """
    uri = p.resolve().as_uri()
    if os.access(p, os.W_OK) and os.access(p.parent, os.W_OK):
        return uri
    uri += "?mode=ro"
    wal = p.with_name(p.name + "-wal")
    if not os.access(p.parent, os.W_OK) and not (wal.exists() and wal.stat().st_size):
        uri += "&immutable=1"
    return uri


def connect_reader(p: Path) -> sqlite3.Connection:
    """A connection that only reads (``query_only``), to a study a writer has open and
    upgraded (WAL mode): the writer's reads take one each (:mod:`study.file.readers`)."""
    # Not ``mode=ro`` where the study can be written (:func:`reader_uri`): a read-only
    # connection that closes last would leave the -wal and -shm files behind.
    conn = sqlite3.connect(reader_uri(p), uri=True, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("PRAGMA query_only = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("PRAGMA cache_size = -32768")  # as the writer's (schema.configure)
        conn.create_function("cc_fold", 1, _fold, deterministic=True)
    except BaseException:
        conn.close()
        raise
    return conn


def quick_check(conn: sqlite3.Connection, *, path: Path) -> None:
    """SQLite's quick check of every page.

    Raises:
        StudyError: the file is damaged.
    """
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)")]
    except sqlite3.DatabaseError as exc:
        raise damaged(path, exc) from None
    if rows != ["ok"]:
        raise damaged(path, "; ".join(rows))


def integrity_problems(conn: sqlite3.Connection) -> list[str]:
    """``PRAGMA integrity_check`` and foreign keys; an empty list when all is well."""
    rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
    problems = [] if rows == ["ok"] else rows
    problems += [f"foreign key: {tuple(r)}" for r in conn.execute("PRAGMA foreign_key_check")]
    return problems


def check_header(p: Path) -> None:
    """Refuse a missing file, a folder or a file that is not SQLite, with a clear message."""
    try:
        with open(p, "rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        raise StudyError(
            "no such study; create one from a responses file and a codebook",
            path=p,
            remedy=NEW,
        ) from None
    except IsADirectoryError:
        raise StudyError("is a directory, not a study file", path=p) from None
    except OSError as exc:
        raise StudyError(f"cannot read the study ({exc.strerror or exc})", path=p) from None
    if head != SQLITE_MAGIC:
        raise StudyError("is not a codecurve study (not an SQLite file)", path=p)


def fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _store_uuid(conn: sqlite3.Connection, *, name: str) -> None:
    """Give a study made before UUIDs were stored the one it was exported under."""
    meta = dict(
        conn.execute("SELECT key, value FROM meta WHERE key IN ('study_uuid', 'created_at')")
    )
    if "study_uuid" in meta:
        return
    # The same UUID either way: stored only so that it is written down.
    with contextlib.suppress(sqlite3.OperationalError):
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('study_uuid', ?)",
            (str(study_uuid(meta, name=name)),),
        )


def _fold(text: str | None) -> str | None:
    return None if text is None else text.casefold()


def build(
    tmp: Path,
    *,
    responses: ResponseTable,
    codebook: Codebook,
    codebook_source: Path | None = None,
) -> None:
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
            "study_uuid": str(uuid.uuid4()),
            "created_by": f"codecurve {software_version()}",
            "responses_source": "" if responses.path is None else str(responses.path),
            "responses_id_column": responses.id_column or "",
            "responses_text_column": responses.text_column or "",
            "codebook_source": "" if codebook_source is None else str(codebook_source.resolve()),
        }
        conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
        schema.seed_iteration(conn)
        if scoped_pairs.has_table(conn):  # not in a file built at an older schema (tests)
            scoped_pairs.sync(conn, scoped_pairs.file_scope(conn))
        events.append(
            conn,
            "create",
            at=created,
            detail=json.dumps(
                {
                    "responses": len(responses),
                    "codes": len(codebook.codes),
                    "source": meta["responses_source"],
                    "messages": list(responses.messages),
                },
                ensure_ascii=False,
            ),
        )
        conn.execute("COMMIT")
        conn.execute("PRAGMA journal_mode = WAL")
    finally:
        conn.close()
    fsync_file(tmp)


def fsync_file(path: Path) -> None:
    """Flush a file's content to the disk."""
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())
