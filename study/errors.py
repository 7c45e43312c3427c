"""Errors of the study layer (the whole hierarchy is drawn in :mod:`codebooks.errors`)."""

from __future__ import annotations

from codebooks.errors import CodecurveError, InputError, Remedy

#: The remedies the study's errors give most: score the study, draw its audit sample.
SCORE = Remedy("score", "score the study")
DRAW_AUDIT = Remedy("audit", "draw an audit sample", {"draw": True})
#: Create the study (again) from a responses file and a codebook.
NEW = Remedy(
    "new",
    "create the study from a responses file and a codebook",
    {"responses": "FILE", "codebook": "FILE"},
)
#: The same step again, replacing the file that is in the way.
REPLACE = Remedy("retry", "replace the file", {"force": True})
#: The same step again, as the coder named (or with the decisions of that coder).
NAME_CODER = Remedy("retry", "name the coder", {"coder": "NAME"})


class StudyError(CodecurveError, RuntimeError):
    """A study file that cannot be created, opened or changed as asked."""


class NoBlindDecisionsError(StudyError):
    """The audit sample was asked for, but none of its pairs is decided blind yet."""


class StudyLockedError(StudyError):
    """The coder already has the study open in another session, it is being scored or
    replaced elsewhere, or another session held its write lock too long."""


class StudyChangedError(StudyError):
    """Another session changed the study's structure (its codebook, its responses, the
    active configuration) since this change was prepared; nothing was written."""


class ResponsesError(InputError):
    """A responses (or imported codes) file that cannot be read as asked."""


class ProjectFileError(InputError):
    """A REFI-QDA project file (``.qdpx``/``.qde``) that cannot be read or written."""


__all__ = [
    "DRAW_AUDIT",
    "NAME_CODER",
    "NEW",
    "REPLACE",
    "SCORE",
    "NoBlindDecisionsError",
    "ProjectFileError",
    "ResponsesError",
    "StudyChangedError",
    "StudyError",
    "StudyLockedError",
]
