"""REFI-QDA codebooks (``.qdc``): the exchange format of MAXQDA, ATLAS.ti, NVivo, Taguette...

Writing follows ``Codebook.xsd`` (namespace ``urn:QDA-XML:codebook:1.0``)::

    <CodeBook xmlns="urn:QDA-XML:codebook:1.0" origin="codecurve 0.1.0">
      <Codes>
        <Code guid="..." name="Working conditions" isCodable="false">
          <Code guid="..." name="Workload" isCodable="true" color="#d95f02">
            <Description>...</Description>
          </Code>
        </Code>
      </Codes>
      <Sets>                       (only when the codebook has sets or questions)
        <Set guid="..." name="Pressures"><MemberCode guid="..."/></Set>
        <Set guid="..." name="question_id: q1">   (a code scoped to question q1)
          <Description>... (codecurve: question_column "question_id", question "q1").
          </Description><MemberCode guid="..."/>
        </Set>
      </Sets>
    </CodeBook>

GUIDs are UUID5 of the code's path of names (or the set's name) under a fixed namespace,
so exporting the same codebook twice gives the same file.

A code's definition, criteria and examples travel in its ``Description``, readable in any
tool and parsed back on import::

    The definition, as plain text (any number of lines and paragraphs).

    Include: when to apply the code
    Exclude: when not to
    Example: one example
    Example: another

A value running over several lines continues on lines indented by two spaces. A line of
the definition that would read as a label is written with a leading backslash. On import,
a Description without labels is the definition; ``Inclusion criteria:``,
``Examples:`` (one example per line, bullets allowed) and ``Definition:`` are understood
too, in any case. Codes scoped to survey questions travel as one marked set per question
(:mod:`codebooks.question_sets`). The scale and the question are not part of REFI-QDA: an imported
codebook gets the default scale, and its name from the file.

Reading accepts what real tools write: the ``urn:QDA-XML:codebook:0:4`` namespace (or
none; ``xsi:schemaLocation`` is never followed), an empty ``<Sets/>`` or ``<Set>``, ids
that are not GUIDs, any nesting depth, colours in either case or none, a byte-order mark,
CRLF, no XML declaration. XML is parsed with ``defusedxml``: a DTD or entity declaration
is refused.
"""

from __future__ import annotations

import json
import logging
import re
import textwrap
import uuid
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterator
from functools import cache
from importlib import metadata
from pathlib import Path
from xml.parsers import expat

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from codebooks.errors import CodebookError
from codebooks.files import read_bytes
from codebooks.mapping import slugify
from codebooks.model import COLOR, LIKERT_5, Code, Codebook
from codebooks.question_sets import (
    parse_set_description,
    question_members,
    set_description,
    set_name,
    with_scoping,
)

logger = logging.getLogger(__name__)

NAMESPACE = "urn:QDA-XML:codebook:1.0"
# Fixed forever: changing it changes every GUID codecurve has ever exported.
GUID_NAMESPACE = uuid.UUID("8f0c1d52-4f6e-5a43-9d3b-6c0de6c0b00c")

# Characters XML 1.0 cannot hold, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_LABELS = (
    r"(?:include|inclusion(?:[ \t]+criteria)?|exclude|exclusion(?:[ \t]+criteria)?"
    r"|examples?|definition)"
)
_LABEL_LINE = re.compile(rf"(?P<label>{_LABELS})[ \t]*:[ \t]?(?P<rest>.*)", re.IGNORECASE)
# A definition line to escape on writing (and unescape on reading): a label, after any
# number of backslashes, so that escaping is reversible.
_LABEL_LIKE = re.compile(rf"\\*{_LABELS}[ \t]*:", re.IGNORECASE)
_FIELD_OF = {
    "": "definition",
    "definition": "definition",
    "include": "inclusion",
    "inclusion": "inclusion",
    "exclude": "exclusion",
    "exclusion": "exclusion",
}
_BULLET = re.compile(r"[-*•][ \t]+")
_INDENT = "  "


@cache
def origin() -> str:
    """The ``origin`` attribute written into exported codebooks."""
    try:
        return f"codecurve {metadata.version('codecurve')}"
    except metadata.PackageNotFoundError:
        return "codecurve"


def code_guid(path: tuple[str, ...]) -> str:
    """The GUID of a code, from its path of names (root category first)."""
    return str(uuid.uuid5(GUID_NAMESPACE, json.dumps(["code", *path], ensure_ascii=False)))


def set_guid(name: str, occurrence: int = 0) -> str:
    """The GUID of a set, from its name (and its rank among sets of the same name)."""
    key = ["set", name] if occurrence == 0 else ["set", name, occurrence]
    return str(uuid.uuid5(GUID_NAMESPACE, json.dumps(key, ensure_ascii=False)))


# --- Description -------------------------------------------------------------------------


def describe(code: Code) -> str:
    """A code's definition, criteria and examples as one Description text (layout above)."""
    parts = []
    if code.definition:
        parts.append(
            "\n".join(
                "\\" + line if _LABEL_LIKE.match(line) else line
                for line in code.definition.split("\n")
            )
        )
    fields = []
    if code.inclusion:
        fields.append(_labelled("Include", code.inclusion))
    if code.exclusion:
        fields.append(_labelled("Exclude", code.exclusion))
    fields.extend(_labelled("Example", example) for example in code.examples)
    if fields:
        parts.append("\n".join(fields))
    return "\n\n".join(parts)


def _labelled(label: str, value: str) -> str:
    first, *rest = value.split("\n")
    lines = [f"{label}: {first}" if first else f"{label}:"]
    lines.extend(_INDENT + line if line else "" for line in rest)
    return "\n".join(lines)


def parse_description(text: str) -> tuple[str, str, str, tuple[str, ...]]:
    """Split a Description into (definition, inclusion, exclusion, examples)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    if indents and min(indents) > 0:  # a whole Description indented by pretty-printing
        lines = textwrap.dedent("\n".join(lines)).split("\n")
    # Runs of lines in document order: (label, lines), label "" for unlabelled text.
    chunks: list[tuple[str, list[str]]] = []
    after_blank = False
    for line in lines:
        match = _LABEL_LINE.fullmatch(line)
        if match:
            chunks.append((match["label"].split()[0].casefold(), [match["rest"]]))
        elif (
            chunks
            and chunks[-1][0]
            and (line.startswith(_INDENT) or not line.strip() or not after_blank)
        ):
            chunks[-1][1].append(line.removeprefix(_INDENT))
        else:
            # Text before any label, or a paragraph after one: part of the definition.
            if line.startswith("\\") and _LABEL_LIKE.match(line):
                line = line[1:]
            if chunks and not chunks[-1][0]:
                chunks[-1][1].append(line)
            else:
                chunks.append(("", [line]))
        after_blank = not line.strip()
    parts: dict[str, list[str]] = defaultdict(list)
    examples: list[str] = []
    for label, value in chunks:
        joined = "\n".join(value).strip()
        if label == "examples":
            examples.extend(_BULLET.sub("", line, count=1).strip() for line in value)
        elif label == "example":
            examples.append(joined)
        else:
            parts[_FIELD_OF[label]].append(joined)
    return (
        "\n\n".join(p for p in parts["definition"] if p),
        "\n".join(p for p in parts["inclusion"] if p),
        "\n".join(p for p in parts["exclusion"] if p),
        tuple(e for e in examples if e),
    )


# --- writing ------------------------------------------------------------------------------


def qdc_bytes(codebook: Codebook) -> bytes:
    """The codebook as a REFI-QDA ``.qdc`` document (UTF-8).

    Raises:
        CodebookError: if a name or text holds a character XML cannot represent.
    """
    # Plain names under an explicit default namespace: ElementTree's own
    # default_namespace option refuses unqualified attributes before Python 3.12.
    root = ET.Element("CodeBook", {"xmlns": NAMESPACE, "origin": origin()})
    codes_element = ET.SubElement(root, "Codes")
    children: dict[str | None, list[Code]] = defaultdict(list)
    for code in codebook.codes:
        children[code.parent].append(code)
    guids: dict[str, str] = {}
    # Iterative, so that no nesting depth can exhaust the stack.
    stack: list[tuple[Code, ET.Element, tuple[str, ...]]] = [
        (code, codes_element, (code.name,)) for code in reversed(children[None])
    ]
    while stack:
        code, parent_element, path = stack.pop()
        guids[code.id] = code_guid(path)
        attributes = {
            "guid": guids[code.id],
            "name": _xml_text(code.name, code, "name"),
            "isCodable": "true" if code.codable else "false",
        }
        if code.color:
            attributes["color"] = code.color
        element = ET.SubElement(parent_element, "Code", attributes)
        description = describe(code)
        if description:
            ET.SubElement(element, "Description").text = _xml_text(
                description, code, "definition, criteria or examples"
            )
        stack.extend((child, element, (*path, child.name)) for child in reversed(children[code.id]))
    groups = [(name, members, "") for name, members in codebook.sets]
    column = codebook.question_column
    if column is not None:  # the scoping to questions, as marked sets (question_sets)
        groups += [
            (set_name(column, question), members, set_description(column, question))
            for question, members in question_members(codebook)
        ]
    if groups:
        sets_element = ET.SubElement(root, "Sets")
        seen: dict[str, int] = defaultdict(int)
        for name, members, description in groups:
            if _NOT_XML.search(name):
                raise CodebookError(f"set {name!r}: its name holds a character XML cannot hold")
            set_element = ET.SubElement(
                sets_element, "Set", {"guid": set_guid(name, seen[name]), "name": name}
            )
            seen[name] += 1
            if description:
                ET.SubElement(set_element, "Description").text = description
            for member in members:
                ET.SubElement(set_element, "MemberCode", {"guid": guids[member]})
    try:
        ET.indent(root, space="  ")
        body = ET.tostring(root, encoding="unicode")
    except RecursionError:
        raise CodebookError("codes are nested too deeply to write as XML") from None
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n").encode("utf-8")


def _xml_text(text: str, code: Code, what: str) -> str:
    bad = _NOT_XML.search(text)
    if bad:
        raise CodebookError(
            f"code {code.name!r}: its {what} holds the character "
            f"U+{ord(bad.group()):04X}, which XML cannot hold"
        )
    return text


# --- reading ------------------------------------------------------------------------------


def read_qdc(path: str | Path) -> Codebook:
    """Read a REFI-QDA codebook file."""
    return parse_qdc(read_bytes(path), path=path)


def parse_qdc(data: bytes, *, path: str | Path | None = None, name: str | None = None) -> Codebook:
    """Build a codebook from the bytes of a ``.qdc`` document.

    Args:
        data: The document.
        path: The file it came from, named in errors; its stem names the codebook.
        name: The codebook's name, if not the file's.

    Raises:
        CodebookError: naming the file and the place of the first problem.
    """
    root = _parse_xml(data, path=path)
    if _local(root.tag) == "Project":
        raise CodebookError(
            "this is a REFI-QDA project (.qde), not a codebook; export the codebook (.qdc) "
            "from your QDA program",
            path=path,
        )
    if _local(root.tag) != "CodeBook":
        raise CodebookError(
            f"not a REFI-QDA codebook: the root element is <{_local(root.tag)}>, "
            "expected <CodeBook>",
            path=path,
            where="line 1",
        )
    codes_element = _child(root, "Codes")
    if codes_element is None:
        raise CodebookError("no <Codes> element in the <CodeBook>", path=path, where="CodeBook")
    importer = _Importer(path, name=name)
    for element, parent, place in _walk(codes_element):
        importer.add(element, parent, place)
    codes = importer.codes()
    if not codes:
        raise CodebookError("the codebook has no codes", path=path, where="CodeBook/Codes")
    sets, questions = importer.sets(_child(root, "Sets"))
    if name is None:
        name = Path(path).stem if path is not None else "codebook"
    try:
        book = Codebook(name=name, codes=tuple(codes), scale=LIKERT_5, sets=sets)
        if questions:
            column = questions[0][0]
            book = with_scoping(book, column, [(q, m) for c, q, m in questions if c == column])
        return book
    except CodebookError as exc:
        raise CodebookError(exc.message, path=path) from None


def _parse_xml(data: bytes, *, path: str | Path | None) -> ET.Element:
    try:
        root: ET.Element = SafeET.fromstring(data, forbid_dtd=True)
    except DefusedXmlException:
        raise CodebookError(
            "the file declares a DTD or entities; REFI-QDA codebooks have none, and they "
            "are refused for safety",
            path=path,
        ) from None
    except ET.ParseError as exc:
        line, column = exc.position
        raise CodebookError(
            f"malformed XML: {expat.ErrorString(exc.code)}",
            path=path,
            where=f"line {line}, column {column + 1}",
        ) from None
    except (LookupError, ValueError) as exc:  # an unknown encoding="..."
        raise CodebookError(f"malformed XML: {exc}", path=path) from None
    return root


def _local(tag: object) -> str:
    """An element's name without its namespace (every namespace is accepted)."""
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def _child(element: ET.Element, local: str) -> ET.Element | None:
    return next((c for c in element if _local(c.tag) == local), None)


def _walk(codes_element: ET.Element) -> Iterator[tuple[ET.Element, ET.Element | None, str]]:
    """Every ``Code`` in document order, with its parent ``Code`` and its place."""
    stack: list[tuple[ET.Element, ET.Element | None, str]] = []

    def push(parent_element: ET.Element, parent: ET.Element | None, where: str) -> None:
        codes = [c for c in parent_element if _local(c.tag) == "Code"]
        stack.extend(
            (code, parent, f"{where}/Code[{i}]") for i, code in reversed(list(enumerate(codes, 1)))
        )

    push(codes_element, None, "Codes")
    while stack:
        element, parent, where = stack.pop()
        yield element, parent, where
        push(element, element, where)


class _Importer:
    """Turns ``Code`` elements into codes, giving each a unique name and a readable id."""

    def __init__(self, path: str | Path | None, *, name: str | None = None) -> None:
        self.path = path
        #: Where a warning says it is: the file, else the codebook by name.
        self.place = str(path) if path is not None else f"codebook {name or 'without a file'!r}"
        self._codes: list[Code] = []
        self._id_of: dict[int, str] = {}  # id(element) -> code id
        self._name_of: dict[str, str] = {}  # code id -> name
        self._by_guid: dict[str, str] = {}  # normalised guid -> code id
        self._names: set[str] = set()
        self._ids: set[str] = set()

    def add(self, element: ET.Element, parent: ET.Element | None, where: str) -> None:
        name = element.get("name", "").strip()
        if not name:
            raise CodebookError("a <Code> needs a non-empty name", path=self.path, where=where)
        parent_id = None if parent is None else self._id_of[id(parent)]
        name = self._unique_name(name, parent_id)
        code_id = self._unique_id(slugify(name))
        description = _child(element, "Description")
        text = "" if description is None else "".join(description.itertext())
        definition, inclusion, exclusion, examples = parse_description(text)
        try:
            code = Code(
                id=code_id,
                name=name,
                definition=definition,
                inclusion=inclusion,
                exclusion=exclusion,
                examples=examples,
                parent=parent_id,
                codable=self._codable(element, where),
                color=self._color(element, name),
            )
        except CodebookError as exc:
            raise CodebookError(exc.message, path=self.path, where=where) from None
        self._codes.append(code)
        self._id_of[id(element)] = code_id
        self._name_of[code_id] = name
        guid = _guid_key(element.get("guid"))
        if guid and guid not in self._by_guid:
            self._by_guid[guid] = code_id

    def codes(self) -> list[Code]:
        return self._codes

    def sets(
        self, sets_element: ET.Element | None
    ) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], list[tuple[str, str, tuple[str, ...]]]]:
        """The codebook's own sets (name, code ids), and the sets codecurve marked as a
        question's (column, question, code ids: :mod:`codebooks.question_sets`)."""
        if sets_element is None:
            return (), []
        sets = []
        questions: list[tuple[str, str, tuple[str, ...]]] = []
        for i, element in enumerate((s for s in sets_element if _local(s.tag) == "Set"), 1):
            name = element.get("name", "").strip() or f"Set {i}"
            members: list[str] = []
            for member in element:
                if _local(member.tag) != "MemberCode":
                    continue  # MemberSource and the like: not part of a codebook
                code_id = self._by_guid.get(_guid_key(member.get("guid")))
                if code_id is None:
                    logger.warning(
                        "%s: set %r names a code %r that is not in the codebook; left out",
                        self.place,
                        name,
                        member.get("guid"),
                    )
                elif code_id not in members:
                    members.append(code_id)
            description = _child(element, "Description")
            marked = parse_set_description(
                "" if description is None else "".join(description.itertext())
            )
            if marked is not None:
                questions.append((*marked, tuple(members)))
            else:
                sets.append((name, tuple(members)))
        return tuple(sets), questions

    def _unique_name(self, name: str, parent_id: str | None) -> str:
        # Tools allow the same name under different parents ("Other" under each
        # category); codecurve shows names to the model, so they must be unique.
        unique = name
        if unique.casefold() in self._names and parent_id is not None:
            unique = f"{name} ({self._name_of[parent_id]})"
        n = 2
        while unique.casefold() in self._names:
            unique = f"{name} ({n})"
            n += 1
        if unique != name:
            logger.warning("%s: a second code named %r is called %r", self.place, name, unique)
        self._names.add(unique.casefold())
        return unique

    def _unique_id(self, base: str) -> str:
        code_id, n = base, 2
        while code_id in self._ids:
            code_id = f"{base}-{n}"
            n += 1
        self._ids.add(code_id)
        return code_id

    def _codable(self, element: ET.Element, where: str) -> bool:
        raw = element.get("isCodable")
        value = "true" if raw is None else raw.strip().casefold()
        if value in ("true", "1"):
            return True
        if value in ("false", "0"):
            return False
        raise CodebookError(
            f"isCodable must be true or false, not {raw!r}", path=self.path, where=where
        )

    def _color(self, element: ET.Element, name: str) -> str | None:
        color = (element.get("color") or "").strip()
        if not color:
            return None
        if COLOR.fullmatch(color):
            return color
        logger.warning(
            "%s: code %r has the colour %r, not #rrggbb; left out", self.place, name, color
        )
        return None


def _guid_key(guid: str | None) -> str:
    """A GUID as compared between ``Code`` and ``MemberCode``: no braces, lower case."""
    return (guid or "").strip().strip("{}").casefold()
