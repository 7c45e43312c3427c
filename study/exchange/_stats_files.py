"""Writing an export as an SPSS (``.sav``) or Stata (``.dta``) file, with pyreadstat.

Both programs refuse most column names of a codebook (``Staff manner & personal
attributes [ana]``: spaces, ``&``, brackets; Stata allows 32 characters), so each column
gets a valid, unique, readable variable name (:func:`variable_names`): the name in
ASCII, lower case, ``_`` for anything else, its qualifiers kept at the end when it must
be shortened (``staff_manner_personal_attr_ana``); its full name is the variable's label.
Numeric columns stay numeric (missing where empty); texts are strings; each code's values
carry value labels from its scale (``1 = 1: does not apply at all``). The provenance and
the list of variables (name, label, value labels) go in the file's note (SPSS) and in a
metadata file beside it (:func:`study.exchange.writers.write_metadata`).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from study.errors import StudyError

#: Longest variable name: Stata 32 characters, SPSS 64 bytes (ASCII here).
NAME_LIMITS = {"dta": 32, "sav": 64}
#: Longest variable label and file label Stata keeps.
_STATA_LABEL = 80
#: Longest line of an SPSS document (the file's note).
_NOTE_LINE = 80
#: Names the programs reserve (compared case-insensitively).
_RESERVED = {
    "sav": {"all", "and", "by", "eq", "ge", "gt", "le", "lt", "ne", "not", "or", "to", "with"},
    "dta": {
        "_all", "_b", "byte", "_coef", "_cons", "double", "float", "if", "in", "int", "long",
        "_n", "_pi", "_pred", "_rc", "_skip", "strl", "using", "with",
    },
}  # fmt: skip
#: Trailing qualifiers of a column name: ``[ana]``, ``(confidence)``, ``(applies)``.
_QUALIFIERS = re.compile(r"((?:\s*(?:\[[^\]]*\]|\([^)]*\)))+)\s*$")
_QUALIFIER = re.compile(r"\[([^\]]*)\]|\(([^)]*)\)")


def _slug(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "_", ascii_text.lower()).strip("_")


def variable_names(columns: Iterable[str], *, fmt: str) -> dict[str, str]:
    """Each column's variable name: valid in ``fmt`` (``sav`` or ``dta``), unique (also
    without regard to case), and as close to the column's name as the rules allow."""
    columns = list(columns)
    limit, reserved = NAME_LIMITS[fmt], _RESERVED[fmt]
    if fmt == "dta":
        # pyreadstat names a variable's value labels by the name and a counter, within
        # the same 32 characters: room for the counter.
        limit -= len(str(len(columns)))
    names: dict[str, str] = {}
    taken: set[str] = set()
    for column in columns:
        found = _QUALIFIERS.search(column)
        stem_text = column[: found.start()] if found else column
        tail = ""
        if found:
            parts = [a or b for a, b in _QUALIFIER.findall(found.group(1))]
            tail = "".join(f"_{s}" for p in parts if (s := _slug(p)))
        stem = _slug(stem_text) or "v"
        if stem[0].isdigit():
            stem = f"v{stem}"
        tail = tail[: max(0, limit - 8)]  # a long coder name leaves the stem 8 characters
        name = (stem[: limit - len(tail)].rstrip("_") or "v") + tail
        if name.casefold() in reserved:
            name = f"{name[: limit - 1]}_"
        unique, n = name, 2
        while unique.casefold() in taken:
            suffix = f"_{n}"
            unique = name[: limit - len(suffix)] + suffix
            n += 1
        taken.add(unique.casefold())
        names[column] = unique
    return names


def _numeric(series: pd.Series) -> bool:
    return bool(
        pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype)
    )


def _column(series: pd.Series) -> pd.Series:
    """A column as pyreadstat writes it: numbers as float64 (missing NaN) or int64, texts
    as str (missing empty)."""
    if _numeric(series):
        numbers = series.astype("Float64").to_numpy("float64", na_value=np.nan)
        if not np.isnan(numbers).any() and np.all(numbers == np.round(numbers)):
            return pd.Series(numbers.astype("int64"), index=series.index)
        return pd.Series(numbers, index=series.index)
    texts = [
        ""
        if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))
        else json.dumps(v)
        if isinstance(v, list)
        else str(v)
        for v in series.tolist()
    ]
    return pd.Series(texts, index=series.index, dtype=object)


def variables(
    frame: pd.DataFrame, *, fmt: str, value_labels: Mapping[str, Mapping[int, str]]
) -> list[dict[str, Any]]:
    """The variables of ``frame`` as written to ``fmt``: ``name``, ``label`` (the
    column's name), ``type`` (``numeric`` or ``string``) and ``values`` (value labels)."""
    names = variable_names([str(c) for c in frame.columns], fmt=fmt)
    return [
        {
            "name": names[str(column)],
            "label": str(column),
            "type": "numeric" if _numeric(frame[column]) else "string",
            "values": {str(k): v for k, v in value_labels.get(str(column), {}).items()},
        }
        for column in frame.columns
    ]


def write_stats(
    frame: pd.DataFrame,
    path: Path,
    *,
    target: Path,
    fmt: str,
    info: Mapping[str, str],
    value_labels: Mapping[str, Mapping[int, str]],
) -> None:
    """Write ``frame`` as ``fmt`` (``sav`` or ``dta``) at ``path`` (module docstring);
    errors name ``target``, the file asked for.

    Raises:
        StudyError: pyreadstat is missing or refuses the data.
    """
    try:
        import pyreadstat
    except ImportError:
        raise StudyError(
            "writing SPSS and Stata files needs pyreadstat: pip install pyreadstat"
        ) from None
    names = variable_names([str(c) for c in frame.columns], fmt=fmt)
    data = pd.DataFrame({names[str(c)]: _column(frame[c]) for c in frame.columns})
    labels: dict[str, str | None] = {names[str(c)]: str(c) for c in frame.columns}
    values: dict[str, dict[int | float, str]] = {
        names[c]: {int(k): v for k, v in labelled.items()}
        for c, labelled in value_labels.items()
        if c in names and _numeric(frame[c])
    }
    title = f"codecurve export of {info.get('study', '')}".strip()
    try:
        if fmt == "sav":
            listed = variables(frame, fmt=fmt, value_labels=value_labels)
            lines = [f"{k}: {v}" for k, v in info.items()]
            lines += [f"variable {v['name']}: {v['label']}" for v in listed]
            # An SPSS document holds lines of 80 characters.
            note = [
                line[i : i + _NOTE_LINE]
                for line in lines
                for i in range(0, max(len(line), 1), _NOTE_LINE)
            ]
            pyreadstat.write_sav(
                data,
                str(path),
                file_label=title[:64],
                column_labels=labels,
                variable_value_labels=values,
                note=note,
            )
        else:
            pyreadstat.write_dta(
                data,
                str(path),
                file_label=title[:_STATA_LABEL],
                column_labels={k: (v or "")[:_STATA_LABEL] for k, v in labels.items()},
                variable_value_labels=values,
            )
    except (pyreadstat.PyreadstatError, pyreadstat.ReadstatError, ValueError, TypeError) as exc:
        raise StudyError(f"cannot write the {fmt} file: {exc}", path=target) from None
