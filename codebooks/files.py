"""Reading and writing codebook files, every failure as a :class:`CodebookError`."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from codebooks.errors import CodebookError


def read_bytes(path: str | Path) -> bytes:
    """A file's bytes."""
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise CodebookError("no such file", path=p) from None
    except IsADirectoryError:
        raise CodebookError("is a directory, not a codebook file", path=p) from None
    except OSError as exc:
        raise CodebookError(f"cannot read the file ({exc.strerror or exc})", path=p) from None


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


def write_atomic(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new, never half.

    The bytes go to a temporary file in the same directory, are flushed to disk, and the
    temporary file is renamed over ``path``. An existing file's permissions are kept.
    """
    p = Path(path)
    try:
        mode = stat.S_IMODE(p.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644
    except OSError as exc:
        raise CodebookError(f"cannot write the file ({exc.strerror or exc})", path=p) from None
    tmp_name: str | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, p)
        tmp_name = None
    except OSError as exc:
        raise CodebookError(f"cannot write the file ({exc.strerror or exc})", path=p) from None
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
