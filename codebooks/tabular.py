"""A codebook as a table (CSV): one row per code, as a spreadsheet would keep it.

Columns (a header row names them, in any order, any case)::

    name, definition, inclusion, exclusion, examples, parent     the usual six
    id, codable, color, scale, group                             optional

``examples`` holds several examples separated by ``;`` or, when one of them contains a
``;``, by line breaks. ``parent`` names the parent code by name or id. ``codable`` is
true/false (yes/no, 1/0; empty means true). ``scale`` is ``1-5``, ``1-9`` or ``binary``.
A few other spellings of the headers are understood (``code``, ``description``,
``include``, ``exclude``, ``colour``...). The delimiter is ``,``, ``;`` or a tab, read
from the header line. The file is UTF-8, with or without a byte-order mark.

``group`` (also read from headers such as ``category group`` or ``major_category_v7``)
names a grouping category for the row's code; a group that is not itself a code becomes
a category (not codable) of its own, so a spreadsheet with a "major category" column
reads as a two-level codebook. ``category`` is read as the code's name. Other columns
(counts, notes) are ignored with a logged warning, unless their header is close to a
known one (``defintion``), which is an error naming the column it resembles.

A table has no place for the codebook's name (the file name is used), question,
description or sets: save as YAML or JSON to keep those.

Cells that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``, ``@``)
are written with a leading apostrophe, which reading takes off again.
"""

from __future__ import annotations

import csv
import difflib
import io
import logging
import re
from pathlib import Path
from typing import Any

from codebooks.errors import CodebookError
from codebooks.files import read_text
from codebooks.mapping import codebook_from_mapping, slugify
from codebooks.model import LIKERT_5, SCALES, Codebook

logger = logging.getLogger(__name__)

COLUMNS = ("name", "definition", "inclusion", "exclusion", "examples", "parent")
OPTIONAL_COLUMNS = ("id", "codable", "color", "scale", "group")
_GROUP_HEADER = re.compile(r"^(major |parent )?(category |code )?group\b|^major category\b")

_ALIASES = {
    "code": "name",
    "category": "name",
    "code name": "name",
    "description": "definition",
    "include": "inclusion",
    "inclusion criteria": "inclusion",
    "exclude": "exclusion",
    "exclusion criteria": "exclusion",
    "example": "examples",
    "parent code": "parent",
    "colour": "color",
    "is codable": "codable",
}
_TRUE = {"", "true", "yes", "y", "1"}
_FALSE = {"false", "no", "n", "0"}
_FORMULA_START = tuple("=+-@\t\r")


def read_csv(path: str | Path) -> Codebook:
    """Read a CSV codebook (layout above)."""
    text = read_text(path)
    if not text.strip():
        raise CodebookError("the file is empty", path=path)
    header_line = text.split("\n", 1)[0]
    delimiter = max((",", ";", "\t"), key=header_line.count)
    # strict: an unclosed quote is an error, not the rest of the file in one cell
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise CodebookError(
            f"malformed CSV: {exc}", path=path, where=f"line {reader.line_num}"
        ) from None
    columns = _columns(rows[0], path=path)
    codes: list[dict[str, Any]] = []
    places: list[str] = []
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        place = f"row {number}"
        if len(row) > len(columns) and any(cell.strip() for cell in row[len(columns) :]):
            raise CodebookError(
                f"{len(row)} cells but the header names {len(columns)} columns",
                path=path,
                where=place,
            )
        raw = {
            column: cell.replace("\r\n", "\n").replace("\r", "\n")
            for column, cell in zip(columns, row, strict=False)
            if column is not None
        }
        cells = {column: _unguard(cell.strip()) for column, cell in raw.items()}
        # One example holding a ";" is written with a closing line break: decide the
        # separator before stripping.
        lines = "\n" in raw.get("examples", "")
        codes.append(_code_mapping(cells, lines, path=path, where=place))
        places.append(place)
    if not codes:
        raise CodebookError("the table has a header but no codes", path=path)
    categories = _group_categories(codes)
    codes = [*categories, *codes]
    places = [f"group {c['name']!r}" for c in categories] + places
    data: dict[str, Any] = {"name": Path(path).stem, "codes": codes}
    # A scale shared by every code is the codebook's (this is how one is written).
    scales = {code.get("scale") for code in codes}
    if len(scales) == 1 and scales <= set(SCALES):
        data["scale"] = scales.pop()
        for code in codes:
            del code["scale"]
    return codebook_from_mapping(data, path=path, code_places=places)


def _columns(header: list[str], *, path: str | Path) -> list[str | None]:
    """The column each header cell names; ``None`` for an unnamed column."""
    columns: list[str | None] = []
    for i, cell in enumerate(header):
        key = " ".join(cell.replace("_", " ").replace("-", " ").split()).casefold()
        key = _ALIASES.get(key, key)
        if _GROUP_HEADER.match(key):
            key = "group"
        if not key:
            columns.append(None)
            continue
        if key not in COLUMNS and key not in OPTIONAL_COLUMNS:
            known = [*COLUMNS, *OPTIONAL_COLUMNS, *_ALIASES]
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
            if close:
                raise CodebookError(
                    f"unknown column {cell.strip()!r} (did you mean {close[0]!r}?); the "
                    f"columns are {', '.join(COLUMNS + OPTIONAL_COLUMNS)}",
                    path=path,
                    where=f"row 1, column {i + 1}",
                )
            logger.warning("%s: ignoring the column %r", path, cell.strip())
            columns.append(None)
            continue
        if key in columns:
            raise CodebookError(
                f"the column {key!r} appears twice", path=path, where=f"row 1, column {i + 1}"
            )
        columns.append(key)
    if "name" not in columns:
        raise CodebookError(
            "the header row needs a 'name' column (and usually definition, inclusion, "
            "exclusion, examples, parent)",
            path=path,
            where="row 1",
        )
    return columns


def _code_mapping(
    cells: dict[str, str], example_lines: bool, *, path: str | Path, where: str
) -> dict[str, Any]:
    code: dict[str, Any] = {
        key: cells[key]
        for key in ("name", "id", "definition", "inclusion", "exclusion")
        if cells.get(key)
    }
    examples = cells.get("examples", "")
    separator = "\n" if example_lines else ";"
    code["examples"] = [e.strip() for e in examples.split(separator) if e.strip()]
    for key in ("parent", "color", "scale", "group"):
        if cells.get(key):
            code[key] = cells[key]
    codable = cells.get("codable", "").casefold()
    if codable in _FALSE:
        code["codable"] = False
    elif codable not in _TRUE:
        raise CodebookError(
            f"codable must be true or false, not {cells['codable']!r}", path=path, where=where
        )
    return code


def _group_categories(codes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turn ``group`` cells into parents; return a new category for each group that is no code."""
    names = {str(c.get("name", "")).strip().casefold() for c in codes}
    categories: dict[str, dict[str, Any]] = {}
    for code in codes:
        group = code.pop("group", None)
        if group is None or code.get("parent"):
            continue
        code["parent"] = group
        folded = group.strip().casefold()
        if folded not in names and folded not in categories:
            categories[folded] = {"name": group, "codable": False, "examples": []}
    return list(categories.values())


def csv_bytes(codebook: Codebook) -> bytes:
    """The codebook as CSV (UTF-8 with a byte-order mark, which spreadsheets need).

    Raises:
        CodebookError: if a code uses a custom scale, which a table cannot hold.
    """
    scales = [codebook.scale_for(c) for c in codebook.codes]
    for code, scale in zip(codebook.codes, scales, strict=True):
        if SCALES.get(scale.name) != scale:
            raise CodebookError(
                f"code {code.name!r} uses the custom scale {scale.name!r}; a CSV codebook "
                f"holds only {', '.join(SCALES)}: save it as YAML or JSON"
            )
    with_ids = any(c.id != slugify(c.name) for c in codebook.codes)
    columns = list(COLUMNS)
    if with_ids:
        columns.insert(0, "id")
    if any(not c.codable for c in codebook.codes):
        columns.append("codable")
    if any(c.color for c in codebook.codes):
        columns.append("color")
    if any(s != LIKERT_5 for s in scales):
        columns.append("scale")
    by_id = {c.id: c for c in codebook.codes}
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(columns)
    for code, scale in zip(codebook.codes, scales, strict=True):
        parent = ""
        if code.parent is not None:
            # Ids when the table has them: a name may equal another code's id.
            parent = code.parent if with_ids else by_id[code.parent].name
        row = {
            "id": code.id,
            "name": code.name,
            "definition": code.definition,
            "inclusion": code.inclusion,
            "exclusion": code.exclusion,
            "examples": _join_examples(code.examples, code.name),
            "parent": parent,
            "codable": "true" if code.codable else "false",
            "color": code.color or "",
            "scale": scale.name,
        }
        writer.writerow([_guard(row[c]) for c in columns])
    return out.getvalue().encode("utf-8-sig")


def _join_examples(examples: tuple[str, ...], name: str) -> str:
    if not any(";" in e or "\n" in e for e in examples):
        return "; ".join(examples)
    if any("\n" in e for e in examples):
        logger.warning("code %r: line breaks inside examples become spaces in CSV", name)
        examples = tuple(" ".join(e.split("\n")) for e in examples)
    return "\n".join(examples) + ("\n" if len(examples) == 1 else "")


def _guard(cell: str) -> str:
    """Keep a spreadsheet from running a cell as a formula; reversible by :func:`_unguard`."""
    if cell.startswith(_FORMULA_START) or (cell[:1] == "'" and cell[1:2] in "=+-@\t\r'"):
        return "'" + cell
    return cell


def _unguard(cell: str) -> str:
    if cell[:1] == "'" and len(cell) > 1 and cell[1] in "=+-@\t\r'":
        return cell[1:]
    return cell
