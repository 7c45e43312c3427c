"""Errors of the study layer (see :mod:`codebooks.errors` for the whole hierarchy)::

CodecurveError
├── InputError(CodecurveError, ValueError)
│   ├── ResponsesError(InputError)       a responses or codes file cannot be read as asked
│   └── ProjectFileError(InputError)     a REFI-QDA project (.qdpx/.qde) cannot be read or written
└── StudyError(CodecurveError, RuntimeError)   the study file: missing, newer, corrupt
    └── StudyLockedError(StudyError)     another process holds the study open for writing
"""

from __future__ import annotations

from codebooks.errors import CodecurveError, InputError


class StudyError(CodecurveError, RuntimeError):
    """A study file that cannot be created, opened or changed as asked."""


class StudyLockedError(StudyError):
    """The study is open for writing in another process (or another handle of this one)."""


class ResponsesError(InputError):
    """A responses (or imported codes) file that cannot be read as asked."""


class ProjectFileError(InputError):
    """A REFI-QDA project file (``.qdpx``/``.qde``) that cannot be read or written."""


__all__ = ["ProjectFileError", "ResponsesError", "StudyError", "StudyLockedError"]
