"""A REFI-QDA project as frozen dataclasses, and the error and report of its files.

The model keeps what codecurve exchanges: users, the code tree, variables and cases, text
sources with their codings, and notes. Identifiers are kept as strings exactly as read
(real tools write ids that are not GUIDs); the writer turns any that is not a GUID into
one, the same way everywhere it is referenced.

:class:`~study.errors.ProjectFileError` lives in :mod:`study.errors`; it is re-exported
here for the modules of this package.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from study.errors import ProjectFileError

#: Kinds of variable REFI-QDA knows (``typeOfVariable``).
VARIABLE_TYPES = ("Text", "Boolean", "Integer", "Float", "Date", "DateTime")

#: A variable's value: text, a truth value, a number, or none.
Value = str | bool | int | float | None

__all__ = [
    "VARIABLE_TYPES",
    "Case",
    "Coding",
    "Note",
    "NoteAnchor",
    "Project",
    "ProjectCode",
    "ProjectFileError",
    "ProjectSet",
    "ReadReport",
    "Skipped",
    "TextSource",
    "User",
    "Value",
    "Variable",
]


@dataclass(frozen=True)
class User:
    """Someone (or a model) who made codings or notes."""

    guid: str
    name: str


@dataclass(frozen=True)
class ProjectCode:
    """A code and, nested, its children.

    Attributes:
        guid: Its id.
        name: Its name.
        color: ``#rrggbb`` (or ``#rgb``) or ``None``.
        description: Free text; codecurve writes definition and criteria there.
        codable: False for a category that only groups codes.
        children: The codes under it.
    """

    guid: str
    name: str
    color: str | None = None
    description: str = ""
    codable: bool = True
    children: tuple[ProjectCode, ...] = ()


@dataclass(frozen=True)
class Variable:
    """A variable (an attribute of cases and sources) with its REFI-QDA type."""

    guid: str
    name: str
    type: str = "Text"


@dataclass(frozen=True)
class Case:
    """A case: the sources it groups and its variable values (variable guid, value)."""

    guid: str
    name: str
    source_guids: tuple[str, ...] = ()
    values: tuple[tuple[str, Value], ...] = ()


@dataclass(frozen=True)
class Coding:
    """A code applied to a span of a source's text.

    Attributes:
        guid: The coding's id.
        selection_guid: The id of the ``PlainTextSelection`` that holds it.
        code_guid: The code applied.
        start: First character (Unicode code points from 0).
        end: One past the last character.
        user_guid: Who applied it, if known.
        description: The selection's description (codecurve: value and confidence).
    """

    guid: str
    selection_guid: str
    code_guid: str
    start: int
    end: int
    user_guid: str | None = None
    description: str = ""


@dataclass(frozen=True)
class TextSource:
    """A text document: a survey response, an interview, a rendition of a PDF.

    Attributes:
        guid: Its id.
        name: Its name (codecurve: the response id).
        text: The plain text.
        codings: The codings in it.
        values: Its own variable values (variable guid, value).
        description: Free text.
    """

    guid: str
    name: str
    text: str
    codings: tuple[Coding, ...] = ()
    values: tuple[tuple[str, Value], ...] = ()
    description: str = ""


@dataclass(frozen=True)
class NoteAnchor:
    """The span of its source's text a note is about (a ``PlainTextSelection`` inside
    the note, where QualCoder looks for an annotation's place)."""

    guid: str
    start: int
    end: int


@dataclass(frozen=True)
class Note:
    """A note (memo) and the guids of what it is about (sources, selections, codes).

    Attributes:
        guid: Its id.
        name: Its name.
        text: Its text.
        user_guid: Who wrote it, if known.
        targets: The guids of what refers to it (sources, selections, codes).
        created: ``creationDateTime`` (ISO 8601), if known.
        modified: ``modifiedDateTime`` (ISO 8601), if known.
        anchor: The selection of the source it is about, if it names one.
        as_file: In a ``.qdpx``, keep its text in a file of its own
            (``plainTextPath``), as QDA programs keep a project's journal.
    """

    guid: str
    name: str
    text: str
    user_guid: str | None = None
    targets: tuple[str, ...] = ()
    created: str | None = None
    modified: str | None = None
    anchor: NoteAnchor | None = None
    as_file: bool = False


@dataclass(frozen=True)
class ProjectSet:
    """A named group of codes and sources (REFI-QDA's ``Set``): codecurve writes one per
    survey question of a scoped study (:mod:`study.scope`), holding the codes scoped to
    it and the sources answering it.

    Attributes:
        guid: Its id.
        name: Its name (codecurve: the question, a value of the question column).
        description: Free text.
        code_guids: Its member codes.
        source_guids: Its member sources.
    """

    guid: str
    name: str
    description: str = ""
    code_guids: tuple[str, ...] = ()
    source_guids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Project:
    """A whole project.

    Attributes:
        name: The project's name.
        users: Everyone credited with a coding or note.
        codes: The top-level codes (each holds its children).
        variables: Variables of cases and sources.
        cases: Cases.
        sources: Text sources (others are not kept; the reader reports them).
        notes: Notes.
        project_notes: Guids of the notes about the project as a whole.
        sets: Groups of codes and sources (codecurve: one per survey question).
        description: The project's description.
        origin: The program that wrote it.
        created: ``creationDateTime`` (ISO 8601), if known.
        extra: codecurve's own record kept beside ``project.qde`` in a ``.qdpx``
            (``codecurve.json``, parsed), empty for other programs' files.
    """

    name: str
    users: tuple[User, ...] = ()
    codes: tuple[ProjectCode, ...] = ()
    variables: tuple[Variable, ...] = ()
    cases: tuple[Case, ...] = ()
    sources: tuple[TextSource, ...] = ()
    notes: tuple[Note, ...] = ()
    project_notes: tuple[str, ...] = ()
    sets: tuple[ProjectSet, ...] = ()
    description: str = ""
    origin: str = ""
    created: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def all_codes(self) -> Iterator[tuple[ProjectCode, ProjectCode | None]]:
        """Every code in document order (parents first), with its parent."""
        stack: list[tuple[ProjectCode, ProjectCode | None]] = [
            (code, None) for code in reversed(self.codes)
        ]
        while stack:
            code, parent = stack.pop()
            yield code, parent
            stack.extend((child, code) for child in reversed(code.children))


@dataclass(frozen=True)
class Skipped:
    """One thing reading left out, and why."""

    what: str
    name: str
    reason: str


@dataclass(frozen=True)
class ReadReport:
    """Everything reading skipped or changed, so that nothing is dropped silently.

    ``read_from`` names the sources whose text came from somewhere other than their
    plain-text file (the inline ``PlainTextContent``, the ``.docx`` rendition), and why.
    """

    skipped: tuple[Skipped, ...] = ()
    read_from: tuple[Skipped, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.skipped or self.read_from)

    def summary(self) -> str:
        """One line per skipped or redirected thing; empty when there is none."""
        return "\n".join(f"{s.what} {s.name!r}: {s.reason}" for s in self.skipped + self.read_from)
