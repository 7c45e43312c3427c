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
    export_study, export_codebook  the coded dataset and the codebook [study.exchange]
    import_codes                   existing codes as a coder's decisions [study.exchange]
    score_study, ScoreProgress     score the pending pairs into the study [score_run]
    config_label, active_context   a configuration's label, the active context [labels]

Front doors. Other rooms (the UI, the command line) import ``study`` through its doors
only: this package, the wings' packages (``study.analysis``, ``study.audit``,
``study.exchange``, ``study.file``, ``study.iteration``, ``study.log``, ``study.refi``,
``study.report``, ``study.scores``), each exporting in ``__all__`` what others may use,
and two modules that are doors of their own: ``study.errors`` (every error ``study``
raises, one module so that a caller finds them all) and ``study.rows`` (the values a
study hands out, which every room passes around). A module whose name starts with
``_`` belongs to its wing alone; one without is also read by other wings of ``study``
(the floors of docs/architecture.md). tests/test_architecture.py checks both.

Other modules: schema (tables, migrations), locking (coder sessions, scoring), checkpoint (WAL),
codec (float curves as BLOBs, natural id order), stamps (time, version), screening.

The lazy names (the exports, scoring, the labels) load pandas (or the scoring engine) on
first use, so that ``import study`` stays light. Imports nothing of the UI and no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from study.errors import ResponsesError, StudyChangedError, StudyError, StudyLockedError
from study.index import StudyIndex
from study.intake.responses import Response, ResponseTable, read_responses
from study.lazy import lazy_getattr
from study.rows import ConfigRow, Decision, Event, PairRow
from study.store import ImportResult, Study
from study.view import StudyView

if TYPE_CHECKING:
    from study.exchange import export_codebook, export_study, import_codes
    from study.labels import active_context, config_label
    from study.score_run import ScoreProgress, score_study

_LAZY = {
    "export_study": "study.exchange",
    "export_codebook": "study.exchange",
    "import_codes": "study.exchange",
    "score_study": "study.score_run",
    "ScoreProgress": "study.score_run",
    "config_label": "study.labels",
    "active_context": "study.labels",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "ConfigRow",
    "Decision",
    "Event",
    "ImportResult",
    "PairRow",
    "Response",
    "ResponseTable",
    "ResponsesError",
    "ScoreProgress",
    "Study",
    "StudyChangedError",
    "StudyError",
    "StudyIndex",
    "StudyLockedError",
    "StudyView",
    "active_context",
    "config_label",
    "export_codebook",
    "export_study",
    "import_codes",
    "read_responses",
    "score_study",
]
