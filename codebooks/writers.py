"""Write a codebook to a file, choosing the format by suffix.

YAML and JSON keep everything (:func:`codebooks.mapping.codebook_to_mapping`); CSV keeps
the codes (:mod:`codebooks.tabular`); REFI-QDA ``.qdc`` keeps the codes, their hierarchy,
colours and sets (:mod:`codebooks.qdc`); Taguette's CSV keeps the codes' paths and
descriptions (:mod:`codebooks.taguette`, the flavour ``taguette``). New formats register
in :data:`WRITERS`, other programs' layouts of a format in :data:`FLAVOURS`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import yaml

from codebooks.errors import CodebookError
from codebooks.files import write_atomic
from codebooks.mapping import codebook_to_mapping
from codebooks.model import Codebook
from codebooks.qdc import qdc_bytes
from codebooks.tabular import csv_bytes
from codebooks.taguette import taguette_csv_bytes

__all__ = [
    "FLAVOURS",
    "WRITERS",
    "csv_bytes",
    "json_bytes",
    "qdc_bytes",
    "save_codebook",
    "taguette_csv_bytes",
    "unkept",
    "yaml_bytes",
]


class _Dumper(yaml.SafeDumper):
    """Block style for texts of several lines, so definitions read as they were written."""

    def represent_str(self, data: str) -> yaml.ScalarNode:
        # PyYAML falls back to quotes where a block cannot hold the text exactly.
        style = "|" if "\n" in data else None
        return self.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _Dumper.represent_str)

_YAML_HEADER = "# codecurve codebook (layout: codebooks.mapping)\n"


def yaml_bytes(codebook: Codebook) -> bytes:
    """The codebook as YAML; :func:`codebooks.load_codebook` reads it back unchanged."""
    text = yaml.dump(
        codebook_to_mapping(codebook),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=88,
    )
    return (_YAML_HEADER + text).encode("utf-8")


def json_bytes(codebook: Codebook) -> bytes:
    """The codebook as JSON, laid out like the YAML."""
    return (json.dumps(codebook_to_mapping(codebook), ensure_ascii=False, indent=2) + "\n").encode(
        "utf-8"
    )


WRITERS: dict[str, Callable[[Codebook], bytes]] = {
    ".yaml": yaml_bytes,
    ".yml": yaml_bytes,
    ".json": json_bytes,
    ".csv": csv_bytes,
    ".qdc": qdc_bytes,
}


#: Other programs' layouts of a format: (suffix, flavour) -> writer.
FLAVOURS: dict[tuple[str, str], Callable[[Codebook], bytes]] = {
    (".csv", "taguette"): taguette_csv_bytes,
}


#: Writers whose format has no place for a codebook's scoping to survey questions.
_UNSCOPED = frozenset({csv_bytes, taguette_csv_bytes})


def unkept(codebook: Codebook, path: str | Path, *, flavour: str | None = None) -> tuple[str, ...]:
    """One line per part of ``codebook`` that writing it to ``path`` (in ``flavour``)
    leaves out, for the caller to show as a warning: a table cannot hold the codes'
    scoping to survey questions. Empty when the format keeps all that matters."""
    p = Path(path)
    writer = (
        FLAVOURS.get((p.suffix.lower(), flavour))
        if flavour is not None
        else WRITERS.get(p.suffix.lower())
    )
    if writer not in _UNSCOPED or codebook.question_column is None:
        return ()
    scoped = sum(1 for c in codebook.codes if c.questions)
    return (
        f"{p.name}: a {p.suffix or 'table'} codebook cannot hold the scoping to questions "
        f"(question_column {codebook.question_column!r}, {scoped} scoped code(s)); it is "
        "left out: save as .yaml, .json or .qdc to keep it",
    )


def save_codebook(codebook: Codebook, path: str | Path, *, flavour: str | None = None) -> Path:
    """Write ``codebook`` in the format its suffix names, atomically; ``flavour`` names
    another program's layout of that format (``taguette`` for a ``.csv``).

    The file is written in full to a temporary file beside it and renamed into place, so
    a failure leaves any earlier file as it was.

    Returns:
        The path written.

    Raises:
        CodebookError: for an unknown suffix, a codebook the format cannot hold, or a
            file that cannot be written.
    """
    p = Path(path)
    if flavour is not None:
        writer = FLAVOURS.get((p.suffix.lower(), flavour))
        if writer is None:
            known = ", ".join(f"{f} ({s})" for s, f in FLAVOURS)
            raise CodebookError(
                f"no {flavour!r} layout of {p.suffix or 'a file without a suffix'}; "
                f"there are: {known}",
                path=p,
            )
    else:
        writer = WRITERS.get(p.suffix.lower())
    if writer is None:
        known = ", ".join(sorted(WRITERS))
        raise CodebookError(
            f"unknown codebook format {p.suffix or '(none)'!r}; use {known}", path=p
        )
    try:
        data = writer(codebook)
    except CodebookError as exc:
        raise CodebookError(exc.message, path=p, where=exc.where) from None
    write_atomic(p, data)
    return p
