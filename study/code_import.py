"""Import existing decisions (a coder's codes) from a file keyed by response id.

The file is any format :func:`study.responses.read_frame` reads (CSV, TSV, XLSX, JSONL,
JSON, Parquet), with an id column (given or detected as for responses) and one of two
layouts:

**Matrix**: one column per code, named by the code's name or id (case-insensitive).
A cell holds a value of the code's scale, an option label, or yes/no/true/false/x; a
blank cell means "not coded". When every value in the file is 0 or 1 and a code's scale
has no 0 (e.g. 1-5), the values are read as flags: 0 = the scale's lowest value (does
not apply), 1 = its highest (applies). Columns that name no code are listed in a
message, never silently dropped.

**List**: one column (``codes_column``, or detected: ``codes``, ``labels``,
``categories`` ...) of code names or ids separated by ``;``. Every listed code gets the
highest value of its scale (applies), every other codable code the lowest (does not
apply); a blank cell means the response was not coded.

Unknown response ids and unknown code names are errors naming them and their rows
(``skip_unknown`` imports the rest and lists what was skipped). The import is one
transaction: all decisions or none. Decisions are stored as the coder's (source
``human``); a pair the coder already decided differently is a conflict refused unless
``replace``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from codebooks.model import Code, Codebook, Scale
from study.errors import ResponsesError
from study.responses import ID_NAMES, _as_text, _detect, _pick_column, _places, read_frame

if TYPE_CHECKING:
    from study.store import Study

#: Normalised names of a list layout's column.
LIST_NAMES = ("codes", "code", "labels", "label", "categories", "category", "themes", "tags")

_TRUE = {"yes", "y", "true", "x", "applies"}
_FALSE = {"no", "n", "false", "does not apply"}
_MAX_LISTED = 5


@dataclass(frozen=True)
class CodesFile:
    """Decisions read from a file, not yet stored.

    Attributes:
        path: The file.
        layout: ``matrix`` or ``list``.
        items: ``(response_id, code_id, value)`` in file order.
        responses: Rows that carried at least one decision.
        messages: What was done (ignored columns, flags, blanks, skipped unknowns).
    """

    path: Path
    layout: str
    items: tuple[tuple[str, str, int], ...]
    responses: int
    messages: tuple[str, ...]


@dataclass(frozen=True)
class ImportReport:
    """What :func:`import_codes` did."""

    codes_file: CodesFile
    added: int
    changed: int
    unchanged: int


def read_codes(
    path: str | Path,
    codebook: Codebook,
    *,
    known_ids: set[str] | None = None,
    id_column: str | None = None,
    codes_column: str | None = None,
    separator: str = ";",
    encoding: str | None = None,
    sheet: str | int | None = None,
    skip_unknown: bool = False,
) -> CodesFile:
    """Read a codes file against ``codebook`` (layouts in the module docstring).

    Args:
        path: The file.
        codebook: The codes that may be named.
        known_ids: Response ids that exist; others are unknown (not checked if ``None``).
        id_column: The response id column (detected when ``None``).
        codes_column: Force the list layout with this column.
        separator: Separator of the list layout.
        encoding, sheet: As for :func:`study.responses.read_responses`.
        skip_unknown: Skip unknown ids and code names (listed in ``messages``) instead
            of failing.

    Raises:
        ResponsesError: naming the file and the place of the first problem.
    """
    p = Path(path)
    frame, numbers, place = read_frame(p, encoding=encoding, sheet=sheet)
    columns = [str(c) for c in frame.columns]
    id_col = _pick_column(columns, id_column, what="id", flag="--id-column", path=p)
    if id_col is None:
        id_col = _detect(columns, ID_NAMES, exclude=None)
    if id_col is None:
        raise ResponsesError(
            "found no response id column; name it with --id-column (columns are: "
            + ", ".join(repr(c) for c in columns[:12])
            + ")",
            path=p,
        )
    codable = codebook.codable
    by_key: dict[str, Code] = {}
    for code in codable:
        by_key.setdefault(code.name.strip().casefold(), code)
        by_key.setdefault(code.id.strip().casefold(), code)
    categories = {
        key.strip().casefold(): c for c in codebook.codes if not c.codable for key in (c.name, c.id)
    }

    ids: list[str | None] = [_clean(_as_text(v)) for v in frame[id_col].tolist()]
    blank = [n for n, v in zip(numbers, ids, strict=True) if v is None]
    if blank:
        raise ResponsesError(
            f"blank response id in column {id_col!r}", path=p, where=_places(blank, place)
        )
    seen: dict[str, int] = {}
    for n, rid in zip(numbers, ids, strict=True):
        assert rid is not None
        if rid in seen:
            raise ResponsesError(
                f"response id {rid!r} appears twice ({place}s {seen[rid]} and {n}); "
                "give each response one row",
                path=p,
            )
        seen[rid] = n

    messages: list[str] = []
    matrix = {
        c: by_key[c.strip().casefold()]
        for c in columns
        if c != id_col and c.strip().casefold() in by_key
    }
    if codes_column is not None:
        list_col = _pick_column(columns, codes_column, what="codes", flag="--codes-column", path=p)
        matrix = {}
    elif matrix:
        list_col = None
    else:
        list_col = _detect(columns, LIST_NAMES, exclude=id_col)
        if list_col is None:
            raise ResponsesError(
                "found no code columns: name columns after codes (one per code, e.g. "
                f"{codable[0].name!r}), or give --codes-column for a column of "
                f"{separator!r}-separated code names",
                path=p,
            )
    items: list[tuple[str, str, int]] = []
    unknown_ids: dict[str, int] = {}
    unknown_codes: dict[str, list[int]] = {}
    coded_rows = 0
    if list_col is not None:
        layout = "list"
        others = [c for c in columns if c not in (id_col, list_col)]
        if others:
            messages.append(
                f"read codes from column {list_col!r}; ignored columns: {_names(others)}"
            )
        blank_rows = 0
        for n, rid, cell in zip(numbers, ids, frame[list_col].tolist(), strict=True):
            assert rid is not None
            text = _clean(_as_text(cell))
            if text is None:
                blank_rows += 1
                continue
            names = [part.strip() for part in text.split(separator) if part.strip()]
            listed: dict[str, Code] = {}
            for name in names:
                found = by_key.get(name.casefold())
                if found is None:
                    category = categories.get(name.casefold())
                    if category is not None:
                        raise ResponsesError(
                            f"{category.name!r} is a category that only groups codes; it "
                            "cannot be assigned",
                            path=p,
                            where=f"{place} {n}",
                        )
                    unknown_codes.setdefault(name, []).append(n)
                    continue
                listed[found.id] = found
            if known_ids is not None and rid not in known_ids:
                unknown_ids.setdefault(rid, n)
                continue
            coded_rows += 1
            for code in codable:
                scale = codebook.scale_for(code)
                value = scale.options[-1].value if code.id in listed else scale.lowest.value
                items.append((rid, code.id, value))
        if blank_rows:
            messages.append(f"{blank_rows} row(s) with no codes listed were left uncoded")
    else:
        layout = "matrix"
        ignored = [c for c in columns if c != id_col and c not in matrix]
        if ignored:
            messages.append(f"columns that name no code were ignored: {_names(ignored)}")
        cells = {c: [_clean(_as_text(v)) for v in frame[c].tolist()] for c in matrix}
        flags = _all_flags(cells)
        flagged = []
        for column, code in matrix.items():
            scale = codebook.scale_for(code)
            as_flags = flags and 0 not in scale.values
            if as_flags:
                flagged.append(code.name)
            for n, rid, text in zip(numbers, ids, cells[column], strict=True):
                assert rid is not None
                if text is None:
                    continue
                parsed = _value(text, scale, as_flags=as_flags)
                if parsed is None:
                    raise ResponsesError(
                        f"{text!r} is not a value of scale {scale.name} {list(scale.values)} "
                        f"of code {code.name!r}; use a value, a label, or leave it blank",
                        path=p,
                        where=f"{place} {n}, column {column!r}",
                    )
                if known_ids is not None and rid not in known_ids:
                    unknown_ids.setdefault(rid, n)
                    continue
                items.append((rid, code.id, parsed))
        if flagged:
            messages.append(
                "every value is 0 or 1: read as does not apply / applies (the lowest / highest "
                f"value of the scale) for {_names(flagged)}"
            )
        coded_rows = len({rid for rid, _, _ in items})
    if unknown_codes:
        shown = "; ".join(
            f"{name!r} ({_places(rows, place)})"
            for name, rows in list(unknown_codes.items())[:_MAX_LISTED]
        )
        more = (
            f" and {len(unknown_codes) - _MAX_LISTED} more"
            if len(unknown_codes) > _MAX_LISTED
            else ""
        )
        text = f"{len(unknown_codes)} unknown code name(s): {shown}{more}"
        if not skip_unknown:
            raise ResponsesError(
                f"{text}; check the spelling against the codebook, or --skip-unknown", path=p
            )
        messages.append(f"skipped {text}")
    if unknown_ids:
        shown = ", ".join(
            f"{rid!r} ({place} {n})" for rid, n in list(unknown_ids.items())[:_MAX_LISTED]
        )
        more = (
            f" and {len(unknown_ids) - _MAX_LISTED} more" if len(unknown_ids) > _MAX_LISTED else ""
        )
        text = f"{len(unknown_ids)} response id(s) not in the study: {shown}{more}"
        if not skip_unknown:
            raise ResponsesError(
                f"{text}; nothing imported (--skip-unknown imports the rest)", path=p
            )
        messages.append(f"skipped {text}")
    if not items:
        raise ResponsesError("the file holds no decisions to import", path=p)
    return CodesFile(
        path=p, layout=layout, items=tuple(items), responses=coded_rows, messages=tuple(messages)
    )


def import_codes(
    study: Study,
    path: str | Path,
    *,
    coder: str,
    id_column: str | None = None,
    codes_column: str | None = None,
    separator: str = ";",
    encoding: str | None = None,
    sheet: str | int | None = None,
    replace: bool = False,
    skip_unknown: bool = False,
) -> ImportReport:
    """Read a codes file and store its decisions as ``coder``'s, all or none.

    Raises:
        ResponsesError: the file cannot be read or names unknown ids/codes.
        StudyError: conflicts with the coder's existing decisions (unless ``replace``).
    """
    codes = read_codes(
        path,
        study.codebook,
        known_ids=set(study.response_ids()),
        id_column=id_column,
        codes_column=codes_column,
        separator=separator,
        encoding=encoding,
        sheet=sheet,
        skip_unknown=skip_unknown,
    )
    result = study.import_decisions(
        codes.items,
        coder=coder,
        replace=replace,
        detail={"file": str(codes.path), "layout": codes.layout},
    )
    return ImportReport(
        codes_file=codes, added=result.added, changed=result.changed, unchanged=result.unchanged
    )


def _clean(text: str | None) -> str | None:
    if text is None:
        return None
    text = text.strip()
    return text or None


def _names(names: list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:8])
    return shown + (f" and {len(names) - 8} more" if len(names) > 8 else "")


_INTEGER = re.compile(r"^[+-]?\d+(\.0*)?$")


def _all_flags(cells: dict[str, list[str | None]]) -> bool:
    """Whether every numeric value in the code columns is 0 or 1 (and at least one is 0)."""
    values = {v for column in cells.values() for v in column if v is not None}
    numeric = {v for v in values if _INTEGER.match(v)}
    if not numeric or numeric != values:
        return False
    ints = {int(float(v)) for v in numeric}
    return ints <= {0, 1} and 0 in ints


def _value(text: str, scale: Scale, *, as_flags: bool) -> int | None:
    folded = text.casefold()
    if _INTEGER.match(text):
        number = int(float(text))
        if as_flags:
            return scale.options[-1].value if number == 1 else scale.lowest.value
        return number if number in scale.values else None
    for option in scale.options:
        if option.label.casefold() == folded:
            return option.value
    if folded in _TRUE:
        return scale.options[-1].value
    if folded in _FALSE:
        return scale.lowest.value
    return None
