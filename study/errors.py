"""Errors of the study layer (the whole hierarchy is drawn in :mod:`codebooks.errors`)."""

from __future__ import annotations

from codebooks.errors import CodecurveError, InputError


class StudyError(CodecurveError, RuntimeError):
    """A study file that cannot be created, opened or changed as asked."""


class NoBlindDecisionsError(StudyError):
    """The audit sample was asked for, but none of its pairs is decided blind yet."""


class StudyLockedError(StudyError):
    """The study is open for writing in another process (or another handle of this one)."""


class ResponsesError(InputError):
    """A responses (or imported codes) file that cannot be read as asked."""


class ProjectFileError(InputError):
    """A REFI-QDA project file (``.qdpx``/``.qde``) that cannot be read or written."""


__all__ = [
    "NoBlindDecisionsError",
    "ProjectFileError",
    "ResponsesError",
    "StudyError",
    "StudyLockedError",
]
