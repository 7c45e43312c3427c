"""Whole-file operations: a study to a project file, a project file to a study or to
decisions on one. Each writes nothing unless all of it succeeds.

The command line (``export --project``, ``new --project``, ``import-codes`` with a
``.qdpx``/``.qde``) and the app's export dialog call these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from codebooks import Codebook, load_codebook
from codebooks.files import check_target
from study.errors import REPLACE, ProjectFileError, StudyError
from study.file import lifecycle
from study.refi._importing import (
    codebook_from_project,
    decisions_from_project,
    study_inputs_from_project,
)
from study.refi._mapping import EXTRA_FORMAT, ImportedDecision, ImportedNote, project_from_study
from study.refi._reader import read_project
from study.refi._writer import write_qde, write_qdpx
from study.store import Study

#: Suffixes of project files.
PROJECT_SUFFIXES = (".qdpx", ".qde")


@dataclass(frozen=True)
class ProjectImport:
    """What reading a project into a study did.

    Attributes:
        decisions: Decisions stored (new or changed), per coder.
        notes: Notes stored (those already as given are not stored again).
        messages: One line per thing skipped or changed (the reader's summary first).
        unchanged: Decisions the study already held as given (a second import).
    """

    decisions: Mapping[str, int]
    notes: int
    messages: tuple[str, ...]
    unchanged: int = 0


def is_project_file(path: str | Path) -> bool:
    """Whether ``path`` is named like a REFI-QDA project (``.qdpx`` or ``.qde``)."""
    return Path(path).suffix.casefold() in PROJECT_SUFFIXES


def export_project(
    study: Study,
    path: str | Path,
    *,
    coder: str | None = None,
    all_coders: bool = False,
    protect: Iterable[str | Path] = (),
) -> Path:
    """Write the study as a ``.qdpx`` (or, by the suffix, a ``.qde``) project, atomically.

    Args:
        study: An open study.
        path: The file; its suffix must be ``.qdpx`` or ``.qde``.
        coder: Only this coder's decisions (see :func:`project_from_study`).
        all_coders: Every coder's decisions, each as their own user.
        protect: Files never to overwrite (the study, and the project or responses file
            it was made from, always are).

    Raises:
        ProjectFileError: another suffix, a refused target, an unknown coder, a text XML
            cannot hold, or the file cannot be written; nothing is then written.
    """
    target = Path(path)
    if not is_project_file(target):
        raise ProjectFileError(
            "a project file ends in .qdpx (or .qde for the XML alone)", path=target
        )
    source = study.meta().get("responses_source", "")  # the project it was made from
    protected = (study.path, *protect, *([Path(source)] if source else []))
    check_target(target, protect=protected, error=ProjectFileError)
    project = project_from_study(study, coder=coder, all_coders=all_coders)
    if target.suffix.casefold() == ".qde":
        return write_qde(project, target, protect=protected)
    return write_qdpx(project, target, protect=protected)


def load_codebook_file(path: str | Path) -> tuple[Codebook, tuple[str, ...]]:
    """A codebook file of any format codecurve reads, or the codebook of a REFI-QDA
    project (``.qdpx``, ``.qde``: a project whose sources hold no text has one too); and
    one message per thing changed while reading a project.

    Raises:
        CodebookError: a codebook file that cannot be read.
        ProjectFileError: a project that cannot be read, or without codable codes.
    """
    if not is_project_file(path):
        return load_codebook(path), ()
    project, _report = read_project(path)
    return codebook_from_project(project, name=Path(path).stem)


def create_from_project(
    path: str | Path, source: str | Path, *, overwrite: bool = False
) -> tuple[Study, ProjectImport]:
    """Create a study from a project: responses, codebook, decisions per coder, notes.

    The study is built whole under a temporary name and moved into place only when its
    decisions and notes are in, so a failure leaves nothing behind.

    Args:
        path: The study to create.
        source: A ``.qdpx`` or ``.qde`` file.
        overwrite: Replace an existing study.

    Returns:
        The new study, open for writing, and what the import did.

    Raises:
        ProjectFileError: the project cannot be read, is unsafe, or holds nothing to code.
        StudyError: the study exists or cannot be written.
    """
    p = Path(path)
    if p.exists() and not overwrite:
        raise StudyError(
            "already exists; choose another name, or replace it", path=p, remedy=REPLACE
        )
    project, report = read_project(source)
    inputs = study_inputs_from_project(project, skipped=report.skipped)
    messages = [report.summary()] if report else []
    messages += inputs.messages
    counts: dict[str, int] = {}
    stored_notes = 0

    def fill(tmp: Path) -> None:
        nonlocal stored_notes
        with Study.open(tmp) as study:
            for coder, items in inputs.decisions.items():
                counts[coder] = _store_decisions(study, items, coder=coder, source=source)
            stored_notes = _store_notes(study, inputs.notes)
            messages.extend(_restore_history(study, project.extra, source=source))

    # The project is the study's responses source: recorded, so that no export replaces it.
    responses = replace(inputs.responses, path=Path(source).absolute())
    lifecycle.create_file(
        p, responses=responses, codebook=inputs.codebook, overwrite=overwrite, fill=fill
    )
    return Study.open(p), ProjectImport(counts, stored_notes, tuple(messages))


def import_project_codes(
    study: Study,
    source: str | Path,
    *,
    coder: str,
    user: str | None = None,
    replace: bool = False,
) -> ProjectImport:
    """Store a project's codings as ``coder``'s decisions, sources matched by name.

    Args:
        study: The study, open for writing.
        source: A ``.qdpx`` or ``.qde`` file.
        coder: Whose decisions they become.
        user: The project user whose codings to take (needed when it has several).
        replace: Overwrite ``coder``'s decisions that differ (default: refuse).

    Raises:
        ProjectFileError: unreadable or unsafe, nothing matches, an unknown user, or
            several users and none chosen (their names are listed).
        StudyError: conflicting decisions; nothing is stored.
    """
    project, report = read_project(source)
    decided, notes, found = decisions_from_project(project, study, coder=coder, user=user)
    messages = ([report.summary()] if report else []) + list(found)
    # "Does not apply" for a code off the source's question is no pair of the study.
    items = tuple(
        d
        for d in decided.get(coder, ())
        if not study.index.needless(d.response_id, d.code_id, d.value)
    )
    if not items:
        why = "".join(f"; {m}" for m in found if "ordinal" in m)
        raise ProjectFileError(f"the project holds no codings to import{why}", path=Path(source))
    # Decisions and notes in one transaction: a process killed meanwhile stores all or
    # nothing, and a second run stores (and counts) only what changed.
    triples = [(d.response_id, d.code_id, d.value) for d in items]
    done = study.decisions.import_decisions(
        triples,
        coder=coder,
        replace=replace,
        detail={"file": str(source), "format": "refi-qda"},
        sources={(d.response_id, d.code_id): d.source for d in items if d.source != "human"},
        notes=[(n.response_id, n.code_id, n.coder, n.text) for n in notes],
        segments={(d.response_id, d.code_id): d.segments for d in items if d.segments},
    )
    return ProjectImport(
        {coder: done.added + done.changed}, done.notes, tuple(messages), unchanged=done.unchanged
    )


def _store_decisions(
    study: Study,
    items: Iterable[ImportedDecision],
    *,
    coder: str,
    source: str | Path,
    replace: bool = False,
) -> int:
    items = [d for d in items if not study.index.needless(d.response_id, d.code_id, d.value)]
    triples = [(d.response_id, d.code_id, d.value) for d in items]
    # A pick the coder accepted from the model stays one (codecurve's own record says so).
    sources = {(d.response_id, d.code_id): d.source for d in items if d.source != "human"}
    # A decision codecurve's record says was made after seeing the model stays so.
    unblind = [(d.response_id, d.code_id) for d in items if d.blind is False]
    study.decisions.import_decisions(
        triples,
        coder=coder,
        replace=replace,
        detail={"file": str(source), "format": "refi-qda"},
        sources=sources,
        unblind=unblind,
        segments={(d.response_id, d.code_id): d.segments for d in items if d.segments},
    )
    return len(triples)


def _restore_history(study: Study, extra: Mapping[str, Any], *, source: str | Path) -> list[str]:
    """The audit sample codecurve's record carries, restored in the new study; what
    could not be restored, and the codebook history, said in words."""
    if extra.get("format") != EXTRA_FORMAT:
        return []
    messages = []
    audit = extra.get("audit")
    if isinstance(audit, dict):
        try:
            sample = study.audit.restore(
                seed=int(audit["seed"]),
                responses=[str(r) for r in audit["responses"]],
                sizes={str(k): v for k, v in dict(audit["sizes"]).items()},
                source=str(source),
            )
            messages.append(
                f"the audit sample is restored (seed {sample.seed}, {sample.total} pairs); "
                "its blind decisions count as before"
            )
        except (StudyError, KeyError, TypeError, ValueError) as exc:
            messages.append(f"the project's audit sample is not restored: {exc}")
    versions = extra.get("codebook_versions")
    if isinstance(versions, list) and len(versions) > 1:
        messages.append(
            f"the project records {len(versions)} codebook versions; the study starts from "
            "the current one as its version 1 (the history stays in the project's "
            "codecurve.json)"
        )
    return messages


def _store_notes(study: Study, notes: Iterable[ImportedNote]) -> int:
    """Store notes on a coding as pair notes, and notes on a whole source as memos."""
    stored = 0
    for note in notes:
        if note.code_id is None:
            study.decisions.set_memo(note.response_id, note.text, coder=note.coder)
        else:
            study.decisions.set_note(note.response_id, note.code_id, note.text, coder=note.coder)
        stored += 1
    return stored
