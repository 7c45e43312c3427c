"""One cell of a table file as text or as a JSON value, and what counts as empty.

Only a missing value is missing: a text is returned as written, whatever it says
(``NA``, ``null``, ``#N/A`` ...). :func:`unguard_formula` takes back the ``'`` that the
exporter puts before a text a spreadsheet would run as a formula. pandas is imported on
first use.
"""

from __future__ import annotations

import json
import math
from typing import Any


def cell_text(value: Any) -> str | None:
    """A cell as text, ``None`` for a missing value (``None``, NaN, NaT, ``pd.NA``).

    A whole number read as a float becomes its integer text (``12.0`` -> ``"12"``);
    lists and objects become JSON.
    """
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


def cell_value(value: Any) -> Any:
    """A cell as a JSON-compatible value (typed formats keep their types; NaN is ``None``)."""
    import pandas as pd

    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, (list, tuple)):
        return [cell_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): cell_value(v) for k, v in value.items()}
    try:
        if pd.isna(value) is True:
            return None
    except (TypeError, ValueError):
        pass
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        try:
            return cell_value(item())
        except (TypeError, ValueError):
            pass
    if hasattr(value, "tolist"):
        return cell_value(value.tolist())
    return str(value)


#: First characters that make a spreadsheet evaluate a cell: the exporter adds a ``'``
#: before them (:func:`neutralise`), an import takes it away (:func:`unguard_formula`).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: Any) -> Any:
    """Prefix ``'`` to a text that a spreadsheet would run as a formula; others unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def unguard_formula(text: str) -> str:
    """Undo the exporter's formula guard: ``'@alice`` -> ``@alice``; other texts unchanged.

    The exact inverse of ``study.exchange.export.neutralise`` on the texts it changes: the ``'`` is
    removed only before a formula start that is not the start of a number (``'-3`` stays).
    """
    if text.startswith("'"):
        rest = text[1:]
        if rest.startswith(FORMULA_STARTS) and not _is_number(rest):
            return rest
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() == text


def is_blank(value: Any) -> bool:
    """Whether a cell is empty: missing, or a text of whitespace only."""
    text = cell_text(value)
    return text is None or not text.strip()


__all__ = ["FORMULA_STARTS", "cell_text", "cell_value", "is_blank", "unguard_formula"]
