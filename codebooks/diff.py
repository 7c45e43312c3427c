"""The difference between two versions of a codebook.

Codes are matched by id first; a code whose id is new but whose name (case-insensitive)
is that of a code whose id is gone is the same code under a new id. Everything else is
added or removed. For each matched code the change says what differs: its name, its id,
the text a prompt shows (definition, inclusion, exclusion, examples), its scale, whether
it can be decided, the survey questions it applies to, and where it sits in the hierarchy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from codebooks.errors import CodebookError
from codebooks.model import Code, Codebook

ChangeKind = Literal["added", "removed", "renamed", "changed", "moved"]

#: The fields of a code compared as its content, in the order they are reported.
#: ``questions`` (the survey questions it applies to) changes the study's pairs, not what
#: a prompt shows.
CONTENT_FIELDS = (
    "definition",
    "inclusion",
    "exclusion",
    "examples",
    "scale",
    "codable",
    "color",
    "questions",
)


@dataclass(frozen=True)
class CodeChange:
    """One change to one code.

    Attributes:
        kind: ``added``, ``removed``, ``renamed`` (name or id), ``changed`` (content),
            ``moved`` (another parent).
        code_id: The code's id in the new version (the old one for ``removed``).
        old_id: The code's id in the old version (None for ``added``).
        fields: For ``changed``: the fields that differ (:data:`CONTENT_FIELDS`).
        before: For ``renamed`` and ``moved``: the old name (and id) or parent.
        after: The new one.
    """

    kind: ChangeKind
    code_id: str
    old_id: str | None = None
    fields: tuple[str, ...] = ()
    before: str = ""
    after: str = ""

    def describe(self) -> str:
        """One line for people, e.g. ``changed pay: definition, examples``."""
        if self.kind == "changed":
            return f"changed {self.code_id}: {', '.join(self.fields)}"
        if self.kind in ("renamed", "moved"):
            return f"{self.kind} {self.code_id}: {self.before} -> {self.after}"
        return f"{self.kind} {self.code_id}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "code_id": self.code_id,
            "old_id": self.old_id,
            "fields": list(self.fields),
            "before": self.before,
            "after": self.after,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CodeChange:
        return cls(
            kind=data["kind"],
            code_id=str(data["code_id"]),
            old_id=None if data.get("old_id") is None else str(data["old_id"]),
            fields=tuple(str(f) for f in data.get("fields", ())),
            before=str(data.get("before", "")),
            after=str(data.get("after", "")),
        )


@dataclass(frozen=True)
class CodebookDiff:
    """What changed from one codebook to the next.

    Attributes:
        changes: Per code, in the new codebook's order, removed codes last.
        matches: ``(old id, new id)`` of every code present in both.
        codebook_fields: Codebook-wide fields that differ (name, question,
            question_column, scale, description, sets).
    """

    changes: tuple[CodeChange, ...]
    matches: tuple[tuple[str, str], ...]
    codebook_fields: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.changes and not self.codebook_fields

    def of_kind(self, kind: ChangeKind) -> tuple[CodeChange, ...]:
        return tuple(c for c in self.changes if c.kind == kind)

    def lines(self) -> list[str]:
        """The changes, one line each (an empty list when nothing changed)."""
        out = (
            [f"changed codebook: {', '.join(self.codebook_fields)}"] if self.codebook_fields else []
        )
        return out + [c.describe() for c in self.changes]


def _match(old: Codebook, new: Codebook) -> dict[str, str]:
    """``new id -> old id`` for the codes present in both.

    Raises:
        CodebookError: a new code matches one old code by id and another by name.
    """
    old_ids = {c.id for c in old.codes}
    new_ids = {c.id for c in new.codes}
    old_by_name = {c.name.strip().casefold(): c for c in old.codes}
    matched: dict[str, str] = {}
    for code in new.codes:
        by_name = old_by_name.get(code.name.strip().casefold())
        if code.id in old_ids:
            if by_name is not None and by_name.id != code.id and by_name.id not in new_ids:
                raise CodebookError(
                    f"code {code.id!r} matches old code {code.id!r} by id and old code "
                    f"{by_name.id!r} by name: two old codes cannot become one; give the "
                    "merged code a new id and name, or keep the other code's id"
                )
            matched[code.id] = code.id
        elif by_name is not None and by_name.id not in new_ids:
            matched[code.id] = by_name.id
    return matched


def _content(code: Code, codebook: Codebook) -> dict[str, Any]:
    data = code.to_dict()
    data["scale"] = codebook.scale_for(code).to_dict()
    data["questions"] = list(code.questions)  # left out of to_dict() when empty
    return {f: data[f] for f in CONTENT_FIELDS}


def diff_codebooks(old: Codebook, new: Codebook) -> CodebookDiff:
    """The changes that turn ``old`` into ``new``.

    Raises:
        CodebookError: a code of ``new`` matches two codes of ``old`` (one by id, one by
            name).
    """
    matched = _match(old, new)
    old_to_new = {o: n for n, o in matched.items()}
    old_by_id = {c.id: c for c in old.codes}
    changes: list[CodeChange] = []
    for code in new.codes:
        old_id = matched.get(code.id)
        if old_id is None:
            changes.append(CodeChange("added", code.id))
            continue
        before = old_by_id[old_id]
        if before.name != code.name or old_id != code.id:
            changes.append(
                CodeChange(
                    "renamed",
                    code.id,
                    old_id,
                    before=f"{before.name} ({old_id})",
                    after=f"{code.name} ({code.id})",
                )
            )
        old_content, new_content = _content(before, old), _content(code, new)
        differ = tuple(f for f in CONTENT_FIELDS if old_content[f] != new_content[f])
        if differ:
            changes.append(CodeChange("changed", code.id, old_id, fields=differ))
        parent = None if before.parent is None else old_to_new.get(before.parent, before.parent)
        if parent != code.parent:
            changes.append(
                CodeChange(
                    "moved",
                    code.id,
                    old_id,
                    before=before.parent or "(top level)",
                    after=code.parent or "(top level)",
                )
            )
    kept = set(matched.values())
    changes.extend(CodeChange("removed", c.id, c.id) for c in old.codes if c.id not in kept)
    old_dict, new_dict = old.to_dict(), new.to_dict()
    fields = tuple(
        f
        for f in ("name", "question", "question_column", "description", "scale", "sets")
        if old_dict.get(f) != new_dict.get(f)
    )
    return CodebookDiff(
        changes=tuple(changes),
        matches=tuple((o, n) for n, o in matched.items()),
        codebook_fields=fields,
    )
