"""REFI-QDA projects (``.qdpx``, ``.qde``): the exchange format of QDA programs.

Public names (modules in brackets)::

    Project, User, ProjectCode,     a project as frozen dataclasses [model]
    Variable, Case, TextSource,
    Coding, Note, ProjectSet
    ReadReport, Skipped             what reading left out, in one summary [model]
    ProjectFileError                a project file that cannot be read or written [study.errors]
    write_qdpx, write_qde,          writing (``project.qde`` valid against Project.xsd)
    project_bytes                   [writer]
    read_project                    reading what real tools write, safely [reader]
    project_from_study              a study as a project [mapping]
    StudyInputs, ImportedDecision,  [mapping]
    ImportedNote
    study_inputs_from_project,      a project as a study's inputs, or its codebook
    decisions_from_project,         alone [importing]
    codebook_from_project
    export_project,                 whole files, all or nothing: a study to a project
    create_from_project,            file, a project file to a new study or to a coder's
    import_project_codes,           decisions [exchange]
    ProjectImport, is_project_file,
    load_codebook_file              a codebook file, or a project's codebook [exchange]

This package is the wing's front door; every module (``_model``, ``_reader``, ``_writer``
...; the brackets drop the ``_``) is the wing's own.

Imports nothing of the UI; pandas only when a study is exported.
"""

from __future__ import annotations

from study.refi._exchange import (
    ProjectImport,
    create_from_project,
    export_project,
    import_project_codes,
    is_project_file,
    load_codebook_file,
)
from study.refi._importing import (
    codebook_from_project,
    decisions_from_project,
    study_inputs_from_project,
)
from study.refi._mapping import ImportedDecision, ImportedNote, StudyInputs, project_from_study
from study.refi._model import (
    Case,
    Coding,
    Note,
    Project,
    ProjectCode,
    ProjectFileError,
    ProjectSet,
    ReadReport,
    Skipped,
    TextSource,
    User,
    Variable,
)
from study.refi._reader import read_project
from study.refi._writer import project_bytes, write_qde, write_qdpx

__all__ = [
    "Case",
    "Coding",
    "ImportedDecision",
    "ImportedNote",
    "Note",
    "Project",
    "ProjectCode",
    "ProjectFileError",
    "ProjectImport",
    "ProjectSet",
    "ReadReport",
    "Skipped",
    "StudyInputs",
    "TextSource",
    "User",
    "Variable",
    "codebook_from_project",
    "create_from_project",
    "decisions_from_project",
    "export_project",
    "import_project_codes",
    "is_project_file",
    "load_codebook_file",
    "project_bytes",
    "project_from_study",
    "read_project",
    "study_inputs_from_project",
    "write_qde",
    "write_qdpx",
]
