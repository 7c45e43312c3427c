"""Read a codebook from a file, choosing the format by suffix."""

from __future__ import annotations

from pathlib import Path

import yaml

from codebooks.errors import CodebookError
from codebooks.mapping import codebook_from_mapping
from codebooks.model import Codebook


def read_text(path: str | Path) -> str:
    """A text file's content (UTF-8, with or without BOM), as a :class:`CodebookError` if unreadable."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise CodebookError("no such file", path=p) from None
    except IsADirectoryError:
        raise CodebookError("is a directory, not a codebook file", path=p) from None
    except OSError as exc:
        raise CodebookError(f"cannot read the file ({exc.strerror})", path=p) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CodebookError(
            f"not UTF-8 text (byte {exc.start}); save the codebook as UTF-8", path=p
        ) from None


def read_yaml(path: str | Path) -> Codebook:
    """Read a YAML codebook (layout in :mod:`codebooks.mapping`)."""
    text = read_text(path)
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        raise CodebookError(f"malformed YAML: {exc.problem}", path=path, where=where) from None
    except yaml.YAMLError as exc:
        raise CodebookError(f"malformed YAML: {exc}", path=path) from None
    if data is None:
        raise CodebookError("the file is empty", path=path)
    return codebook_from_mapping(data, path=path)


READERS = {".yaml": read_yaml, ".yml": read_yaml}


def load_codebook(path: str | Path) -> Codebook:
    """Read a codebook in any supported format, chosen by the file's suffix."""
    p = Path(path)
    reader = READERS.get(p.suffix.lower())
    if reader is None:
        known = ", ".join(sorted(READERS))
        raise CodebookError(f"unknown codebook format {p.suffix or '(none)'!r}; use {known}", path=p)
    if not p.exists():
        raise CodebookError("no such file", path=p)
    return reader(p)
