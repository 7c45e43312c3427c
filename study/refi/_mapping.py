"""A study as a REFI-QDA project, and a project as what a study is made of.

==================  ==========================================================
codecurve           REFI-QDA project
==================  ==========================================================
codebook            ``CodeBook``: codes, hierarchy, colours; definition, criteria
                    and examples in each code's ``Description`` (as in ``.qdc``)
response            ``TextSource`` named by the response id, text in
                    ``sources/<guid>.txt``
response's columns  ``Variables``, and one ``Case`` per response holding its values
                    (also on the source itself, for programs that read them there)
decision            a ``Coding`` spanning the whole text (a coder's segments where the
                    decision came with some; for the model's coding, its evidence
                    sentence where ``codecurve explain`` measured one): of the code where it applies
                    (value >= the scale's ``applies_from``), else of its twin
                    ``<code> (does not apply)`` (children of the category
                    ``codecurve: does not apply``); its selection's ``Description``
                    holds the value (ordinal scales) and the model's confidence
coder               ``User`` of the same name; the model (name, template, context) is
                    a ``User`` too, credited with accepted and unreviewed picks
notes and memo      one ``Note`` per response and coder (:mod:`study.refi._notes`),
                    dated, holding a ``PlainTextSelection`` of the whole text, with a
                    ``NoteRef`` on the source
survey questions    one ``Set`` per question of a scoped study: its codes
                    (``MemberCode``) and the sources answering it (``MemberSource``)
provenance          a project ``Note`` (its text a file, as a journal): model,
                    configuration, screen tiers and each delegated code's guarantee
archived code       left out (the project holds the current codebook); named in the
                    provenance
==================  ==========================================================

GUIDs are UUID5 of the study's UUID (``study_uuid`` in its meta, stored at creation;
derived from the creation time for older studies) and the item's ids, so that exporting the
same study again gives the same GUIDs. What REFI-QDA cannot say (code ids, custom scales,
sources and blind flags, each note's parts) travels in ``codecurve.json`` beside
``project.qde``; a project that lacks it (a QDA program's export of it) still gives each
coder's decisions, both ways, from the codings of the codes and of their twins.
"""

from __future__ import annotations

import json
import math
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from codebooks.model import Code, Codebook, Scale
from codebooks.qdc import describe
from codebooks.question_sets import question_members, set_description, set_name
from study import stamps
from study.file.lifecycle import study_uuid
from study.intake.responses import Response, ResponseTable
from study.labels import backend_name
from study.queries import records
from study.refi._model import (
    Case,
    Coding,
    Note,
    NoteAnchor,
    Project,
    ProjectCode,
    ProjectFileError,
    ProjectSet,
    TextSource,
    User,
    Value,
    Variable,
)
from study.refi._notes import join_note
from study.rows import CONSENSUS
from study.scope import question_value

if TYPE_CHECKING:
    from study.store import Study

#: ``format`` of codecurve's record in a ``.qdpx``.
EXTRA_FORMAT = "codecurve-qdpx"
#: Coder of codings no user is credited with.
UNATTRIBUTED = "imported"
#: The category (not codable) holding each code's "does not apply" twin: a decision
#: that a code does not apply is a coding of its twin, so that it survives a QDA program.
NOT_APPLIES = "codecurve: does not apply"
#: A twin's name is its code's name followed by this.
NOT_APPLIES_SUFFIX = " (does not apply)"
_PAGE = 2000
#: Coders whose screen the provenance note reports (the first, by name).


@dataclass(frozen=True)
class ImportedDecision:
    """One decision read from a project."""

    response_id: str
    code_id: str
    value: int
    source: str = "human"
    #: Whether it was made blind, as codecurve's record says (None: not said).
    blind: bool | None = None
    #: The spans of the text its codings cover (start, end), where not the whole text.
    segments: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class ImportedNote:
    """A note read from a project; ``code_id`` is ``None`` for a note on a whole response."""

    response_id: str
    code_id: str | None
    coder: str
    text: str


@dataclass(frozen=True)
class StudyInputs:
    """What ``codecurve new`` needs to make a study from a project.

    Attributes:
        responses: One response per text source (id = source name; variables as attrs).
        codebook: The project's codebook.
        decisions: Per coder, their decisions.
        notes: Notes on responses (and codes).
        messages: One line per thing changed or left out while mapping.
    """

    responses: ResponseTable
    codebook: Codebook
    decisions: Mapping[str, tuple[ImportedDecision, ...]] = field(default_factory=dict)
    notes: tuple[ImportedNote, ...] = ()
    messages: tuple[str, ...] = ()


# --- study -> project -----------------------------------------------------------------------


def project_from_study(
    study: Study, *, coder: str | None = None, all_coders: bool = False
) -> Project:
    """The study as a project (mapping in the module docstring).

    Args:
        study: An open study.
        coder: Export only this coder's decisions (and notes), credited to them.
        all_coders: Export every coder's decisions, each as their own user (the
            default when several coders decided). With one coder each pair's final
            decision is exported: the coder's, or the model's pick where no one decided.

    Raises:
        ProjectFileError: ``coder`` and ``all_coders`` together, or an unknown coder.
    """
    if coder is not None and all_coders:
        raise ProjectFileError("give a coder or all coders, not both")
    if coder is not None and coder not in study.decisions.coders():
        known = ", ".join(study.decisions.coders()) or "none yet"
        raise ProjectFileError(f"no decisions by coder {coder!r} in this study (coders: {known})")
    if coder is None and not all_coders:
        # Several coders are never mixed pair by pair: each is a user of their own.
        with study.snapshot() as conn:
            all_coders = records.decision_coder_count(conn) > 1
    return _Exporter(study).project(coder=coder, all_coders=all_coders)


class _Exporter:
    def __init__(self, study: Study) -> None:
        self.study = study
        # Stored in the study (derived from its creation time in older ones).
        self.namespace = study_uuid(study.meta(), name=study.path.name)
        self.book = study.codebook
        self.users: dict[str, User] = {}
        self.model_users: set[str] = set()

    def guid(self, *parts: str) -> str:
        return str(uuid.uuid5(self.namespace, json.dumps(parts, ensure_ascii=False)))

    def user(self, name: str, *, model: bool = False) -> str:
        guid = self.guid("user", name)
        self.users.setdefault(guid, User(guid, name))
        if model:
            self.model_users.add(guid)
        return guid

    def project(self, *, coder: str | None, all_coders: bool) -> Project:
        study, book = self.study, self.book
        codes = self.codes()
        code_guids = {c.id: self.guid("code", c.id) for c in book.codes}
        responses = list(study.responses())
        variables, value_of = _variables(responses, self.guid)
        source_guids = {r.id: self.guid("source", r.id) for r in responses}
        lengths = {r.id: len(r.text) for r in responses}
        config_id = study.scores.active_config_id()
        decisions = self.decisions(config_id, coder=coder, all_coders=all_coders)
        codings: dict[str, list[Coding]] = defaultdict(list)
        record: list[list[Any]] = []
        current = {c.id for c in book.codes}
        archived = sorted({d.code_id for d in decisions if d.code_id not in current})
        decisions = [d for d in decisions if d.code_id in current]
        segments = self.segments()
        evidence = self.evidence(config_id)
        for d in decisions:
            code = book.code(d.code_id)
            scale = book.scale_for(code)
            user = d.user
            record.append(
                [source_guids[d.response_id], code_guids[code.id], user, d.value, d.source, d.blind]
            )
            applies = d.value >= scale.threshold
            key = (d.response_id, code.id, user)
            if not applies:  # the twin's coding, under a GUID of its own
                key = (d.response_id, f"{code.id}{NOT_APPLIES_SUFFIX}", user)
            # A decision that came with segments is written back as those segments; the
            # model's coding as its evidence, where measured (``codecurve explain``).
            spans = segments.get((d.response_id, code.id, d.coder or ""), []) if applies else []
            if applies and not spans and user in self.model_users:
                spans = evidence.get((d.response_id, code.id), [])
            for start, end in spans or [(0, lengths[d.response_id])]:
                part = (*key, str(start), str(end)) if spans else key
                codings[d.response_id].append(
                    Coding(
                        guid=self.guid("coding", *part),
                        selection_guid=self.guid("selection", *part),
                        code_guid=code_guids[code.id] if applies else self.twin_guid(code.id),
                        start=start,
                        end=end,
                        user_guid=user,
                        description=_coding_description(scale, d),
                    )
                )
        notes, note_parts = self.notes(
            coder=None if all_coders else coder, sources=source_guids, lengths=lengths
        )
        provenance = self.provenance(config_id, coder, left_out=archived)
        sets = self.question_sets(responses, source_guids, code_guids)
        sources = tuple(
            TextSource(
                guid=source_guids[r.id],
                name=r.id,
                text=r.text,
                codings=tuple(codings.get(r.id, ())),
                values=value_of(r),
            )
            for r in responses
        )
        cases = tuple(
            Case(
                guid=self.guid("case", r.id),
                name=r.id,
                source_guids=(source_guids[r.id],),
                values=value_of(r),
            )
            for r in responses
        )
        extra = {
            "format": EXTRA_FORMAT,
            "version": 1,
            "codebook": book.to_dict(),
            "codes": {guid: code_id for code_id, guid in code_guids.items()},
            "models": sorted(self.model_users),
            "decisions": record,
            "note_parts": note_parts,
            **self.history(),
        }
        return Project(
            name=study.path.stem,
            users=tuple(self.users.values()),
            codes=codes,
            variables=variables,
            cases=cases if variables else (),
            sources=sources,
            notes=(*notes, provenance),
            project_notes=(provenance.guid,),
            sets=sets,
            description=book.description or "",
            created=study.meta().get("created_at") or None,
            extra=extra,
        )

    def history(self) -> dict[str, Any]:
        """The audit sample and the codebook versions, for a study made from the project
        (``audit``: the seed, the responses the permutation is of and each code's size;
        ``codebook_versions``: every version with its codebook and changes)."""
        out: dict[str, Any] = {
            "codebook_versions": [
                {
                    "version": v.version,
                    "hash": v.hash,
                    "at": v.at,
                    "source": v.source,
                    "changes": [c.to_dict() for c in v.changes],
                    "codebook": v.codebook.to_dict(),
                }
                for v in self.study.versions.all()
            ]
        }
        sample = self.study.audit.sample()
        if sample is not None:
            out["audit"] = {
                "seed": sample.seed,
                "responses": sorted(sample.permutation),
                # The project's codes only: an archived code is not in it, and a size
                # for it would keep the sample from being restored.
                "sizes": {c.id: sample.size(c.id) for c in self.study.codes},
                "drawn_at": sample.drawn_at,
            }
        return out

    def question_sets(
        self,
        responses: list[Response],
        source_guids: Mapping[str, str],
        code_guids: Mapping[str, str],
    ) -> tuple[ProjectSet, ...]:
        """One set per survey question of a scoped study: the codes scoped to it and the
        sources answering it (:mod:`codebooks.question_sets`); none for a study without
        scoping, whose project stays as before."""
        column = self.book.question_column
        if column is None:
            return ()
        answering: dict[str, list[str]] = defaultdict(list)
        for r in responses:
            question = question_value(r.attrs, column)
            if question is not None:
                answering[question].append(source_guids[r.id])
        members = dict(question_members(self.book))
        order = [*members, *sorted((q for q in answering if q not in members), key=str)]
        return tuple(
            ProjectSet(
                guid=self.guid("question", column, question),
                name=set_name(column, question),
                description=set_description(column, question),
                code_guids=tuple(code_guids[c] for c in members.get(question, ())),
                source_guids=tuple(answering.get(question, ())),
            )
            for question in order
            if members.get(question) or answering.get(question)
        )

    def codes(self) -> tuple[ProjectCode, ...]:
        children: dict[str | None, list[Code]] = defaultdict(list)
        for code in self.book.codes:
            children[code.parent].append(code)
        # Leaves first, so that each parent is built from finished children.
        order: list[Code] = []
        stack = list(reversed(children[None]))
        while stack:
            code = stack.pop()
            order.append(code)
            stack.extend(reversed(children[code.id]))
        built: dict[str, ProjectCode] = {}
        for code in reversed(order):
            built[code.id] = ProjectCode(
                guid=self.guid("code", code.id),
                name=code.name,
                color=code.color,
                description=describe(code),
                codable=code.codable,
                children=tuple(built[c.id] for c in children[code.id]),
            )
        top = tuple(built[c.id] for c in children[None])
        twins = tuple(
            ProjectCode(
                guid=self.twin_guid(code.id),
                name=f"{code.name}{NOT_APPLIES_SUFFIX}",
                color=code.color,
                description=f"A coder decided that {code.name!r} does not apply.",
            )
            for code in self.book.codable
        )
        if not twins:
            return top
        category = ProjectCode(
            guid=self.guid("not applies"),
            name=NOT_APPLIES,
            description=(
                "codecurve's decisions that a code does not apply: a coding of "
                "'<code> (does not apply)' by a user is that user's decision that <code> "
                "does not apply to the source (on an ordinal scale, the selection's "
                "description holds the value)."
            ),
            codable=False,
            children=twins,
        )
        return (*top, category)

    def twin_guid(self, code_id: str) -> str:
        """The GUID of ``code_id``'s "does not apply" twin."""
        return self.guid("not applies", code_id)

    def model_user(self, config_id: int | None) -> str:
        if config_id is None:
            return self.user("model", model=True)
        row = self.study.scores.config_row(config_id)
        return self.user(
            f"model {row.model.name} ({backend_name(row)}; {row.template_id}, context "
            f"{row.context})",
            model=True,
        )

    def decisions(
        self, config_id: int | None, *, coder: str | None, all_coders: bool
    ) -> list[_Exported]:
        if coder == CONSENSUS:
            return self.reconciled(config_id)
        frame = self.study.queries.annotated_pairs(config_id, coder=coder)
        rows: list[dict[str, Any]] = [
            {str(k): v for k, v in row.items()} for row in frame.to_dict("records")
        ]
        blind = self.blind_flags()
        for row in rows:
            row["blind"] = blind.get((str(row["response_id"]), str(row["code_id"]), row["coder"]))
        if coder is not None or all_coders:
            return [_exported(row, self.user(str(row["coder"])), accepted_by=None) for row in rows]
        out: list[_Exported] = []
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for row in rows:
            key = (str(row["response_id"]), str(row["code_id"]))
            if key not in latest or str(row["decided_at"]) >= str(latest[key]["decided_at"]):
                latest[key] = row
        for row in latest.values():
            if row["source"] == "model":
                out.append(
                    _exported(row, self.model_user(config_id), accepted_by=str(row["coder"]))
                )
            else:
                out.append(_exported(row, self.user(str(row["coder"])), accepted_by=None))
        if config_id is not None:  # the model's picks where no coder decided
            offset = 0
            while True:
                page = self.study.queries.page(
                    config_id, order="id", status="undecided", offset=offset, limit=_PAGE
                )
                for pair in page:
                    if pair.pick is None or (pair.response_id, pair.code_id) in latest:
                        continue
                    out.append(
                        _Exported(
                            response_id=pair.response_id,
                            code_id=pair.code_id,
                            value=int(pair.pick),
                            source="model",
                            user=self.model_user(config_id),
                            confidence=pair.confidence,
                            note="the model's pick, not reviewed",
                        )
                    )
                if len(page) < _PAGE:
                    break
                offset += _PAGE
        return out

    def reconciled(self, config_id: int | None) -> list[_Exported]:
        """The reconciled decisions (:mod:`study.exchange.coders`), credited to the
        consensus coder; an unresolved disagreement has none."""
        from study.exchange.coders import chosen_decisions

        confidence: dict[tuple[str, str], float] = {}
        if config_id is not None:
            frame = self.study.queries.annotated_pairs(config_id)
            for rid, cid, p in zip(
                frame["response_id"], frame["code_id"], frame["p_max"], strict=True
            ):
                if isinstance(p, float) and math.isfinite(p):
                    confidence[(str(rid), str(cid))] = p
        with self.study.snapshot() as conn:
            chosen = chosen_decisions(conn, coder=CONSENSUS)
        index, user = self.study.index, self.user(CONSENSUS)
        out = []
        for rid, cid, value, source, blind, who, *_rest in chosen.rows:
            key = (index.response_id(int(rid)), index.code_at(int(cid)).id)
            out.append(
                _Exported(
                    response_id=key[0],
                    code_id=key[1],
                    value=int(value),
                    source=str(source),
                    user=user,
                    confidence=confidence.get(key),
                    blind=None if blind is None else bool(blind),
                    coder=str(who),
                )
            )
        return out

    def evidence(self, config_id: int | None) -> dict[tuple[str, str], list[tuple[int, int]]]:
        """(response id, code id) -> the span of the sentence that moved the model most
        towards "applies", where its evidence was measured and the effect is positive."""
        if config_id is None:
            return {}
        ledger = self.study.evidence
        out: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for e in ledger.for_config(config_id):
            top = e.top
            if top is not None and top.applies_effect > 0:
                out[(e.response_id, e.code_id)] = [(top.start, top.end)]
        return out

    def segments(self) -> dict[tuple[str, str, str], list[tuple[int, int]]]:
        """(response id, code id, coder) -> the segments of that coder's current
        decision (those a QDA program's coding came with), in text order."""
        index = self.study.index
        out: dict[tuple[str, str, str], list[tuple[int, int]]] = defaultdict(list)
        with self.study.snapshot() as conn:
            rows = records.current_segments(conn)
        for rid, cid, who, start, end in rows:
            key = (index.response_id(int(rid)), index.code_at(int(cid)).id, str(who))
            out[key].append((int(start), int(end)))
        return out

    def blind_flags(self) -> dict[tuple[str, str, str], bool]:
        """(response id, code id, coder) -> whether that decision was made blind."""
        index = self.study.index
        with self.study.snapshot() as conn:
            rows = records.blind_flags(conn)
        return {
            (index.response_id(int(r)), index.code_at(int(c)).id, str(w)): bool(b)
            for r, c, w, b in rows
        }

    def notes(
        self, *, coder: str | None, sources: dict[str, str], lengths: dict[str, int]
    ) -> tuple[list[Note], dict[str, list[list[str | None]]]]:
        """Each coder's memo and notes on a response as one note (:mod:`study.refi._notes`),
        anchored to the whole text and dated by its first and latest change; and, per
        note, its parts (``[code id or None, text]``) for codecurve's record."""
        # The notes as they stand now, read at once (not the event log, pair by pair).
        with self.study.snapshot() as conn:
            pair_rows, memo_rows = records.dated_notes(conn, coder=coder)
        index = self.study.index
        current = {c.id: i for i, c in enumerate(self.book.codes)}
        grouped: dict[tuple[str, str], list[tuple[int, str | None, str, str | None]]]
        grouped = defaultdict(list)
        for rid, cid, who, text, at in [*memo_rows, *pair_rows]:
            code_id = None if cid is None else index.code_at(int(cid)).id
            if code_id is not None and code_id not in current:
                continue  # an archived code's note: not in the codebook
            if not text:
                continue
            order = -1 if code_id is None else current[code_id]
            key = (index.response_id(int(rid)), str(who))
            grouped[key].append((order, code_id, str(text), _xml_time(at)))
        notes: list[Note] = []
        parts: dict[str, list[list[str | None]]] = {}
        for (response_id, who), items in sorted(grouped.items()):
            items.sort(key=lambda item: item[0])
            memo = next((text for _o, code_id, text, _at in items if code_id is None), None)
            pairs = [(c, text) for _o, c, text, _at in items if c is not None]
            text = join_note(memo, [(self.book.code(c).name, t) for c, t in pairs])
            times = sorted(at for *_rest, at in items if at)
            guid = self.guid("note", response_id, who)
            notes.append(
                Note(
                    guid=guid,
                    name=f"{response_id}: notes by {who}",
                    text=text,
                    user_guid=self.user(who),
                    targets=(sources[response_id],),
                    created=times[0] if times else None,
                    modified=times[-1] if times else None,
                    anchor=NoteAnchor(
                        self.guid("note selection", response_id, who), 0, lengths[response_id]
                    ),
                )
            )
            parts[guid] = [[None, memo]] if memo else []
            parts[guid] += [[c, t] for c, t in pairs]
        return notes, parts

    def provenance(
        self, config_id: int | None, coder: str | None, *, left_out: Iterable[str] = ()
    ) -> Note:
        """The export's provenance (with each code's delegation guarantee) as a note."""
        from study.exchange.export import provenance

        # study.export.provenance states each delegated code's guarantee in one sentence
        # (study.delegation_log.guarantee_sentences), which a methods section can quote.
        info = provenance(self.study, config_id=config_id, coder=coder)
        lines = [f"{key}: {value}" for key, value in info.items()]
        lines += self.screen_tiers(config_id, coder)
        if left_out:
            lines.append(
                "decisions of archived codes left out (not in the current codebook): "
                + ", ".join(left_out)
            )
        return Note(
            guid=self.guid("provenance"),
            name="codecurve provenance",
            text="\n".join(lines),
            created=_xml_time(stamps.now()),
            as_file=True,  # a project journal, where QDA programs keep one
        )

    def screen_tiers(self, config_id: int | None, coder: str | None) -> list[str]:
        """The validity screen's tier per coder (pooled, then per code), where it can run."""
        from study.analysis.screen import screen_lines

        return screen_lines(self.study, config_id, coder)


@dataclass(frozen=True)
class _Exported:
    response_id: str
    code_id: str
    value: int
    source: str
    user: str
    confidence: float | None = None
    note: str = ""
    blind: bool | None = None
    #: The coder whose decision it is (its segments are theirs).
    coder: str | None = None


def _exported(row: Mapping[str, Any], user: str, *, accepted_by: str | None) -> _Exported:
    confidence = row.get("p_max")
    if confidence is not None and not (isinstance(confidence, float) and math.isfinite(confidence)):
        confidence = None
    note = ""
    if row["source"] == "model":
        note = f"the model's pick, accepted by {accepted_by or row['coder']}"
    return _Exported(
        response_id=str(row["response_id"]),
        code_id=str(row["code_id"]),
        value=int(row["value"]),
        source=str(row["source"]),
        user=user,
        confidence=None if confidence is None else float(confidence),
        note=note,
        blind=None if row.get("blind") is None else bool(row["blind"]),
        coder=str(row["coder"]),
    )


def _xml_time(at: object) -> str | None:
    """A stored time (ISO 8601) as ``xsd:dateTime`` in UTC, to the second, or None."""
    if not isinstance(at, str) or not at:
        return None
    try:
        moment = datetime.fromisoformat(at)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _coding_description(scale: Scale, d: _Exported) -> str:
    parts = []
    if scale.k > 2:
        option = scale.option_of(d.value)
        anchor = f" ({option.anchor})" if option is not None and option.anchor else ""
        parts.append(f"value {d.value} on scale {scale.name}{anchor}")
    if d.confidence is not None:
        parts.append(f"model confidence {d.confidence:.2f}")
    if d.note:
        parts.append(d.note)
    return "; ".join(parts)


def _variables(responses: list[Response], guid: Any) -> tuple[tuple[Variable, ...], Any]:
    names: dict[str, None] = {}
    for response in responses:
        names.update(dict.fromkeys(response.attrs))
    types = {name: _type_of(r.attrs.get(name) for r in responses) for name in names}
    variables = tuple(Variable(guid("variable", name), name, types[name]) for name in names)
    guid_of = {v.name: v.guid for v in variables}

    def value_of(response: Response) -> tuple[tuple[str, Value], ...]:
        return tuple(
            (guid_of[name], _cell(value, types[name]))
            for name, value in response.attrs.items()
            if value is not None
        )

    return variables, value_of


def _type_of(values: Iterable[Any]) -> str:
    present = [v for v in values if v is not None]
    if not present:
        return "Text"
    if all(isinstance(v, bool) for v in present):
        return "Boolean"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "Integer"
    if all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        for v in present
    ):
        return "Float"
    return "Text"


def _cell(value: Any, kind: str) -> Value:
    if kind != "Text":
        return value  # type: ignore[no-any-return]
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
