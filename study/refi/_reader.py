"""Read a REFI-QDA project (``.qdpx`` zip or ``.qde`` XML) as real programs write it.

Accepted beyond the schema: any namespace (``urn:QDA-XML:project:1.0``, the ``0:4``-style
variants of MAXQDA and ATLAS.ti, none; ``schemaLocation`` is never followed), no XML
declaration, single quotes, CRLF, a byte-order mark; empty sets; ids that are not GUIDs
(GUIDs are compared without braces and case); colours in either case or none; any nesting
depth; parents that are codable; the ``.qde`` anywhere in the zip (``project.qde`` or
the program's own name) with sources in a folder of any case (``Sources/``,
``sources/``); sources as ``internal://`` or ``relative://`` paths (the latter against
the project's ``basePath``), as ``.txt`` or as a ``.docx``/``.pdf`` with a plain-text
rendition (``plainTextPath``), or inline (``PlainTextContent``).

Skipped, and listed in the :class:`~study.refi._model.ReadReport`: sources that are not
text (pictures, audio, video, a PDF without a text rendition), sources whose text cannot
be found or read, references that leave the project's folder, codings of unknown codes
or of PDF regions, sets, links and graphs. Refused with a
:class:`~study.refi._model.ProjectFileError` naming the file and the place: zip slip, zip
bombs (:mod:`study.refi._archive`), DTDs and entities (``defusedxml``), malformed XML.
"""

from __future__ import annotations

import abc
import json
import logging
import os
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any
from xml.parsers import expat

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from codebooks.model import COLOR
from study.refi._archive import Archive, Limits, unsafe_name
from study.refi._docx_text import DocxError, docx_text
from study.refi._model import (
    VARIABLE_TYPES,
    Case,
    Coding,
    Note,
    NoteAnchor,
    Project,
    ProjectCode,
    ProjectFileError,
    ProjectSet,
    ReadReport,
    Skipped,
    TextSource,
    User,
    Value,
    Variable,
)
from study.refi._writer import EXTRA_NAME

logger = logging.getLogger(__name__)

_ZIP_MAGIC = b"PK\x03\x04"
_NOT_TEXT = {
    "PictureSource": "a picture",
    "AudioSource": "audio",
    "VideoSource": "video",
}


def read_project(path: str | Path, *, limits: Limits | None = None) -> tuple[Project, ReadReport]:
    """Read a ``.qdpx`` or ``.qde`` file (told apart by content, not by suffix).

    Args:
        path: The file.
        limits: Size limits for a zip (default: :mod:`study.refi._archive`'s constants).

    Returns:
        The project, and a report of everything skipped.

    Raises:
        ProjectFileError: the file cannot be read, is unsafe, or is not a project.
    """
    p = Path(path)
    limits = limits or Limits()
    try:
        with open(p, "rb") as handle:
            magic = handle.read(4)
            size = os.fstat(handle.fileno()).st_size
    except FileNotFoundError:
        raise ProjectFileError("no such file", path=p) from None
    except IsADirectoryError:
        raise ProjectFileError("is a directory, not a project file", path=p) from None
    except OSError as exc:
        raise ProjectFileError(f"cannot read the file ({exc.strerror or exc})", path=p) from None
    if magic == _ZIP_MAGIC:
        archive = Archive(p, limits=limits)
        try:
            return _read_zip(archive)
        finally:
            archive.close()
    if size > limits.entry_bytes:
        raise ProjectFileError(
            f"is {size} bytes, more than the {limits.entry_bytes} allowed for a .qde", path=p
        )
    data = p.read_bytes()
    files = _Folder(p.parent.resolve(), limits)
    return _Parser(p, p.name, files).parse(data, extra={})


def _read_zip(archive: Archive) -> tuple[Project, ReadReport]:
    qdes = [n for n in archive.names() if n.casefold().endswith(".qde")]
    if not qdes:
        raise ProjectFileError(
            "no .qde project file in the archive; is this a REFI-QDA project (.qdpx)?",
            path=archive.path,
        )
    if len(qdes) > 1:
        top = [n for n in qdes if "/" not in n.replace("\\", "/")]
        if len(top) != 1:
            raise ProjectFileError(
                f"holds {len(qdes)} .qde files ({', '.join(sorted(qdes)[:5])}); expected one",
                path=archive.path,
            )
        qdes = top
    qde = qdes[0]
    folder = str(PurePosixPath(qde.replace("\\", "/")).parent)
    folder = "" if folder == "." else folder + "/"
    extra: dict[str, Any] = {}
    report: list[Skipped] = []
    extra_name = archive.find(folder + EXTRA_NAME)
    if extra_name is not None:
        try:
            loaded = json.loads(
                archive.read(extra_name).decode("utf-8"), parse_constant=_no_constant
            )
            problem = record_problem(loaded)
            if problem is not None:
                raise ValueError(problem)
            extra = loaded
        except RecursionError:
            report.append(Skipped("file", extra_name, "not codecurve's record (nested too "
                                  "deeply); ignored"))  # fmt: skip
        except (UnicodeDecodeError, ValueError) as exc:
            report.append(Skipped("file", extra_name, f"not codecurve's record ({exc}); ignored"))
    files = _Zipped(archive, folder)
    parser = _Parser(archive.path, qde, files)
    parser.skipped.extend(report)
    return parser.parse(archive.read(qde), extra=extra)


# --- where source texts come from -----------------------------------------------------------


#: Deepest nesting of codes read (real programs nest up to about seven levels).
MAX_CODE_DEPTH = 100
#: Most codes read from one project.
MAX_CODES = 50_000


class _Files(abc.ABC):
    """Finds the bytes a ``plainTextPath`` names; returns (bytes, None) or (None, why)."""

    def get(self, reference: str, base: str) -> tuple[bytes | None, str]:
        scheme, _, rest = reference.partition("://")
        if not _:
            scheme, rest = "relative", reference
        scheme = scheme.casefold()
        rest = rest.replace("\\", "/")
        if scheme == "internal":
            if unsafe_name(rest):
                return None, f"{reference!r} climbs out of the project; refused"
            return self.internal(rest)
        if scheme == "relative":
            if unsafe_name(rest):
                return None, f"{reference!r} climbs out of the project's folder; refused"
            return self.relative(rest, base.replace("\\", "/"))
        return None, f"{reference!r} is not inside the project (only internal:// and relative://)"

    @abc.abstractmethod
    def internal(self, name: str) -> tuple[bytes | None, str]:
        """The bytes of ``internal://name``."""

    @abc.abstractmethod
    def relative(self, name: str, base: str) -> tuple[bytes | None, str]:
        """The bytes of ``relative://name`` under the project's ``basePath``."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"holds {name}, which is not a number JSON knows")


def _strings(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def _decision_entry(entry: object) -> bool:
    """``[source guid, code guid, user guid or null, value, source]``, and in newer
    records a sixth item: whether the decision was made blind (true, false or null)."""
    if not isinstance(entry, list) or len(entry) not in (5, 6):
        return False
    source, code, user, value, how = entry[:5]
    blind = entry[5] if len(entry) == 6 else None
    return (
        (blind is None or isinstance(blind, bool))
        and isinstance(source, str)
        and isinstance(code, str)
        and (user is None or isinstance(user, str))
        and isinstance(value, int)
        and not isinstance(value, bool)
        and isinstance(how, str)
    )


def record_problem(loaded: object) -> str | None:
    """Why ``loaded`` (a parsed ``codecurve.json``) is not codecurve's record, or None.

    A record another program (or a hand) changed is ignored whole, as one that is not
    JSON is: the project's own XML is read instead. Only the shape is checked here; the
    codebook in it is checked where it is used.
    """
    if not isinstance(loaded, dict):
        return "not an object"
    checks: dict[str, Callable[[object], bool]] = {
        "codes": _strings,
        "codebook": lambda v: isinstance(v, dict),
        "decisions": lambda v: isinstance(v, list) and all(_decision_entry(e) for e in v),
        "notes": _strings,
        "models": lambda v: isinstance(v, list) and all(isinstance(m, str) for m in v),
    }
    for key, check in checks.items():
        if key in loaded and not check(loaded[key]):
            return f"its {key!r} is not as codecurve writes it"
    return None


class _Zipped(_Files):
    def __init__(self, archive: Archive, folder: str) -> None:
        self.archive = archive
        self.folder = folder

    def _first(self, candidates: list[str], reference: str) -> tuple[bytes | None, str]:
        for candidate in candidates:
            found = self.archive.find(candidate)
            if found is not None:
                return self.archive.read(found), ""
        return None, f"{reference} is not in the archive"

    def internal(self, name: str) -> tuple[bytes | None, str]:
        candidates = [f"{self.folder}sources/{name}", f"sources/{name}", f"{self.folder}{name}"]
        return self._first(candidates, f"internal://{name}")

    def relative(self, name: str, base: str) -> tuple[bytes | None, str]:
        # The base path names the author's disk; inside a zip only the relative part counts.
        candidates = [f"{self.folder}{name}", name, f"{self.folder}sources/{name}"]
        if base and not unsafe_name(base):
            candidates.insert(0, f"{self.folder}{base.rstrip('/')}/{name}")
        candidates.append(f"{self.folder}sources/{PurePosixPath(name).name}")
        return self._first(candidates, f"relative://{name}")


class _Folder(_Files):
    """Files beside a lone ``.qde``: never outside its folder."""

    def __init__(self, folder: Path, limits: Limits) -> None:
        self.folder = folder
        self.limits = limits

    def _read(self, path: Path, reference: str) -> tuple[bytes | None, str]:
        try:
            resolved = path.resolve()
        except OSError:
            return None, f"{reference} cannot be resolved"
        if not resolved.is_relative_to(self.folder):
            return None, f"{reference} lies outside the project's folder; refused"
        try:
            if resolved.stat().st_size > self.limits.entry_bytes:
                return None, f"{reference} is larger than {self.limits.entry_bytes} bytes"
            return resolved.read_bytes(), ""
        except OSError as exc:
            return None, f"{reference} cannot be read ({exc.strerror or exc})"

    def internal(self, name: str) -> tuple[bytes | None, str]:
        for folder in ("sources", "Sources"):
            if (self.folder / folder / name).exists():
                return self._read(self.folder / folder / name, f"internal://{name}")
        return None, f"internal://{name} is not in the project's sources folder"

    def relative(self, name: str, base: str) -> tuple[bytes | None, str]:
        root = self.folder
        if base:
            candidate = Path(base)
            root = candidate if candidate.is_absolute() else self.folder / candidate
            if not (root / name).exists():
                root = self.folder
        if not (root / name).exists() and (self.folder / "sources" / name).exists():
            root = self.folder / "sources"
        return self._read(root / name, f"relative://{name}")


# --- the XML --------------------------------------------------------------------------------


def _local(tag: object) -> str:
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def _children(element: ET.Element, local: str) -> list[ET.Element]:
    return [c for c in element if _local(c.tag) == local]


def _child(element: ET.Element, local: str) -> ET.Element | None:
    return next((c for c in element if _local(c.tag) == local), None)


def _section(root: ET.Element, local: str) -> ET.Element:
    """The section ``local`` of the project (``Users``, ``Cases`` ...), or the root when a
    file puts its items there directly. Tested with ``is None``: an element's truth value
    is its having children (deprecated since Python 3.12), not its being there."""
    section = _child(root, local)
    return root if section is None else section


def _text(element: ET.Element | None) -> str:
    return "" if element is None else "".join(element.itertext())


def _guid_clashes(project: Project) -> list[str]:
    """``GUID is both code 'A' and code 'B'`` for each GUID that names two things: two
    users, two codes, two selections, a source and a selection, a note and a code...
    (two codings of one selection share its GUID, as they should)."""
    owners: dict[str, tuple[object, str]] = {}
    clashes: list[str] = []

    def own(guid: str | None, identity: object, what: str) -> None:
        key = _key(guid)
        if not key:
            return
        first = owners.setdefault(key, (identity, what))
        if first[0] != identity:
            clashes.append(f"{guid} is both {first[1]} and {what}")

    for i, user in enumerate(project.users):
        own(user.guid, ("user", i), f"user {user.name!r}")
    for i, (code, _parent) in enumerate(project.all_codes()):
        own(code.guid, ("code", i), f"code {code.name!r}")
    for i, source in enumerate(project.sources):
        own(source.guid, ("source", i), f"source {source.name!r}")
        for coding in source.codings:
            where = (i, coding.start, coding.end)
            own(coding.selection_guid, ("selection", where),
                f"a selection of {source.name!r} at {coding.start}-{coding.end}")  # fmt: skip
    for i, note in enumerate(project.notes):
        own(note.guid, ("note", i), f"note {note.name!r}")
    return clashes


def _key(guid: str | None) -> str:
    """A GUID as compared between elements: no braces, lower case."""
    return (guid or "").strip().strip("{}").casefold()


def _decode(data: bytes) -> str | None:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


class _Parser:
    def __init__(self, path: Path, entry: str, files: _Files) -> None:
        self.path = path
        self.entry = entry
        self.files = files
        self.skipped: list[Skipped] = []
        self.read_from: list[Skipped] = []
        self.targets: dict[str, list[str]] = defaultdict(list)  # note -> what refers to it
        self.base = ""

    def skip(self, what: str, name: str, reason: str) -> None:
        self.skipped.append(Skipped(what, name, reason))

    def fallback(self, name: str, how: str) -> None:
        self.read_from.append(Skipped("source", name, how))

    def parse(self, data: bytes, *, extra: dict[str, Any]) -> tuple[Project, ReadReport]:
        root = self.xml(data)
        if _local(root.tag) != "Project":
            what = "codebook (.qdc)" if _local(root.tag) == "CodeBook" else f"<{_local(root.tag)}>"
            raise ProjectFileError(
                f"not a REFI-QDA project: the root element is a {what}, expected <Project>",
                path=self.path,
                where=self.entry,
            )
        self.base = root.get("basePath", "")
        users = self.users(root)
        codes_element = _child(_section(root, "CodeBook"), "Codes")
        codes = () if codes_element is None else self.codes(codes_element)
        variables = self.variables(root)
        types = {v.guid: v.type for v in variables}
        cases = self.cases(root, types)
        sources = self.sources(root, types)
        for ref in _children(root, "NoteRef"):
            self.targets[_key(ref.get("targetGUID"))].append("")
        notes = self.notes(root)
        sets = self.sets(root)
        for kind in ("Links", "Graphs"):
            container = _child(root, kind)
            if container is not None and len(container):
                self.skip(kind.lower(), kind, f"{len(container)} not imported")
        project = Project(
            name=root.get("name", "") or self.path.stem,
            users=users,
            codes=codes,
            variables=variables,
            cases=cases,
            sources=sources,
            notes=notes,
            project_notes=tuple(n.guid for n in notes if "" in self.targets[n.guid]),
            sets=sets,
            description=_text(_child(root, "Description")),
            origin=root.get("origin", ""),
            created=root.get("creationDateTime"),
            extra=extra,
        )
        clashes = _guid_clashes(project)
        if clashes:
            raise ProjectFileError(
                f"gives one GUID to two things ({'; '.join(clashes[:3])}"
                f"{'; ...' if len(clashes) > 3 else ''}): its codings and notes cannot be "
                "told apart, so nothing is imported; fix the project in the program that "
                "wrote it",
                path=self.path,
                where=self.entry,
            )
        return project, ReadReport(tuple(self.skipped), tuple(self.read_from))

    def xml(self, data: bytes) -> ET.Element:
        try:
            root: ET.Element = SafeET.fromstring(data, forbid_dtd=True)
        except DefusedXmlException:
            raise ProjectFileError(
                "declares a DTD or entities; REFI-QDA projects have none, and they are "
                "refused for safety",
                path=self.path,
                where=self.entry,
            ) from None
        except ET.ParseError as exc:
            line, column = exc.position
            raise ProjectFileError(
                f"malformed XML: {expat.ErrorString(exc.code)}",
                path=self.path,
                where=f"{self.entry}, line {line}, column {column + 1}",
            ) from None
        except (LookupError, ValueError) as exc:
            raise ProjectFileError(
                f"malformed XML: {exc}", path=self.path, where=self.entry
            ) from None
        return root

    def users(self, root: ET.Element) -> tuple[User, ...]:
        users = []
        for i, element in enumerate(_children(_section(root, "Users"), "User"), 1):
            guid = _key(element.get("guid"))
            if not guid:
                self.skip("user", element.get("name", f"User {i}"), "has no guid")
                continue
            users.append(User(guid, (element.get("name") or element.get("id") or "").strip()))
        return tuple(users)

    def codes(self, codes_element: ET.Element) -> tuple[ProjectCode, ...]:
        # Preorder with parent indices, then built leaves first: no recursion.
        # Depth and count are capped while walking, before anything per code is kept: a
        # hostile project nesting codes 100,000 deep would otherwise cost memory growing
        # with the square of its depth (each code's place is a path).
        order: list[tuple[ET.Element, int, str]] = []
        stack = [
            (e, -1, f"Codes/Code[{i}]", 1)
            for i, e in enumerate(_children(codes_element, "Code"), 1)
        ]
        stack.reverse()
        while stack:
            element, parent, where, depth = stack.pop()
            if depth > MAX_CODE_DEPTH:
                raise ProjectFileError(
                    f"its codes nest more than {MAX_CODE_DEPTH} levels deep (QDA programs "
                    "nest a few); refused",
                    path=self.path,
                    where=self.entry,
                )
            order.append((element, parent, where))
            if len(order) > MAX_CODES:
                raise ProjectFileError(
                    f"it holds more than {MAX_CODES} codes; refused",
                    path=self.path,
                    where=self.entry,
                )
            index = len(order) - 1
            kids = _children(element, "Code")
            stack.extend(
                (kid, index, f"{where}/Code[{i}]", depth + 1)
                for i, kid in reversed(list(enumerate(kids, 1)))
            )
        children: dict[int, list[ProjectCode]] = defaultdict(list)
        built: list[ProjectCode | None] = [None] * len(order)
        for index in range(len(order) - 1, -1, -1):
            element, parent, where = order[index]
            name = (element.get("name") or "").strip() or f"Code {index + 1}"
            guid = _key(element.get("guid")) or f"code:{where}"
            codable_raw = (element.get("isCodable") or "true").strip().casefold()
            if codable_raw not in ("true", "1", "false", "0"):
                self.skip("isCodable", name, f"{codable_raw!r} is not true or false; taken as true")
            color = (element.get("color") or "").strip() or None
            if color is not None and not COLOR.fullmatch(color):
                self.skip("colour", name, f"{color!r} is not #rrggbb; left out")
                color = None
            for ref in _children(element, "NoteRef"):
                self.targets[_key(ref.get("targetGUID"))].append(guid)
            built[index] = ProjectCode(
                guid=guid,
                name=name,
                color=color,
                description=_text(_child(element, "Description")),
                codable=codable_raw not in ("false", "0"),
                children=tuple(reversed(children.pop(index, []))),
            )
            children[parent].append(built[index])  # type: ignore[arg-type]
        return tuple(reversed(children[-1]))

    def variables(self, root: ET.Element) -> tuple[Variable, ...]:
        variables = []
        for element in _children(_section(root, "Variables"), "Variable"):
            name = (element.get("name") or "").strip()
            guid = _key(element.get("guid"))
            if not name or not guid:
                self.skip("variable", name or guid, "has no name or no guid")
                continue
            kind = (element.get("typeOfVariable") or "Text").strip()
            kind = next((t for t in VARIABLE_TYPES if t.casefold() == kind.casefold()), "Text")
            variables.append(Variable(guid, name, kind))
        return tuple(variables)

    def values(self, element: ET.Element, types: dict[str, str]) -> tuple[tuple[str, Value], ...]:
        values: list[tuple[str, Value]] = []
        for holder in _children(element, "VariableValue"):
            ref = _child(holder, "VariableRef")
            guid = _key(None if ref is None else ref.get("targetGUID"))
            value_element = next((c for c in holder if _local(c.tag).endswith("Value")), None)
            if guid not in types or value_element is None:
                self.skip("variable value", guid, "names no known variable, or has no value")
                continue
            values.append((guid, _value(_local(value_element.tag), _text(value_element))))
        return tuple(values)

    def cases(self, root: ET.Element, types: dict[str, str]) -> tuple[Case, ...]:
        cases = []
        for i, element in enumerate(_children(_section(root, "Cases"), "Case"), 1):
            guid = _key(element.get("guid")) or f"case:{i}"
            cases.append(
                Case(
                    guid=guid,
                    name=element.get("name", "") or guid,
                    source_guids=tuple(
                        _key(r.get("targetGUID")) for r in _children(element, "SourceRef")
                    ),
                    values=self.values(element, types),
                )
            )
        return tuple(cases)

    def sources(self, root: ET.Element, types: dict[str, str]) -> tuple[TextSource, ...]:
        sources: list[TextSource] = []
        seen: set[str] = set()
        container = _child(root, "Sources")
        for i, element in enumerate([] if container is None else list(container), 1):
            kind = _local(element.tag)
            name = element.get("name") or element.get("guid") or f"{kind} {i}"
            if kind in _NOT_TEXT:
                self.skip("source", name, f"is {_NOT_TEXT[kind]}, not text; skipped")
                continue
            text_element = element
            if kind == "PDFSource":
                text_element = _child(element, "Representation")  # type: ignore[assignment]
                if text_element is None:
                    self.skip("source", name, "is a PDF without a plain-text rendition; skipped")
                    continue
                if _children(element, "PDFSelection"):
                    self.skip("codings", name, "codings of PDF regions are not imported")
            elif kind != "TextSource":
                self.skip("source", name, f"<{kind}> is not a source codecurve reads; skipped")
                continue
            source = self.text_source(element, text_element, name, types)
            if source is None:
                continue
            if source.guid in seen:
                self.skip("source", name, "repeats the guid of another source; skipped")
                continue
            seen.add(source.guid)
            sources.append(source)
        return tuple(sources)

    def text_source(
        self, element: ET.Element, text_element: ET.Element, name: str, types: dict[str, str]
    ) -> TextSource | None:
        guid = _key(element.get("guid")) or f"source:{name}"
        text = self.source_text(text_element, name)
        if text is None:
            return None
        codings: list[Coding] = []
        for holder in (element, text_element) if text_element is not element else (element,):
            for ref in _children(holder, "NoteRef"):
                self.targets[_key(ref.get("targetGUID"))].append(guid)
            for coding in _children(holder, "Coding"):  # on the whole source
                codings.extend(self.coding(coding, guid, None, 0, len(text), ""))
        for selection in _children(text_element, "PlainTextSelection"):
            sel_guid = _key(selection.get("guid")) or f"{guid}:{len(codings)}"
            try:
                start = int(selection.get("startPosition", ""))
                end = int(selection.get("endPosition", ""))
            except ValueError:
                self.skip("selection", name, "has no whole-number start and end; skipped")
                continue
            if not 0 <= start <= end <= len(text):
                self.skip("selection", name, f"{start}..{end} lies outside the text; clipped")
                start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
                start = min(start, end)
            for ref in _children(selection, "NoteRef"):
                self.targets[_key(ref.get("targetGUID"))].append(sel_guid)
            description = _text(_child(selection, "Description"))
            user = _key(selection.get("creatingUser")) or None
            for coding in _children(selection, "Coding"):
                codings.extend(self.coding(coding, sel_guid, user, start, end, description))
        return TextSource(
            guid=guid,
            name=name,
            text=text,
            codings=tuple(codings),
            values=self.values(element, types),
            description=_text(_child(element, "Description")),
        )

    def coding(
        self,
        element: ET.Element,
        selection: str,
        user: str | None,
        start: int,
        end: int,
        description: str,
    ) -> list[Coding]:
        ref = _child(element, "CodeRef")
        code = _key(None if ref is None else ref.get("targetGUID"))
        if not code:
            self.skip("coding", element.get("guid", ""), "names no code; skipped")
            return []
        for note in _children(element, "NoteRef"):
            self.targets[_key(note.get("targetGUID"))].append(selection)
        return [
            Coding(
                guid=_key(element.get("guid")) or f"{selection}:{code}",
                selection_guid=selection,
                code_guid=code,
                start=start,
                end=end,
                user_guid=_key(element.get("creatingUser")) or user,
                description=description,
            )
        ]

    def source_text(self, element: ET.Element, name: str) -> str | None:
        """A source's text: its plain-text file, else its inline text, else its ``.docx``.

        Real projects disagree on where the text is: ATLAS.ti writes it inline in
        ``PlainTextContent`` and also names an ``internal://`` file it leaves out of the
        archive; NVivo writes a plain-text rendition holding a single newline beside the
        ``.docx`` that ``richTextPath`` names. Each fallback taken is reported.
        """
        reference = (element.get("plainTextPath") or "").strip()
        content = _child(element, "PlainTextContent")
        inline = None if content is None else _text(content)
        rich = (element.get("richTextPath") or "").strip()
        why = ""
        if reference:
            data, why = self.files.get(reference, self.base)
            if data is not None:
                text = _decode(data)
                has_other = bool(inline and inline.strip()) or bool(rich)
                if text is None:
                    why = f"{reference} is not UTF-8"
                elif "\x00" in text:  # as a responses file with NUL bytes is refused
                    why = f"{reference} holds NUL characters (not text, or UTF-16)"
                elif text.strip() or not has_other:
                    return text
                else:
                    why = f"{reference} holds no text"
        if inline is not None and (inline.strip() or not rich):
            if why:
                self.fallback(name, f"text read from its inline PlainTextContent ({why})")
            return inline
        if rich:
            text = self.docx(rich, name)
            if text is not None:
                if why:
                    self.fallback(name, f"text read from {rich} ({why})")
                return text
            return None
        if why:
            self.skip("source", name, f"its text {why}; skipped")
        else:
            self.skip("source", name, "has no text; skipped")
        return None

    def docx(self, reference: str, name: str) -> str | None:
        """The text of the ``.docx`` that ``reference`` names, or None (reported)."""
        data, why = self.files.get(reference, self.base)
        if data is None:
            self.skip("source", name, f"its rich text {why}; skipped")
            return None
        try:
            return docx_text(data)
        except DocxError as exc:
            self.skip("source", name, f"its rich text {reference} cannot be read: {exc}; skipped")
            return None

    def sets(self, root: ET.Element) -> tuple[ProjectSet, ...]:
        """The sets (codecurve's are a scoped study's questions; others' are kept for
        the importer to say what it did with them). An empty set is left out."""
        sets = []
        for i, element in enumerate(_children(_section(root, "Sets"), "Set"), 1):
            codes = tuple(_key(m.get("targetGUID")) for m in _children(element, "MemberCode"))
            sources = tuple(_key(m.get("targetGUID")) for m in _children(element, "MemberSource"))
            if not codes and not sources:
                continue
            sets.append(
                ProjectSet(
                    guid=_key(element.get("guid")) or f"set:{i}",
                    name=element.get("name") or f"Set {i}",
                    description=_text(_child(element, "Description")),
                    code_guids=tuple(g for g in codes if g),
                    source_guids=tuple(g for g in sources if g),
                )
            )
        return tuple(sets)

    def notes(self, root: ET.Element) -> tuple[Note, ...]:
        notes = []
        for i, element in enumerate(_children(_section(root, "Notes"), "Note"), 1):
            guid = _key(element.get("guid")) or f"note:{i}"
            name = element.get("name") or f"Note {i}"
            text = self.source_text(element, name) if element.get("plainTextPath") else None
            if text is None:
                text = _text(_child(element, "PlainTextContent"))
            user = element.get("creatingUser") or element.get("modifyingUser")
            notes.append(
                Note(
                    guid=guid,
                    name=name,
                    text=text,
                    user_guid=_key(user) or None,
                    targets=tuple(t for t in dict.fromkeys(self.targets.get(guid, ())) if t),
                    created=element.get("creationDateTime") or None,
                    modified=element.get("modifiedDateTime") or None,
                    anchor=_anchor(_child(element, "PlainTextSelection")),
                )
            )
        return tuple(notes)


def _anchor(selection: ET.Element | None) -> NoteAnchor | None:
    """The selection a note names inside itself (QualCoder's annotations), if any."""
    if selection is None:
        return None
    try:
        start = int(selection.get("startPosition", ""))
        end = int(selection.get("endPosition", ""))
    except ValueError:
        return None
    return NoteAnchor(_key(selection.get("guid")), start, end)


def _value(kind: str, raw: str) -> Value:
    text = raw.strip()
    try:
        if kind == "BooleanValue":
            return text.casefold() in ("true", "1")
        if kind == "IntegerValue":
            return int(text)
        if kind == "FloatValue":
            return float(text)
    except ValueError:
        return raw
    return raw
