"""Parse each table format into a frame of object cells (one function per format).

``parse_*`` take the file's text (or bytes, for XLSX and Parquet) and the path to name in
errors, and return a :class:`pandas.DataFrame` whose columns are the header's names. Only
an empty cell is missing: pandas' default "NA strings" (``NA``, ``N/A``, ``None``,
``null``, ``nan``, ``#N/A`` ...) are not applied, and a spreadsheet's error cell
(``#VALUE!``) is read as its text. Every failure is a
:class:`~study.errors.ResponsesError`.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import json
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import Remedy
from study.errors import ResponsesError
from study.intake.cells import cell_text, is_blank

if TYPE_CHECKING:
    import pandas as pd

#: The message for a text holding NUL characters.
NUL_MESSAGE = (
    "the text contains NUL characters: not a text file, or a different encoding (e.g. utf-16)"
)


def another_encoding(example: str = "NAME") -> Remedy:
    """Read the file again in another encoding: ``example``, or one the user names."""
    return Remedy("retry", "read it in another encoding", {"encoding": example})


_BOMS_16 = (b"\xff\xfe", b"\xfe\xff")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t\f\v]*(?:\r\n|\n|\r))+")


# --- text ----------------------------------------------------------------------------------


def text_codec(raw: bytes, *, path: Path, encoding: str | None) -> str:
    """The codec to decode ``raw`` with: ``encoding``, else UTF-16 by its BOM, else UTF-8.

    Raises:
        ResponsesError: an unknown encoding.
    """
    if encoding is not None:
        try:
            codecs.lookup(encoding)
            _probe(encoding)
        except LookupError:
            raise ResponsesError(
                f"unknown encoding {encoding!r}; try utf-8, cp1252 or latin-1", path=path
            ) from None
        return encoding
    if raw.startswith(_BOMS_16):
        return "utf-16"
    return "utf-8-sig"


def _probe(encoding: str) -> None:
    """Raise LookupError for a codec that is no text encoding (``hex``, ``rot13``, ``zlib``)."""
    # bytes.decode refuses such codecs; an empty input would return before asking.
    with contextlib.suppress(UnicodeError, ValueError):
        b"\x00\x00\x00\x00".decode(encoding)


def decoding_error(
    raw: bytes, exc: UnicodeError, *, path: Path, encoding: str | None
) -> ResponsesError:
    """The error for bytes of ``raw`` that are not text in the encoding chosen for it."""
    if not isinstance(exc, UnicodeDecodeError):  # codecs such as punycode raise others
        return ResponsesError(f"not {encoding} text ({first_line(exc)})", path=path)
    line = raw.count(b"\n", 0, exc.start) + 1
    place = f"byte {exc.start}, line {line}"
    if encoding is not None:
        return ResponsesError(
            f"not {encoding} text ({place}); try another encoding",
            path=path,
            remedy=another_encoding(),
        )
    if raw.startswith(_BOMS_16):
        return ResponsesError(f"malformed UTF-16 text ({place})", path=path)
    return ResponsesError(
        f"not UTF-8 text ({place}); save it as UTF-8 or name its encoding (e.g. cp1252 "
        "for Excel on Windows, latin-1)",
        path=path,
        remedy=another_encoding("cp1252"),
    )


def decode_text(raw: bytes, *, path: Path, encoding: str | None) -> str:
    """Bytes to text: the given encoding, else UTF-8 (BOM or not) or UTF-16 with a BOM.

    Raises:
        ResponsesError: an unknown encoding, or bytes that are not text in it.
    """
    codec = text_codec(raw, path=path, encoding=encoding)
    try:
        return raw.decode(codec)
    except UnicodeError as exc:
        raise decoding_error(raw, exc, path=path, encoding=encoding) from None


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# --- header --------------------------------------------------------------------------------


def checked_columns(
    labels: Sequence[str],
    columns: Sequence[Sequence[Any]],
    *,
    path: Path,
    mangled: bool,
    header_row: int = 1,
) -> list[int]:
    """The positions of the columns to keep, given the header's labels and each column's cells.

    An unnamed column is dropped when it is empty (a trailing separator) and refused
    otherwise; a name used twice is refused. ``mangled``: the labels come from pandas,
    which names an unnamed column ``Unnamed: 3`` and a repeated ``a`` ``a.1``.
    ``header_row``: the header's row number, for errors.

    Raises:
        ResponsesError: an unnamed column with values, a repeated name, no names at all.
    """
    keep: list[int] = []
    seen: set[str] = set()
    for i, label in enumerate(labels):
        if not label.strip() or (mangled and label.startswith("Unnamed: ")):
            if all(cell_text(v) in (None, "") for v in columns[i]):
                continue
            raise ResponsesError(
                f"column {i + 1} has no name; the first row must be a header naming every column",
                path=path,
                where=f"row {header_row}",
            )
        name = label
        base, dot, suffix = label.rpartition(".")
        if mangled and dot and suffix.isdigit() and base in labels[:i]:
            name = base
        if name in seen:
            raise ResponsesError(
                f"the header names column {name!r} twice; names must be unique",
                path=path,
                where=f"row {header_row}",
            )
        seen.add(name)
        keep.append(i)
    if not keep:
        raise ResponsesError("the header names no columns", path=path, where=f"row {header_row}")
    return keep


# --- formats -------------------------------------------------------------------------------


def parse_delimited(text: str, *, sep: str, path: Path) -> pd.DataFrame:
    """CSV (``sep=","``) or TSV (``sep="\\t"``); every cell a string, blank lines kept as rows.

    ``frame.attrs["numbers"]`` holds each row's number as a spreadsheet shows it.
    """
    import pandas as pd

    name = "TSV" if sep == "\t" else "CSV"
    # Blank lines stay rows below (so that row numbers match the file's), but pandas would
    # take a leading one for the header: drop those and count them.
    leading = _LEADING_BLANK_LINES.match(text)
    offset = 0
    if leading:
        offset = len(re.findall(r"\r\n|\n|\r", leading.group()))
        text = text[leading.end() :]
    try:
        with warnings.catch_warnings():
            # index_col=False: a first row longer than the header must not silently become
            # the index; pandas warns instead, and that warning is our error.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(
                io.StringIO(text),
                sep=sep,
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                skip_blank_lines=False,
                index_col=False,
                engine="c",
            )
    except pd.errors.EmptyDataError:
        raise ResponsesError("the file is empty", path=path) from None
    except pd.errors.ParserWarning:
        raise ResponsesError(
            f"malformed {name} file: a row has more fields than the header names; quote texts "
            "that contain the separator",
            path=path,
            where=f"row {offset + 2}",
        ) from None
    except pd.errors.ParserError as exc:
        raise ResponsesError(f"malformed {name} file: {first_line(exc)}", path=path) from None
    except (ValueError, UnicodeError, OverflowError) as exc:
        raise ResponsesError(f"malformed {name} file: {first_line(exc)}", path=path) from None
    labels = [str(c) for c in frame.columns]
    keep = checked_columns(
        labels,
        [frame.iloc[:, i].tolist() for i in range(len(labels))],
        path=path,
        mangled=True,
        header_row=offset + 1,
    )
    frame = frame.iloc[:, keep]
    frame.attrs["numbers"] = [offset + i + 2 for i in range(len(frame))]
    return frame


def parse_txt(text: str) -> pd.DataFrame:
    """One response per line: columns ``line`` (the line number) and ``text``."""
    import pandas as pd

    rows = [(str(i + 1), line) for i, line in enumerate(text.splitlines())]
    return pd.DataFrame(rows, columns=["line", "text"], dtype=object)


def parse_jsonl(text: str, *, path: Path) -> pd.DataFrame:
    """One JSON object per line (blank lines skipped); ``attrs["numbers"]`` holds the lines."""
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            message = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise ResponsesError(
                f"malformed JSON: {message}", path=path, where=f"line {number}"
            ) from None
        if not isinstance(value, dict):
            raise ResponsesError(
                f"each line must be a JSON object, not {_json_kind(value)}",
                path=path,
                where=f"line {number}",
            )
        records.append(value)
        lines.append(number)
    return _frame_from_records(records, lines, path=path)


def parse_json(text: str, *, path: Path) -> pd.DataFrame:
    """A JSON array of objects (or ``{"name": [...]}``); item ``i`` is row ``i + 2``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResponsesError(
            f"malformed JSON: {exc.msg}", path=path, where=f"line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:
        raise ResponsesError("malformed JSON: nested too deeply", path=path) from None
    if isinstance(value, dict) and len(value) == 1 and isinstance(next(iter(value.values())), list):
        value = next(iter(value.values()))  # {"responses": [...]}
    if not isinstance(value, list):
        raise ResponsesError(
            f"a JSON responses file must be an array of objects, not {_json_kind(value)}", path=path
        )
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise ResponsesError(
                f"each item must be a JSON object, not {_json_kind(item)}",
                path=path,
                where=f"item {i + 1}",
            )
    return _frame_from_records(value, [i + 2 for i in range(len(value))], path=path)


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return type(value).__name__


def _frame_from_records(
    records: list[dict[str, Any]], numbers: list[int], *, path: Path
) -> pd.DataFrame:
    import pandas as pd

    if not records:
        raise ResponsesError("the file holds no records", path=path)
    columns: dict[str, None] = {}
    for record in records:
        for key in record:
            columns.setdefault(str(key), None)
    rows = [[record.get(c) for c in columns] for record in records]
    frame = pd.DataFrame(rows, columns=list(columns), dtype=object)
    frame.attrs["numbers"] = numbers
    return frame


def parse_xlsx(raw: bytes, *, path: Path, sheet: str | int | None) -> pd.DataFrame:
    """A workbook's sheet (the first when ``sheet`` is ``None``); its first row is the header.

    Read with openpyxl rather than :func:`pandas.read_excel`, which turns an error cell
    (``#N/A``) into a missing value whatever its NA options.
    """
    import pandas as pd
    from openpyxl import load_workbook

    if not raw.startswith(b"PK"):
        raise ResponsesError("not an XLSX workbook (an .xlsx file is a zip archive)", path=path)
    try:
        book = load_workbook(io.BytesIO(raw), read_only=True, data_only=True, keep_links=False)
    except MemoryError:
        raise
    except Exception as exc:  # zipfile, openpyxl and lxml raise many kinds on a damaged file
        raise ResponsesError(
            f"not a readable XLSX workbook ({first_line(exc)})", path=path
        ) from None
    try:
        names = [str(n) for n in book.sheetnames]
        if not names:
            raise ResponsesError("the workbook has no sheets", path=path)
        chosen = names[_sheet_index(names, sheet, path=path)]
        try:
            worksheet = book[chosen]
            if hasattr(worksheet, "reset_dimensions"):
                worksheet.reset_dimensions()  # a writer's stated size may be wrong
            rows = [_trimmed(row) for row in worksheet.iter_rows(values_only=True)]
        except MemoryError:
            raise
        except Exception as exc:  # as above: a damaged sheet fails in many ways
            raise ResponsesError(f"cannot read the sheet ({first_line(exc)})", path=path) from None
    finally:
        book.close()
    width = max((len(r) for r in rows), default=0)
    if width == 0:
        raise ResponsesError("the sheet is empty", path=path)
    # The header is the first row with a value, as for CSV (rows above it: none).
    offset = next((i for i, r in enumerate(rows) if not all(is_blank(v) for v in r)), None)
    if offset is None:
        raise ResponsesError("the sheet is empty", path=path)
    rows = [r + [None] * (width - len(r)) for r in rows[offset:]]
    labels = ["" if v is None else (cell_text(v) or "") for v in rows[0]]
    data = [[_xlsx_cell(v) for v in r] for r in rows[1:]]
    columns = [[r[j] for r in data] for j in range(width)]
    keep = checked_columns(labels, columns, path=path, mangled=False, header_row=offset + 1)
    frame = pd.DataFrame(
        {labels[j]: pd.Series(columns[j], dtype=object) for j in keep},
        columns=[labels[j] for j in keep],
        dtype=object,
    )
    frame.attrs["numbers"] = [offset + i + 2 for i in range(len(frame))]
    return frame


def _sheet_index(names: list[str], sheet: str | int | None, *, path: Path) -> int:
    if sheet is None:
        return 0
    if isinstance(sheet, int) or (sheet.isdigit() and sheet not in names):
        index = int(sheet)
        if not 0 <= index < len(names):
            raise ResponsesError(
                f"no sheet number {index}; the workbook has {len(names)} (0-based)", path=path
            )
        return index
    if sheet not in names:
        raise ResponsesError(f"no sheet named {sheet!r}; sheets: {', '.join(names)}", path=path)
    return names.index(sheet)


def _trimmed(row: Sequence[Any]) -> list[Any]:
    """A sheet's row without its trailing empty cells."""
    cells = list(row)
    while cells and cells[-1] is None:
        cells.pop()
    return cells


def _xlsx_cell(value: Any) -> Any:
    # As pandas does: a whole number stored as a float is an int (ids such as 12.0).
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def parse_parquet(raw: bytes, *, path: Path) -> pd.DataFrame:
    """A Parquet table, every column as objects."""
    import pandas as pd

    if not raw.startswith(b"PAR1"):
        raise ResponsesError("not a Parquet file (no PAR1 magic bytes)", path=path)
    try:
        frame = pd.read_parquet(io.BytesIO(raw))
    except MemoryError:
        raise
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ValueError ... on damage
        raise ResponsesError(
            f"not a readable Parquet file ({first_line(exc)})", path=path
        ) from None
    frame.columns = [str(c) for c in frame.columns]
    return frame.astype(object)


__all__ = [
    "NUL_MESSAGE",
    "another_encoding",
    "checked_columns",
    "decode_text",
    "decoding_error",
    "first_line",
    "parse_delimited",
    "parse_json",
    "parse_jsonl",
    "parse_parquet",
    "parse_txt",
    "parse_xlsx",
    "text_codec",
]
