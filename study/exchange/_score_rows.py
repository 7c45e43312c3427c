"""The score-row format of ``codecurve score -o FILE``: one row per (response, code).

A row holds the ids, the curve's summary, the whole curve (``surprisal_<label>`` and
``prob_<label>`` per option, in nats), and the score's identity (hashes, template,
context, model). JSONL rows also carry the exact prompt. :func:`write_score_rows`
writes CSV or JSONL through the exports' safe writer
(:func:`codebooks.files.write_file`, which the exports' writers use too, without
their pandas), formula-like CSV cells neutralised.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from codebooks.files import write_file
from study.errors import StudyError
from study.intake.cells import neutralise

if TYPE_CHECKING:
    from scoring.score import Score, ScoreConfig

__all__ = [
    "FORMATS",
    "IDENTITY_COLUMNS",
    "ID_COLUMNS",
    "SUMMARY_COLUMNS",
    "columns",
    "row_format",
    "score_row",
    "write_score_rows",
]

RowFormat = Literal["csv", "jsonl"]

#: Score-row format of each file suffix.
FORMATS: dict[str, RowFormat] = {".csv": "csv", ".jsonl": "jsonl"}

#: Columns of every row, in order (per-option columns follow the curve's summary).
ID_COLUMNS = ("response_id", "code_id", "code_name", "scale")
SUMMARY_COLUMNS = (
    "pick",
    "pick_label",
    "expected",
    "spread",
    "confidence",
    "entropy",
    "norm_entropy",
    "on_scale_mass",
    "off_scale",
    "truncated",
)
IDENTITY_COLUMNS = (
    "option_token_ids",
    "prompt_hash",
    "text_hash",
    "code_hash",
    "template_id",
    "template_hash",
    "context",
    "strict",
    "model_name",
    "model_revision",
    "model_dtype",
    "model_device",
    "model_backend",
    "config_key",
)


def row_format(path: Path) -> RowFormat:
    """The format a score file's suffix names.

    Raises:
        StudyError: neither ``.csv`` nor ``.jsonl``.
    """
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise StudyError(
            f"cannot write {path.suffix or 'a file without a suffix'}; "
            "name the output .csv or .jsonl",
            path=path,
        )
    return fmt


def score_row(
    score: Score, config: ScoreConfig, code_name: str, *, with_prompt: bool
) -> dict[str, Any]:
    """One output row: ids, the curve, its summary, and the score's identity.

    Per-option values go to ``surprisal_<label>`` and ``prob_<label>`` columns (nats).
    """
    curve = score.curve
    model = config.model
    row: dict[str, Any] = {
        "response_id": score.response_id,
        "code_id": score.code_id,
        "code_name": code_name,
        "scale": score.scale.name,
        "pick": score.prediction,
        "pick_label": score.prediction_label,
        "expected": curve.expected,
        "spread": curve.spread,
        "confidence": curve.confidence,
        "entropy": curve.entropy,
        "norm_entropy": curve.norm_entropy,
        "on_scale_mass": curve.on_scale_mass,
        "off_scale": curve.off_scale,
        "truncated": score.truncated,
    }
    for option, s, p in zip(score.scale.options, curve.surprisal, curve.probs, strict=True):
        row[f"surprisal_{option.label}"] = float(s)
        row[f"prob_{option.label}"] = float(p)
    row.update(
        {
            "option_token_ids": json.dumps([[list(v) for v in o] for o in score.token_ids]),
            "prompt_hash": score.prompt_hash,
            "text_hash": score.text_hash,
            "code_hash": score.code_hash,
            "template_id": config.template_id,
            "template_hash": config.template_hash,
            "context": config.context,
            "strict": config.strict,
            "model_name": model.name,
            "model_revision": model.revision,
            "model_dtype": model.dtype,
            "model_device": model.device,
            "model_backend": model.backend,
            "config_key": score.config_key,
        }
    )
    if with_prompt:
        row["prompt"] = score.prompt
    return row


def columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Fixed columns, with every scale's per-option columns in order of first use."""
    per_option: list[str] = []
    seen: set[str] = set()
    fixed = set(ID_COLUMNS) | set(SUMMARY_COLUMNS) | set(IDENTITY_COLUMNS) | {"prompt"}
    for row in rows:
        for key in row:
            if key not in fixed and key not in seen:
                seen.add(key)
                per_option.append(key)
    return [*ID_COLUMNS, *SUMMARY_COLUMNS, *per_option, *IDENTITY_COLUMNS]


def write_score_rows(path: Path, fmt: RowFormat, rows: Sequence[dict[str, Any]]) -> None:
    """Write ``rows`` (from :func:`score_row`) to ``path`` as CSV or JSONL, atomically.

    CSV floats keep every digit (``repr``), infinities as ``inf``; JSONL has no infinity,
    so an impossible option's surprisal is null there.

    Raises:
        StudyError: the file cannot be written (see :func:`atomic_write`).
    """

    def write_csv(tmp: Path) -> None:
        names = columns(rows)
        with tmp.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=names, extrasaction="ignore")
            writer.writeheader()
            for row in rows:
                writer.writerow({k: _csv_cell(row.get(k)) for k in names})

    def write_jsonl(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8") as fh:
            for row in rows:
                out = dict(row)
                out["option_token_ids"] = json.loads(row["option_token_ids"])
                fh.write(json.dumps(_finite(out), ensure_ascii=False) + "\n")

    write_file(path, write_csv if fmt == "csv" else write_jsonl, error=StudyError)


def _csv_cell(value: Any) -> Any:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    return neutralise(value)


def _finite(row: dict[str, Any]) -> dict[str, Any]:
    return {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()
    }
