"""A REFI-QDA project as what a study is made of: responses, codebook, decisions, notes.

A text source becomes a response (id = its name, attributes = its variables and its
case's); the project's codebook becomes the study's; a code applies to a response for a
user when a coding of it by that user lies in that source. Without codecurve's record
(a project from another program) the codebook gets the binary scale and, for each user,
every other codable code of a source they coded is taken as not applying. With it (a
project codecurve wrote, its codebook unchanged), code ids, scales and every exported
value come back exactly; codings added or removed in the QDA program still count.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from codebooks.errors import CodebookError, Note, Remedy
from codebooks.model import BINARY, SCALES, Code, Codebook, Scale
from codebooks.qdc import parse_qdc
from codebooks.question_sets import parse_set_description, with_scoping
from study.intake.responses import Response, ResponseTable
from study.refi._mapping import (
    EXTRA_FORMAT,
    NOT_APPLIES,
    NOT_APPLIES_SUFFIX,
    UNATTRIBUTED,
    ImportedDecision,
    ImportedNote,
    StudyInputs,
)
from study.refi._model import (
    Project,
    ProjectCode,
    ProjectFileError,
    ProjectSet,
    Skipped,
    Value,
)
from study.refi._notes import parts_match, split_note
from study.rows import SOURCES

if TYPE_CHECKING:
    from study.store import Study


def codebook_from_project(
    project: Project, *, name: str | None = None
) -> tuple[Codebook, tuple[str, ...]]:
    """The project's codebook alone (a project whose sources hold no text still has
    one), and one message per thing changed while reading it.

    Raises:
        ProjectFileError: the project has no codes, or none codable.
    """
    messages: list[str] = []
    project, twins = _twins(project)
    codebook, code_of = _codebook(project, name or project.name or "project", messages)
    extra = _extra(project)
    if extra is None or codebook.to_dict() != extra["codebook"]:
        by_name = {c.name.casefold(): c for c in codebook.codes}
        denied = {g: by_name[n.casefold()] for g, n in twins.items() if n.casefold() in by_name}
        codebook = _scales_from_codings(project, codebook, code_of, denied, messages)
    if not codebook.codable:
        raise ProjectFileError("the project's codebook has no codable codes")
    return codebook, tuple(messages)


def _holdings(project: Project, skipped: Sequence[Skipped]) -> str:
    """What a project without text holds, in words: its sources by kind, and its codes."""
    kinds = {"a picture": "picture(s)", "audio": "audio source(s)", "video": "video source(s)"}
    counts: dict[str, int] = defaultdict(int)
    counts["text source(s) without their text"] = sum(
        1 for s in project.sources if not s.text.strip()
    )
    for item in skipped:
        if item.what != "source":
            continue
        kind = item.reason.removeprefix("is ").split(",")[0]
        if kind in kinds:
            counts[kinds[kind]] += 1
        elif item.reason.startswith("is a PDF"):
            counts["PDF(s) without a text rendition"] += 1
        else:
            counts["text source(s) without their text"] += 1
    parts = [f"{n} {what}" for what, n in counts.items() if n]
    parts.append(f"{sum(1 for _c in project.all_codes())} code(s)")
    return ", ".join(parts)


def study_inputs_from_project(
    project: Project,
    *,
    name: str | None = None,
    infer_negatives: bool | None = None,
    skipped: Sequence[Skipped] = (),
) -> StudyInputs:
    """Responses, codebook, decisions per coder and notes for a new study.

    Args:
        project: A project from :func:`~study.refi._reader.read_project`.
        name: The codebook's name (default: the project's).
        skipped: What reading the project skipped (named when it has no text).
        infer_negatives: Take the codes a user did not apply in a source they coded as
            not applying. Default: only for projects without codecurve's record.

    Raises:
        ProjectFileError: the project has no text sources or no codable codes.
    """
    messages: list[str] = []
    project, twins = _twins(project)
    codebook, code_of = _codebook(project, name or project.name or "project", messages)
    by_name = {c.name.casefold(): c for c in codebook.codes}
    denied = {g: by_name[n.casefold()] for g, n in twins.items() if n.casefold() in by_name}
    extra = _extra(project)
    exact = extra is not None and codebook.to_dict() == extra["codebook"]
    if not exact:
        codebook = _scales_from_codings(project, codebook, code_of, denied, messages)
    if not codebook.codable:
        raise ProjectFileError("the project's codebook has no codable codes")
    responses: list[Response] = []
    response_of: dict[str, str] = {}
    variables = {v.guid: v.name for v in project.variables}
    case_values: dict[str, list[tuple[str, Value]]] = defaultdict(list)
    for case in project.cases:
        for source_guid in case.source_guids:
            case_values[source_guid].extend(case.values)
    taken: set[str] = set()
    for source in project.sources:
        if not source.text.strip():
            messages.append(f"source {source.name!r} has no text; left out")
            continue
        response_id = _unique(source.name.strip() or source.guid, taken)
        if response_id != source.name:
            messages.append(f"source {source.name!r} is response {response_id!r}")
        attrs = {variables[g]: v for g, v in (*case_values[source.guid], *source.values)}
        responses.append(Response(response_id, source.text, attrs))
        response_of[source.guid] = response_id
    if not responses:
        raise ProjectFileError(
            f"the project has no text to code: it holds {_holdings(project, skipped)}; to "
            "use its codebook, create the study from a responses file with the project as "
            "the codebook",
            remedy=Remedy(
                "new",
                "create the study from a responses file, the project as its codebook",
                {"responses": "FILE", "codebook": "PROJECT"},
            ),
        )
    table = ResponseTable(
        responses=tuple(responses),
        attribute_columns=tuple(dict.fromkeys(a for r in responses for a in r.attrs)),
        messages=tuple(messages),
    )
    decisions, notes = _decisions(
        project,
        response_of=response_of,
        code_of=code_of,
        denied=denied,
        explicit=bool(twins),
        codebook=codebook,
        exact=exact,
        infer_negatives=infer_negatives,
        messages=messages,
    )
    return StudyInputs(
        responses=table,
        codebook=codebook,
        decisions=decisions,
        notes=notes,
        messages=tuple(messages),
    )


def decisions_from_project(
    project: Project, study: Study, *, coder: str | None = None, user: str | None = None
) -> tuple[dict[str, tuple[ImportedDecision, ...]], tuple[ImportedNote, ...], tuple[str, ...]]:
    """A project's codings as decisions on an existing study, sources matched by name.

    Codes are matched by GUID (a project exported from this study) or by name.

    Args:
        project: The project.
        study: The study to import into.
        coder: Credit every decision to this coder (the project must then have codings
            of one user, or ``user`` must choose one).
        user: Import only this project user's codings.

    Returns:
        Decisions per coder, notes, and one message per thing left out.

    Raises:
        ProjectFileError: no source or code matches, or several users for one coder.
    """
    messages: list[str] = []
    extra = _extra(project)
    project, twins = _twins(project)
    by_name = {c.name.casefold(): c for c in study.codebook.codes}
    by_id = {c.id: c for c in study.codebook.codes}
    denied = {g: by_name[n.casefold()] for g, n in twins.items() if n.casefold() in by_name}
    code_of: dict[str, Code] = {}
    for code, _parent in project.all_codes():
        match = None
        if extra is not None:
            match = by_id.get(str(extra["codes"].get(code.guid, "")))
        match = match or by_name.get(code.name.strip().casefold())
        if match is None:
            messages.append(f"code {code.name!r} is not in the study's codebook; left out")
        else:
            code_of[code.guid] = match
    known = set(study.response_ids())
    response_of = {s.guid: s.name for s in project.sources if s.name in known}
    unmatched = [s.name for s in project.sources if s.name not in known]
    if unmatched:
        messages.append(
            f"{len(unmatched)} source(s) match no response by name and are left out: "
            + ", ".join(repr(n) for n in unmatched[:5])
        )
    if not response_of:
        raise ProjectFileError("no source of the project is named like a response of the study")
    texts = {r.id: r.text for r in study.responses()}
    differing = [
        s.name
        for s in project.sources
        if s.guid in response_of and _lines(s.text) != _lines(texts[s.name])
    ]
    if differing:
        messages.append(
            f"{len(differing)} source(s) hold another text than the response of the same "
            "name (their codings were made on that text), imported all the same: "
            + ", ".join(repr(n) for n in differing[:5])
            + (", ..." if len(differing) > 5 else "")
        )
    decisions, notes = _decisions(
        project,
        response_of=response_of,
        code_of=code_of,
        denied=denied,
        explicit=bool(twins),
        codebook=study.codebook,
        exact=extra is not None and study.codebook.to_dict() == extra["codebook"],
        infer_negatives=None,
        messages=messages,
    )
    if user is not None:
        if user not in decisions:
            raise ProjectFileError(
                f"no codings by user {user!r} (users: {', '.join(decisions) or 'none'})"
            )
        decisions = {user: decisions[user]}
        notes = tuple(n for n in notes if n.coder == user)
    if coder is not None:
        if len(decisions) > 1:
            raise ProjectFileError(
                f"the project holds codings by {len(decisions)} users ({', '.join(decisions)}); "
                "choose the one to import as this coder",
                remedy=Remedy("retry", "choose the user to import", {"user": "NAME"}),
            )
        decisions = {coder: next(iter(decisions.values()), ())}
        notes = tuple(ImportedNote(n.response_id, n.code_id, coder, n.text) for n in notes)
    return decisions, notes, tuple(messages)


def _lines(text: str) -> str:
    """``text`` with its line ends as one (a QDA program may write CR LF)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _extra(project: Project) -> dict[str, Any] | None:
    extra = project.extra
    if extra.get("format") != EXTRA_FORMAT or not isinstance(extra.get("codes"), dict):
        return None
    return extra


def _twins(project: Project) -> tuple[Project, dict[str, str]]:
    """The project without codecurve's "does not apply" category, and each twin code's
    guid -> the name of the code it denies (empty when the project has no such category)."""
    twins: dict[str, str] = {}
    kept = []
    for code in project.codes:
        if code.name.strip().casefold() != NOT_APPLIES.casefold() or code.codable:
            kept.append(code)
            continue
        for child in code.children:
            name = child.name.strip()
            if name.casefold().endswith(NOT_APPLIES_SUFFIX.casefold()):
                twins[child.guid] = name[: -len(NOT_APPLIES_SUFFIX)].strip()
    if len(kept) == len(project.codes):
        return project, {}
    return replace(project, codes=tuple(kept)), twins


def _codebook(project: Project, name: str, messages: list[str]) -> tuple[Codebook, dict[str, Code]]:
    """The codebook, and each project code guid's code (the project without codecurve's
    "does not apply" category: :func:`_twins`)."""
    order = [code for code, _parent in project.all_codes()]
    if not order:
        raise ProjectFileError("the project has no codes")
    extra = _extra(project)
    messages.extend(
        f"set {group.name!r}: not imported (codecurve keeps only its own sets of a survey question)"
        for group in project.sets
        if parse_set_description(group.description) is None
    )
    if extra is not None:
        try:
            stored = Codebook.from_dict(extra["codebook"])
            ids = {c.id: c for c in stored.codes}
            if [extra["codes"].get(c.guid) for c in order] == [c.id for c in stored.codes] and [
                c.name for c in order
            ] == [c.name for c in stored.codes]:
                return stored, {c.guid: ids[extra["codes"][c.guid]] for c in order}
        except (CodebookError, KeyError, TypeError, ValueError, AttributeError, RecursionError):
            pass  # a record changed by hand or by another program: the XML is read instead
        messages.append(
            "the codebook was changed in the QDA program: its codes are read from the project, "
            "on the binary scale"
        )
    root = ET.Element("CodeBook")
    codes = ET.SubElement(root, "Codes")
    stack: list[tuple[ProjectCode, ET.Element]] = [(c, codes) for c in reversed(project.codes)]
    while stack:
        code, parent = stack.pop()
        attrs = {"guid": code.guid, "name": code.name, "isCodable": str(code.codable).lower()}
        if code.color:
            attrs["color"] = code.color
        element = ET.SubElement(parent, "Code", attrs)
        if code.description:
            ET.SubElement(element, "Description").text = code.description
        stack.extend((child, element) for child in reversed(code.children))
    try:
        parsed = parse_qdc(ET.tostring(root, encoding="utf-8"), name=name)
    except RecursionError:
        raise ProjectFileError("its codes are nested too deeply to read") from None
    except CodebookError as exc:
        raise ProjectFileError(f"its codebook: {exc.message}", where=exc.where) from None
    for project_code, parsed_code in zip(order, parsed.codes, strict=True):
        if parsed_code.name != project_code.name:
            messages.append(
                f"a second code named {project_code.name!r} is called {parsed_code.name!r}"
            )
    book = Codebook(name=name, codes=parsed.codes, scale=BINARY, description=project.description)
    code_of = {pc.guid: c for pc, c in zip(order, book.codes, strict=True)}
    book = _question_scoping(project, book, code_of, messages)
    return book, {guid: book.code(c.id) for guid, c in code_of.items()}


def _question_scoping(
    project: Project, book: Codebook, code_of: dict[str, Code], messages: list[str]
) -> Codebook:
    """``book`` scoped to survey questions as codecurve's question sets say (a project
    exported from a scoped study and changed in a QDA program: its record no longer
    fits, but its sets still name each question's codes)."""
    found: list[tuple[str, str, ProjectSet]] = []
    for group in project.sets:
        mark = parse_set_description(group.description)
        if mark is not None:
            found.append((*mark, group))
    if not found:
        return book
    column = found[0][0]
    members = [
        (question, [code_of[g].id for g in group.code_guids if g in code_of])
        for col, question, group in found
        if col == column
    ]
    try:
        return with_scoping(book, column, members)
    except CodebookError as exc:
        messages.append(f"the project's questions are not kept: {exc.message}")
        return book


def _scales_from_codings(
    project: Project,
    codebook: Codebook,
    code_of: dict[str, Code],
    denied: dict[str, Code],
    messages: list[str],
) -> Codebook:
    """The codebook with each code on the ready-made scale its codings name (codecurve
    writes ``value 4 on scale 1-5`` in a coding's description, and QDA programs keep
    it): a project without codecurve's record keeps its codes' scales that way."""
    named: dict[str, set[str]] = defaultdict(set)
    for source in project.sources:
        for coding in source.codings:
            code = denied.get(coding.code_guid) or code_of.get(coding.code_guid)
            found = _VALUE.search(coding.description)
            if code is not None and found is not None:
                named[code.id].add(found.group(2))
    scales = {
        code_id: SCALES[next(iter(names))]
        for code_id, names in named.items()
        if len(names) == 1 and next(iter(names)) in SCALES
    }
    if not scales:
        return codebook
    codes = tuple(replace(c, scale=scales[c.id]) if c.id in scales else c for c in codebook.codes)
    listed = ", ".join(f"{c.name} ({scales[c.id].name})" for c in codes if c.id in scales)
    messages.append(f"scales read from the codings' descriptions: {listed}")
    return replace(codebook, codes=codes)


def _unique(name: str, taken: set[str]) -> str:
    unique, n = name, 2
    while unique in taken:
        unique = f"{name} ({n})"
        n += 1
    taken.add(unique)
    return unique


def _coder_names(project: Project) -> dict[str | None, str]:
    names: dict[str | None, str] = {None: UNATTRIBUTED}
    taken: set[str] = set()
    for i, user in enumerate(project.users, 1):
        names[user.guid] = _unique(user.name.strip() or f"user {i}", taken)
    return names


#: The value a codecurve coding's description gives (``value 4 on scale 1-5 ...``).
_VALUE = re.compile(r"(?:^|;\s*)value (-?\d+) on scale (\S+)")


@dataclass
class _Cell:
    applied: bool = False
    denied: bool = False
    #: The value codecurve's record or the coding's description gives.
    value: int | None = None
    #: Whether the value comes from codecurve's record (a decision without a coding).
    recorded: bool = False
    #: Taken as not applying by the "codes left out do not apply" rule.
    inferred: bool = False
    source: str = "human"
    blind: bool | None = None
    #: The spans its codings of the code cover, where not the whole text.
    segments: set[tuple[int, int]] = field(default_factory=set)


def _decisions(
    project: Project,
    *,
    response_of: dict[str, str],
    code_of: dict[str, Code],
    denied: dict[str, Code],
    explicit: bool,
    codebook: Codebook,
    exact: bool,
    infer_negatives: bool | None,
    messages: list[str],
) -> tuple[dict[str, tuple[ImportedDecision, ...]], tuple[ImportedNote, ...]]:
    """Each user's decisions: a coding of a code says it applies, a coding of its
    "does not apply" twin (``explicit``: the project has them) that it does not; a value
    comes from codecurve's record or the coding's description, never from a guess. A
    code left out of a source a user coded is taken as not applying only for a project
    that states no negative decisions (``infer_negatives``: by default a project of
    another program), and only on a two-point scale."""
    names = _coder_names(project)
    if infer_negatives is None:
        infer_negatives = not exact and not explicit
    cells: dict[tuple[str, str, str], _Cell] = defaultdict(_Cell)  # (source, code, coder)
    left_out: set[tuple[str, str, str]] = set()
    selection_code: dict[str, tuple[str, str]] = {}
    for source in project.sources:
        if source.guid not in response_of:
            continue
        for coding in source.codings:
            selection_code[coding.selection_guid] = (source.guid, coding.code_guid)
            twin = denied.get(coding.code_guid)
            code = twin or code_of.get(coding.code_guid)
            if code is None or not code.codable:
                messages.append(
                    f"source {source.name!r}: a coding of "
                    f"{'an unknown code' if code is None else repr(code.name)} is left out"
                )
                continue
            coder = names.get(coding.user_guid) or names[None]
            cell = cells[(source.guid, code.id, coder)]
            if twin is not None:
                cell.denied = True
            else:
                cell.applied = True
                if (coding.start, coding.end) != (0, len(source.text)):
                    cell.segments.add((coding.start, coding.end))
            found = _VALUE.search(coding.description)
            if found is not None and cell.value is None:
                cell.value = int(found.group(1))
    if exact:
        extra = project.extra
        by_guid = {guid: code_of[guid].id for guid in extra["codes"] if guid in code_of}
        delegated = 0
        for source_guid, code_guid, user_guid, value, how, *more in extra.get("decisions", ()):
            if source_guid in response_of and code_guid in by_guid:
                key = (source_guid, by_guid[code_guid], names.get(user_guid, UNATTRIBUTED))
                if how not in SOURCES:
                    # A delegation's guarantee belongs to the study that certified it: its
                    # picks are not imported as anyone's decisions (nor as a delegation
                    # without a guarantee and without an undo).
                    delegated += 1
                    left_out.add(key)
                    continue
                cell = cells[key]
                cell.value, cell.source, cell.recorded = int(value), str(how), True
                if more and isinstance(more[0], bool):  # the blind flag, where recorded
                    cell.blind = more[0]
        if delegated:
            messages.append(
                Note(
                    f"{delegated} decision{'s' if delegated != 1 else ''} the exporting study "
                    "delegated to the model left out: delegate in this study for a guarantee "
                    "of its own",
                    remedy=Remedy("delegate", "delegate in this study"),
                )
            )
    if infer_negatives:
        coded: dict[str, set[str]] = defaultdict(set)
        for source_guid, _code, coder in list(cells):
            coded[coder].add(source_guid)
        in_project = {c.id for c in code_of.values() if c.codable}
        inferred = 0
        for coder, source_guids in coded.items():
            for source_guid in source_guids:
                for code in codebook.codable:
                    if code.id not in in_project or (source_guid, code.id, coder) in cells:
                        continue
                    cells[(source_guid, code.id, coder)].inferred = True
                    inferred += codebook.scale_for(code).k == 2
        if inferred:
            messages.append(
                f"{inferred} decision(s) that a code does not apply taken from codes a user "
                "left out of a source they coded (the project states no negative decisions)"
            )
    by_coder: dict[str, list[ImportedDecision]] = defaultdict(list)
    codes = {c.id: c for c in codebook.codes}
    no_point: dict[str, int] = defaultdict(int)
    both = 0
    for (source_guid, code_id, coder), cell in cells.items():
        if (source_guid, code_id, coder) in left_out:
            continue
        scale = codebook.scale_for(codes[code_id])
        if cell.applied and cell.denied:
            both += 1
            continue
        value = _value(cell, scale, explicit=explicit)
        if value is None:
            if cell.applied or cell.denied:
                no_point[codes[code_id].name] += 1
            continue
        spans = tuple(sorted(cell.segments)) if value >= scale.threshold else ()
        by_coder[coder].append(
            ImportedDecision(
                response_of[source_guid], code_id, value, cell.source, cell.blind, spans
            )
        )
    if both:
        messages.append(
            f"{both} pair(s) coded both as applying and as not applying by one user are "
            "left out (no decision)"
        )
    if no_point:
        listed = ", ".join(f"{name} ({n})" for name, n in sorted(no_point.items()))
        messages.append(
            f"{sum(no_point.values())} coding(s) of codes on an ordinal scale say only whether "
            f"the code applies, not a point of its scale, and are left out: {listed}; "
            "code them in codecurve, or make those codes yes/no first"
        )
    notes = _notes(project, response_of, code_of, selection_code, names, exact=exact)
    return {c: tuple(items) for c, items in sorted(by_coder.items())}, notes


def _value(cell: _Cell, scale: Scale, *, explicit: bool) -> int | None:
    """The cell's decision, or None where the file gives none (never a guessed point of
    an ordinal scale)."""
    known = cell.value if cell.value is not None and cell.value in scale.values else None
    binary = scale.k == 2
    if cell.applied:
        if known is not None and known >= scale.threshold:
            return known
        return scale.threshold if binary else None
    if cell.denied or cell.inferred:
        if known is not None and known < scale.threshold:
            return known
        return scale.lowest.value if binary else None
    # No coding: a value codecurve's record holds stands where the file states no
    # negatives (an earlier codecurve's "does not apply", which had no coding); with
    # explicit negatives, a decision whose coding was removed in the QDA program is gone.
    if cell.recorded and not explicit:
        if known is not None and known < scale.threshold:
            return known
        return scale.lowest.value if binary else None
    return None


def _notes(
    project: Project,
    response_of: dict[str, str],
    code_of: dict[str, Code],
    selection_code: dict[str, tuple[str, str]],
    names: dict[str | None, str],
    *,
    exact: bool,
) -> tuple[ImportedNote, ...]:
    """Notes on sources and selections. A note on a coded selection is a note on that
    pair; a note on a whole source is split into the coder's memo and pair notes
    (:mod:`study.refi._notes`), by codecurve's record where the note is unchanged, else
    by its headings."""
    old_codes: dict[str, Any] = project.extra.get("notes", {}) if exact else {}
    recorded: dict[str, Any] = project.extra.get("note_parts", {}) if exact else {}
    by_id = {c.id: c for c in code_of.values()}
    ids_by_name = {c.name.casefold(): c.id for c in by_id.values() if c.codable}
    names_by_id = {c.id: c.name for c in by_id.values()}
    notes: list[ImportedNote] = []
    for note in project.notes:
        for target in note.targets:
            source_guid, code_guid = selection_code.get(target, (target, ""))
            if source_guid not in response_of:
                continue
            coder = names.get(note.user_guid) or UNATTRIBUTED
            response_id = response_of[source_guid]
            code = code_of.get(code_guid) or by_id.get(str(old_codes.get(note.guid, "")))
            parts: list[tuple[str | None, str]]
            if code is not None:
                parts = [(code.id, note.text)]
            elif isinstance(recorded.get(note.guid), list) and parts_match(
                recorded[note.guid], note.text, names_by_id
            ):
                parts = [(None if c is None else str(c), str(t)) for c, t in recorded[note.guid]]
            else:
                parts = split_note(note.text, ids_by_name)
            notes.extend(ImportedNote(response_id, c, coder, t) for c, t in parts)
            break
    return tuple(notes)
