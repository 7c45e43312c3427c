"""Read survey responses from a file: CSV, TSV, XLSX, JSONL, JSON, Parquet or plain text.

The format is chosen by the file's suffix:

=====================  ===========================================================
``.csv``               comma-separated, first row is the header
``.tsv`` ``.tab``      tab-separated, first row is the header
``.xlsx`` ``.xlsm``    the first sheet (or ``sheet=``), first row is the header
``.jsonl`` ``.ndjson`` one JSON object per line
``.json``              a JSON array of objects
``.parquet`` ``.pq``   a Parquet table
``.txt``               one response per line; ids are the line numbers
=====================  ===========================================================

Documented behaviour (each case adds a line to :attr:`ResponseTable.messages`):

* **Columns.** ``id_column`` and ``text_column`` choose the columns; otherwise the id
  column is the first whose name is a usual id name (``id``, ``response_id``,
  ``respondent`` ...) and the text column the first with a usual text name (``text``,
  ``response``, ``answer``, ``comment`` ...) or else the column with the longest average
  text. Every other column is kept as an attribute of each response.
  (:mod:`study.intake.columns`)
* **Ids** are always strings, exactly as written (``007`` stays ``007``; a whole number
  read as a float by a typed format, ``12.0``, becomes ``12``).
* **No id column** (none given, none detected): ids are the row numbers as a
  spreadsheet shows them (header = row 1, first response = row 2; for JSONL the line
  number), and a message says so.
* **A blank id** in an id column is an error naming the rows: a generated id could clash
  with a real one, so the fix (fill them in, or drop the column) is left to the user.
* **Duplicate ids** are an error naming the first duplicates and their rows.
* **Only an empty cell is empty**: ``NA``, ``N/A``, ``None``, ``null``, ``nan``,
  ``#N/A``, ``#VALUE!`` ... are texts like any other, in every format.
  (:mod:`study.intake.tables`)
* **Empty rows** (every cell blank) are skipped and counted
  (:attr:`ResponseTable.skipped_empty_rows`); a row with a text but no id is still a
  blank id.
* **Empty texts** (blank or whitespace only) are skipped and counted; a file with no
  text at all is an error.
* **Very long texts** are kept whole; a message counts them. The scoring backend cuts
  them from the middle to fit the model and flags the score as truncated.
* **Encodings.** UTF-8 with or without a BOM, and UTF-16 with a BOM, are read without
  asking; anything else is an error suggesting ``--encoding`` (e.g. ``cp1252``).
* **Binary files** (NUL bytes, bytes that are not text) are refused from their first
  bytes, before the whole file is read.

Every failure is a :class:`~study.errors.ResponsesError` naming the file and, where
known, the place; no other exception escapes :func:`read_responses`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from study.errors import ResponsesError
from study.intake._formats import decode_text
from study.intake.cells import cell_text, cell_value
from study.intake.columns import ID_NAMES, TEXT_NAMES, choose_columns, format_places, unique_ids
from study.intake.tables import SUFFIXES, read_frame, read_table

log = logging.getLogger(__name__)

#: Texts longer than this (characters) are counted in a message; they are kept.
LONG_TEXT_CHARS = 8000


@dataclass(frozen=True)
class Response:
    """One survey response.

    Attributes:
        id: The response's id, always a string.
        text: The text to code.
        attrs: The file's other columns for this row (JSON-compatible values).
    """

    id: str
    text: str
    attrs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResponseTable:
    """Responses read from a file, with a record of what was done to them.

    Attributes:
        responses: The responses, in file order, empty texts left out.
        path: The file read, if any.
        id_column: The column the ids came from; ``None`` when they were generated.
        text_column: The column the texts came from.
        attribute_columns: The other columns, kept in each response's ``attrs``.
        messages: One line per notable thing done (skipped rows, generated ids ...),
            for the user to read.
        skipped_empty: How many rows were left out for an empty text.
        skipped_empty_rows: How many rows were left out for being wholly empty.
    """

    responses: tuple[Response, ...]
    path: Path | None = None
    id_column: str | None = None
    text_column: str | None = None
    attribute_columns: tuple[str, ...] = ()
    messages: tuple[str, ...] = ()
    skipped_empty: int = 0
    skipped_empty_rows: int = 0

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for response in self.responses:
            if not isinstance(response.id, str):
                raise ResponsesError(f"response id {response.id!r} is not a string", path=self.path)
            if response.id in seen:
                raise ResponsesError(f"response id {response.id!r} is used twice", path=self.path)
            seen.add(response.id)

    @classmethod
    def from_texts(
        cls, items: Mapping[str, str] | Sequence[tuple[str, str]], **kwargs: Any
    ) -> ResponseTable:
        """A table from ``{id: text}`` or ``[(id, text), ...]`` (handy for tests and demos)."""
        pairs = items.items() if isinstance(items, Mapping) else items
        return cls(responses=tuple(Response(str(i), str(t), {}) for i, t in pairs), **kwargs)

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.responses]

    @property
    def texts(self) -> list[str]:
        return [r.text for r in self.responses]

    def __len__(self) -> int:
        return len(self.responses)

    def __iter__(self) -> Iterator[Response]:
        return iter(self.responses)


def read_responses(
    path: str | Path,
    *,
    id_column: str | None = None,
    text_column: str | None = None,
    encoding: str | None = None,
    sheet: str | int | None = None,
) -> ResponseTable:
    """Read responses from a file (formats and behaviour in the module docstring).

    Args:
        path: The file; its suffix chooses the format.
        id_column: The column holding response ids (detected when ``None``).
        text_column: The column holding the texts (detected when ``None``).
        encoding: Text encoding of CSV/TSV/JSONL/TXT files (UTF-8 / UTF-16 with BOM
            detected when ``None``).
        sheet: XLSX sheet name or 0-based index (the first sheet when ``None``).

    Raises:
        ResponsesError: naming the file and the place of the first problem.
    """
    table = read_table(path, encoding=encoding, sheet=sheet)
    frame, numbers, place, p = table.frame, list(table.numbers), table.place, table.path
    columns = choose_columns(
        frame,
        path=p,
        place=place,
        id_column=id_column,
        text_column=text_column,
        numbered=table.kind == "txt",
    )
    messages = list(columns.messages)
    if table.empty_rows:
        note = (
            f"skipped {len(table.empty_rows)} empty row(s) "
            f"({format_places(table.empty_rows, place)})"
        )
        messages.append(note)
        log.info("%s: %s", p, note)
    if columns.id is None:
        ids = [str(n) for n in numbers]
    else:
        ids = unique_ids(
            frame[columns.id].tolist(), numbers, column=columns.id, place=place, path=p
        )
    texts = [cell_text(v) for v in frame[columns.text].tolist()]
    attr_values = {c: frame[c].tolist() for c in columns.attributes}
    responses: list[Response] = []
    empty: list[int] = []
    long_count = 0
    for i, (n, rid, text) in enumerate(zip(numbers, ids, texts, strict=True)):
        if text is None or not text.strip():
            empty.append(n)
            continue
        if len(text) > LONG_TEXT_CHARS:
            long_count += 1
        attrs = {c: cell_value(attr_values[c][i]) for c in columns.attributes}
        responses.append(Response(rid, text, attrs))
    if empty:
        messages.append(
            f"skipped {len(empty)} response(s) with an empty text ({format_places(empty, place)})"
        )
    if not responses:
        raise ResponsesError(f"every text in column {columns.text!r} is empty", path=p)
    if long_count:
        messages.append(
            f"{long_count} text(s) longer than {LONG_TEXT_CHARS:,} characters kept whole; "
            "the model reads them cut from the middle and their scores are flagged truncated"
        )
    return ResponseTable(
        responses=tuple(responses),
        path=p,
        id_column=columns.id,
        text_column=columns.text,
        attribute_columns=columns.attributes,
        messages=tuple(messages),
        skipped_empty=len(empty),
        skipped_empty_rows=len(table.empty_rows),
    )


__all__ = [
    "ID_NAMES",
    "LONG_TEXT_CHARS",
    "SUFFIXES",
    "TEXT_NAMES",
    "Response",
    "ResponseTable",
    "decode_text",
    "read_frame",
    "read_responses",
]
