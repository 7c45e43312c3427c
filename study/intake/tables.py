"""Read a table file (CSV, TSV, XLSX, JSONL, JSON, Parquet, TXT) as rows of cells.

The format is chosen by the file's suffix (:data:`SUFFIXES`; parsers in
:mod:`study.intake._formats`). What every format shares:

* **Only an empty cell is empty.** Texts such as ``NA``, ``N/A``, ``None``, ``null``,
  ``nan``, ``#N/A`` or ``#VALUE!`` are kept as written, in every format (a spreadsheet's
  error cell is read as its text); typed formats keep their ``null``.
* **Empty rows** (every cell blank or whitespace) between rows are left out and their
  numbers kept in :attr:`TableFile.empty_rows`; empty rows after the last row are no
  rows at all. A text file (``.txt``) has no empty rows: a blank line is a response
  with an empty text.
* **Early refusal.** At most :data:`SNIFF_BYTES` at each end of the file are looked at
  before the whole file is read: a text file that is not text in its encoding or holds
  NUL characters, an XLSX file that is no zip archive, a Parquet file without its magic
  bytes is refused at once, however large.

Every failure is a :class:`~study.errors.ResponsesError` naming the file and, where
known, the place. pandas is imported on first use, so that ``import study`` stays light.
"""

from __future__ import annotations

import codecs
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from study.errors import ResponsesError
from study.intake._formats import (
    NUL_MESSAGE,
    another_encoding,
    decode_text,
    decoding_error,
    parse_delimited,
    parse_json,
    parse_jsonl,
    parse_parquet,
    parse_txt,
    parse_xlsx,
    text_codec,
)
from study.intake.cells import is_blank

if TYPE_CHECKING:
    import pandas as pd

#: File suffixes read, and the format each one means.
SUFFIXES = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".txt": "txt",
}
#: Bytes looked at, at each end of a file, before the whole file is read.
SNIFF_BYTES = 64 * 1024

_TEXT_KINDS = ("csv", "tsv", "jsonl", "json", "txt")
_MAGIC = {
    "xlsx": (b"PK", "not an XLSX workbook (an .xlsx file is a zip archive)"),
    "parquet": (b"PAR1", "not a Parquet file (no PAR1 magic bytes)"),
}


@dataclass(frozen=True, eq=False)
class TableFile:
    """A table file read as cells, before any column is chosen.

    Attributes:
        path: The file.
        kind: Its format (a value of :data:`SUFFIXES`).
        frame: One row per record, object cells, the header's names as column names.
        numbers: Each row's number as the user finds it: the spreadsheet row (header =
            row 1) or, for JSONL and TXT, the line.
        place: The word for those numbers, ``row`` or ``line``.
        empty_rows: The numbers of the empty rows left out.
    """

    path: Path
    kind: str
    frame: pd.DataFrame
    numbers: tuple[int, ...]
    place: str
    empty_rows: tuple[int, ...] = ()


def read_table(
    path: str | Path, *, encoding: str | None = None, sheet: str | int | None = None
) -> TableFile:
    """Read any supported table file (module docstring) as cells.

    Args:
        path: The file; its suffix chooses the format.
        encoding: Text encoding of CSV/TSV/JSONL/JSON/TXT files (UTF-8 with or without
            a BOM, or UTF-16 with a BOM, when ``None``).
        sheet: XLSX sheet name or 0-based index (the first sheet when ``None``).

    Raises:
        ResponsesError: unknown format, unreadable or malformed file, no rows.
    """
    p = Path(path)
    kind = SUFFIXES.get(p.suffix.lower())
    if kind is None:
        known = ", ".join(sorted(SUFFIXES))
        raise ResponsesError(
            f"unknown file format {p.suffix or '(no suffix)'!r}; use one of {known}", path=p
        )
    sniff(p, kind=kind, encoding=encoding)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise _read_error(p, exc) from None
    frame, place = _parse(p, kind, raw, encoding=encoding, sheet=sheet)
    del raw
    frame.columns = [str(c) for c in frame.columns]
    if frame.shape[1] == 0:
        raise ResponsesError("the file has no columns", path=p)
    if "numbers" in frame.attrs:
        numbers = [int(n) for n in frame.attrs["numbers"]]
    elif kind == "txt":
        numbers = [i + 1 for i in range(len(frame))]
    else:
        numbers = [i + 2 for i in range(len(frame))]  # as a spreadsheet shows them
    empty: list[int] = []
    if kind != "txt":
        blank = _blank_rows(frame)
        # Rows after the last row with a value are no rows (a trailing newline, a
        # spreadsheet's formatted but empty rows); those between are counted.
        last = len(frame)
        while last and (last - 1) in blank:
            last -= 1
        if last < len(frame) or blank:
            empty = [numbers[i] for i in sorted(blank) if i < last]
            keep = [i for i in range(last) if i not in blank]
            frame = frame.iloc[keep].reset_index(drop=True)
            numbers = [numbers[i] for i in keep]
    if len(frame) == 0:
        raise ResponsesError("the file has a header but no rows (no responses)", path=p)
    return TableFile(
        path=p, kind=kind, frame=frame, numbers=tuple(numbers), place=place, empty_rows=tuple(empty)
    )


def read_frame(
    path: str | Path, *, encoding: str | None = None, sheet: str | int | None = None
) -> tuple[pd.DataFrame, list[int], str]:
    """:func:`read_table` as ``(frame, numbers, place)``, for readers built on it.

    Raises:
        ResponsesError: unknown format, unreadable or malformed file, no rows.
    """
    table = read_table(path, encoding=encoding, sheet=sheet)
    return table.frame, list(table.numbers), table.place


def sniff(path: Path, *, kind: str, encoding: str | None) -> None:
    """Refuse a file whose first or last bytes show that it cannot be read as ``kind``.

    Reads at most :data:`SNIFF_BYTES` at each end, so that a large binary file (or a
    file of NUL bytes) is refused before it is read into memory.

    Raises:
        ResponsesError: missing, unreadable, empty, or not of the format.
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
            size = handle.seek(0, io.SEEK_END)
            tail = b""
            if size > 2 * SNIFF_BYTES:
                handle.seek(size - SNIFF_BYTES)
                tail = handle.read(SNIFF_BYTES)
    except OSError as exc:
        raise _read_error(path, exc) from None
    if not head:
        raise ResponsesError("the file is empty", path=path)
    if kind in _MAGIC:
        magic, message = _MAGIC[kind]
        if not head.startswith(magic):
            raise ResponsesError(message, path=path)
        return
    codec = text_codec(head, path=path, encoding=encoding)
    decoder = codecs.getincrementaldecoder(codec)()
    try:
        start = decoder.decode(head, final=size <= len(head))
    except UnicodeError as exc:
        raise decoding_error(head, exc, path=path, encoding=encoding) from None
    if "\x00" in start:
        raise ResponsesError(NUL_MESSAGE, path=path, remedy=another_encoding("utf-16"))
    # In UTF-8 and the one-byte encodings, a 0 byte anywhere is a NUL character.
    wide = codecs.lookup(codec).name.startswith(("utf-16", "utf-32"))
    if tail and not wide and b"\x00" in tail:
        raise ResponsesError(NUL_MESSAGE, path=path, remedy=another_encoding("utf-16"))


def _read_error(path: Path, exc: OSError) -> ResponsesError:
    if isinstance(exc, FileNotFoundError):
        return ResponsesError("no such file", path=path)
    if isinstance(exc, IsADirectoryError):
        return ResponsesError("is a directory, not a responses file", path=path)
    return ResponsesError(f"cannot read the file ({exc.strerror or exc})", path=path)


def _parse(
    p: Path, kind: str, raw: bytes, *, encoding: str | None, sheet: str | int | None
) -> tuple[pd.DataFrame, str]:
    """The file as a DataFrame of objects, and how its rows are numbered (``row``/``line``)."""
    if kind in _TEXT_KINDS:
        text = decode_text(raw, path=p, encoding=encoding)
        if not text.strip():
            raise ResponsesError("the file is empty", path=p)
        if "\x00" in text:
            raise ResponsesError(NUL_MESSAGE, path=p, remedy=another_encoding("utf-16"))
        if kind == "txt":
            return parse_txt(text), "line"
        if kind == "jsonl":
            return parse_jsonl(text, path=p), "line"
        if kind == "json":
            return parse_json(text, path=p), "row"
        return parse_delimited(text, sep="\t" if kind == "tsv" else ",", path=p), "row"
    if kind == "xlsx":
        return parse_xlsx(raw, path=p, sheet=sheet), "row"
    return parse_parquet(raw, path=p), "row"


def _blank_rows(frame: pd.DataFrame) -> set[int]:
    """Positions of the rows whose every cell is blank (most rows fail on the first cell)."""
    candidates = list(range(len(frame)))
    for j in range(frame.shape[1]):
        if not candidates:
            break
        cells = frame.iloc[candidates, j].tolist()
        candidates = [i for i, v in zip(candidates, cells, strict=True) if is_blank(v)]
    return set(candidates)


__all__ = ["SNIFF_BYTES", "SUFFIXES", "TableFile", "read_frame", "read_table", "sniff"]
