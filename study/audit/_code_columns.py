"""The responses' columns that hold codes: what a coder coding blind must not read.

A survey export often carries the codes beside the text: the file a study's responses
were read from is the file the coders' decisions are imported from (``import-codes
--codes-column label``). Those columns are another coder's decisions, so blind coding
hides them with the rest of what other coders decided. A column holds codes when:

- decisions were imported from a column of that name (the import records its columns);
- it is named after a code (its name or id, as a matrix import would read it);
- a word of its name is one a codes list goes by (``label``, ``coder2_labels``,
  ``codes``, ``themes`` ...: :data:`study.intake.columns.LIST_NAMES`).

The rule errs towards hiding: a column of survey data named ``category`` is hidden too
while the coder works blind, and the view says which columns it hides.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from study.handle import StudyHandle
from study.intake.columns import LIST_NAMES

_WORD = re.compile(r"[^0-9a-z]+")


def _words(name: str) -> list[str]:
    return [w for w in _WORD.split(name.casefold()) if w]


def _key(name: str) -> str:
    return "_".join(_words(name))


def imported_columns(study: StudyHandle) -> set[str]:
    """The columns any coder's decisions were imported from (as recorded), by name."""
    with study.query() as conn:
        rows = conn.execute(
            "SELECT DISTINCT detail FROM events WHERE kind = 'import' AND detail IS NOT NULL"
        ).fetchall()
    found: set[str] = set()
    for (detail,) in rows:
        try:
            data: Any = json.loads(detail)
        except ValueError:
            continue
        columns = data.get("columns") if isinstance(data, dict) else None
        if isinstance(columns, list):
            found.update(str(c) for c in columns)
    return found


def code_columns(study: StudyHandle, names: Iterable[str]) -> list[str]:
    """Which of the response columns ``names`` hold codes (see the module docstring),
    in the order given."""
    imported = {_key(c) for c in imported_columns(study)}
    codes = {_key(k) for c in study.codebook.codes for k in (c.id, c.name)}
    words = set(LIST_NAMES)
    return [
        name
        for name in names
        if _key(name) in imported or _key(name) in codes or any(w in words for w in _words(name))
    ]
