"""One coding study on disk: responses, codebook snapshot, scores, decisions, event log."""

from study.errors import ResponsesError, StudyError, StudyLockedError
from study.responses import Response, ResponseTable, read_responses

__all__ = [
    "Response",
    "ResponseTable",
    "ResponsesError",
    "StudyError",
    "StudyLockedError",
    "read_responses",
]
