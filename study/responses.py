"""Read survey responses from a file: CSV, TSV, XLSX, JSONL, JSON, Parquet or plain text.

The format is chosen by the file's suffix:

=====================  ===========================================================
``.csv``               comma-separated, first row is the header
``.tsv`` ``.tab``      tab-separated, first row is the header
``.xlsx`` ``.xlsm``    the first sheet (or ``sheet=``), first row is the header
``.jsonl`` ``.ndjson`` one JSON object per line
``.json``              a JSON array of objects
``.parquet`` ``.pq``   a Parquet table
``.txt``               one response per non-blank line; ids are the line numbers
=====================  ===========================================================

Documented behaviour (each case adds a line to :attr:`ResponseTable.messages`):

* **Columns.** ``id_column`` and ``text_column`` choose the columns; otherwise the id
  column is the first whose name is a usual id name (``id``, ``response_id``,
  ``respondent`` ...) and the text column the first with a usual text name (``text``,
  ``response``, ``answer``, ``comment`` ...) or else the column with the longest average
  text. Every other column is kept as an attribute of each response.
* **Ids** are always strings, exactly as written (``007`` stays ``007``; a whole number
  read as a float by a typed format, ``12.0``, becomes ``12``).
* **No id column** (none given, none detected): ids are the row numbers as a
  spreadsheet shows them (header = row 1, first response = row 2; for JSONL the line
  number), and a message says so.
* **A blank id** in an id column is an error naming the rows: a generated id could clash
  with a real one, so the fix (fill them in, or drop the column) is left to the user.
* **Duplicate ids** are an error naming the first duplicates and their rows.
* **Empty texts** (blank or whitespace only) are skipped and counted; a file with no
  text at all is an error.
* **Very long texts** are kept whole; a message counts them. The scoring backend cuts
  them from the middle to fit the model and flags the score as truncated.
* **Encodings.** UTF-8 with or without a BOM, and UTF-16 with a BOM, are read without
  asking; anything else is an error suggesting ``--encoding`` (e.g. ``cp1252``).

Every failure is a :class:`~study.errors.ResponsesError` naming the file and, where
known, the place; no other exception escapes :func:`read_responses`.
"""

from __future__ import annotations

import io
import json
import math
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING, Any

from study.errors import ResponsesError

if TYPE_CHECKING:
    import pandas as pd

#: Normalised column names taken as the id column, in order of preference.
ID_NAMES = (
    "id",
    "responseid",
    "respondentid",
    "respondent",
    "participantid",
    "participant",
    "caseid",
    "recordid",
    "commentid",
    "rowid",
    "uuid",
)
#: Normalised column names taken as the text column, in order of preference.
TEXT_NAMES = (
    "text",
    "response",
    "responsetext",
    "answer",
    "comment",
    "comments",
    "feedback",
    "verbatim",
    "opentext",
    "freetext",
    "reply",
    "body",
    "content",
)
#: Texts longer than this (characters) are counted in a message; they are kept.
LONG_TEXT_CHARS = 8000

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

_MAX_LISTED = 5


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
        messages: One line per notable thing done (skipped rows, generated ids ...).
        skipped_empty: How many rows were left out for an empty text.
    """

    responses: tuple[Response, ...]
    path: Path | None = None
    id_column: str | None = None
    text_column: str | None = None
    attribute_columns: tuple[str, ...] = ()
    messages: tuple[str, ...] = ()
    skipped_empty: int = 0

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
    p = Path(path)
    frame, numbers, place = read_frame(p, encoding=encoding, sheet=sheet)
    return _table_from_frame(
        frame,
        numbers,
        path=p,
        place=place,
        id_column=id_column,
        text_column=text_column,
        is_txt=p.suffix.lower() == ".txt",
    )


def read_frame(
    path: str | Path, *, encoding: str | None = None, sheet: str | int | None = None
) -> tuple[pd.DataFrame, list[int], str]:
    """Any supported table file as a DataFrame of objects, for readers built on this one.

    Returns:
        The frame (header = column names), each row's number as the user would find it
        (spreadsheet row, or line for JSONL/TXT), and the word for those numbers
        (``row``/``line``).

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
    raw = _read_bytes(p)
    frame, place = _parse(p, kind, raw, encoding=encoding, sheet=sheet)
    frame.columns = [str(c) for c in frame.columns]
    if frame.shape[1] == 0:
        raise ResponsesError("the file has no columns", path=p)
    if len(frame) == 0:
        raise ResponsesError("the file has a header but no rows (no responses)", path=p)
    if "numbers" in frame.attrs:
        numbers = list(frame.attrs["numbers"])
    elif kind == "txt":
        numbers = [i + 1 for i in range(len(frame))]
    else:
        numbers = [i + 2 for i in range(len(frame))]  # as a spreadsheet shows them
    return frame, numbers, place


# --- reading -----------------------------------------------------------------------------


def _read_bytes(p: Path) -> bytes:
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise ResponsesError("no such file", path=p) from None
    except IsADirectoryError:
        raise ResponsesError("is a directory, not a responses file", path=p) from None
    except OSError as exc:
        raise ResponsesError(f"cannot read the file ({exc.strerror or exc})", path=p) from None


def decode_text(raw: bytes, *, path: Path, encoding: str | None) -> str:
    """Bytes to text: the given encoding, else UTF-8 (BOM or not) or UTF-16 with a BOM."""
    if encoding is not None:
        try:
            return raw.decode(encoding)
        except LookupError:
            raise ResponsesError(
                f"unknown encoding {encoding!r}; try utf-8, cp1252 or latin-1", path=path
            ) from None
        except UnicodeDecodeError as exc:
            raise ResponsesError(
                f"not {encoding} text ({_byte_place(raw, exc.start)}); try another --encoding",
                path=path,
            ) from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ResponsesError(
                f"malformed UTF-16 text ({_byte_place(raw, exc.start)})", path=path
            ) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ResponsesError(
            f"not UTF-8 text ({_byte_place(raw, exc.start)}); save it as UTF-8 or pass "
            "--encoding (e.g. --encoding cp1252 for Excel on Windows, latin-1)",
            path=path,
        ) from None


def _byte_place(raw: bytes, offset: int) -> str:
    line = raw.count(b"\n", 0, offset) + 1
    return f"byte {offset}, line {line}"


def _parse(
    p: Path, kind: str, raw: bytes, *, encoding: str | None, sheet: str | int | None
) -> tuple[pd.DataFrame, str]:
    """The file as a DataFrame of objects, and how its rows are numbered (``row``/``line``)."""
    if kind in ("csv", "tsv", "jsonl", "json", "txt"):
        text = decode_text(raw, path=p, encoding=encoding)
        if not text.strip():
            raise ResponsesError("the file is empty", path=p)
        if "\x00" in text:
            raise ResponsesError(
                "the text contains NUL characters: not a text file, or a different "
                "--encoding (e.g. utf-16)",
                path=p,
            )
        if kind == "txt":
            return _parse_txt(text), "line"
        if kind == "jsonl":
            return _parse_jsonl(text, path=p), "line"
        if kind == "json":
            return _parse_json(text, path=p), "row"
        return _parse_delimited(text, sep="\t" if kind == "tsv" else ",", path=p), "row"
    if not raw:
        raise ResponsesError("the file is empty", path=p)
    if kind == "xlsx":
        return _parse_xlsx(raw, path=p, sheet=sheet), "row"
    return _parse_parquet(raw, path=p), "row"


def _parse_delimited(text: str, *, sep: str, path: Path) -> pd.DataFrame:
    import pandas as pd  # here, not at the top: `import study` stays free of pandas

    name = _sep_name(sep)
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
                skip_blank_lines=True,
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
            where="row 2",
        ) from None
    except pd.errors.ParserError as exc:
        raise ResponsesError(f"malformed {name} file: {_first_line(exc)}", path=path) from None
    except (ValueError, UnicodeError, OverflowError) as exc:
        raise ResponsesError(f"malformed {name} file: {_first_line(exc)}", path=path) from None
    return _clean_header(frame, path=path)


def _sep_name(sep: str) -> str:
    return "TSV" if sep == "\t" else "CSV"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _clean_header(frame: pd.DataFrame, *, path: Path) -> pd.DataFrame:
    """Drop unnamed empty columns (a trailing separator); refuse unnamed or repeated names."""
    columns = list(frame.columns)
    keep = []
    for i, name in enumerate(columns):
        label = str(name)
        if not label.strip() or label.startswith("Unnamed: "):
            if all(_as_text(v) in (None, "") for v in frame.iloc[:, i].tolist()):
                continue
            raise ResponsesError(
                f"column {i + 1} has no name; the first row must be a header naming every column",
                path=path,
                where="row 1",
            )
        # pandas renames a repeated header "a" to "a.1"; a repeated name is ambiguous.
        base, dot, suffix = label.rpartition(".")
        if dot and suffix.isdigit() and base in {str(c) for c in columns[:i]}:
            raise ResponsesError(
                f"the header names column {base!r} twice; names must be unique",
                path=path,
                where="row 1",
            )
        keep.append(i)
    if not keep:
        raise ResponsesError("the header names no columns", path=path, where="row 1")
    return frame.iloc[:, keep]


def _parse_txt(text: str) -> pd.DataFrame:
    import pandas as pd

    lines = text.splitlines()
    rows = [(str(i + 1), line) for i, line in enumerate(lines)]
    return pd.DataFrame(rows, columns=["line", "text"], dtype=object)


def _parse_jsonl(text: str, *, path: Path) -> pd.DataFrame:
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


def _parse_json(text: str, *, path: Path) -> pd.DataFrame:
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


def _parse_xlsx(raw: bytes, *, path: Path, sheet: str | int | None) -> pd.DataFrame:
    import zipfile

    import pandas as pd

    if not raw.startswith(b"PK"):
        raise ResponsesError("not an XLSX workbook (an .xlsx file is a zip archive)", path=path)
    try:
        book = pd.ExcelFile(io.BytesIO(raw), engine="openpyxl")
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError) as exc:
        raise ResponsesError(
            f"not a readable XLSX workbook ({_first_line(exc)})", path=path
        ) from None
    except Exception as exc:  # openpyxl raises many kinds on a damaged workbook
        if isinstance(exc, MemoryError):
            raise
        raise ResponsesError(
            f"not a readable XLSX workbook ({_first_line(exc)})", path=path
        ) from None
    names = [str(n) for n in book.sheet_names]
    if not names:
        raise ResponsesError("the workbook has no sheets", path=path)
    chosen: str | int
    if sheet is None:
        chosen = 0
    elif isinstance(sheet, int) or (
        isinstance(sheet, str) and sheet.isdigit() and sheet not in names
    ):
        index = int(sheet)
        if not 0 <= index < len(names):
            raise ResponsesError(
                f"no sheet number {index}; the workbook has {len(names)} (0-based)", path=path
            )
        chosen = index
    else:
        if sheet not in names:
            raise ResponsesError(f"no sheet named {sheet!r}; sheets: {', '.join(names)}", path=path)
        chosen = sheet
    try:
        frame = pd.read_excel(book, sheet_name=chosen, dtype=object, header=0)
    except Exception as exc:  # as above: a damaged sheet fails in openpyxl in many ways
        if isinstance(exc, MemoryError):
            raise
        raise ResponsesError(f"cannot read the sheet ({_first_line(exc)})", path=path) from None
    if frame.shape[1] == 0:
        raise ResponsesError("the sheet is empty", path=path)
    return _clean_header(frame, path=path)


def _parse_parquet(raw: bytes, *, path: Path) -> pd.DataFrame:
    import pandas as pd

    if not raw.startswith(b"PAR1"):
        raise ResponsesError("not a Parquet file (no PAR1 magic bytes)", path=path)
    try:
        frame = pd.read_parquet(io.BytesIO(raw))
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ValueError ... on damage
        if isinstance(exc, MemoryError):
            raise
        raise ResponsesError(
            f"not a readable Parquet file ({_first_line(exc)})", path=path
        ) from None
    frame.columns = [str(c) for c in frame.columns]
    return frame.astype(object)


# --- columns and rows ----------------------------------------------------------------------


def _norm(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", str(name).casefold())


def _pick_column(
    columns: list[str], wanted: str | None, *, what: str, flag: str, path: Path
) -> str | None:
    if wanted is None:
        return None
    if wanted in columns:
        return wanted
    folded = [c for c in columns if c.strip().casefold() == wanted.strip().casefold()]
    if len(folded) == 1:
        return folded[0]
    close = get_close_matches(wanted, columns, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    shown = ", ".join(repr(c) for c in columns[:12]) + (" ..." if len(columns) > 12 else "")
    raise ResponsesError(
        f"no {what} column {wanted!r} ({flag}){hint} columns are: {shown}", path=path
    )


def _detect(columns: list[str], names: Sequence[str], *, exclude: str | None) -> str | None:
    by_norm: dict[str, str] = {}
    for c in columns:
        if c != exclude:
            by_norm.setdefault(_norm(c), c)
    for name in names:
        if name in by_norm:
            return by_norm[name]
    return None


def _as_text(value: Any) -> str | None:
    """A cell as text, ``None`` for missing (NaN, None, NaT)."""
    import pandas as pd

    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    try:
        if pd.isna(value) is True:
            return None
    except (TypeError, ValueError):
        pass
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _as_json_value(value: Any) -> Any:
    """A cell as a JSON-compatible value for ``attrs`` (typed formats keep their types)."""
    import pandas as pd

    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, (list, tuple)):
        return [_as_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _as_json_value(v) for k, v in value.items()}
    try:
        if pd.isna(value) is True:
            return None
    except (TypeError, ValueError):
        pass
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        try:
            return _as_json_value(item())
        except (TypeError, ValueError):
            pass
    if hasattr(value, "tolist"):
        return _as_json_value(value.tolist())
    return str(value)


def _places(numbers: Sequence[int], place: str) -> str:
    shown = ", ".join(str(n) for n in numbers[:_MAX_LISTED])
    more = f" and {len(numbers) - _MAX_LISTED} more" if len(numbers) > _MAX_LISTED else ""
    word = place if len(numbers) == 1 else place + "s"
    return f"{word} {shown}{more}"


def _table_from_frame(
    frame: pd.DataFrame,
    numbers: list[int],
    *,
    path: Path,
    place: str,
    id_column: str | None,
    text_column: str | None,
    is_txt: bool,
) -> ResponseTable:
    columns = [str(c) for c in frame.columns]
    messages: list[str] = []

    id_col = _pick_column(columns, id_column, what="id", flag="--id-column", path=path)
    text_col = _pick_column(columns, text_column, what="text", flag="--text-column", path=path)
    if is_txt and id_column is None:
        id_col = "line"
    if id_col is None and id_column is None:
        id_col = _detect(columns, ID_NAMES, exclude=text_col)
    if text_col is None:
        text_col = _detect(columns, TEXT_NAMES, exclude=id_col)
    if text_col is None:
        text_col = _longest_text_column(frame, exclude=id_col)
        if text_col is None:
            raise ResponsesError(
                "found no text column; name it with --text-column (columns are: "
                + ", ".join(repr(c) for c in columns[:12])
                + ")",
                path=path,
            )
        messages.append(
            f"took column {text_col!r} as the text (the longest texts); "
            "choose another with --text-column"
        )
    if id_col == text_col:
        raise ResponsesError(
            f"column {text_col!r} cannot be both the id and the text column", path=path
        )
    attribute_columns = tuple(c for c in columns if c not in (id_col, text_col))

    raw_ids: list[str | None]
    if id_col is None:
        raw_ids = [str(n) for n in numbers]
        messages.append(
            f"no id column found: the ids are the {place} numbers; name one with --id-column"
        )
    else:
        raw_ids = [_as_text(v) for v in frame[id_col].tolist()]
        raw_ids = [None if v is None or not v.strip() else v.strip() for v in raw_ids]
        blank = [n for n, v in zip(numbers, raw_ids, strict=True) if v is None]
        if blank:
            raise ResponsesError(
                f"blank id in column {id_col!r}; fill in every id, or drop the column to "
                f"number the responses by {place}",
                path=path,
                where=_places(blank, place),
            )
    texts = [_as_text(v) for v in frame[text_col].tolist()]

    first_at: dict[str, int] = {}
    duplicates: dict[str, list[int]] = {}
    for n, rid in zip(numbers, raw_ids, strict=True):
        assert rid is not None
        if rid in first_at:
            duplicates.setdefault(rid, [first_at[rid]]).append(n)
        else:
            first_at[rid] = n
    if duplicates:
        shown = "; ".join(
            f"{rid!r} at {_places(rows, place)}" for rid, rows in list(duplicates.items())[:3]
        )
        more = f" (and {len(duplicates) - 3} more ids)" if len(duplicates) > 3 else ""
        raise ResponsesError(
            f"duplicate ids in column {id_col!r}: {shown}{more}; ids must be unique",
            path=path,
        )

    attr_values = {c: frame[c].tolist() for c in attribute_columns}
    responses: list[Response] = []
    empty: list[int] = []
    long_count = 0
    for i, (n, rid, text) in enumerate(zip(numbers, raw_ids, texts, strict=True)):
        if text is None or not text.strip():
            empty.append(n)
            continue
        if len(text) > LONG_TEXT_CHARS:
            long_count += 1
        attrs = {c: _as_json_value(attr_values[c][i]) for c in attribute_columns}
        assert rid is not None
        responses.append(Response(rid, text, attrs))
    if empty:
        messages.append(
            f"skipped {len(empty)} response(s) with an empty text ({_places(empty, place)})"
        )
    if not responses:
        raise ResponsesError(f"every text in column {text_col!r} is empty", path=path)
    if long_count:
        messages.append(
            f"{long_count} text(s) longer than {LONG_TEXT_CHARS:,} characters kept whole; "
            "the model reads them cut from the middle and their scores are flagged truncated"
        )
    return ResponseTable(
        responses=tuple(responses),
        path=path,
        id_column=None if id_col is None or (is_txt and id_column is None) else id_col,
        text_column=text_col,
        attribute_columns=attribute_columns,
        messages=tuple(messages),
        skipped_empty=len(empty),
    )


def _longest_text_column(frame: pd.DataFrame, *, exclude: str | None) -> str | None:
    best: str | None = None
    best_len = 0.0
    for column in frame.columns:
        if column == exclude:
            continue
        values = [_as_text(v) for v in frame[column].tolist()]
        strings = [v for v in values if v is not None]
        if not strings:
            continue
        # A column of numbers is an attribute, not the text.
        if all(_looks_numeric(v) for v in strings):
            continue
        mean = sum(len(v) for v in strings) / len(values)
        if mean > best_len:
            best, best_len = str(column), mean
    return best


def _looks_numeric(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


__all__ = ["Response", "ResponseTable", "decode_text", "read_responses"]
