"""Choose a table's id and text columns, and check its ids.

* ``id_column`` and ``text_column`` name the columns (exactly, else case-insensitively);
  otherwise the id column is the first whose name is a usual id name (:data:`ID_NAMES`)
  and the text column the first with a usual text name (:data:`TEXT_NAMES`) or else the
  column with the longest average text. Every other column is an attribute.
* **No id column**: the ids are the row (or line) numbers, and a message says so.
* **A blank id** in an id column is an error naming the rows: a generated id could clash
  with a real one, so the fix (fill them in, or drop the column) is left to the user.
* **Duplicate ids** are an error naming the first duplicates and their rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING

from codebooks.errors import Note, Remedy
from study.errors import ResponsesError
from study.intake.cells import cell_text

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

#: Normalised names of a list layout's column (codes imported from a file, and the
#: columns the blind coder must not see: :mod:`study.audit._code_columns`).
LIST_NAMES = ("codes", "code", "labels", "label", "categories", "category", "themes", "tags")

#: How many places (rows, ids) a message lists before "and N more".
MAX_LISTED = 5

#: Name the column of the response ids, or of their texts, instead of its guess.
NAME_ID = Remedy("retry", "name the id column", {"id_column": "NAME"})
NAME_TEXT = Remedy("retry", "name the text column", {"text_column": "NAME"})


@dataclass(frozen=True)
class Columns:
    """The columns chosen in a table of responses.

    Attributes:
        id: The id column; ``None`` when the ids are the row numbers.
        text: The text column.
        attributes: Every other column, in the file's order.
        messages: What was guessed (a text column by length, ids by row number).
    """

    id: str | None
    text: str
    attributes: tuple[str, ...]
    messages: tuple[str, ...] = ()


def normalise_name(name: str) -> str:
    """A column name as compared with :data:`ID_NAMES` (lower case, letters and digits)."""
    return re.sub(r"[^0-9a-z]", "", str(name).casefold())


def pick_column(
    columns: Sequence[str], wanted: str | None, *, what: str, option: str, path: Path
) -> str | None:
    """The column the user named (exactly, else ignoring case); ``None`` if none.

    ``option`` names the choice (``id_column``): the error's remedy is that option again,
    with the closest column or a placeholder.

    Raises:
        ResponsesError: no such column (with the closest name as a hint).
    """
    if wanted is None:
        return None
    if wanted in columns:
        return wanted
    folded = [c for c in columns if c.strip().casefold() == wanted.strip().casefold()]
    if len(folded) == 1:
        return folded[0]
    close = get_close_matches(wanted, list(columns), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    shown = ", ".join(repr(c) for c in columns[:12]) + (" ..." if len(columns) > 12 else "")
    raise ResponsesError(
        f"no {what} column {wanted!r}{hint} columns are: {shown}",
        path=path,
        remedy=Remedy("retry", f"name the {what} column", {option: close[0] if close else "NAME"}),
    )


def detect_column(
    columns: Sequence[str], names: Sequence[str], *, exclude: str | None
) -> str | None:
    """The first column (other than ``exclude``) whose normalised name is in ``names``.

    ``names`` are in order of preference; ``None`` when no column matches.
    """
    by_norm: dict[str, str] = {}
    for c in columns:
        if c != exclude:
            by_norm.setdefault(normalise_name(c), c)
    for name in names:
        if name in by_norm:
            return by_norm[name]
    return None


def format_places(numbers: Sequence[int], place: str) -> str:
    """``rows 2, 5, 9`` (the first :data:`MAX_LISTED`, then ``and N more``)."""
    shown = ", ".join(str(n) for n in numbers[:MAX_LISTED])
    more = f" and {len(numbers) - MAX_LISTED} more" if len(numbers) > MAX_LISTED else ""
    word = place if len(numbers) == 1 else place + "s"
    return f"{word} {shown}{more}"


def choose_columns(
    frame: pd.DataFrame,
    *,
    path: Path,
    place: str,
    id_column: str | None,
    text_column: str | None,
    numbered: bool = False,
) -> Columns:
    """The id, text and attribute columns of a table of responses (module docstring).

    Args:
        frame: The table.
        path: The file, for errors.
        place: How rows are numbered (``row``/``line``), for messages.
        id_column, text_column: The user's choice, or ``None`` to detect.
        numbered: The table has no ids of its own (a text file): unless ``id_column``
            is given, the ids are the row numbers without a message.

    Raises:
        ResponsesError: a named column is missing, no text column, one column for both.
    """
    columns = [str(c) for c in frame.columns]
    messages: list[str] = []
    id_col = pick_column(columns, id_column, what="id", option="id_column", path=path)
    text_col = pick_column(columns, text_column, what="text", option="text_column", path=path)
    if numbered and id_column is None:
        id_col = "line"
    if id_col is None and id_column is None:
        id_col = detect_column(columns, ID_NAMES, exclude=text_col)
    if text_col is None:
        text_col = detect_column(columns, TEXT_NAMES, exclude=id_col)
    if text_col is None:
        text_col = longest_text_column(frame, exclude=id_col)
        if text_col is None:
            raise ResponsesError(
                "found no text column; name it (columns are: "
                + ", ".join(repr(c) for c in columns[:12])
                + ")",
                path=path,
                remedy=NAME_TEXT,
            )
        messages.append(
            Note(
                f"took column {text_col!r} as the text (the longest texts); name the text "
                "column to choose another",
                remedy=NAME_TEXT,
            )
        )
    if id_col == text_col:
        raise ResponsesError(
            f"column {text_col!r} cannot be both the id and the text column", path=path
        )
    attributes = tuple(c for c in columns if c not in (id_col, text_col))
    if numbered and id_column is None:
        return Columns(id=None, text=text_col, attributes=attributes, messages=tuple(messages))
    if id_col is None:
        messages.append(
            Note(
                f"no id column found: the ids are the {place} numbers; name one to use it",
                remedy=NAME_ID,
            )
        )
    return Columns(id=id_col, text=text_col, attributes=attributes, messages=tuple(messages))


def unique_ids(
    values: Sequence[object], numbers: Sequence[int], *, column: str, place: str, path: Path
) -> list[str]:
    """A column's cells as ids: text, stripped, none blank, none twice.

    Raises:
        ResponsesError: blank ids or duplicate ids, naming their rows.
    """
    ids = [cell_text(v) for v in values]
    stripped = [None if v is None or not v.strip() else v.strip() for v in ids]
    blank = [n for n, v in zip(numbers, stripped, strict=True) if v is None]
    if blank:
        raise ResponsesError(
            f"blank id in column {column!r}; fill in every id, or drop the column to "
            f"number the responses by {place}",
            path=path,
            where=format_places(blank, place),
        )
    result = [v for v in stripped if v is not None]
    first_at: dict[str, int] = {}
    duplicates: dict[str, list[int]] = {}
    for n, rid in zip(numbers, result, strict=True):
        if rid in first_at:
            duplicates.setdefault(rid, [first_at[rid]]).append(n)
        else:
            first_at[rid] = n
    if duplicates:
        shown = "; ".join(
            f"{rid!r} at {format_places(rows, place)}" for rid, rows in list(duplicates.items())[:3]
        )
        more = f" (and {len(duplicates) - 3} more ids)" if len(duplicates) > 3 else ""
        raise ResponsesError(
            f"duplicate ids in column {column!r}: {shown}{more}; ids must be unique", path=path
        )
    return result


def longest_text_column(frame: pd.DataFrame, *, exclude: str | None) -> str | None:
    """The column (other than ``exclude``) of the longest texts on average; not numbers."""
    best: str | None = None
    best_len = 0.0
    for column in frame.columns:
        if column == exclude:
            continue
        values = [cell_text(v) for v in frame[column].tolist()]
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


__all__ = [
    "ID_NAMES",
    "MAX_LISTED",
    "NAME_ID",
    "NAME_TEXT",
    "TEXT_NAMES",
    "Columns",
    "choose_columns",
    "detect_column",
    "format_places",
    "longest_text_column",
    "normalise_name",
    "pick_column",
    "unique_ids",
]
