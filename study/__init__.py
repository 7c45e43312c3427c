"""One coding study on disk: responses, codebook snapshot, scores, decisions, event log.

Public names::

    Study                         the study file (store.py): create/open, decisions, undo,
                                  scores, queries (queries.py)
    Response, ResponseTable,      responses read from CSV/TSV/XLSX/JSONL/JSON/Parquet/TXT
    read_responses                (responses.py)
    Decision, Event, ConfigRow,   values a study hands out (rows.py)
    PairRow
    StudyError, StudyLockedError, errors (errors.py)
    ResponsesError
    export_study                  the coded dataset (export.py)

Imports nothing of the UI and no torch.
"""

from study.errors import ResponsesError, StudyError, StudyLockedError
from study.responses import Response, ResponseTable, read_responses
from study.rows import ConfigRow, Decision, Event, PairRow
from study.store import ImportResult, Study

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
    "StudyError",
    "StudyLockedError",
    "read_responses",
]
