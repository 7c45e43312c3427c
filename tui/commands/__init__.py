"""The sub-commands, one module each, and the error they share.

Beside the commands: :mod:`~tui.commands.types` (the argparse types they share),
:mod:`~tui.commands.outputs` (checks of output paths), and the score command's study
mode and output (:mod:`~tui.commands.score_study`, :mod:`~tui.commands.score_output`).

Error tree of the command line (the rest is drawn in :mod:`codebooks.errors`)::

    CodecurveError              exit status 1: input and runtime errors
    └── UsageError              exit status 2: the command line itself is wrong
"""

from __future__ import annotations

import sys

from codebooks.errors import CodecurveError


class UsageError(CodecurveError, ValueError):
    """Options that do not go together, a missing one, or a value of the wrong form.

    argparse reports what it can check itself (exit status 2); this is the same kind of
    error found by a command after parsing, and exits with the same status.
    """


def tell(note: str) -> None:
    """Say ``note`` once on standard error, as a sentence ("" says nothing): what a
    command chose for the user (whose decisions it uses), before its output."""
    if note:
        from tui.commands.remedies import note_line
        from tui.text import printable

        line = note_line(note)
        sentence = line[:1].upper() + line[1:] + "."
        sys.stderr.write(printable(sentence, single_line=True) + "\n")
