"""The project's exception hierarchy.

Every error codecurve raises on purpose derives from :class:`CodecurveError` and from the
matching built-in, so callers may catch either::

    CodecurveError(Exception)
    ├── CodebookError(CodecurveError, ValueError)        malformed or inconsistent codebook
    ├── InputError(CodecurveError, ValueError)           unreadable or malformed input file
    ├── ScoringError(CodecurveError, RuntimeError)       (scoring.errors) model or backend failure
    │   └── ModelNotFoundError(ScoringError, FileNotFoundError)
    └── StudyError(CodecurveError, RuntimeError)         (study.errors) the study file

The command line turns any of them into one line on stderr and a non-zero exit. The
message names the file, the place and, where there is one, the fix.
"""

from __future__ import annotations

from pathlib import Path


class CodecurveError(Exception):
    """Base of every error codecurve raises on purpose.

    Args:
        message: What went wrong and, where possible, how to fix it.
        path: The file concerned, if any; it is prefixed to the message.
        where: A place inside the file (a line, a row, a key path), if known.
    """

    def __init__(self, message: str, *, path: str | Path | None = None, where: str | None = None):
        self.message = message
        self.path = None if path is None else Path(path)
        self.where = where
        super().__init__(str(self))

    def __str__(self) -> str:
        prefix = ""
        if self.path is not None:
            prefix = f"{self.path}"
            if self.where:
                prefix += f" ({self.where})"
            prefix += ": "
        elif self.where:
            prefix = f"{self.where}: "
        return prefix + self.message


class CodebookError(CodecurveError, ValueError):
    """A codebook that cannot be read or does not make sense."""


class InputError(CodecurveError, ValueError):
    """An input file (responses, codes) that cannot be read as asked."""
