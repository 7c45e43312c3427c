"""Build a :class:`Codebook` from plain data (parsed YAML or JSON), with clear errors.

The layout, shared by the YAML and JSON formats::

    name: Working life survey            # required
    question: How well does "{code}" apply to this response?   # optional
    description: ...                     # optional
    scale: 1-5                           # 1-5 | 1-9 | binary | a mapping (see below)
    codes:                               # required, a list
      - name: Workload                   # required, unique
        id: workload                     # optional, defaults to a slug of the name
        definition: ...
        inclusion: ...
        exclusion: ...
        examples: [..., ...]             # a list of strings (or one string)
        parent: Pressures                # a code's id or name
        codable: true                    # false for a grouping category
        color: "#aa3300"
        codes: [...]                     # nested children, another way to give parents
    sets:                                # optional
      - {name: Core, codes: [workload]}

A scale given as a mapping: ``{name: agree-3, applies_from: 3, options: [{label: "1",
value: 1, anchor: "disagree", variants: ["1", " 1"]}, ...]}``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codebooks.errors import CodebookError
from codebooks.model import DEFAULT_QUESTION, Code, Codebook, Option, Scale, get_scale

_CODE_KEYS = {
    "id",
    "name",
    "definition",
    "inclusion",
    "exclusion",
    "examples",
    "parent",
    "codable",
    "color",
    "codes",
    "scale",
}
_TOP_KEYS = {"name", "question", "description", "scale", "codes", "sets"}


def slugify(name: str) -> str:
    """A readable id from a code name: lower case, runs of other characters become ``-``."""
    slug = re.sub(r"[^0-9a-z]+", "-", name.strip().casefold()).strip("-")
    return slug or "code"


def codebook_from_mapping(data: Any, *, path: str | Path | None = None) -> Codebook:
    """Validate parsed YAML/JSON data and build a codebook.

    Raises:
        CodebookError: naming the file and the key path of the first problem.
    """
    if not isinstance(data, Mapping):
        raise CodebookError(
            "a codebook must be a mapping with at least 'name' and 'codes'", path=path
        )
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise CodebookError(
            f"unknown top-level key(s) {', '.join(sorted(map(str, unknown)))}; "
            f"expected {', '.join(sorted(_TOP_KEYS))}",
            path=path,
        )
    name = data.get("name")
    if name is None:
        name = Path(path).stem if path is not None else "codebook"
    raw_codes = data.get("codes")
    if not isinstance(raw_codes, list) or not raw_codes:
        raise CodebookError("'codes' must be a non-empty list of codes", path=path, where="codes")
    try:
        scale = scale_from_value(data.get("scale", "1-5"))
    except CodebookError as exc:
        raise CodebookError(exc.message, path=path, where="scale") from None
    codes: list[Code] = []
    _collect_codes(raw_codes, parent=None, out=codes, path=path, where="codes")
    codes = _resolve_parents(codes, path=path)
    sets = _parse_sets(data.get("sets"), codes, path=path)
    question = data.get("question") or DEFAULT_QUESTION
    try:
        return Codebook(
            name=str(name),
            codes=tuple(codes),
            scale=scale,
            question=str(question),
            description=str(data.get("description") or ""),
            sets=sets,
        )
    except CodebookError as exc:
        raise CodebookError(exc.message, path=path) from None


def scale_from_value(value: Any) -> Scale:
    """A scale from a ready-made name or a mapping."""
    if isinstance(value, str):
        return get_scale(value.strip())
    if isinstance(value, Mapping):
        raw_options = value.get("options")
        if not isinstance(raw_options, list):
            raise CodebookError("a scale mapping needs a list of 'options'")
        options = []
        for i, raw in enumerate(raw_options):
            if isinstance(raw, (str, int)):
                raw = {"label": str(raw)}
            if not isinstance(raw, Mapping) or "label" not in raw:
                raise CodebookError(f"option {i + 1} needs a 'label'")
            try:
                option_value = int(raw.get("value", i + 1))
            except (TypeError, ValueError):
                raise CodebookError(f"option {i + 1}: 'value' must be an integer") from None
            variants = raw.get("variants") or ()
            if isinstance(variants, str) or not all(isinstance(v, str) for v in variants):
                raise CodebookError(f"option {i + 1}: 'variants' must be a list of strings")
            options.append(
                Option(
                    label=str(raw["label"]),
                    value=option_value,
                    anchor=str(raw.get("anchor") or ""),
                    variants=tuple(variants),
                )
            )
        applies_from = value.get("applies_from")
        try:
            applies = None if applies_from is None else int(applies_from)
        except (TypeError, ValueError):
            raise CodebookError("'applies_from' must be an integer") from None
        return Scale(name=str(value.get("name") or "custom"), options=tuple(options), applies_from=applies)
    raise CodebookError(f"a scale is a name (1-5, 1-9, binary) or a mapping, not {value!r}")


def _text(raw: Mapping[str, Any], key: str, *, path: str | Path | None, where: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if isinstance(value, (str, int, float)):
        return str(value).strip()
    raise CodebookError(f"'{key}' must be text", path=path, where=where)


def _collect_codes(
    raw_codes: list[Any],
    *,
    parent: str | None,
    out: list[Code],
    path: str | Path | None,
    where: str,
) -> None:
    for i, raw in enumerate(raw_codes):
        here = f"{where}[{i}]"
        if isinstance(raw, str):
            raw = {"name": raw}
        if not isinstance(raw, Mapping):
            raise CodebookError("each code must be a mapping with a 'name'", path=path, where=here)
        unknown = set(raw) - _CODE_KEYS
        if unknown:
            raise CodebookError(
                f"unknown key(s) {', '.join(sorted(map(str, unknown)))} in a code",
                path=path,
                where=here,
            )
        name = _text(raw, "name", path=path, where=here)
        if not name:
            raise CodebookError("a code needs a 'name'", path=path, where=here)
        code_id = _text(raw, "id", path=path, where=here) or slugify(name)
        examples = raw.get("examples") or ()
        if isinstance(examples, str):
            examples = (examples,)
        if not isinstance(examples, (list, tuple)) or not all(
            isinstance(e, (str, int, float)) for e in examples
        ):
            raise CodebookError("'examples' must be a list of strings", path=path, where=here)
        codable = raw.get("codable", True)
        if not isinstance(codable, bool):
            raise CodebookError("'codable' must be true or false", path=path, where=here)
        own_parent = raw.get("parent")
        if own_parent is not None and not isinstance(own_parent, (str, int)):
            raise CodebookError("'parent' must be a code id or name", path=path, where=here)
        try:
            scale = None if raw.get("scale") is None else scale_from_value(raw["scale"])
        except CodebookError as exc:
            raise CodebookError(exc.message, path=path, where=f"{here}.scale") from None
        color = raw.get("color")
        out.append(
            Code(
                id=code_id,
                name=name,
                definition=_text(raw, "definition", path=path, where=here),
                inclusion=_text(raw, "inclusion", path=path, where=here),
                exclusion=_text(raw, "exclusion", path=path, where=here),
                examples=tuple(str(e).strip() for e in examples),
                parent=str(own_parent) if own_parent is not None else parent,
                codable=codable,
                color=None if color is None else str(color),
                scale=scale,
            )
        )
        children = raw.get("codes")
        if children is not None:
            if not isinstance(children, list):
                raise CodebookError("nested 'codes' must be a list", path=path, where=here)
            _collect_codes(children, parent=code_id, out=out, path=path, where=f"{here}.codes")


def _resolve_parents(codes: list[Code], *, path: str | Path | None) -> list[Code]:
    """Let ``parent`` name a code by id or by name."""
    ids = {c.id for c in codes}
    by_name = {c.name.strip().casefold(): c.id for c in codes}
    resolved = []
    for code in codes:
        parent = code.parent
        if parent is not None and parent not in ids:
            parent_id = by_name.get(parent.strip().casefold())
            if parent_id is None:
                raise CodebookError(
                    f"code {code.name!r} names an unknown parent {parent!r}", path=path
                )
            code = Code(**{**code.__dict__, "parent": parent_id})
        resolved.append(code)
    return resolved


def _parse_sets(
    raw: Any, codes: list[Code], *, path: str | Path | None
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise CodebookError("'sets' must be a list", path=path, where="sets")
    ids = {c.id for c in codes}
    by_name = {c.name.strip().casefold(): c.id for c in codes}
    sets = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or "name" not in item:
            raise CodebookError("each set needs a 'name' and 'codes'", path=path, where=f"sets[{i}]")
        members = []
        for member in item.get("codes") or ():
            key = str(member)
            if key not in ids:
                found = by_name.get(key.strip().casefold())
                if found is None:
                    raise CodebookError(
                        f"set {item['name']!r} names an unknown code {key!r}", path=path, where=f"sets[{i}]"
                    )
                key = found
            members.append(key)
        sets.append((str(item["name"]), tuple(members)))
    return tuple(sets)
