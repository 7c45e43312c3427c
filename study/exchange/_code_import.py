"""Import existing decisions (a coder's codes) from a file keyed by response id.

The file is any format :func:`study.intake.tables.read_table` reads (CSV, TSV, XLSX, JSONL,
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

Unknown response ids, and unknown code names in a codes list, are errors naming them and
their rows (``skip_unknown`` imports the rest and lists what was skipped). A column is
different: a file keyed by response id often carries the text and other columns beside
the codes (an exported wide sheet does), so a column that names no code is ignored and
listed in a message, with the code it may be a misspelling of.

Ids and code names read back as written by the exporter: the ``'`` it puts before a text
beginning with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (formula safety) is
taken back (:func:`study.intake.cells.unguard_formula`). Wholly empty rows are skipped and
counted (:attr:`CodesFile.skipped_empty_rows`).

The import is one transaction: all decisions or none. Decisions are stored as the coder's (source
``human``); a pair the coder already decided differently is a conflict refused unless
``replace``.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING

from codebooks.errors import Remedy
from codebooks.model import Code, Codebook, Scale
from study.errors import ResponsesError
from study.intake.cells import cell_text, unguard_formula
from study.intake.columns import (
    ID_NAMES,
    LIST_NAMES,
    MAX_LISTED,
    NAME_ID,
    detect_column,
    format_places,
    pick_column,
)
from study.intake.tables import read_table

if TYPE_CHECKING:
    from study.store import Study

#: Import what is known and list the rest, when ids or code names are not the study's.
SKIP_UNKNOWN = Remedy("retry", "skip the unknown ones", {"skip_unknown": True})

log = logging.getLogger(__name__)


_TRUE = {"yes", "y", "true", "x", "applies"}
_FALSE = {"no", "n", "false", "does not apply"}


@dataclass(frozen=True)
class CodesFile:
    """Decisions read from a file, not yet stored.

    Attributes:
        path: The file.
        layout: ``matrix`` or ``list``.
        items: ``(response_id, code_id, value)`` in file order.
        responses: Rows that carried at least one decision.
        messages: What was done (ignored columns, flags, blanks, skipped unknowns,
            skipped empty rows), for the user to read.
        skipped_empty_rows: How many wholly empty rows were left out.
        columns: The columns the decisions were read from (recorded with the import:
            blind coding hides them where the responses carry them too).
    """

    path: Path
    layout: str
    items: tuple[tuple[str, str, int], ...]
    responses: int
    messages: tuple[str, ...]
    skipped_empty_rows: int = 0
    columns: tuple[str, ...] = ()


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
        encoding, sheet: As for :func:`study.intake.responses.read_responses`.
        skip_unknown: Skip unknown ids and code names (listed in ``messages``) instead
            of failing.

    Raises:
        ResponsesError: naming the file and the place of the first problem.
    """
    p = Path(path)
    if not separator:
        raise ResponsesError(
            "the separator of a codes list cannot be empty",
            path=p,
            remedy=Remedy("retry", "give a separator", {"separator": ";"}),
        )
    table = read_table(p, encoding=encoding, sheet=sheet)
    frame, numbers, place = table.frame, list(table.numbers), table.place
    columns = [str(c) for c in frame.columns]
    id_col = pick_column(columns, id_column, what="id", option="id_column", path=p)
    if id_col is None:
        id_col = detect_column(columns, ID_NAMES, exclude=None)
    if id_col is None:
        raise ResponsesError(
            "found no response id column; name it (columns are: "
            + ", ".join(repr(c) for c in columns[:12])
            + ")",
            path=p,
            remedy=NAME_ID,
        )
    codable = codebook.codable
    by_key: dict[str, Code] = {}
    for code in codable:
        by_key.setdefault(code.name.strip().casefold(), code)
        by_key.setdefault(code.id.strip().casefold(), code)
    categories = {
        key.strip().casefold(): c for c in codebook.codes if not c.codable for key in (c.name, c.id)
    }

    ids = _response_ids(frame[id_col].tolist(), known_ids)
    blank = [n for n, v in zip(numbers, ids, strict=True) if v is None]
    if blank:
        raise ResponsesError(
            f"blank response id in column {id_col!r}", path=p, where=format_places(blank, place)
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
    if table.empty_rows:
        messages.append(
            f"skipped {len(table.empty_rows)} empty row(s) "
            f"({format_places(table.empty_rows, place)})"
        )
        log.info("%s: %s", p, messages[-1])
    matrix: dict[str, Code] = {}
    for column in columns:
        named = _lookup(by_key, column) if column != id_col else None
        if named is not None:
            matrix[column] = named
    if codes_column is not None:
        list_col = pick_column(columns, codes_column, what="codes", option="codes_column", path=p)
        matrix = {}
    elif matrix:
        list_col = None
    else:
        list_col = detect_column(columns, LIST_NAMES, exclude=id_col)
        if list_col is None:
            raise ResponsesError(
                "found no code columns: name columns after codes (one per code, e.g. "
                f"{codable[0].name!r}), or name the column that lists "
                f"{separator!r}-separated code names",
                path=p,
                remedy=Remedy(
                    "retry", "name the column that lists the codes", {"codes_column": "NAME"}
                ),
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
            text = _clean(cell_text(cell))
            if text is None:
                blank_rows += 1
                continue
            names = [part.strip() for part in text.split(separator) if part.strip()]
            listed: dict[str, Code] = {}
            # The codes an unknown name probably meant ('flag_anamolies'): left undecided
            # in this row, never "does not apply" for a misspelling.
            meant: set[str] = set()
            for name in names:
                found = _lookup(by_key, name)
                if found is None:
                    likely = _likely_code(by_key, name)
                    if likely is not None:
                        meant.add(likely.id)
                    category = _lookup(categories, name)
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
                if code.id in meant and code.id not in listed:
                    continue
                scale = codebook.scale_for(code)
                value = scale.options[-1].value if code.id in listed else scale.lowest.value
                items.append((rid, code.id, value))
        if blank_rows:
            messages.append(f"{blank_rows} row(s) with no codes listed were left uncoded")
    else:
        layout = "matrix"
        ignored = [c for c in columns if c != id_col and c not in matrix]
        if ignored:
            unmatched = [c.name for c in codable if c not in matrix.values()]
            messages.append(
                f"columns that name no code were ignored: {_names(ignored)}"
                + _close_hints(ignored, unmatched)
            )
        cells = {c: [_clean(cell_text(v)) for v in frame[c].tolist()] for c in matrix}
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
            f"{name!r} ({format_places(rows, place)}{_did_you_mean(by_key, name)})"
            for name, rows in list(unknown_codes.items())[:MAX_LISTED]
        )
        more = (
            f" and {len(unknown_codes) - MAX_LISTED} more"
            if len(unknown_codes) > MAX_LISTED
            else ""
        )
        text = f"{len(unknown_codes)} unknown code name(s): {shown}{more}"
        if not skip_unknown:
            raise ResponsesError(
                f"{text}; check the spelling against the codebook, or skip the unknown ones",
                path=p,
                remedy=SKIP_UNKNOWN,
            )
        messages.append(f"skipped {text}")
    if unknown_ids:
        shown = ", ".join(
            f"{rid!r} ({place} {n})" for rid, n in list(unknown_ids.items())[:MAX_LISTED]
        )
        more = f" and {len(unknown_ids) - MAX_LISTED} more" if len(unknown_ids) > MAX_LISTED else ""
        text = f"{len(unknown_ids)} response id(s) not in the study: {shown}{more}"
        if not skip_unknown:
            raise ResponsesError(
                f"{text}; nothing imported (skipping the unknown ones imports the rest)",
                path=p,
                remedy=SKIP_UNKNOWN,
            )
        messages.append(f"skipped {text}")
    if not items:
        raise ResponsesError("the file holds no decisions to import", path=p)
    return CodesFile(
        path=p,
        layout=layout,
        items=tuple(items),
        responses=coded_rows,
        messages=tuple(messages),
        skipped_empty_rows=len(table.empty_rows),
        columns=(list_col,) if list_col is not None else tuple(matrix),
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
    needless = [item for item in codes.items if study.index.needless(*item)]
    if needless:
        kept = tuple(item for item in codes.items if not study.index.needless(*item))
        codes = dataclasses.replace(
            codes,
            items=kept,
            messages=(
                *codes.messages,
                f"{len(needless)} 'does not apply' value(s) on codes that do not apply to the "
                "response's question were left out (the study has no such pairs)",
            ),
        )
    result = study.decisions.import_decisions(
        codes.items,
        coder=coder,
        replace=replace,
        detail={"file": str(codes.path), "layout": codes.layout, "columns": list(codes.columns)},
    )
    return ImportReport(
        codes_file=codes, added=result.added, changed=result.changed, unchanged=result.unchanged
    )


def _clean(text: str | None) -> str | None:
    if text is None:
        return None
    text = text.strip()
    return text or None


def _response_ids(values: list[object], known_ids: set[str] | None) -> list[str | None]:
    """A column's cells as response ids, with the exporter's formula guard taken back.

    ``'@alice`` is ``@alice`` when the study knows ``@alice`` and not ``'@alice`` (or, with
    no study to ask, always).
    """
    ids: list[str | None] = []
    for value in values:
        rid = _clean(cell_text(value))
        if rid is not None and (known_ids is None or rid not in known_ids):
            bare = unguard_formula(rid)
            if known_ids is None or bare in known_ids:
                rid = bare
        ids.append(rid)
    return ids


def _lookup(by_key: dict[str, Code], name: str) -> Code | None:
    """The code named ``name`` (any case), also behind the exporter's formula guard."""
    key = name.strip().casefold()
    found = by_key.get(key)
    if found is None:
        found = by_key.get(unguard_formula(name.strip()).casefold())
    return found


def _likely_code(by_key: dict[str, Code], name: str) -> Code | None:
    """The code an unknown name is most likely a misspelling of, if one is close."""
    close = get_close_matches(name.strip().casefold(), list(by_key), n=1, cutoff=0.8)
    return by_key[close[0]] if close else None


def _did_you_mean(by_key: dict[str, Code], name: str) -> str:
    """``"; did you mean 'flag_anomalies'?"`` for a misspelt code name, else ""."""
    likely = _likely_code(by_key, name)
    return f"; did you mean {likely.name!r}?" if likely is not None else ""


def _close_hints(ignored: list[str], names: list[str]) -> str:
    """``(did you mean 'Workload' for 'Workloa'?)`` for ignored columns close to a code name."""
    hints = []
    for column in ignored:
        close = get_close_matches(column, names, n=1, cutoff=0.8)
        if close:
            hints.append(f"{close[0]!r} for {column!r}")
    return f" (did you mean {', '.join(hints[:3])}?)" if hints else ""


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
    value = _plain_value(text, scale, as_flags=as_flags)
    bare = unguard_formula(text)
    if value is None and bare != text:
        value = _plain_value(bare, scale, as_flags=as_flags)
    return value


def _plain_value(text: str, scale: Scale, *, as_flags: bool) -> int | None:
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
