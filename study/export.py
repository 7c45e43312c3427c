"""Export the coded dataset (CSV, XLSX, Parquet, JSONL; long or wide) and the codebook.

Layouts:

``long``  one row per (response, code), responses in file order, codes in codebook order:
          ``response_id, code_id, code_name, scale``; the model's score under the
          configuration (``scored, model_pick, model_pick_label, model_applies,
          confidence, norm_entropy, entropy, expected, spread, on_scale_mass, off_scale,
          truncated, probs, surprisal``); the coder's decision (``decision,
          decision_label, decision_source, coder, decided_at, note``); and the final
          decision (``final, final_label, final_applies, final_from``).
``wide``  one row per response, in file order: ``response_id, text``, the response's other
          columns, ``codes_decided`` (codes with a coder's decision), then one 0/1 column
          per code named by the code (the final decision reduced to applies = value >= the
          scale's ``applies_from``; blank when there is none) and one
          ``<code> (confidence)`` column per code (the model's ``max_k p_k``).

The final decision is the coder's where there is one, else the model's pick, and
``final_from`` says which: ``human`` (the coder's own value), ``accepted`` (the coder
accepted the model's pick), ``model`` (not reviewed: the model's pick) or empty (neither
decided nor scored). With several coders the latest decision counts, unless ``coder`` is
given.

``probs``/``surprisal`` are lists in Parquet and JSONL, JSON text in CSV and XLSX; a
surprisal of ``inf`` (probability zero) is written as null.

Safety: every file is written to a temporary file in the target's folder and renamed
over the target only when complete, so a failed export leaves no partial file. In CSV
and XLSX, a text cell that a spreadsheet would run as a formula (starting with ``=``,
``+``, ``-``, ``@``, tab or carriage return, and not simply a number such as ``-2``) is
prefixed with ``'``. XLSX has a second sheet ``provenance`` (model, template, context,
scale, codebook, software version, export time); Parquet carries the same as schema
metadata (key ``codecurve.provenance``); CSV is written as UTF-8 with a BOM, so that
spreadsheet programs detect the encoding.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from study.errors import StudyError
from study.store import now, software_version

if TYPE_CHECKING:
    from study.store import Study

FORMATS = {
    ".csv": "csv",
    ".xlsx": "xlsx",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}
LAYOUTS = ("long", "wide")

LONG_COLUMNS = (
    "response_id",
    "code_id",
    "code_name",
    "scale",
    "scored",
    "model_pick",
    "model_pick_label",
    "model_applies",
    "confidence",
    "norm_entropy",
    "entropy",
    "expected",
    "spread",
    "on_scale_mass",
    "off_scale",
    "truncated",
    "probs",
    "surprisal",
    "decision",
    "decision_label",
    "decision_source",
    "coder",
    "decided_at",
    "note",
    "final",
    "final_label",
    "final_applies",
    "final_from",
)

#: First characters that make a spreadsheet evaluate a cell.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

#: Longest text an XLSX cell holds.
XLSX_CELL_LIMIT = 32_767


# --- safety --------------------------------------------------------------------------------


def neutralise(value: Any) -> Any:
    """Prefix ``'`` to a text that a spreadsheet would run as a formula; others unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() == text


def atomic_write(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it to ``path``.

    The temporary name keeps the suffix, for writers that choose a format by it. On any
    failure the temporary file is removed and ``path`` is left as it was.

    Raises:
        StudyError: the folder does not exist or cannot be written.
    """
    target = Path(path)
    if target.is_dir():
        raise StudyError("is a directory; give a file name", path=target)
    if not target.parent.is_dir():
        raise StudyError(f"folder {target.parent} does not exist", path=target)
    tmp = target.with_name(f".{target.stem}.{secrets.token_hex(4)}.tmp{target.suffix}")
    try:
        write(tmp)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        raise StudyError(f"cannot write the file ({exc.strerror or exc})", path=target) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return target


# --- frames --------------------------------------------------------------------------------


def _config_id(study: Study, config_id: int | str | None) -> int | None:
    if config_id == "active":
        return study.active_config_id()
    if config_id is not None and not isinstance(config_id, int):
        raise StudyError(f"a configuration id is an integer, not {config_id!r}")
    if config_id is not None:
        study.config_row(config_id)
    return config_id


def _curves(blobs: Sequence[Any], *, as_json: bool = False) -> list[Any]:
    """Decode float64 BLOBs in bulk, rows of one length at a time.

    Returns lists of floats (``inf``/``nan`` as ``None``), or with ``as_json`` the same
    as JSON text with 7 significant digits (for formats that hold only scalars).
    """
    out: list[Any] = [None] * len(blobs)
    by_length: dict[int, list[int]] = {}
    for i, blob in enumerate(blobs):
        if isinstance(blob, bytes):
            by_length.setdefault(len(blob), []).append(i)
    for length, index in by_length.items():
        array = np.frombuffer(b"".join(blobs[i] for i in index), dtype="<f8")
        array = array.reshape(len(index), length // 8)
        rows: list[Any] = array.tolist()
        bad = set(np.flatnonzero(~np.isfinite(array).all(axis=1)).tolist())
        for j in bad:
            rows[j] = [v if math.isfinite(v) else None for v in rows[j]]
        if as_json:
            template = "[" + ",".join(["%.7g"] * (length // 8)) + "]"
            rows = [
                json.dumps([None if v is None else float(f"{v:.7g}") for v in row])
                if j in bad
                else template % tuple(row)
                for j, row in enumerate(rows)
            ]
        for j, i in enumerate(index):
            out[i] = rows[j]
    return out


def _response_order(study: Study) -> list[tuple[int, str, str, dict[str, Any]]]:
    with study._read() as conn:
        rows = conn.execute("SELECT rid, id, text, attrs FROM responses ORDER BY pos").fetchall()
    return [(r[0], r[1], r[2], json.loads(r[3])) for r in rows]


_SCORE_COLUMNS = (
    "model_pick",
    "confidence",
    "norm_entropy",
    "entropy",
    "expected",
    "spread",
    "on_scale_mass",
    "off_scale",
    "truncated",
    "probs",
    "surprisal",
)


def long_frame(
    study: Study,
    *,
    config_id: int | str | None = "active",
    coder: str | None = None,
    curves_as_json: bool = False,
) -> pd.DataFrame:
    """The long layout (module docstring) as a DataFrame.

    ``probs``/``surprisal`` are lists of floats, or JSON text with ``curves_as_json``.
    """
    from study.queries import _pair_scale

    cfg = _config_id(study, config_id)
    codable = list(study._codable_cids)
    with study._read() as conn:
        responses = _response_order(study)
        scores = (
            []
            if cfg is None
            else conn.execute(
                "SELECT rid, cid, pick, confidence, norm_entropy, entropy, expected, spread, "
                "on_scale_mass, off_scale, truncated, probs, surprisal FROM scores "
                "WHERE config_id = ?",
                (cfg,),
            ).fetchall()
        )
        sql = "SELECT rid, cid, value, source, coder, decided_at FROM annotations"
        params: list[Any] = []
        if coder is not None:
            sql += " WHERE coder = ?"
            params.append(coder)
        decisions = conn.execute(sql + " ORDER BY decided_at, event_id", params).fetchall()
        notes = conn.execute("SELECT rid, cid, coder, note FROM notes").fetchall()
    rids = np.repeat(np.array([r[0] for r in responses], dtype=np.int64), len(codable))
    cids = np.tile(np.array(codable, dtype=np.int64), len(responses))
    frame = pd.DataFrame({"rid": rids, "cid": cids})
    score_frame = pd.DataFrame.from_records(scores, columns=["rid", "cid", *_SCORE_COLUMNS])
    frame = frame.merge(score_frame, on=["rid", "cid"], how="left")
    decision_frame = pd.DataFrame.from_records(
        decisions, columns=["rid", "cid", "decision", "decision_source", "coder", "decided_at"]
    ).drop_duplicates(["rid", "cid"], keep="last")  # the latest decision counts
    frame = frame.merge(decision_frame, on=["rid", "cid"], how="left")
    note_frame = pd.DataFrame.from_records(notes, columns=["rid", "cid", "note_coder", "note"])
    frame["note_coder"] = frame["coder"] if coder is None else frame["coder"].fillna(coder)
    frame = frame.merge(note_frame, on=["rid", "cid", "note_coder"], how="left")

    codes = {cid: study._code_of[cid] for cid in codable}
    scales = {cid: _pair_scale(study, cfg, code) for cid, code in codes.items()}
    labels = {cid: {o.value: o.label for o in scale.options} for cid, scale in scales.items()}
    cid_list = frame["cid"].tolist()
    frame["response_id"] = frame["rid"].map(study._id_of)
    frame["code_id"] = [codes[c].id for c in cid_list]
    frame["code_name"] = [codes[c].name for c in cid_list]
    frame["scale"] = [scales[c].name for c in cid_list]
    threshold = pd.array([scales[c].threshold for c in cid_list], dtype="Int64")
    for column in ("model_pick", "decision"):
        frame[column] = frame[column].astype("Int64")
    frame["scored"] = frame["model_pick"].notna()
    frame["final"] = frame["decision"].fillna(frame["model_pick"])
    for column, source in (
        ("model_pick_label", "model_pick"),
        ("decision_label", "decision"),
        ("final_label", "final"),
    ):
        values = frame[source].astype(object).where(frame[source].notna(), None).tolist()
        frame[column] = [
            None if v is None else labels[c].get(int(v))
            for c, v in zip(cid_list, values, strict=True)
        ]
    frame["model_applies"] = (frame["model_pick"] >= threshold).astype("boolean")
    frame["final_applies"] = (frame["final"] >= threshold).astype("boolean")
    frame["final_from"] = np.select(
        [
            frame["decision_source"].eq("human").to_numpy(dtype=bool),
            frame["decision_source"].eq("model").to_numpy(dtype=bool),
            frame["scored"].to_numpy(dtype=bool),
        ],
        ["human", "accepted", "model"],
        default="",
    )
    frame["final_from"] = frame["final_from"].replace("", None)
    for column in ("off_scale", "truncated"):
        frame[column] = frame[column].astype("Float64").astype("boolean")
    for column in ("probs", "surprisal"):
        frame[column] = pd.Series(
            _curves(frame[column].tolist(), as_json=curves_as_json), index=frame.index, dtype=object
        )
    for column in ("decision_source", "coder", "decided_at", "note"):
        frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    return frame[list(LONG_COLUMNS)]


def wide_frame(
    study: Study, *, config_id: int | str | None = "active", coder: str | None = None
) -> pd.DataFrame:
    """The wide layout (module docstring) as a DataFrame."""
    long = long_frame(study, config_id=config_id, coder=coder, curves_as_json=True)
    responses = _response_order(study)
    codes = [study._code_of[cid] for cid in study._codable_cids]
    attr_names: dict[str, None] = {}
    for _rid, _id, _text, attrs in responses:
        for key in attrs:
            attr_names.setdefault(key, None)
    taken = {"response_id", "text", "codes_decided"} | {c.name for c in codes}
    taken |= {f"{c.name} (confidence)" for c in codes}
    attr_columns = {a: (a if a not in taken else f"{a} (attribute)") for a in attr_names}
    frame = pd.DataFrame(
        {
            "response_id": [r[1] for r in responses],
            "text": [r[2] for r in responses],
            **{
                column: [r[3].get(name) for r in responses] for name, column in attr_columns.items()
            },
        }
    )
    shape = (len(responses), len(codes))
    applies = long["final_applies"].astype("Float64").to_numpy("float64", na_value=np.nan)
    confidence = long["confidence"].astype("Float64").to_numpy("float64", na_value=np.nan)
    applies, confidence = applies.reshape(shape), confidence.reshape(shape)
    decided = long["decision"].notna().to_numpy().reshape(shape)
    frame["codes_decided"] = decided.sum(axis=1).astype(int)
    for j, code in enumerate(codes):
        frame[code.name] = pd.Series(applies[:, j]).astype("Int64")
    for j, code in enumerate(codes):
        frame[f"{code.name} (confidence)"] = pd.Series(confidence[:, j]).astype("Float64")
    return frame


def provenance(
    study: Study,
    *,
    config_id: int | str | None = "active",
    layout: str | None = None,
    coder: str | None = None,
) -> dict[str, str]:
    """What produced an export: model, template, context, scale, codebook, software, time."""
    cfg = _config_id(study, config_id)
    book = study.codebook
    meta = study.meta()
    info = {
        "study": study.path.name,
        "study created": meta.get("created_at", ""),
        "codebook": book.name,
        "codebook hash": meta.get("codebook_hash", book.content_hash()),
        "codes": str(len(study.codes)),
        "scale": f"{book.scale.name} {list(book.scale.values)}, applies from "
        f"{book.scale.threshold}",
        "responses": str(study.response_count()),
        "decisions": str(study.decision_count(coder=coder)),
        "coders": ", ".join(study.coders()) or "(none)",
        "coder exported": coder or "(latest decision of any coder)",
    }
    if cfg is None:
        info["model"] = "(not scored)"
    else:
        row = study.config_row(cfg)
        info |= {
            "model": row.model.name,
            "model revision": row.model.revision,
            "model dtype": row.model.dtype,
            "model device": row.model.device,
            "model backend": row.model.backend,
            "template": row.template_id,
            "template hash": row.template_hash,
            "context": row.context,
            "scale asked": f"{row.scale.name} {list(row.scale.values)}",
            "strict": str(row.strict).lower(),
            "configuration key": row.key,
            "pairs scored": f"{study.scored_count(cfg)} of {study.pair_count()}",
        }
    if layout is not None:
        info["layout"] = layout
    info["software"] = f"codecurve {software_version()}"
    info["exported at"] = now()
    return info


# --- writers -------------------------------------------------------------------------------


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


def _xlsx_cell(value: Any) -> Any:
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
        # The quote makes it text in any spreadsheet; openpyxl would store "=..." as a formula.
        return neutralise(value)
    return value


def write_xlsx(
    frame: pd.DataFrame, path: Path, *, info: dict[str, str], sheet: str = "data"
) -> None:
    from openpyxl import Workbook

    data = _json_cells(frame)
    book = Workbook(write_only=True)
    rows = book.create_sheet(sheet)
    rows.append([_xlsx_cell(str(c)) for c in data.columns])
    for record in data.itertuples(index=False, name=None):
        rows.append([_xlsx_cell(v) for v in record])
    prov = book.create_sheet("provenance")
    prov.append(["field", "value"])
    for key, value in info.items():
        prov.append([_xlsx_cell(key), _xlsx_cell(value)])
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
            f"({', '.join(FORMATS)}) or --format",
            path=path,
        )
    return fmt_by_suffix


def export_study(
    study: Study,
    path: str | Path,
    *,
    format: str | None = None,
    layout: str = "long",
    config_id: int | str | None = "active",
    coder: str | None = None,
) -> Path:
    """Write the coded dataset (layouts and safety in the module docstring).

    Args:
        study: An open study (read-only is enough).
        path: The file to write; replaced atomically if it exists.
        format: ``csv``, ``xlsx``, ``parquet`` or ``jsonl``; by the suffix when ``None``.
        layout: ``long`` or ``wide``.
        config_id: The scoring configuration whose scores are exported: ``"active"``
            (default), an id, or ``None`` for no scores.
        coder: Export this coder's decisions (default: the latest decision of any coder).

    Returns:
        The path written.

    Raises:
        StudyError: unknown format or layout, unwritable target.
    """
    target = Path(path)
    fmt = export_format(target, format)
    if layout not in LAYOUTS:
        raise StudyError(f"unknown layout {layout!r}; use long or wide")
    if not study.read_only:
        # Read through a handle of its own: the writer's stays free for the coder's
        # decisions while a large export runs (every decision is committed, so the
        # reader sees them all).
        from study.store import Study

        with Study.open(study.path, read_only=True) as reader:
            return export_study(
                reader, target, format=fmt, layout=layout, config_id=config_id, coder=coder
            )
    if layout == "long":
        frame = long_frame(
            study, config_id=config_id, coder=coder, curves_as_json=fmt in ("csv", "xlsx")
        )
    else:
        frame = wide_frame(study, config_id=config_id, coder=coder)
    info = provenance(study, config_id=config_id, layout=layout, coder=coder)
    if fmt == "csv":
        return atomic_write(target, lambda tmp: write_csv(frame, tmp))
    if fmt == "xlsx":
        return atomic_write(target, lambda tmp: write_xlsx(frame, tmp, info=info))
    if fmt == "parquet":
        return atomic_write(target, lambda tmp: write_parquet(frame, tmp, info=info))
    return atomic_write(target, lambda tmp: write_jsonl(frame, tmp))


def export_codebook(study: Study, path: str | Path) -> Path:
    """Write the study's codebook with :func:`codebooks.writers.save_codebook` (by suffix).

    ``save_codebook`` writes atomically itself and is given the real path, so that its
    errors (an unknown suffix, an unwritable folder) name the file asked for.

    Raises:
        CodebookError: an unknown suffix, a codebook the format cannot hold, or a file
            that cannot be written.
    """
    try:
        from codebooks.writers import save_codebook
    except ImportError:
        raise StudyError("this codecurve cannot write codebook files yet") from None
    return save_codebook(study.codebook, Path(path))


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
    return pd.read_json(p, lines=True, dtype={"response_id": str})
