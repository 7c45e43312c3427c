"""Write a :class:`~study.refi._model.Project` as REFI-QDA: ``.qdpx`` (zip) or ``.qde``.

A ``.qdpx`` holds ``project.qde`` (valid against the standard's ``Project.xsd``), each
text source as UTF-8 under ``sources/<guid>.txt`` referenced as
``plainTextPath="internal://<guid>.txt"``, and, when the project carries one,
codecurve's own record ``codecurve.json`` (ignored by other programs). A ``.qde`` alone
holds each source's text inline (``PlainTextContent``).

Each coding is one ``PlainTextSelection`` (its ``Description`` carries the coding's
description) holding one ``Coding``. Ids that are not GUIDs become UUID5 GUIDs, the same
at every reference. Files are written to a temporary file and renamed into place, so a
failure leaves no partial file.
"""

from __future__ import annotations

import io
import json
import logging
import math
import re
import uuid
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path

from codebooks.files import write_atomic
from codebooks.qdc import origin as codecurve_origin
from study.refi._model import (
    VARIABLE_TYPES,
    Note,
    Project,
    ProjectCode,
    ProjectFileError,
    ProjectSet,
    TextSource,
    Value,
)

log = logging.getLogger(__name__)

NAMESPACE = "urn:QDA-XML:project:1.0"
#: Fixed forever: the GUIDs given to ids that are not GUIDs.
_FALLBACK_NAMESPACE = uuid.UUID("3f6b1c8e-2d7a-5e49-8c1f-5a0de6c0b0dc")
_GUID = re.compile(
    r"\{?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\}?"
)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_NOT_TEXT_FILE = re.compile("[\x00\ud800-\udfff]")
#: Name of codecurve's record inside a ``.qdpx``.
EXTRA_NAME = "codecurve.json"


def _stand_in(match: re.Match[str]) -> str:
    """A C0 control's Unicode picture (ESC as U+241B), else U+FFFD: one character."""
    code = ord(match.group())
    return chr(0x2400 + code) if code < 0x20 else "\ufffd"


def guid_of(raw: str) -> str:
    """``raw`` if it is a GUID, else a UUID5 GUID derived from it."""
    raw = raw.strip()
    if _GUID.fullmatch(raw) and (raw.startswith("{") == raw.endswith("}")):
        return raw
    return str(uuid.uuid5(_FALLBACK_NAMESPACE, raw))


def write_qdpx(project: Project, path: str | Path, *, protect: Iterable[str | Path] = ()) -> Path:
    """Write ``project`` as a ``.qdpx`` zip, atomically (never over a file in ``protect``).

    Raises:
        ProjectFileError: a text XML cannot hold, or the file cannot be written.
    """
    p = Path(path)
    qde = project_bytes(project, inline_text=False, path=p)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("project.qde", qde)
        for source in project.sources:
            # Written as it is, but for NUL (a text file with NUL reads as binary or
            # UTF-16: shown as its stand-in, as in the XML) and lone surrogates.
            text = _NOT_TEXT_FILE.sub(_stand_in, source.text)
            archive.writestr(f"sources/{guid_of(source.guid)}.txt", text.encode("utf-8"))
        for note in project.notes:
            if note.as_file:
                text = _NOT_TEXT_FILE.sub(_stand_in, note.text)
                archive.writestr(f"sources/{guid_of(note.guid)}.txt", text.encode("utf-8"))
        if project.extra:
            archive.writestr(EXTRA_NAME, json.dumps(project.extra, ensure_ascii=False, indent=1))
    _write(p, buffer.getvalue(), protect=protect)
    return p


def write_qde(project: Project, path: str | Path, *, protect: Iterable[str | Path] = ()) -> Path:
    """Write ``project`` as one ``.qde`` XML file (texts inline), atomically."""
    p = Path(path)
    _write(p, project_bytes(project, inline_text=True, path=p), protect=protect)
    return p


def _write(path: Path, data: bytes, *, protect: Iterable[str | Path]) -> None:
    write_atomic(path, data, protect=protect, error=ProjectFileError)


def project_bytes(
    project: Project, *, inline_text: bool = False, path: str | Path | None = None
) -> bytes:
    """``project.qde`` as UTF-8 bytes.

    Args:
        project: The project.
        inline_text: Hold each source's text in ``PlainTextContent`` (a lone ``.qde``)
            instead of referring to ``sources/<guid>.txt``.
        path: The file being written, named in errors.

    Raises:
        ProjectFileError: a name or text holds a character XML cannot hold.
    """
    return _Builder(path).build(project, inline_text=inline_text)


class _Builder:
    def __init__(self, path: str | Path | None) -> None:
        self.path = path

    def text(self, value: str, where: str) -> str:
        # A character XML cannot hold (an escape in a coder's name, a NUL in a text)
        # is written as its visible stand-in, one character for one, so that the
        # codings' offsets stay right; one such character never stops the export.
        if _NOT_XML.search(value):
            log.warning("%s: characters XML cannot hold written as stand-ins (%s)",
                        self.path, where)  # fmt: skip
            value = _NOT_XML.sub(_stand_in, value)
        # XML reads a carriage return in text as a line feed unless it is a reference;
        # NUL, replaced above, stands in for it until the document is serialised.
        return value.replace("\r", "\x00")

    def build(self, project: Project, *, inline_text: bool) -> bytes:
        attrs = {
            "xmlns": NAMESPACE,
            "name": self.text(project.name, "project name"),
            "origin": project.origin or codecurve_origin(),
        }
        if project.created:
            attrs["creationDateTime"] = project.created
        root = ET.Element("Project", attrs)
        if project.users:
            users = ET.SubElement(root, "Users")
            for user in project.users:
                ET.SubElement(
                    users,
                    "User",
                    {"guid": guid_of(user.guid), "name": self.text(user.name, "user name")},
                )
        refs = _note_refs(project.notes)
        if project.codes:
            codes = ET.SubElement(ET.SubElement(root, "CodeBook"), "Codes")
            self.codes(codes, project.codes, refs)
        if project.variables:
            variables = ET.SubElement(root, "Variables")
            for variable in project.variables:
                if variable.type not in VARIABLE_TYPES:
                    raise ProjectFileError(
                        f"variable {variable.name!r} has the type {variable.type!r}, not one "
                        f"of {', '.join(VARIABLE_TYPES)}",
                        path=self.path,
                    )
                ET.SubElement(
                    variables,
                    "Variable",
                    {
                        "guid": guid_of(variable.guid),
                        "name": self.text(variable.name, "variable name"),
                        "typeOfVariable": variable.type,
                    },
                )
        types = {guid_of(v.guid): v.type for v in project.variables}
        if project.cases:
            cases = ET.SubElement(root, "Cases")
            for case in project.cases:
                element = ET.SubElement(
                    cases,
                    "Case",
                    {"guid": guid_of(case.guid), "name": self.text(case.name, "case name")},
                )
                self.values(element, case.values, types, f"case {case.name!r}")
                for source_guid in case.source_guids:
                    ET.SubElement(element, "SourceRef", {"targetGUID": guid_of(source_guid)})
        if project.sources:
            sources = ET.SubElement(root, "Sources")
            for source in project.sources:
                self.source(sources, source, refs, types, inline_text=inline_text)
        if project.notes:
            notes = ET.SubElement(root, "Notes")
            for note in project.notes:
                self.note(notes, note, inline_text=inline_text)
        if project.sets:  # after Links (none), before Graphs (none), as the schema orders
            sets = ET.SubElement(root, "Sets")
            for group in project.sets:
                self.group(sets, group)
        if project.description:
            ET.SubElement(root, "Description").text = self.text(
                project.description, "project description"
            )
        for guid in project.project_notes:
            ET.SubElement(root, "NoteRef", {"targetGUID": guid_of(guid)})
        try:
            ET.indent(root, space=" ")
            body = ET.tostring(root, encoding="unicode").replace("\x00", "&#13;")
        except RecursionError:
            raise ProjectFileError(
                "codes are nested too deeply to write as XML", path=self.path
            ) from None
        return ('<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n").encode("utf-8")

    def codes(
        self, parent: ET.Element, codes: tuple[ProjectCode, ...], refs: dict[str, list[str]]
    ) -> None:
        # Iterative, so that no nesting depth exhausts the stack.
        stack = [(code, parent) for code in reversed(codes)]
        while stack:
            code, container = stack.pop()
            attrs = {
                "guid": guid_of(code.guid),
                "name": self.text(code.name, "code name"),
                "isCodable": "true" if code.codable else "false",
            }
            if code.color:
                attrs["color"] = code.color
            element = ET.SubElement(container, "Code", attrs)
            if code.description:
                ET.SubElement(element, "Description").text = self.text(
                    code.description, f"code {code.name!r}"
                )
            for note in refs.get(guid_of(code.guid), ()):
                ET.SubElement(element, "NoteRef", {"targetGUID": note})
            stack.extend((child, element) for child in reversed(code.children))

    def source(
        self,
        sources: ET.Element,
        source: TextSource,
        refs: dict[str, list[str]],
        types: dict[str, str],
        *,
        inline_text: bool,
    ) -> None:
        guid = guid_of(source.guid)
        where = f"source {source.name!r}"
        attrs = {"guid": guid, "name": self.text(source.name, where)}
        if not inline_text:
            attrs["plainTextPath"] = f"internal://{guid}.txt"
        element = ET.SubElement(sources, "TextSource", attrs)
        if source.description:
            ET.SubElement(element, "Description").text = self.text(source.description, where)
        if inline_text:
            ET.SubElement(element, "PlainTextContent").text = self.text(source.text, where)
        length = len(source.text)
        for coding in source.codings:
            if not 0 <= coding.start <= coding.end <= length:
                raise ProjectFileError(
                    f"a coding spans {coding.start}..{coding.end}, outside the text (0..{length})",
                    path=self.path,
                    where=where,
                )
            attrs = {
                "guid": guid_of(coding.selection_guid),
                "startPosition": str(coding.start),
                "endPosition": str(coding.end),
            }
            if coding.user_guid:
                attrs["creatingUser"] = guid_of(coding.user_guid)
            selection = ET.SubElement(element, "PlainTextSelection", attrs)
            if coding.description:
                ET.SubElement(selection, "Description").text = self.text(coding.description, where)
            coding_attrs = {"guid": guid_of(coding.guid)}
            if coding.user_guid:
                coding_attrs["creatingUser"] = guid_of(coding.user_guid)
            coding_element = ET.SubElement(selection, "Coding", coding_attrs)
            ET.SubElement(coding_element, "CodeRef", {"targetGUID": guid_of(coding.code_guid)})
            for note in refs.get(guid_of(coding.selection_guid), ()):
                ET.SubElement(selection, "NoteRef", {"targetGUID": note})
        for note in refs.get(guid, ()):
            ET.SubElement(element, "NoteRef", {"targetGUID": note})
        self.values(element, source.values, types, where)

    def values(
        self,
        element: ET.Element,
        values: tuple[tuple[str, Value], ...],
        types: dict[str, str],
        where: str,
    ) -> None:
        for variable_guid, value in values:
            if value is None:
                continue
            guid = guid_of(variable_guid)
            kind = types.get(guid)
            if kind is None:
                raise ProjectFileError(
                    f"a value names the variable {variable_guid!r}, which the project lacks",
                    path=self.path,
                    where=where,
                )
            holder = ET.SubElement(element, "VariableValue")
            ET.SubElement(holder, "VariableRef", {"targetGUID": guid})
            ET.SubElement(holder, f"{kind}Value").text = self.text(_value_text(value, kind), where)

    def group(self, sets: ET.Element, group: ProjectSet) -> None:
        element = ET.SubElement(
            sets,
            "Set",
            {"guid": guid_of(group.guid), "name": self.text(group.name, "set name")},
        )
        if group.description:
            ET.SubElement(element, "Description").text = self.text(
                group.description, f"set {group.name!r}"
            )
        for guid in group.code_guids:
            ET.SubElement(element, "MemberCode", {"targetGUID": guid_of(guid)})
        for guid in group.source_guids:
            ET.SubElement(element, "MemberSource", {"targetGUID": guid_of(guid)})

    def note(self, notes: ET.Element, note: Note, *, inline_text: bool) -> None:
        # Author and dates on every note: QualCoder reads a note's creation (or
        # modification) date unconditionally, and credits an annotation to its
        # modifying user first.
        guid = guid_of(note.guid)
        attrs = {"guid": guid, "name": self.text(note.name, "note name")}
        if note.as_file and not inline_text:
            attrs["plainTextPath"] = f"internal://{guid}.txt"
        if note.user_guid:
            attrs["creatingUser"] = guid_of(note.user_guid)
        if note.created:
            attrs["creationDateTime"] = note.created
        if note.user_guid:
            attrs["modifyingUser"] = guid_of(note.user_guid)
        if note.modified or note.created:
            attrs["modifiedDateTime"] = note.modified or note.created or ""
        element = ET.SubElement(notes, "Note", attrs)
        if not (note.as_file and not inline_text):
            ET.SubElement(element, "PlainTextContent").text = self.text(
                note.text, f"note {note.name!r}"
            )
        if note.anchor is not None:
            ET.SubElement(
                element,
                "PlainTextSelection",
                {
                    "guid": guid_of(note.anchor.guid),
                    "startPosition": str(note.anchor.start),
                    "endPosition": str(note.anchor.end),
                },
            )


def _note_refs(notes: tuple[Note, ...]) -> dict[str, list[str]]:
    refs: dict[str, list[str]] = {}
    for note in notes:
        for target in note.targets:
            refs.setdefault(guid_of(target), []).append(guid_of(note.guid))
    return refs


def _value_text(value: Value, kind: str) -> str:
    """A value as the XML Schema type of its variable spells it."""
    if kind == "Boolean":
        return "true" if value else "false"
    if kind == "Integer" and isinstance(value, int):
        return str(value)
    if kind == "Float" and isinstance(value, (int, float)) and math.isfinite(value):
        return format(Decimal(repr(float(value))), "f")
    return str(value)
