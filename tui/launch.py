"""Shared by ``codecurve review`` and ``codecurve demo``: create a study, then run the app.

No textual at import time: the command line's ``--help`` must stay light.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tui.commands.types import CONTEXTS, positive_int
from tui.text import plural, printable

if TYPE_CHECKING:
    from scoring.backend import Backend


def require_terminal() -> None:
    """Refuse to open the app unless stdin and stdout are a terminal.

    Called before a study is created or opened (its write lock taken): with input from
    ``/dev/null`` or a pipe the app would wait forever holding the lock.

    Raises:
        InputError: Saying what to use in a script instead.
    """
    from codebooks.errors import InputError

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InputError(
            "the review app needs a terminal (stdin and stdout are not one); in a script "
            "use 'codecurve score', 'codecurve import-codes' or 'codecurve export'"
        )


def add_app_options(parser: argparse.ArgumentParser) -> None:
    """Options of every command that opens the app."""
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help="model that scores the pairs: 'embedded' (default, offline SmolLM2-135M), a "
        "Hugging Face id, a local folder or a .gguf file",
    )
    parser.add_argument(
        "--no-model",
        action="store_true",
        help="do not load a model: code by hand with the scores already in the study",
    )
    parser.add_argument(
        "--context",
        choices=CONTEXTS,
        metavar="LEVEL",  # a metavar keeps argparse from reading the choices before use
        default=None,
        help="what the prompt tells the model about a code: %(choices)s (default: the "
        "study's active configuration's, else definition); another one than the active "
        "configuration's starts a new configuration",
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        metavar="N",
        help="pairs per scoring batch (default: 16 for a local model, twice the server's "
        "concurrency for openai:NAME)",
    )
    parser.add_argument(
        "--coder",
        metavar="NAME",
        help="code as NAME this time (default: your name, asked once and remembered in "
        "coder.toml in the config folder)",
    )
    parser.add_argument(
        "--allow-download",
        action="store_true",
        help="fetch a Hugging Face model that is not in the local cache (never by default)",
    )


def backend_factory(model: str | None, *, allow_download: bool = False) -> Callable[[], Backend]:
    """A loader run in the app's worker thread, so the window opens before the model."""

    def load() -> Backend:
        from scoring import load_backend

        return load_backend(model, allow_download=allow_download)

    return load


def create_study(
    path: Path,
    *,
    responses: Path,
    codebook: Path,
    id_column: str | None = None,
    text_column: str | None = None,
    overwrite: bool = False,
) -> None:
    """Read responses and codebook and write a new study at ``path``."""
    from study import Study, read_responses
    from study.refi import load_codebook_file
    from tui.commands.outputs import check_folder, refuse_inputs

    refuse_inputs(path, protect={"responses file": responses, "codebook": codebook})
    check_folder(path)

    table = read_responses(responses, id_column=id_column, text_column=text_column)
    for message in table.messages:
        sys.stderr.write(printable(f"{responses}: {message}") + "\n")
    book, _read = load_codebook_file(codebook)
    with Study.create(
        path, responses=table, codebook=book, overwrite=overwrite, codebook_source=codebook
    ) as study:
        sys.stderr.write(
            f"created {path}: {plural(study.response_count(), 'response')} x "
            f"{plural(len(book.codable), 'code')}\n"
        )


def app_keys() -> dict[str, str]:
    """The keys the coder rebound in ``keys.toml`` (:mod:`tui.keyconfig`).

    Read first, before a terminal is asked for and a study created or opened, so that a
    bad file is one message with nothing written.

    Raises:
        KeyConfigError: Naming the file and what is wrong in it.
    """
    from tui.keyconfig import load_keys
    from tui.keymap import rebind

    keys = load_keys()
    rebind(keys)  # the words said before the app opens name them too
    return keys


@contextmanager
def logs_off_the_terminal() -> Iterator[None]:
    """While open, log records go to Textual's log (``textual console`` shows them), not
    to the terminal the app draws on: a record written there would land on the app's
    screen, a traceback over the panes. The handlers are put back after."""
    import logging

    from textual.logging import TextualHandler

    root = logging.getLogger()
    terminal = [
        h
        for h in root.handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]
    quiet = logging.lastResort
    textual = TextualHandler(stderr=False, stdout=False)  # no app yet or any more: dropped
    for handler in terminal:
        root.removeHandler(handler)
    root.addHandler(textual)
    logging.lastResort = None  # no record reaches stderr for want of a handler either
    try:
        yield
    finally:
        root.removeHandler(textual)
        for handler in terminal:
            root.addHandler(handler)
        logging.lastResort = quiet


def run_app(
    path: Path, args: argparse.Namespace, *, keys: dict[str, str], score_on_open: bool
) -> int:
    """Open the study in the app until the coder quits, with the keys the coder rebound
    (:func:`app_keys`)."""
    from study.file import network_file_system
    from tui.app import make_app

    coder = app_coder(path, args.coder)
    if (share := network_file_system(path)) is not None:
        sys.stderr.write(
            f"codecurve: warning: {printable(str(path))} is on a network share ({share}); "
            "coders working on it from several machines at once can damage it: keep the "
            "study on a local disk of the machine the coders log into\n"
        )
    context = args.context
    note = context_note(path, context, None if args.no_model else args.model)
    if note:
        sys.stderr.write(printable(note) + "\n")
    factory = (
        None if args.no_model else backend_factory(args.model, allow_download=args.allow_download)
    )
    app = make_app(
        path,
        backend_factory=factory,
        coder=coder,
        score_on_open=score_on_open and factory is not None,
        context=context,
        batch_size=args.batch_size,
        keys=keys,
    )
    with logs_off_the_terminal():
        app.run()
    if app.return_code:  # the app stopped on an error it did not expect (shown above)
        sys.stderr.write(
            "codecurve: error: the app stopped on an unexpected error; every decision "
            "saved before it is kept in the study\n"
        )
        return 1
    return 0


def app_coder(path: Path, given: str | None) -> str:
    """The coder the app opens as (:mod:`tui.coder_name`): ``--coder``, the remembered
    name, or the answer to a question asked once (the study's coders listed)."""
    from study import Study
    from tui.coder_name import resolve_coder

    known: list[str] = []
    if given is None and path.exists():
        with Study.open(path, read_only=True) as study:
            known = study.decisions.coders()
    return resolve_coder(given, known)


def context_note(path: Path, context: str | None, model: str | None = None) -> str | None:
    """The line said before the app opens when ``--context`` (or ``--model``) differs
    from the study's active configuration: a new configuration starts, and the active
    one stays shown (and active) until something is scored with the new one.

    A model is compared by name only (loading it to learn its identity would take as
    long as opening the app); the app says it again, exactly, once the model is loaded.
    """
    from study import Study, config_label
    from tui.keymap import key

    if not path.exists() or (context is None and model is None):
        return None
    with Study.open(path, read_only=True) as study:
        active = study.scores.active_config_id()
        if active is None:
            return None
        row = study.scores.config_row(active)
        changes = []
        if context is not None and row.context != context:
            changes.append(f"--context {context}")
        name = row.model.name
        if model is not None and model not in (name, name.rstrip("/").rsplit("/", 1)[-1]):
            changes.append(f"--model {model}")
        if not changes:
            return None
        return (
            f"note: {' and '.join(changes)} start{'s' if len(changes) == 1 else ''} a new "
            f"configuration unless it is the active one ({config_label(row)}, "
            f"{study.scores.scored_count(active)} pairs scored); its pairs are scored when you "
            f"press {key('review.score')}, and until then the app shows the active one"
        )
