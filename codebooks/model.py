"""What may be asked: scales, codes and codebooks.

All three are frozen dataclasses so they can cross package boundaries, be hashed into a
score's identity and be snapshotted into a study without defensive copies.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from codebooks.errors import CodebookError

DEFAULT_QUESTION = "How well does the code apply to this response?"

# REFI-QDA's RGBType: "#" and three or six hex digits, either case.
COLOR = re.compile(r"#(?:[0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})")


@dataclass(frozen=True)
class Option:
    """One point of an ordinal scale.

    Attributes:
        label: The canonical text the model is asked to produce ("3", "Yes").
        value: The number stored for this point (1..5, or 0/1 for No/Yes).
        anchor: What the point means, shown to the model and the coder.
        variants: Surface renderings whose probabilities are pooled (METHOD.md): the
            label first, then e.g. the same with a leading space. Strict mode scores
            only ``variants[0]``.
    """

    label: str
    value: int
    anchor: str = ""
    variants: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.label:
            raise CodebookError("a scale option needs a non-empty label")
        if not self.variants:
            object.__setattr__(self, "variants", default_variants(self.label))
        elif self.variants[0] != self.label:
            object.__setattr__(self, "variants", (self.label, *self.variants))
        if len(set(self.variants)) != len(self.variants):
            raise CodebookError(f"option {self.label!r} lists a surface variant twice")


def default_variants(label: str) -> tuple[str, ...]:
    """The label as written and with one leading space, the two renderings tokenizers split."""
    return (label, " " + label)


@dataclass(frozen=True)
class Scale:
    """An ordered set of options, lowest first.

    Attributes:
        name: Short id ("1-5", "1-9", "binary").
        options: The points, in order.
        applies_from: Values at or above this count as "the code applies" when a decision
            is reduced to applies / does-not-apply (METHOD.md: above the midpoint).
    """

    name: str
    options: tuple[Option, ...]
    applies_from: int | None = None

    def __post_init__(self) -> None:
        if len(self.options) < 2:
            raise CodebookError(f"scale {self.name!r} needs at least two options")
        labels = [o.label for o in self.options]
        if len(set(labels)) != len(labels):
            raise CodebookError(f"scale {self.name!r} has duplicate option labels")
        values = [o.value for o in self.options]
        if values != sorted(values) or len(set(values)) != len(values):
            raise CodebookError(f"scale {self.name!r}: option values must strictly increase")
        variants = [v for o in self.options for v in o.variants]
        if len(set(variants)) != len(variants):
            raise CodebookError(f"scale {self.name!r}: two options share a surface variant")
        if self.applies_from is None:
            mid = (values[0] + values[-1]) / 2
            object.__setattr__(self, "applies_from", min(v for v in values if v > mid))
        elif not values[0] < self.applies_from <= values[-1]:
            raise CodebookError(
                f"scale {self.name!r}: applies_from {self.applies_from} must lie above the "
                f"lowest value {values[0]} and at most the highest {values[-1]}"
            )

    @property
    def k(self) -> int:
        """Number of options."""
        return len(self.options)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(o.label for o in self.options)

    def option_of(self, value: int) -> Option | None:
        """The option a stored value stands for; None when no option has it (a value
        recorded under an earlier version of the scale)."""
        return next((o for o in self.options if o.value == value), None)

    def label_of(self, value: int) -> str:
        """What a stored value is called: its option's label (``Yes`` for 1 on No/Yes),
        else the value in digits. Every screen, table and export names values by this."""
        option = self.option_of(value)
        return option.label if option is not None else str(value)

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(o.value for o in self.options)

    @property
    def lowest(self) -> Option:
        """The "does not apply" option."""
        return self.options[0]

    @property
    def threshold(self) -> int:
        """``applies_from`` as a plain int (it is always set after construction)."""
        assert self.applies_from is not None
        return self.applies_from

    def applies(self, value: int) -> bool:
        """Whether a decision of ``value`` means the code applies."""
        return value >= self.threshold

    def option_for_value(self, value: int) -> Option:
        for option in self.options:
            if option.value == value:
                return option
        raise CodebookError(f"{value} is not a value of scale {self.name!r} {self.values}")

    def strict(self) -> Scale:
        """The same scale scoring exactly one rendering per option."""
        return replace(self, options=tuple(replace(o, variants=(o.label,)) for o in self.options))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "applies_from": self.applies_from,
            "options": [
                {
                    "label": o.label,
                    "value": o.value,
                    "anchor": o.anchor,
                    "variants": list(o.variants),
                }
                for o in self.options
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scale:
        options = tuple(
            Option(
                label=str(o["label"]),
                value=int(o["value"]),
                anchor=str(o.get("anchor", "")),
                variants=tuple(str(v) for v in o.get("variants", ())),
            )
            for o in data["options"]
        )
        applies_from = data.get("applies_from")
        return cls(
            name=str(data["name"]),
            options=options,
            applies_from=None if applies_from is None else int(applies_from),
        )


def _numeric_scale(name: str, top: int, anchors: Mapping[int, str]) -> Scale:
    return Scale(
        name=name,
        options=tuple(Option(str(i), i, anchors.get(i, "")) for i in range(1, top + 1)),
    )


LIKERT_5 = _numeric_scale(
    "1-5",
    5,
    {
        1: "does not apply at all",
        2: "barely applies",
        3: "partly applies",
        4: "mostly applies",
        5: "fully applies",
    },
)
LIKERT_9 = _numeric_scale(
    "1-9", 9, {1: "does not apply at all", 5: "partly applies", 9: "fully applies"}
)
BINARY = Scale(
    name="binary",
    options=(
        Option("No", 0, "the code does not apply", ("No", " No", "no", " no")),
        Option("Yes", 1, "the code applies", ("Yes", " Yes", "yes", " yes")),
    ),
)

SCALES: dict[str, Scale] = {s.name: s for s in (LIKERT_5, LIKERT_9, BINARY)}


def get_scale(name: str) -> Scale:
    """A ready-made scale by name: ``1-5``, ``1-9`` or ``binary``."""
    try:
        return SCALES[name]
    except KeyError:
        known = ", ".join(SCALES)
        raise CodebookError(f"unknown scale {name!r}; choose one of {known}") from None


@dataclass(frozen=True)
class Code:
    """One code of a codebook (or, in other domains, one question).

    Attributes:
        id: Stable identifier, unique in the codebook.
        name: The name shown to the model and the coder, unique in the codebook.
        definition: What the code means.
        inclusion: When to apply it.
        exclusion: When not to apply it.
        examples: Short example texts where it applies.
        parent: ``id`` of the parent code, if any.
        codable: False for a category that only groups other codes.
        color: Optional ``#rrggbb`` (or ``#rgb``) colour, kept as written for REFI-QDA
            round trips.
        scale: A scale of its own, overriding the codebook's.
        questions: The survey questions the code applies to (values of the codebook's
            ``question_column``); empty: every response. Not part of what a prompt
            shows, so not of :meth:`content_hash` either.
    """

    id: str
    name: str
    definition: str = ""
    inclusion: str = ""
    exclusion: str = ""
    examples: tuple[str, ...] = ()
    parent: str | None = None
    codable: bool = True
    color: str | None = None
    scale: Scale | None = None
    questions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not str(self.id).strip():
            raise CodebookError("a code needs a non-empty id")
        if not str(self.name).strip():
            raise CodebookError(f"code {self.id!r} needs a non-empty name")
        if self.color is not None and not COLOR.fullmatch(self.color):
            raise CodebookError(
                f"code {self.name!r}: colour {self.color!r} is not #rrggbb or #rgb hex"
            )
        dup = _first_duplicate(self.questions)
        if dup is not None:
            raise CodebookError(f"code {self.name!r} names question {dup!r} twice")
        if any(not q.strip() for q in self.questions):
            raise CodebookError(f"code {self.name!r} names an empty question")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["examples"] = list(self.examples)
        data["scale"] = None if self.scale is None else self.scale.to_dict()
        # Left out when empty, so that an unscoped code's snapshot (and hash) is what it
        # was before codes could be scoped to questions.
        if self.questions:
            data["questions"] = list(self.questions)
        else:
            del data["questions"]
        return data

    def content_hash(self) -> str:
        """Hash of everything about the code that a prompt may show (its questions are
        not shown: scoping a code keeps its scores)."""
        data = self.to_dict()
        data.pop("questions", None)
        return _hash(data)


@dataclass(frozen=True)
class Codebook:
    """A set of codes asked with one question on one default scale.

    Attributes:
        name: Title of the codebook.
        codes: The codes, in the codebook's order (categories included).
        scale: The default scale for codes without their own.
        question: The question put to the model; ``{code}`` is replaced by the code name.
        description: Free text about the codebook.
        sets: Named groups of code ids (REFI-QDA sets).
        question_column: The response column naming the survey question a response
            answers (``question_id``), when codes are scoped to questions
            (:attr:`Code.questions`, :meth:`applies`); None: every code applies to
            every response.
    """

    name: str
    codes: tuple[Code, ...]
    scale: Scale = LIKERT_5
    question: str = DEFAULT_QUESTION
    description: str = ""
    sets: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())
    question_column: str | None = None

    def __post_init__(self) -> None:
        if not self.codes:
            raise CodebookError(f"codebook {self.name!r} has no codes")
        ids = [c.id for c in self.codes]
        dup = _first_duplicate(ids)
        if dup is not None:
            raise CodebookError(f"code id {dup!r} is used twice")
        dup = _first_duplicate(c.name.strip().casefold() for c in self.codes)
        if dup is not None:
            raise CodebookError(f"code name {dup!r} is used twice; code names must be unique")
        known = set(ids)
        for code in self.codes:
            if code.parent is not None and code.parent not in known:
                raise CodebookError(f"code {code.name!r} names an unknown parent {code.parent!r}")
        by_id = {c.id: c for c in self.codes}
        # Walk up from each code, stopping at codes already known to reach a root, so
        # the check stays linear even for a deep chain of nested codes.
        rooted: set[str] = set()
        for code in self.codes:
            chain: set[str] = set()
            current: str | None = code.id
            while current is not None and current not in rooted:
                if current in chain:
                    raise CodebookError(
                        f"code {by_id[current].name!r} is its own ancestor (a cycle of parents)"
                    )
                chain.add(current)
                current = by_id[current].parent
            rooted.update(chain)
        for set_name, members in self.sets:
            for member in members:
                if member not in known:
                    raise CodebookError(f"set {set_name!r} names an unknown code {member!r}")
        if self.question_column is not None and not self.question_column.strip():
            raise CodebookError("'question_column' must name a column of the responses")
        scoped = next((c for c in self.codes if c.questions), None)
        if scoped is not None and self.question_column is None:
            raise CodebookError(
                f"code {scoped.name!r} names questions, but the codebook names no "
                "'question_column' (the response column that says which question a "
                "response answers)"
            )

    def applies(self, code: Code, question: str | None) -> bool:
        """Whether ``code`` applies to a response answering ``question`` (its value in
        :attr:`question_column`; None when it has none). The one rule every pair of a
        study follows: a code without questions applies to every response."""
        return not code.questions or (question is not None and question in code.questions)

    @property
    def scoped(self) -> bool:
        """Whether any code is scoped to questions."""
        return any(c.questions for c in self.codes)

    def scoped_questions(self) -> tuple[str, ...]:
        """Every question a code names, in the order they first appear."""
        return tuple(dict.fromkeys(q for c in self.codes for q in c.questions))

    @property
    def codable(self) -> tuple[Code, ...]:
        """The codes a response can be coded with (categories left out)."""
        return tuple(c for c in self.codes if c.codable)

    def code(self, key: str) -> Code:
        """A code by id or (case-insensitive) name."""
        for c in self.codes:
            if c.id == key:
                return c
        folded = key.strip().casefold()
        for c in self.codes:
            if c.name.strip().casefold() == folded:
                return c
        raise CodebookError(f"no code named {key!r} in codebook {self.name!r}")

    def scale_for(self, code: Code) -> Scale:
        return code.scale or self.scale

    def path_of(self, code: Code) -> tuple[str, ...]:
        """Names from the root category down to ``code``."""
        by_id = {c.id: c for c in self.codes}
        names = [code.name]
        parent = code.parent
        while parent is not None:
            names.append(by_id[parent].name)
            parent = by_id[parent].parent
        return tuple(reversed(names))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "question": self.question,
            "scale": self.scale.to_dict(),
            "codes": [c.to_dict() for c in self.codes],
            "sets": [{"name": n, "codes": list(m)} for n, m in self.sets],
            **({} if self.question_column is None else {"question_column": self.question_column}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Codebook:
        """Inverse of :meth:`to_dict` (no validation of types beyond the dataclasses')."""
        codes = tuple(
            Code(
                id=str(c["id"]),
                name=str(c["name"]),
                definition=c.get("definition") or "",
                inclusion=c.get("inclusion") or "",
                exclusion=c.get("exclusion") or "",
                examples=tuple(c.get("examples") or ()),
                parent=c.get("parent"),
                codable=bool(c.get("codable", True)),
                color=c.get("color"),
                scale=None if not c.get("scale") else Scale.from_dict(c["scale"]),
                questions=tuple(str(q) for q in c.get("questions") or ()),
            )
            for c in data["codes"]
        )
        return cls(
            name=str(data["name"]),
            codes=codes,
            scale=Scale.from_dict(data["scale"]),
            question=str(data.get("question") or DEFAULT_QUESTION),
            description=str(data.get("description") or ""),
            sets=tuple((str(s["name"]), tuple(s["codes"])) for s in data.get("sets") or ()),
            question_column=None
            if data.get("question_column") is None
            else str(data["question_column"]),
        )

    def content_hash(self) -> str:
        return _hash(self.to_dict())


def _first_duplicate(items: Iterable[str]) -> str | None:
    seen: set[str] = set()
    for item in items:
        if item in seen:
            return item
        seen.add(item)
    return None


def _hash(data: Any) -> str:
    blob = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
