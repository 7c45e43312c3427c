"""The command line: ``codecurve review | score | screen | export | new | import-codes | demo``.

Each sub-command lives in its own module under :mod:`tui.commands` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a function taking the
parsed arguments and returning an exit code. Heavy imports (torch, textual, pandas) happen
inside those functions, so ``codecurve --help`` starts fast.

Errors: any :class:`codebooks.errors.CodecurveError` (and a few expected OS errors) become
one line on stderr and exit status 1; a usage error is one line and exit status 2; Ctrl-C
is exit status 130. No traceback reaches the user unless ``CODECURVE_DEBUG`` is set.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from codebooks.errors import CodecurveError

#: Sub-command modules, in the order ``--help`` lists them.
COMMANDS = ("review", "demo", "new", "score", "import_codes", "screen", "agreement", "export")

PROG = "codecurve"


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one clear line (and a hint), not a usage dump."""

    def error(self, message: str) -> NoReturn:
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
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"tui.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"tui.commands.{name}":
                continue  # a command not built yet
            raise
        module.register(sub)
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
    except CodecurveError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except (FileNotFoundError, PermissionError, IsADirectoryError) as exc:
        return _fail(f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc))
    except MemoryError:
        return _fail("out of memory; try a smaller --batch-size")


def _fail(message: str) -> int:
    if os.environ.get("CODECURVE_DEBUG"):
        raise
    sys.stderr.write(f"{PROG}: error: {message}\n")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
