"""One writer per study: an exclusive lock on a file beside it.

SQLite alone keeps the file consistent under concurrent writers, but two coders writing
the same study at once would undo each other's decisions and race the scoring queue, so a
study is opened for writing by one handle at a time; a second is refused with
:class:`~study.errors.StudyLockedError`. Readers (an export while the app is open) take
no lock.

The lock is ``flock`` (``msvcrt.locking`` on Windows) on ``STUDY.lock``: the kernel
releases it when the holder dies, even by SIGKILL, so a crash never leaves a study
locked. A second open in the same process is refused too (``flock`` belongs to the open
file, not the process). The lock file holds the holder's pid and host, for the message.
It is removed on a clean close; the inode check in :meth:`StudyLock.acquire` keeps that
removal from letting two holders in.

Someone may delete ``STUDY.lock`` by hand while a writer runs; a second writer would
then lock a new file of that name. So the holder also takes ``flock`` on the study file
itself (on POSIX systems; SQLite's own locks are ``fcntl`` locks, which ``flock`` does
not touch), and a second writer is refused by that lock whatever became of the lock
file. The study file's descriptor is closed only on release, after the study's
connection: closing another descriptor of the file would drop SQLite's ``fcntl`` locks.

A folder the user may not write (a read-only file system) is a
:class:`~study.errors.StudyError` saying the study can only be read there.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import IO

from study.errors import StudyError, StudyLockedError


def lock_path(study_path: Path) -> Path:
    return study_path.with_name(study_path.name + ".lock")


class StudyLock:
    """An exclusive, non-blocking lock on a study, released by :meth:`release` or death."""

    def __init__(self, study_path: Path) -> None:
        self.study_path = study_path
        self.path = lock_path(study_path)
        self._file: IO[bytes] | None = None
        self._study_fd: int | None = None

    @property
    def held(self) -> bool:
        return self._file is not None

    def acquire(self) -> None:
        """Take the lock or raise :class:`StudyLockedError` naming the holder."""
        for _ in range(20):
            try:
                # Unbuffered: a write that fails (a full disk) fails at the write, named.
                handle = open(self.path, "a+b", buffering=0)  # noqa: SIM115 - held while locked
            except OSError as exc:
                raise StudyError(
                    f"cannot open the study for writing: its lock file {self.path.name} cannot "
                    f"be created ({exc.strerror or exc}); commands that only read it (export, "
                    "screen) still work",
                    path=self.study_path,
                ) from None
            try:
                if not _try_lock(handle):
                    holder = _describe_holder(self.path)
                    raise StudyLockedError(
                        f"the study is open for writing in another codecurve{holder}; close "
                        "it there first (exports and other read-only commands still work)",
                        path=self.study_path,
                    )
                # The previous holder may have removed the file between our open and lock:
                # then we locked an orphan inode, and must lock the file now at the path.
                try:
                    same = os.path.samestat(os.fstat(handle.fileno()), os.stat(self.path))
                except FileNotFoundError:
                    same = False
                if not same:
                    _unlock(handle)
                    handle.close()
                    continue
                if not self._lock_study_file():
                    _unlock(handle)
                    raise StudyLockedError(
                        "the study is open for writing in another codecurve process (its "
                        "lock file was removed meanwhile); close it there first (exports and "
                        "other read-only commands still work)",
                        path=self.study_path,
                    )
                info = {"pid": os.getpid(), "host": socket.gethostname()}
                try:
                    handle.seek(0)
                    handle.truncate()
                    handle.write(json.dumps(info).encode())
                except OSError as exc:
                    _unlock(handle)
                    self.release()  # the study file's own lock, taken above
                    raise StudyError(
                        f"cannot open the study for writing: its lock file {self.path.name} "
                        f"cannot be written ({exc.strerror or exc}); commands that only read "
                        "it (export, screen) still work",
                        path=self.study_path,
                    ) from None
                self._file = handle
                return
            except BaseException:
                if self._file is not handle:
                    handle.close()
                raise
        raise StudyLockedError("could not take the study's lock file", path=self.study_path)

    def _lock_study_file(self) -> bool:
        """``flock`` the study file itself; False if another holder has it."""
        if sys.platform == "win32":  # pragma: no cover - msvcrt locks would clash with SQLite's
            return True
        try:
            fd = os.open(self.study_path, os.O_RDONLY)
        except FileNotFoundError:
            return True  # being created: the new file is linked into place under the lock
        except OSError:
            return True  # unreadable: opening it fails with its own message
        if not _try_lock_fd(fd):
            os.close(fd)
            return False
        self._study_fd = fd
        return True

    def release(self) -> None:
        study_fd, self._study_fd = self._study_fd, None
        if study_fd is not None:
            with contextlib.suppress(OSError):
                os.close(study_fd)  # closing also releases its flock
        handle, self._file = self._file, None
        if handle is None:
            return
        # Remove while still holding it, so that nobody locks the file we are deleting
        # without noticing (see acquire's inode check).
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            _unlock(handle)
        handle.close()


def _describe_holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
        pid, host = int(info["pid"]), str(info["host"])
    except (OSError, ValueError, KeyError, TypeError):
        return " process"
    if pid == os.getpid() and host == socket.gethostname():
        return " handle of this same process"
    return f" process (pid {pid} on {host})"


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(handle: IO[bytes]) -> bool:
        handle.seek(0)
        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(handle: IO[bytes]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

    def _try_lock_fd(fd: int) -> bool:
        return True

else:
    import fcntl

    def _try_lock(handle: IO[bytes]) -> bool:
        return _try_lock_fd(handle.fileno())

    def _try_lock_fd(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(handle: IO[bytes]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
