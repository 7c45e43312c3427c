"""Read a codebook from a file, choosing the format by suffix.

New formats register in :data:`READERS`. Every reader raises only
:class:`~codebooks.errors.CodebookError` for a bad file, naming the file and the place.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from codebooks.errors import CodebookError
from codebooks.files import read_text
from codebooks.mapping import codebook_from_mapping
from codebooks.model import Codebook
from codebooks.qdc import read_qdc
from codebooks.tabular import read_csv

__all__ = ["READERS", "load_codebook", "read_json", "read_text", "read_yaml"]

_MERGE_TAG = "tag:yaml.org,2002:merge"


class _StrictLoader(yaml.SafeLoader):
    """``SafeLoader`` that refuses a key given twice in one mapping.

    PyYAML keeps the last of two equal keys without a word; in a codebook that silently
    drops a definition or a whole list of codes.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[tuple[str, str]] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != _MERGE_TAG:
                key = (key_node.tag, key_node.value)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {key_node.value!r} appears twice", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | Path) -> Codebook:
    """Read a YAML codebook (layout in :mod:`codebooks.mapping`)."""
    text = read_text(path)
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader: builds plain data only
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = exc.problem or exc.context or "cannot parse"
        raise CodebookError(f"malformed YAML: {problem}", path=path, where=where) from None
    except yaml.reader.ReaderError as exc:
        where = _line_column(text, exc.position)
        raise CodebookError(f"malformed YAML: {exc.reason}", path=path, where=where) from None
    except yaml.YAMLError as exc:
        raise CodebookError(f"malformed YAML: {exc}", path=path) from None
    except RecursionError:
        raise CodebookError("malformed YAML: nested too deeply", path=path) from None
    except ValueError as exc:
        # Values that match a YAML type but do not fit it: 2024-13-45, a 5,000-digit int.
        raise CodebookError(f"malformed YAML: {exc}", path=path) from None
    if data is None:
        raise CodebookError("the file is empty", path=path)
    return codebook_from_mapping(data, path=path)


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _DuplicateKey(key)
        data[key] = value
    return data


def read_json(path: str | Path) -> Codebook:
    """Read a JSON codebook, laid out like the YAML one (:mod:`codebooks.mapping`)."""
    text = read_text(path)
    if not text.strip():
        raise CodebookError("the file is empty", path=path)
    try:
        data = json.loads(text, object_pairs_hook=_unique_object)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise CodebookError(f"malformed JSON: {exc.msg}", path=path, where=where) from None
    except _DuplicateKey as exc:
        raise CodebookError(
            f"malformed JSON: the key {exc.key!r} appears twice in one object", path=path
        ) from None
    except RecursionError:
        raise CodebookError("malformed JSON: nested too deeply", path=path) from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise CodebookError(f"malformed JSON: {exc}", path=path) from None
    return codebook_from_mapping(data, path=path)


def _line_column(text: str, position: int) -> str:
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return f"line {line}, column {column}"


READERS: dict[str, Callable[[Path], Codebook]] = {
    ".yaml": read_yaml,
    ".yml": read_yaml,
    ".json": read_json,
    ".csv": read_csv,
    ".qdc": read_qdc,
}


def load_codebook(path: str | Path) -> Codebook:
    """Read a codebook in any supported format, chosen by the file's suffix."""
    p = Path(path)
    reader = READERS.get(p.suffix.lower())
    if reader is None:
        known = ", ".join(sorted(READERS))
        raise CodebookError(
            f"unknown codebook format {p.suffix or '(none)'!r}; use {known}", path=p
        )
    if not p.exists():
        raise CodebookError("no such file", path=p)
    return reader(p)
