"""``codecurve review``: open the review app on a study (creating it first if asked)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from codebooks.errors import InputError
from tui.commands import UsageError
from tui.launch import add_app_options, app_keys, create_study, require_terminal, run_app

DESCRIPTION = """\
Open the review app. Pairs the model is least sure about come first; code them from the
keyboard (1-9 scale value, a accept the model's pick, x does not apply, u undo, ? keys).
Every decision is saved the moment you make it.

  codecurve review study.codecurve
  codecurve review --responses answers.csv --codebook codes.yaml [-s study.codecurve]
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "review",
        help="open the review app on a study",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", nargs="?", type=Path, help="the study file (.codecurve)")
    parser.add_argument("--responses", type=Path, help="create a study from these responses")
    parser.add_argument("--codebook", type=Path, help="the codebook for --responses")
    parser.add_argument(
        "-s",
        "--study",
        dest="study_out",
        type=Path,
        metavar="STUDY",
        help="where --responses creates the study (default: RESPONSES.codecurve here)",
    )
    parser.add_argument("--id-column", help="column of response ids (default: guessed)")
    parser.add_argument("--text-column", help="column of response texts (default: guessed)")
    parser.add_argument(
        "--score",
        action="store_true",
        help="score pending pairs as soon as the model is loaded (a new study always is)",
    )
    add_app_options(parser)
    parser.set_defaults(func=run, study_of=study_of)


def study_of(args: argparse.Namespace) -> Path | None:
    """The study the command opens or creates (with --responses, by default next to where
    it runs, named after them), for its errors' remedies."""
    if args.study_out is not None or args.study is not None:
        return Path(args.study_out or args.study)
    if args.responses is not None:
        return Path.cwd() / f"{Path(args.responses).stem}.codecurve"
    return None


def run(args: argparse.Namespace) -> int:
    if args.responses is None and args.codebook is None:
        if args.study is None:
            raise UsageError("give a study, or --responses FILE --codebook FILE to create one")
        if args.study_out is not None:
            raise UsageError("-s names a study to create: use it with --responses and --codebook")
        keys = app_keys()
        require_terminal()
        return run_app(args.study, args, keys=keys, score_on_open=args.score)
    if args.responses is None or args.codebook is None:
        raise UsageError("--responses and --codebook go together: give both")
    if args.study is not None and args.study_out is not None:
        raise UsageError("give the new study's path once (either STUDY or -s STUDY)")
    target = study_of(args)
    assert target is not None  # --responses is given
    if target.exists():
        raise InputError(
            f"{target} already exists; open it with 'codecurve review {target}', "
            "or choose another path with -s"
        )
    keys = app_keys()
    require_terminal()
    create_study(
        target,
        responses=args.responses,
        codebook=args.codebook,
        id_column=args.id_column,
        text_column=args.text_column,
    )
    return run_app(target, args, keys=keys, score_on_open=True)
