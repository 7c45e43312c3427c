"""Reading files, and the one atomic file writer of the whole project.

Reading a codebook fails as a :class:`CodebookError`. :func:`write_file` is used by every
writer of codecurve (codebooks, exports, scores tables, the model index); it raises the
caller's :class:`CodecurveError` subclass, so each layer keeps its own error type.

Rules of :func:`write_file` (the target is the path after following symlinks):

* A regular file (new or existing) is written under a temporary name in its folder,
  flushed to disk and renamed over the target: readers see the old file or the new,
  never half. A symlink stays a link; its target is replaced. An existing file keeps its
  permissions.
* A character device or a named pipe (``/dev/stdout``, ``/dev/full``, ``mkfifo``) is
  written straight into, never replaced: a pipe's reader gets the data and end of file,
  a full device says so.
* A folder, a block device or a socket is refused, as is an SQLite database (a
  codecurve study) and any file in ``protect`` (the command's inputs).
* Temporaries left by a killed writer (``.NAME.PID-HEX.tmp[.SUFFIX]``) are removed from
  the folder on the next write there, once their writer is gone or an hour old.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from codebooks.errors import CodebookError, CodecurveError

#: The largest codebook file read (a codebook of thousands of codes with long definitions
#: is a few megabytes): a larger one is refused before it is read, so that a hostile or
#: mistaken file (a gigabyte of NUL bytes) cannot fill the memory.
MAX_CODEBOOK_BYTES = 32 * 1024 * 1024


def read_bytes(path: str | Path, *, limit: int | None = None) -> bytes:
    """A file's bytes; a file larger than ``limit`` (default :data:`MAX_CODEBOOK_BYTES`)
    is refused before it is read: a regular file by its size, a pipe or a device once
    ``limit`` bytes have come."""
    p = Path(path)
    limit = MAX_CODEBOOK_BYTES if limit is None else limit
    too_large = CodebookError(
        f"larger than {_size(limit)}, too large for a codebook; is it the right file?",
        path=p,
    )
    try:
        with p.open("rb") as fh:
            info = os.fstat(fh.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(p)
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                raise too_large
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise too_large
        return data
    except FileNotFoundError:
        raise CodebookError("no such file", path=p) from None
    except IsADirectoryError:
        raise CodebookError("is a directory, not a codebook file", path=p) from None
    except OSError as exc:
        raise CodebookError(f"cannot read the file ({exc.strerror or exc})", path=p) from None


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MB" if n >= 1024 * 1024 else f"{n:,} bytes"


def read_text(path: str | Path) -> str:
    """A text file's content, UTF-8 with or without a byte-order mark."""
    return decode_text(read_bytes(path), path=path)


def decode_text(raw: bytes, *, path: str | Path | None) -> str:
    """UTF-8 bytes (a byte-order mark is dropped) as text."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CodebookError(
            f"not UTF-8 text (byte {exc.start}); save the codebook as UTF-8", path=path
        ) from None


#: The first bytes of every SQLite database, codecurve studies included.
SQLITE_HEADER = b"SQLite format 3\x00"

#: A temporary left this long is stale even if a process with its pid is alive.
STALE_AFTER_S = 3600.0

#: A temporary's name: ``.NAME.PID-HEX.tmp``, with a suffix of its own (``.csv``) or one
#: SQLite gives the files beside a database (``-wal``, ``-shm``, ``-journal``): a study
#: is built under such a name too.
_TEMPORARY = re.compile(r"^\..+\.(\d+)-[0-9a-f]{8}\.tmp(\.[^.]*|-wal|-shm|-journal)?$")


def write_file(
    path: str | Path,
    write: Callable[[Path], object],
    *,
    protect: Iterable[str | Path] = (),
    error: type[CodecurveError] = CodebookError,
) -> Path:
    """Call ``write(p)`` so that ``path`` ends up holding what it wrote (rules in the module).

    For a regular target, ``p`` is a temporary file beside the target that keeps its
    suffix (for writers that choose a format by it); for a device or pipe it is the
    device itself.

    Args:
        path: The file to write.
        write: Writes the content to the path it is given.
        protect: Files that must not be replaced (the command's inputs).
        error: The :class:`CodecurveError` subclass raised on failure.

    Returns:
        ``path`` as given.

    Raises:
        error: the target is refused, its folder is missing, or writing failed; the
            target is then left as it was and no temporary remains.
    """
    given = Path(path)
    target, info = _checked(given, protect=protect, error=error)
    if info is not None and (stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode)):
        try:
            write(target)
        except OSError as exc:
            raise error(f"cannot write the file ({exc.strerror or exc})", path=given) from None
        return given
    remove_stale_temporaries(target.parent)
    mode = 0o666 if info is None else stat.S_IMODE(info.st_mode)
    tmp = target.with_name(
        f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp{target.suffix}"
    )
    try:
        # Created here, so that a new file gets the usual permissions (umask applies).
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        write(tmp)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        if info is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
        _fsync_folder(target.parent)
    except OSError as exc:
        raise error(f"cannot write the file ({exc.strerror or exc})", path=given) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return given


def check_target(
    path: str | Path,
    *,
    protect: Iterable[str | Path] = (),
    error: type[CodecurveError] = CodebookError,
) -> None:
    """Refuse now what :func:`write_file` would refuse, before hours of work are spent.

    Raises:
        error: a folder, a study, a protected file, a missing folder, and so on.
    """
    _checked(Path(path), protect=protect, error=error)


def write_atomic(
    path: str | Path,
    data: bytes,
    *,
    protect: Iterable[str | Path] = (),
    error: type[CodecurveError] = CodebookError,
) -> None:
    """Write ``data`` to ``path`` by :func:`write_file`'s rules."""

    def put(p: Path) -> None:
        with open(p, "wb") as handle:
            handle.write(data)

    write_file(path, put, protect=protect, error=error)


def is_sqlite(path: str | Path) -> bool:
    """Whether ``path`` is a regular file that starts like an SQLite database."""
    try:
        with open(path, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return False
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _checked(
    given: Path, *, protect: Iterable[str | Path], error: type[CodecurveError]
) -> tuple[Path, os.stat_result | None]:
    """The real target of ``given`` and its status (``None``: new), or the refusal."""
    target = Path(os.path.realpath(given))
    try:
        info: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise error(f"cannot write the file ({exc.strerror or exc})", path=given) from None
    if info is not None:
        _refuse(given, target, info, protect=protect, error=error)
    elif not target.parent.is_dir():
        raise error(f"cannot write the file: folder {target.parent} does not exist", path=given)
    return target, info


def _refuse(
    given: Path,
    target: Path,
    info: os.stat_result,
    *,
    protect: Iterable[str | Path],
    error: type[CodecurveError],
) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise error("is a directory; give a file name", path=given)
    if not (
        stat.S_ISREG(info.st_mode) or stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode)
    ):
        raise error("is a device or socket, not a file; give a file name", path=given)
    if stat.S_ISREG(info.st_mode) and is_sqlite(target):
        raise error(
            "is an SQLite database (a codecurve study?); refusing to overwrite it, "
            "give another output name",
            path=given,
        )
    for other in protect:
        try:
            same = os.path.samefile(target, other)
        except OSError:
            same = False
        if same:
            raise error(
                f"is an input of this command ({other}); refusing to overwrite it, "
                "give another output name",
                path=given,
            )


def remove_stale_temporaries(folder: Path) -> None:
    """Remove temporaries of :func:`write_file` (and of a study being created) whose
    writer died (killed with SIGKILL, the machine stopped) or that are an hour old."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    now = time.time()
    for entry in entries:
        match = _TEMPORARY.match(entry.name)
        if match is None:
            continue
        with contextlib.suppress(OSError):
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode):
                continue
            if now - info.st_mtime > STALE_AFTER_S or not _alive(int(match.group(1))):
                os.unlink(entry.path)


def _alive(pid: int) -> bool:
    if pid == os.getpid() or os.name != "posix":
        return True  # on Windows os.kill would end the process: age alone decides there
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def _fsync_folder(folder: Path) -> None:
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
