"""One coding study on disk: responses, codebook snapshot, scores, decisions, event log.

Public names (modules in brackets)::

    Study, ImportResult            the study file: the handle (create/open, responses,
                                   transactions) and its namespaces study.scores,
                                   .decisions, .queries, .audit, .delegations, .versions
                                   [store; the work is done in lifecycle, scores, log,
                                   queries, audit, iteration]
    StudyIndex                     ids <-> table keys (Study.index) [index]
    StudyView                      the handle with its scores and decisions, the read face
                                   that queries and exporters use [view; the handle's own
                                   protocol, StudyHandle, in handle]
    Response, ResponseTable,       responses from CSV/TSV/XLSX/JSONL/JSON/Parquet/TXT
    read_responses                 [responses]
    Decision, Event, ConfigRow,    values a study hands out [rows]
    PairRow
    StudyError, StudyLockedError,  errors [errors]
    StudyChangedError,
    ResponsesError
    export_study, export_codebook  the coded dataset and the codebook [export: frames
                                   builds the tables, writers writes them]
    import_codes                   existing codes as a coder's decisions [code_import]
    score_study                    score the pending pairs into the study [score_run]

Other modules: schema (tables, migrations), locking (coder sessions, scoring), checkpoint (WAL),
codec (float curves as BLOBs, natural id order), stamps (time, version), screening.

The last three load pandas (or the scoring engine) on first use, so that ``import study``
stays light. Imports nothing of the UI and no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from study.errors import ResponsesError, StudyChangedError, StudyError, StudyLockedError
from study.index import StudyIndex
from study.intake.responses import Response, ResponseTable, read_responses
from study.rows import ConfigRow, Decision, Event, PairRow
from study.store import ImportResult, Study
from study.view import StudyView

if TYPE_CHECKING:
    from study.exchange.code_import import import_codes
    from study.exchange.export import export_codebook, export_study
    from study.score_run import score_study

_LAZY = {
    "export_study": "study.exchange.export",
    "export_codebook": "study.exchange.export",
    "import_codes": "study.exchange.code_import",
    "score_study": "study.score_run",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'study' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "ConfigRow",
    "Decision",
    "Event",
    "ImportResult",
    "PairRow",
    "Response",
    "ResponseTable",
    "ResponsesError",
    "Study",
    "StudyChangedError",
    "StudyError",
    "StudyIndex",
    "StudyLockedError",
    "StudyView",
    "export_codebook",
    "export_study",
    "import_codes",
    "read_responses",
    "score_study",
]
