"""Shared by ``codecurve review`` and ``codecurve demo``: create a study, then run the app.

No textual at import time: the command line's ``--help`` must stay light.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scoring.backend import Backend

#: Prompt context levels (METHOD.md section 1), mirrored to keep ``--help`` light.
CONTEXTS = ("none", "definition", "full")


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (argparse reports anything else)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


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
        default="definition",
        help="what the prompt tells the model about a code (default: definition)",
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        metavar="N",
        help="pairs per scoring batch (default: 16 for a local model, twice the server's "
        "concurrency for openai:NAME)",
    )
    parser.add_argument("--coder", metavar="NAME", help="your coder id (default: your user name)")


def backend_factory(model: str | None) -> Callable[[], Backend]:
    """A loader run in the app's worker thread, so the window opens before the model."""

    def load() -> Backend:
        from scoring import load_backend

        return load_backend(model)

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
    from codebooks import load_codebook
    from study.responses import read_responses
    from study.store import Study

    table = read_responses(responses, id_column=id_column, text_column=text_column)
    for message in table.messages:
        sys.stderr.write(f"{responses}: {message}\n")
    book = load_codebook(codebook)
    with Study.create(path, responses=table, codebook=book, overwrite=overwrite) as study:
        sys.stderr.write(
            f"created {path}: {study.response_count():,} responses x {len(book.codable)} codes\n"
        )


def run_app(path: Path, args: argparse.Namespace, *, score_on_open: bool) -> int:
    """Open the study in the app until the coder quits."""
    from tui.app import make_app

    factory = None if args.no_model else backend_factory(args.model)
    app = make_app(
        path,
        backend_factory=factory,
        coder=args.coder,
        score_on_open=score_on_open and factory is not None,
        context=args.context,
        batch_size=args.batch_size,
    )
    app.run()
    return 0
