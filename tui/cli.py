"""The command line: ``codecurve review | score | screen | export | report | serve | ...``.

Each sub-command lives in its own module under :mod:`tui.commands`, imported here by
name, and exposes ``register(subparsers)``, which adds its parser and sets ``func`` to a
function taking the parsed arguments and returning an exit code. Their options' types
are :mod:`tui.commands.types`'s. At the top they import only light modules; heavy
imports (torch, textual, pandas, the study package) happen inside those functions, so
``codecurve --help`` starts fast.

Exit status, the same for every command:

- 0: done.
- 1: bad input or a runtime failure: a :class:`codebooks.errors.CodecurveError` (a file
  that cannot be read, an output that would overwrite an input or a study, an unknown
  coder, a locked study), an OS error (read-only or full file system, no permission) or
  a SQLite error (a damaged study). One line ``codecurve: error: ...`` on stderr.
- 2: a usage error: an unknown option, a missing argument, an option value of the wrong
  form (``--batch-size 0``, ``--device tpu``), or no command. One line on stderr.
- 130: interrupted (Ctrl-C).

No traceback reaches the user unless ``CODECURVE_DEBUG`` is set. Every message that may
quote a file's content is shown with its control characters made visible.
"""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import sys
from collections.abc import Sequence
from typing import NoReturn

from codebooks.errors import CodecurveError
from tui.commands import (
    UsageError,
    add,
    agreement,
    audit,
    codebook,
    compare,
    delegate,
    demo,
    explain,
    export,
    findings,
    import_codes,
    learn,
    new,
    report,
    review,
    score,
    screen,
    serve,
)

#: The sub-commands, in the order ``--help`` lists them: each module's ``register``.
COMMANDS = (
    review,
    demo,
    new,
    score,
    import_codes,
    learn,
    explain,
    audit,
    screen,
    delegate,
    agreement,
    export,
    codebook,
    add,
    compare,
    findings,
    report,
    serve,
)

PROG = "codecurve"


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one clear line (and a hint), not a usage dump."""

    def error(self, message: str) -> NoReturn:
        from tui.text import printable

        message = printable(message, single_line=True)
        sys.stderr.write(f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(2)


def build_parser() -> ArgumentParser:
    from importlib.metadata import PackageNotFoundError, version

    try:
        own_version = version("codecurve")
    except PackageNotFoundError:  # running from a source tree without installing
        own_version = "0+unknown"
    parser = ArgumentParser(
        prog=PROG,
        description="Deductive coding with ordinal surprisal curves: a language model scores "
        "how well each code applies to each response, you review the uncertain ones first.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {own_version}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``codecurve`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except UsageError as exc:
        _fail(f"{exc} (see '{PROG} {args.command} --help')")
        return 2
    except CodecurveError as exc:
        from tui.commands.remedies import error_line

        return _fail(error_line(exc, study=study_path(args)))
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except MemoryError:
        return _fail("out of memory; try a smaller --batch-size")
    except OSError as exc:  # a read-only or full file system, no permission, ...
        return _fail(os_error_message(exc))
    except sqlite3.Error as exc:
        study = study_path(args)
        where = f"{study}: " if study is not None else ""
        return _fail(f"{where}the study could not be read or written: {exc}")
    except Exception as exc:  # a hand-edited study, a bug: still one line, never a traceback
        return _fail(
            f"unexpected {type(exc).__name__}: {exc} (set CODECURVE_DEBUG=1 for the details)"
        )


def study_path(args: argparse.Namespace) -> object:
    """The study the command works on, to write in a remedy's command: its ``study``
    argument, or the one it creates or opens by itself (``review --responses``,
    ``demo``: the command's ``study_of``); None where there is none."""
    study_of = getattr(args, "study_of", None)
    if callable(study_of):
        return study_of(args)
    return getattr(args, "study", None)


def os_error_message(exc: OSError) -> str:
    """``PATH: No space left on device`` or the error's own words."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{exc.filename}: {reason}" if exc.filename else reason


def _fail(message: str) -> int:
    if os.environ.get("CODECURVE_DEBUG"):
        raise
    from tui.text import printable

    sys.stderr.write(f"{PROG}: error: {printable(message, single_line=True)}\n")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
