"""A :class:`Codebook` to and from plain data (parsed YAML or JSON), with clear errors.

The layout, shared by the YAML and JSON formats::

    name: Working life survey            # required
    question: How well does "{code}" apply to this response?   # optional
    question_column: question_id         # optional: the response column naming the
                                         # survey question each response answers
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
        scale: binary                    # this code's own scale, if it differs
        questions: [q1, q2]              # the questions it applies to (values of the
                                         # question_column); nested codes inherit them
        codes: [...]                     # nested children, another way to give parents
    sets:                                # optional
      - {name: Core, codes: [workload]}  # codes by id or name

A scale given as a mapping: ``{name: agree-3, applies_from: 3, options: [{label: "1",
value: 1, anchor: "disagree", variants: ["1", " 1"]}, ...]}``.

Reading never trusts the data's types: every value is checked before it is used, so a
malformed file gives a :class:`CodebookError` naming the key path, never a ``TypeError``
(and never ``str()`` of an arbitrary structure, which YAML aliases can make huge).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from codebooks.errors import CodebookError
from codebooks.model import (
    DEFAULT_QUESTION,
    SCALES,
    Code,
    Codebook,
    Option,
    Scale,
    default_variants,
    get_scale,
)

CODE_KEYS = (
    "name",
    "id",
    "definition",
    "inclusion",
    "exclusion",
    "examples",
    "parent",
    "codable",
    "color",
    "scale",
    "questions",
    "codes",
)
TOP_KEYS = ("name", "description", "question", "question_column", "scale", "codes", "sets")
_SET_KEYS = ("name", "codes")
_SCALE_KEYS = ("name", "applies_from", "options")
_OPTION_KEYS = ("label", "value", "anchor", "variants")

PathLike = str | Path | None


def slugify(name: str) -> str:
    """A readable id from a code name: lower case, runs of other characters become ``-``."""
    slug = re.sub(r"[^0-9a-z]+", "-", name.strip().casefold()).strip("-")
    return slug or "code"


# --- reading ---------------------------------------------------------------------------


def codebook_from_mapping(
    data: Any,
    *,
    path: PathLike = None,
    code_places: Sequence[str] | None = None,
) -> Codebook:
    """Validate parsed YAML/JSON data and build a codebook.

    Args:
        data: The parsed document.
        path: The file it came from, named in errors.
        code_places: How errors name each top-level code (e.g. ``"row 3"`` for a CSV);
            ``codes[i]`` by default.

    Raises:
        CodebookError: naming the file and the key path of the first problem.
    """
    if not isinstance(data, Mapping):
        raise CodebookError(
            "a codebook must be a mapping with at least 'name' and 'codes'", path=path
        )
    _check_keys(data, TOP_KEYS, "top-level key", path=path, where=None)
    name = _text(data, "name", path=path, where="name")
    if not name:
        name = Path(path).stem if path is not None else "codebook"
    raw_codes = data.get("codes")
    if not isinstance(raw_codes, list) or not raw_codes:
        raise CodebookError("'codes' must be a non-empty list of codes", path=path, where="codes")
    scale = _scale_at(data.get("scale", "1-5"), path=path, where="scale")
    collector = _CodeCollector(path)
    collector.collect(raw_codes, parent=None, where="codes", places=code_places)
    codes = collector.resolved()
    sets = _parse_sets(data.get("sets"), codes, path=path)
    question_column = _text(data, "question_column", path=path, where="question_column")
    try:
        return Codebook(
            name=name,
            codes=tuple(codes),
            scale=scale,
            question=_text(data, "question", path=path, where="question") or DEFAULT_QUESTION,
            description=_text(data, "description", path=path, where="description"),
            sets=sets,
            question_column=question_column or None,
        )
    except CodebookError as exc:
        raise CodebookError(exc.message, path=path) from None


def scale_from_value(value: Any) -> Scale:
    """A scale from a ready-made name (``1-5``, ``1-9``, ``binary``) or a mapping."""
    if isinstance(value, str):
        return get_scale(value.strip())
    if isinstance(value, int) and not isinstance(value, bool):
        # YAML reads an unquoted `scale: 5` as a number; name the fix.
        raise CodebookError(f"unknown scale {value}; write one of {', '.join(SCALES)}")
    if not isinstance(value, Mapping):
        raise CodebookError(
            f"a scale is a name ({', '.join(SCALES)}) or a mapping, not {_kind(value)}"
        )
    unknown = sorted(str(k) for k in value if k not in _SCALE_KEYS)
    if unknown:
        raise CodebookError(f"unknown scale key(s) {', '.join(unknown)}")
    raw_options = value.get("options")
    if not isinstance(raw_options, list):
        raise CodebookError("a scale mapping needs a list of 'options'")
    options = [_option(raw, i) for i, raw in enumerate(raw_options)]
    applies_from = value.get("applies_from")
    if applies_from is not None and not _is_int(applies_from):
        raise CodebookError("'applies_from' must be an integer")
    name = value.get("name", "custom")
    if not _is_scalar(name):
        raise CodebookError("a scale's 'name' must be text")
    return Scale(name=str(name), options=tuple(options), applies_from=applies_from)


def _option(raw: Any, i: int) -> Option:
    where = f"option {i + 1}"
    if _is_scalar(raw):
        raw = {"label": raw}
    if not isinstance(raw, Mapping) or not _is_scalar(raw.get("label")):
        raise CodebookError(f"{where} needs a 'label'")
    unknown = sorted(str(k) for k in raw if k not in _OPTION_KEYS)
    if unknown:
        raise CodebookError(f"{where}: unknown key(s) {', '.join(unknown)}")
    value = raw.get("value", i + 1)
    if not _is_int(value):
        raise CodebookError(f"{where}: 'value' must be an integer")
    anchor = raw.get("anchor")
    if anchor is not None and not _is_scalar(anchor):
        raise CodebookError(f"{where}: 'anchor' must be text")
    variants = raw.get("variants") or []
    if not isinstance(variants, list) or not all(isinstance(v, str) for v in variants):
        raise CodebookError(f"{where}: 'variants' must be a list of strings")
    return Option(
        label=str(raw["label"]),
        value=value,
        anchor="" if anchor is None else str(anchor),
        variants=tuple(variants),
    )


def _scale_at(value: Any, *, path: PathLike, where: str) -> Scale:
    try:
        return scale_from_value(value)
    except CodebookError as exc:
        raise CodebookError(exc.message, path=path, where=where) from None


class _CodeCollector:
    """Flattens nested codes, checking each as it comes so errors name their place."""

    def __init__(self, path: PathLike) -> None:
        self.path = path
        self.codes: list[Code] = []
        self.places: list[str] = []
        self.ids: set[str] = set()
        # Duplicates are refused as soon as they appear: besides a better message, this
        # stops YAML aliases that repeat a subtree from multiplying it exponentially.
        self.names: set[str] = set()

    def collect(
        self,
        raw_codes: list[Any],
        *,
        parent: str | None,
        where: str,
        places: Sequence[str] | None = None,
        questions: tuple[str, ...] = (),
    ) -> None:
        path = self.path
        for i, raw in enumerate(raw_codes):
            here = places[i] if places is not None and i < len(places) else f"{where}[{i}]"
            if _is_scalar(raw):
                raw = {"name": raw}
            if not isinstance(raw, Mapping):
                raise CodebookError(
                    "each code must be a mapping with a 'name'", path=path, where=here
                )
            code = self._code(raw, parent=parent, where=here, questions=questions)
            self.codes.append(code)
            self.places.append(here)
            children = raw.get("codes")
            if children is not None:
                if not isinstance(children, list):
                    raise CodebookError("nested 'codes' must be a list", path=path, where=here)
                self.collect(
                    children, parent=code.id, where=f"{here}.codes", questions=code.questions
                )

    def _code(
        self,
        raw: Mapping[Any, Any],
        *,
        parent: str | None,
        where: str,
        questions: tuple[str, ...] = (),
    ) -> Code:
        path = self.path
        _check_keys(raw, CODE_KEYS, "key", path=path, where=where)
        name = _text(raw, "name", path=path, where=where)
        if not name:
            raise CodebookError("a code needs a 'name'", path=path, where=where)
        code_id = _text(raw, "id", path=path, where=where) or slugify(name)
        if code_id in self.ids:
            raise CodebookError(f"code id {code_id!r} is used twice", path=path, where=where)
        folded = name.casefold()
        if folded in self.names:
            raise CodebookError(
                f"code name {name!r} is used twice; code names must be unique",
                path=path,
                where=where,
            )
        self.ids.add(code_id)
        self.names.add(folded)
        examples = raw.get("examples")
        if examples is None:
            examples = []
        elif _is_scalar(examples):
            examples = [examples]
        if not isinstance(examples, list) or not all(_is_scalar(e) for e in examples):
            raise CodebookError("'examples' must be a list of strings", path=path, where=where)
        codable = raw.get("codable", True)
        if not isinstance(codable, bool):
            raise CodebookError("'codable' must be true or false", path=path, where=where)
        own_parent = raw.get("parent")
        if own_parent is not None and not _is_scalar(own_parent):
            raise CodebookError("'parent' must be a code id or name", path=path, where=where)
        if own_parent is not None and str(own_parent).strip():
            parent = str(own_parent).strip()
        color = raw.get("color")
        if color is not None and not isinstance(color, str):
            raise CodebookError("'color' must be text like \"#aa3300\"", path=path, where=where)
        own_questions = _questions(raw.get("questions"), path=path, where=where)
        raw_scale = raw.get("scale")
        scale = None
        if raw_scale is not None:
            scale = _scale_at(raw_scale, path=path, where=f"{where}.scale")
        try:
            return Code(
                id=code_id,
                name=name,
                definition=_text(raw, "definition", path=path, where=where),
                inclusion=_text(raw, "inclusion", path=path, where=where),
                exclusion=_text(raw, "exclusion", path=path, where=where),
                examples=tuple(s for e in examples if (s := str(e).strip())),
                parent=parent,
                codable=codable,
                color=color.strip() if color else None,
                scale=scale,
                # A nested code without questions of its own inherits its parent's.
                questions=own_questions if own_questions is not None else questions,
            )
        except CodebookError as exc:
            raise CodebookError(exc.message, path=path, where=where) from None

    def resolved(self) -> list[Code]:
        """The codes with every ``parent`` turned into an id (it may name a code by name)."""
        ids = {c.id for c in self.codes}
        by_name = {c.name.casefold(): c.id for c in self.codes}
        resolved = []
        for code, where in zip(self.codes, self.places, strict=True):
            parent = code.parent
            if parent is not None and parent not in ids:
                parent_id = by_name.get(parent.casefold())
                if parent_id is None:
                    raise CodebookError(
                        f"code {code.name!r} names an unknown parent {parent!r}",
                        path=self.path,
                        where=where,
                    )
                code = replace(code, parent=parent_id)
            resolved.append(code)
        return resolved


def _questions(raw: Any, *, path: PathLike, where: str) -> tuple[str, ...] | None:
    """A code's ``questions``: a list of question values (or one); None when not given."""
    if raw is None:
        return None
    if _is_scalar(raw):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(_is_scalar(q) for q in raw):
        raise CodebookError(
            "'questions' must be a list of the questions the code applies to (values of "
            "the codebook's question_column)",
            path=path,
            where=where,
        )
    return tuple(str(q).strip() for q in raw)


def _parse_sets(
    raw: Any, codes: list[Code], *, path: PathLike
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise CodebookError("'sets' must be a list", path=path, where="sets")
    ids = {c.id for c in codes}
    by_name = {c.name.casefold(): c.id for c in codes}
    sets = []
    for i, item in enumerate(raw):
        where = f"sets[{i}]"
        if not isinstance(item, Mapping):
            raise CodebookError("each set needs a 'name' and 'codes'", path=path, where=where)
        _check_keys(item, _SET_KEYS, "key", path=path, where=where)
        name = _text(item, "name", path=path, where=where)
        if not name:
            raise CodebookError("a set needs a 'name'", path=path, where=where)
        raw_members = item.get("codes")
        if raw_members is None:
            raw_members = []
        if not isinstance(raw_members, list) or not all(_is_scalar(m) for m in raw_members):
            raise CodebookError(
                "a set's 'codes' must be a list of code ids or names", path=path, where=where
            )
        members = []
        for member in raw_members:
            key = str(member).strip()
            if key not in ids:
                found = by_name.get(key.casefold())
                if found is None:
                    raise CodebookError(
                        f"set {name!r} names an unknown code {key!r}", path=path, where=where
                    )
                key = found
            members.append(key)
        sets.append((name, tuple(members)))
    return tuple(sets)


def _check_keys(
    raw: Mapping[Any, Any], known: Sequence[str], what: str, *, path: PathLike, where: str | None
) -> None:
    unknown = sorted(str(k) for k in raw if k not in known)
    if unknown:
        raise CodebookError(
            f"unknown {what}(s) {', '.join(unknown)}; expected {', '.join(known)}",
            path=path,
            where=where,
        )


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    return "nothing" if value is None else f"a {type(value).__name__}"


def _text(raw: Mapping[Any, Any], key: str, *, path: PathLike, where: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if isinstance(value, bool):
        # YAML 1.1 reads yes/no/on/off as booleans: a code called No needs quotes.
        raise CodebookError(
            f"'{key}' must be text, not {value}; put it in quotes", path=path, where=where
        )
    if _is_scalar(value):
        return str(value).strip()
    raise CodebookError(f"'{key}' must be text, not {_kind(value)}", path=path, where=where)


# --- writing ---------------------------------------------------------------------------


def codebook_to_mapping(codebook: Codebook) -> dict[str, Any]:
    """The codebook as plain data in the layout above; :func:`codebook_from_mapping` of it
    gives back an equal codebook.

    Codes stay a flat list in the codebook's order, each naming its parent's id, so the
    order survives; defaults (no examples, codable, no colour) are left out.
    """
    data: dict[str, Any] = {"name": codebook.name}
    if codebook.description:
        data["description"] = codebook.description
    if codebook.question != DEFAULT_QUESTION:
        data["question"] = codebook.question
    if codebook.question_column is not None:
        data["question_column"] = codebook.question_column
    data["scale"] = scale_to_value(codebook.scale)
    data["codes"] = [code_to_mapping(c) for c in codebook.codes]
    if codebook.sets:
        data["sets"] = [{"name": n, "codes": list(m)} for n, m in codebook.sets]
    return data


def code_to_mapping(code: Code) -> dict[str, Any]:
    """One code as plain data, leaving out what reading would fill in anyway."""
    data: dict[str, Any] = {"name": code.name}
    if code.id != slugify(code.name):
        data["id"] = code.id
    for key in ("definition", "inclusion", "exclusion"):
        if getattr(code, key):
            data[key] = getattr(code, key)
    if code.examples:
        data["examples"] = list(code.examples)
    if code.parent is not None:
        data["parent"] = code.parent
    if not code.codable:
        data["codable"] = False
    if code.color is not None:
        data["color"] = code.color
    if code.scale is not None:
        data["scale"] = scale_to_value(code.scale)
    if code.questions:
        data["questions"] = list(code.questions)
    return data


def scale_to_value(scale: Scale) -> str | dict[str, Any]:
    """A ready-made scale's name, or the scale as a mapping."""
    if SCALES.get(scale.name) == scale:
        return scale.name
    options = []
    for option in scale.options:
        entry: dict[str, Any] = {"label": option.label, "value": option.value}
        if option.anchor:
            entry["anchor"] = option.anchor
        if option.variants != default_variants(option.label):
            entry["variants"] = list(option.variants)
        options.append(entry)
    return {"name": scale.name, "applies_from": scale.applies_from, "options": options}
