"""Writing an export's DataFrame as CSV, XLSX, Parquet or JSONL, safely.

Every file goes through :func:`atomic_write` (the project's one writer,
:func:`codebooks.files.write_file`). In CSV, a text cell that a spreadsheet would run as
a formula is prefixed with ``'`` (:func:`neutralise`): a CSV has no types, and Excel
runs ``=``, ``+``, ``-`` and ``@`` at the start of a cell. XLSX and Parquet cells have a
type: their texts are stored exactly as they are, as text (never as a formula).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from codebooks.errors import Remedy
from codebooks.files import write_file
from study.errors import StudyError
from study.intake.cells import neutralise

#: Export format of each file suffix.
FORMATS = {
    ".csv": "csv",
    ".xlsx": "xlsx",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".sav": "sav",
    ".dta": "dta",
}

#: Longest text an XLSX cell holds.
XLSX_CELL_LIMIT = 32_767


def atomic_write(
    path: str | Path, write: Callable[[Path], object], *, protect: Iterable[str | Path] = ()
) -> Path:
    """Call ``write(tmp)`` and put what it wrote at ``path``, by the project's one writer.

    See :func:`codebooks.files.write_file`: atomic for a regular file (the temporary
    keeps the suffix), straight into a device or pipe, never over a folder, a study or a
    file in ``protect``. On any failure ``path`` is left as it was.

    Raises:
        StudyError: the target is refused, its folder is missing, or writing failed.
    """
    return write_file(path, write, protect=protect, error=StudyError)


def _json_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Any list cells left as JSON text, for the formats that hold only scalars."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype != object:
            continue
        values = out[column].tolist()
        if any(isinstance(v, list) for v in values):
            out[column] = pd.Series(
                [json.dumps(v) if isinstance(v, list) else v for v in values],
                index=out.index,
                dtype=object,
            )
    return out


def _arrow_table(frame: pd.DataFrame) -> Any:
    """A pyarrow table; an object column of mixed types (attributes) becomes text."""
    import pyarrow as pa

    columns = {}
    for column in frame.columns:
        series = frame[column]
        try:
            columns[str(column)] = pa.Array.from_pandas(series)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            columns[str(column)] = pa.array(
                [None if v is None or v is pd.NA else str(v) for v in series.tolist()],
                type=pa.string(),
            )
    return pa.table(columns)


def _neutralised(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if series.dtype != object and not pd.api.types.is_string_dtype(series):
            continue
        # Most columns repeat a few values (code names, coders): check each value once.
        risky = {
            v: neutralise(v)
            for v in pd.unique(series.dropna())
            if isinstance(v, str) and neutralise(v) is not v
        }
        if risky:
            out[column] = pd.Series(
                [risky.get(v, v) if isinstance(v, str) else v for v in series.tolist()],
                index=out.index,
                dtype=object,
            )
    out.columns = pd.Index([neutralise(str(c)) for c in out.columns])
    return out


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """UTF-8 with a BOM, every text quoted (pyarrow's writer: 5x pandas' speed)."""
    import pyarrow.csv as pa_csv

    table = _arrow_table(_neutralised(_json_cells(frame)))
    with open(path, "wb") as handle:
        handle.write(b"\xef\xbb\xbf")
        pa_csv.write_csv(table, handle, pa_csv.WriteOptions(quoting_style="needed"))


def _xlsx_cell(sheet: Any, value: Any) -> Any:
    """A value as an XLSX cell holds it: a text is stored as text, exactly (never run as
    a formula, and never changed by a guard: an XLSX cell has a type)."""
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if isinstance(value, str):
        value = ILLEGAL_CHARACTERS_RE.sub("\ufffd", value)
        if len(value) > XLSX_CELL_LIMIT:
            value = value[: XLSX_CELL_LIMIT - 15] + " …[truncated]"
        if value.startswith("="):  # openpyxl would store it as a formula
            cell = WriteOnlyCell(sheet, value=value)
            cell.data_type = "s"
            return cell
    return value


def _exact_float(sheet: Any, value: Any) -> Any:
    """A float as a number cell holding its shortest exact digits.

    openpyxl writes floats with 16 significant digits, a unit in the last place off for
    about a quarter of them: a confidence exactly at a threshold (0.75) would read back
    below it, and a screen recomputed from the export would differ from the study's.
    """
    if not isinstance(value, float) or isinstance(value, bool):
        return value
    from openpyxl.cell import WriteOnlyCell

    cell = WriteOnlyCell(sheet, value=repr(value))
    cell.data_type = "n"
    return cell


def write_xlsx(
    frame: pd.DataFrame, path: Path, *, info: dict[str, str], sheet: str = "data"
) -> None:
    from openpyxl import Workbook

    data = _json_cells(frame)
    book = Workbook(write_only=True)
    rows = book.create_sheet(sheet)
    rows.append([_xlsx_cell(rows, str(c)) for c in data.columns])
    for record in data.itertuples(index=False, name=None):
        rows.append([_exact_float(rows, c) for c in (_xlsx_cell(rows, v) for v in record)])
    prov = book.create_sheet("provenance")
    prov.append(["field", "value"])
    for key, value in info.items():
        prov.append([_xlsx_cell(prov, key), _xlsx_cell(prov, value)])
    book.save(path)


def write_parquet(frame: pd.DataFrame, path: Path, *, info: dict[str, str]) -> None:
    import pyarrow.parquet as pq

    table = _arrow_table(frame)
    metadata = dict(table.schema.metadata or {})
    metadata[b"codecurve.provenance"] = json.dumps(info, ensure_ascii=False).encode()
    pq.write_table(table.replace_schema_metadata(metadata), path)


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_jsonl(frame: pd.DataFrame, path: Path) -> None:
    columns = [str(c) for c in frame.columns]
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for record in frame.itertuples(index=False, name=None):
            row = {c: _plain(v) for c, v in zip(columns, record, strict=True)}
            handle.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")


#: CSV on the Web's metadata vocabulary (W3C), which the CSV's metadata file follows.
CSVW_CONTEXT = "http://www.w3.org/ns/csvw"


def metadata_path(path: Path) -> Path:
    """Where the metadata of a CSV or JSONL export goes: beside it, named as CSV on the
    Web (W3C) locates a table's metadata: ``coded.csv`` -> ``coded.csv-metadata.json``."""
    return path.with_name(f"{path.name}-metadata.json")


def write_metadata(
    frame: pd.DataFrame,
    path: Path,
    *,
    table: str,
    format: str,
    info: dict[str, str],
    variables: list[dict[str, Any]] | None = None,
) -> None:
    """The export's provenance (what the XLSX sheet and the Parquet metadata hold) as a
    JSON file: for CSV, a CSV on the Web table description (its URL, its columns in
    order) with the provenance under ``dc:provenance``; for JSONL the same without the
    CSVW context and columns; for SPSS and Stata files also ``variables``, the codebook
    of their variables (name, label, type, value labels)."""
    doc: dict[str, Any] = {}
    if format == "csv":
        doc["@context"] = CSVW_CONTEXT
    doc |= {
        "url": table,
        "dc:title": f"codecurve export of {info.get('study', '')}".strip(),
        "dc:created": info.get("exported at", ""),
        "dc:provenance": info,
    }
    if format == "csv":
        doc["tableSchema"] = {"columns": [{"titles": str(c)} for c in frame.columns]}
    if variables is not None:
        doc["variables"] = variables
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(json.dumps(doc, ensure_ascii=False, indent=2) + "\n")


def export_format(path: Path, format: str | None) -> str:
    if format is not None:
        fmt = format.lower().lstrip(".")
        if fmt not in set(FORMATS.values()):
            raise StudyError(
                f"unknown export format {format!r}; use one of "
                f"{', '.join(sorted(set(FORMATS.values())))}"
            )
        return fmt
    fmt_by_suffix = FORMATS.get(path.suffix.lower())
    if fmt_by_suffix is None:
        raise StudyError(
            f"cannot tell the format from {path.suffix or 'no suffix'!r}; use a suffix "
            f"({', '.join(FORMATS)}) or name the format",
            path=path,
            remedy=Remedy("retry", "name the format", {"format": "FORMAT"}),
        )
    return fmt_by_suffix


def read_export(path: str | Path) -> pd.DataFrame:
    """Read back an export written by :func:`export_study` (for checks and tests)."""
    p = Path(path)
    fmt = export_format(p, None)
    if fmt == "csv":
        return pd.read_csv(p, encoding="utf-8-sig", dtype={"response_id": str})
    if fmt == "xlsx":
        return pd.read_excel(p, sheet_name=0, dtype={"response_id": str})
    if fmt == "parquet":
        return pd.read_parquet(p)
    if fmt in ("sav", "dta"):
        import pyreadstat

        reader = pyreadstat.read_sav if fmt == "sav" else pyreadstat.read_dta
        frame, meta = reader(str(p))
        return frame.rename(columns=dict(zip(meta.column_names, meta.column_labels, strict=True)))
    # precise_float: pandas' fast parser can be a unit in the last place off.
    return pd.read_json(p, lines=True, dtype={"response_id": str}, precise_float=True)
