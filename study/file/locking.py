"""Who has a study open: a shared lock for every writer, one lock per coder, one for scoring.

A team codes one study at the same time. SQLite keeps the file consistent under
concurrent writers (WAL, a busy timeout, every change one ``BEGIN IMMEDIATE``
transaction), so writers do not exclude each other; what must not happen twice at once is
smaller, and each has its own lock file beside the study, locked with ``flock`` (the
kernel releases it when the holder dies, even by SIGKILL, so a killed session never
blocks anyone):

- :class:`StudyLock` (``STUDY.lock``): every handle open for writing holds it shared;
  replacing the study (``codecurve new --force``) takes it exclusive, so a study open
  anywhere is never replaced under its coders.
- :class:`CoderLock` (``STUDY.coder-<hash>.lock``): one per coder. Two sessions of one
  coder would fight over that coder's undo and blind state, so the second is refused with
  :class:`~study.errors.StudyLockedError` naming where the first runs (host, pid, since).
  :func:`sessions` lists the coders whose sessions are live (the app shows who else is
  coding).
- :class:`TurnLock` is the one lock inside a process: the threads of one handle (the
  app's keys, its workers) take the writing connection in turns.
- :class:`ScoringLock` (``STUDY.scoring.lock``): scores are computed by one process at a
  time; the other sessions see them arrive as each batch is stored.

Each lock file holds its holder's details as JSON (coder, pid, host, since), for the
messages. A coder's and the scoring lock file are removed on release while still locked;
the inode check in :func:`_take` keeps that removal from letting two holders in.

Readers (an export, an agreement report) take no lock at all.

A folder the user may not write (a read-only file system) is a
:class:`~study.errors.StudyError` saying the study can only be read there.

The study must be on a local disk: ``flock`` and SQLite's own locks are not reliable on
network file systems.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from study.errors import NAME_CODER, StudyError, StudyLockedError
from study.stamps import now

#: How long a coder's lock is retried before the coder is said to be busy: a
#: :func:`sessions` listing holds a live lock shared for a moment.
_RETRY_SECONDS = 0.25


def lock_path(study_path: Path) -> Path:
    return study_path.with_name(study_path.name + ".lock")


def coder_lock_path(study_path: Path, coder: str) -> Path:
    digest = hashlib.sha256(coder.encode("utf-8")).hexdigest()[:16]
    return study_path.with_name(f"{study_path.name}.coder-{digest}.lock")


def scoring_lock_path(study_path: Path) -> Path:
    return study_path.with_name(study_path.name + ".scoring.lock")


@dataclass(frozen=True)
class Holder:
    """Who holds a lock: the coder (empty for a plain writer), process, host and since when."""

    coder: str
    pid: int
    host: str
    since: str

    def where(self) -> str:
        """``pid 123 on host, since 2026-...``, for the messages."""
        here = " (this process)" if self.here else ""
        return f"pid {self.pid} on {self.host}{here}, since {self.since}"

    @property
    def here(self) -> bool:
        return self.pid == os.getpid() and self.host == socket.gethostname()


def _me(coder: str) -> Holder:
    # To the second, as people read it in a message: 2026-12-02 01:44:34 UTC.
    since = now()[:19].replace("T", " ") + " UTC"
    return Holder(coder=coder, pid=os.getpid(), host=socket.gethostname(), since=since)


def _read_holder(path: Path) -> Holder | None:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
        return Holder(
            coder=str(info.get("coder", "")),
            pid=int(info["pid"]),
            host=str(info["host"]),
            since=str(info.get("since", "")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _open(path: Path, study_path: Path) -> IO[bytes]:
    try:
        return open(path, "a+b")  # held open while the lock lives
    except OSError as exc:
        raise StudyError(
            f"cannot open the study for writing: its lock file {path.name} cannot be created "
            f"({exc.strerror or exc}); commands that only read it (export, screen, agreement) "
            "still work",
            path=study_path,
        ) from None


def _take(path: Path, study_path: Path, *, exclusive: bool) -> IO[bytes] | None:
    """Lock the file at ``path`` (created if need be); None when another holds it.

    The previous holder may remove the file between our open and our lock: then we
    locked an orphan inode, and try again on the file now at the path.
    """
    for _ in range(20):
        handle = _open(path, study_path)
        try:
            if not _try_lock(handle, exclusive=exclusive):
                handle.close()
                return None
            try:
                same = os.path.samestat(os.fstat(handle.fileno()), os.stat(path))
            except FileNotFoundError:
                same = False
            if same:
                return handle
            _unlock(handle)
            handle.close()
        except BaseException:
            handle.close()
            raise
    raise StudyLockedError(f"could not take the lock file {path.name}", path=study_path)


def _write_holder(handle: IO[bytes], holder: Holder) -> None:
    handle.seek(0)
    handle.truncate()
    info = {"coder": holder.coder, "pid": holder.pid, "host": holder.host, "since": holder.since}
    handle.write(json.dumps(info, ensure_ascii=False).encode("utf-8"))
    handle.flush()


def _drop(handle: IO[bytes] | None, path: Path) -> None:
    """Remove a lock file while still holding it, then let it go."""
    if handle is None:
        return
    with contextlib.suppress(OSError):
        os.unlink(path)
    with contextlib.suppress(OSError):
        _unlock(handle)
    handle.close()


class TurnLock:
    """A re-entrant lock the threads of one process take in turns.

    ``threading.RLock`` lets the thread that releases it take it straight back: a worker
    writing a code's rescoring in blocks, one transaction each, kept the writing
    connection for every block in a row while a coder's decision waited for all of them
    (335 ms for 20,000 pairs). Here a thread that asks while others wait queues behind
    them, so a decision waits for one block at most.
    """

    def __init__(self) -> None:
        self._state = threading.Condition(threading.Lock())
        self._owner: int | None = None
        self._depth = 0
        self._queue: deque[int] = deque()

    def acquire(self) -> None:
        me = threading.get_ident()
        with self._state:
            if self._owner == me:
                self._depth += 1
                return
            self._queue.append(me)
            try:
                while self._owner is not None or self._queue[0] != me:
                    self._state.wait()
            except BaseException:  # interrupted while waiting: out of the queue
                self._queue.remove(me)
                self._state.notify_all()
                raise
            self._queue.popleft()
            self._owner, self._depth = me, 1

    def release(self) -> None:
        with self._state:
            if self._owner != threading.get_ident():
                raise RuntimeError("cannot release a lock held by another thread")
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._state.notify_all()

    @property
    def waiting(self) -> int:
        """How many threads wait for the lock."""
        with self._state:
            return len(self._queue)

    def __enter__(self) -> TurnLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class StudyLock:
    """Held shared by every writing handle; exclusive only to replace the study."""

    def __init__(self, study_path: Path, *, exclusive: bool = False) -> None:
        self.study_path = study_path
        self.path = lock_path(study_path)
        self.exclusive = exclusive
        self._file: IO[bytes] | None = None

    @property
    def held(self) -> bool:
        return self._file is not None

    def acquire(self) -> None:
        """Take the lock or raise :class:`StudyLockedError`."""
        handle = _take(self.path, self.study_path, exclusive=self.exclusive)
        if handle is None:
            if self.exclusive:
                raise StudyLockedError(
                    "the study is open in another codecurve; close it there first",
                    path=self.study_path,
                )
            raise StudyLockedError(
                "the study is being replaced by another codecurve; try again once it is done",
                path=self.study_path,
            )
        self._file = handle

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the study's write turn for one transaction.

        SQLite serialises writers itself, but a writer that finds the write lock taken
        sleeps and polls (1, 2, 5 ... 100 ms between tries). Waiting here instead, on an
        open-file-description lock on a byte of this lock file (``F_OFD_SETLKW``: each
        handle its own, released by the kernel when its holder dies), wakes the next
        writer the moment the last one commits, and writers take their turns in order.
        Where such locks are missing SQLite's own wait is all there is. (On a two-core
        machine running eight sessions the p99 is the CPU's queue either way:
        ``benchmarks/bench_team.py``.)
        """
        handle = self._file
        if handle is None or _OFD_WAIT is None:
            yield
            return
        _ofd(handle, fcntl.F_WRLCK, _OFD_WAIT)
        try:
            yield
        finally:
            _ofd(handle, fcntl.F_UNLCK, _OFD_WAIT)

    def release(self) -> None:
        handle, self._file = self._file, None
        if handle is None:
            return
        # The last holder removes the file (an exclusive lock means nobody else has it).
        if self.exclusive or _try_lock(handle, exclusive=True):
            _drop(handle, self.path)
        else:
            with contextlib.suppress(OSError):
                _unlock(handle)
            handle.close()


class CoderLock:
    """One coder's session on a study: a second session of the same coder is refused."""

    def __init__(self, study_path: Path, coder: str) -> None:
        self.study_path = study_path
        self.coder = coder
        self.path = coder_lock_path(study_path, coder)
        self._file: IO[bytes] | None = None

    def acquire(self) -> None:
        """Take the coder's lock or raise :class:`StudyLockedError` naming the session."""
        deadline = time.monotonic() + _RETRY_SECONDS
        while True:
            handle = _take(self.path, self.study_path, exclusive=True)
            if handle is not None:
                break
            if time.monotonic() >= deadline:
                holder = _read_holder(self.path)
                where = "" if holder is None else f" ({holder.where()})"
                raise StudyLockedError(
                    f"coder {self.coder!r} already has this study open{where}; close that "
                    "session first, or open the study as another coder",
                    path=self.study_path,
                    remedy=NAME_CODER,
                )
            time.sleep(0.02)
        _write_holder(handle, _me(self.coder))
        self._file = handle

    def release(self) -> None:
        handle, self._file = self._file, None
        _drop(handle, self.path)


class ScoringLock:
    """Scoring runs in one process at a time: held for the length of a run."""

    def __init__(self, study_path: Path, *, coder: str = "") -> None:
        self.study_path = study_path
        self.coder = coder
        self.path = scoring_lock_path(study_path)
        self._file: IO[bytes] | None = None

    def acquire(self) -> None:
        """Take the scoring lock or raise :class:`StudyLockedError` naming the run."""
        handle = _take(self.path, self.study_path, exclusive=True)
        if handle is None:
            holder = _read_holder(self.path)
            who = ""
            if holder is not None:
                by = f"by {holder.coder!r}, " if holder.coder else ""
                who = f" ({by}{holder.where()})"
            raise StudyLockedError(
                f"the study is being scored in another session{who}; its scores appear "
                "here as they are stored",
                path=self.study_path,
            )
        _write_holder(handle, _me(self.coder))
        self._file = handle

    def release(self) -> None:
        handle, self._file = self._file, None
        _drop(handle, self.path)

    def __enter__(self) -> ScoringLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def sessions(study_path: Path) -> list[Holder]:
    """The coders with a live session on the study, by name (a killed one is not live)."""
    found: list[Holder] = []
    for path in study_path.parent.glob(f"{_glob_escape(study_path.name)}.coder-*.lock"):
        holder = _read_holder(path)
        if holder is None or not holder.coder or not _held(path):
            continue
        found.append(holder)
    return sorted(found, key=lambda h: h.coder)


def _held(path: Path) -> bool:
    """Whether a live process holds the lock on ``path`` (a shared try tells)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return False
    try:
        if _try_lock(handle, exclusive=False):
            _unlock(handle)
            return False
        return True
    finally:
        handle.close()


#: File systems on which SQLite's and ``flock``'s locks cannot be trusted between machines.
NETWORK_FILE_SYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb", "smb3", "smbfs", "afs", "9p", "fuse.sshfs", "ceph",
     "glusterfs", "fuse.glusterfs", "lustre", "davfs", "fuse.rclone", "fuse.s3fs"}
)  # fmt: skip


def network_file_system(path: Path, *, mounts: str = "/proc/mounts") -> str | None:
    """The type of the network file system ``path`` is on (``nfs4``), or None for a
    local disk or where that cannot be told (not Linux)."""
    try:
        table = Path(mounts).read_text(encoding="utf-8")
    except OSError:
        return None
    target = str(path.resolve().parent)
    best, kind = "", ""
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind if kind in NETWORK_FILE_SYSTEMS else None


def _glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(handle: IO[bytes], *, exclusive: bool) -> bool:
        handle.seek(0)
        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(handle: IO[bytes]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

    _OFD_WAIT = None

    def _ofd(handle: IO[bytes], kind: int, command: int) -> None:
        pass

else:
    import fcntl
    import struct

    #: Linux's open-file-description byte-range lock, waiting (None elsewhere).
    _OFD_WAIT: int | None = (
        getattr(fcntl, "F_OFD_SETLKW", None) if sys.platform == "linux" else None
    )

    def _ofd(handle: IO[bytes], kind: int, command: int) -> None:
        """Lock (or unlock) byte 0 of ``handle``'s file for its open file description;
        ``struct flock`` as Linux lays it out (l_pid must be 0)."""
        request = struct.pack("hhqqi4x", kind, os.SEEK_SET, 0, 1, 0)
        with contextlib.suppress(OSError):  # unsupported after all: SQLite's own wait then
            fcntl.fcntl(handle.fileno(), command, request)

    def _try_lock(handle: IO[bytes], *, exclusive: bool) -> bool:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            fcntl.flock(handle.fileno(), mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(handle: IO[bytes]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
