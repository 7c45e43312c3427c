"""``codecurve export STUDY -o FILE``: write the coded dataset (or the codebook)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from codebooks.errors import InputError
from tui.commands import UsageError

DESCRIPTION = """\
Write the coded dataset. Long layout: one row per (response, code) with the model's
curve, the coder's decision and the final decision (the coder's where there is one,
else the model's pick, marked as such). Wide layout: one row per response with a 0/1
column per code (applies; empty where nobody decided, unless --fill model) and the
model's confidence per code. The format follows the
suffix (.csv, .xlsx, .parquet, .jsonl) unless --format says otherwise; an XLSX file has
a second sheet, "provenance". The study may stay open in the app meanwhile.

  codecurve export survey.codecurve -o coded.xlsx --layout wide
  codecurve export survey.codecurve -o all.csv --layout wide --fill model
  codecurve export survey.codecurve --codebook codes.qdc
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export",
        help="write the coded dataset or the codebook",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="the dataset to write")
    parser.add_argument(
        "--format", choices=("csv", "xlsx", "parquet", "jsonl"), help="default: by the suffix"
    )
    parser.add_argument("--layout", choices=("long", "wide"), default="long", help="default: long")
    parser.add_argument(
        "--coder", metavar="NAME", help="export this coder's decisions (default: the latest)"
    )
    parser.add_argument(
        "--config",
        type=int,
        metavar="ID",
        help="the scoring configuration to export (default: the study's active one)",
    )
    parser.add_argument(
        "--fill",
        choices=("none", "model"),
        default="none",
        help="wide layout: what an undecided cell holds: nothing (default) or the model's "
        "pick, with a source column per code",
    )
    parser.add_argument(
        "--codebook",
        type=Path,
        metavar="FILE",
        help="write the study's codebook (.yaml, .json, .csv or .qdc)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from study.export import export_codebook, export_study
    from study.store import Study
    from tui.commands.outputs import check_output
    from tui.text import printable

    if args.output is None and args.codebook is None:
        raise UsageError("nothing to write: give -o FILE, --codebook FILE or both")
    if args.output is None and (args.format or args.coder or args.config is not None):
        raise UsageError("--format, --coder and --config describe the dataset: add -o FILE")
    if args.fill != "none" and args.layout != "wide":
        raise UsageError("--fill is for the wide layout (the long one always says final_from)")
    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    for output in (args.output, args.codebook):
        if output is not None:
            check_output(output, protect={"study": args.study})
    if (
        args.output is not None
        and args.codebook is not None
        and args.output.resolve() == args.codebook.resolve()
    ):
        raise UsageError("-o and --codebook name the same file; give two names")
    with Study.open(args.study, read_only=True) as study:
        if args.coder is not None:
            check_coder(args.coder, study.coders())
        if args.output is not None:
            written = export_study(
                study,
                args.output,
                format=args.format,
                layout=args.layout,
                config_id="active" if args.config is None else args.config,
                coder=args.coder,
                fill=args.fill,
            )
            sys.stderr.write(printable(f"wrote {written} ({args.layout} layout)") + "\n")
        if args.codebook is not None:
            written = export_codebook(study, args.codebook)
            sys.stderr.write(printable(f"wrote {written}") + "\n")
    return 0


def check_coder(coder: str, coders: list[str]) -> None:
    """Refuse a coder with no decisions in the study, naming those who have some.

    Raises:
        InputError: "no decisions by 'alice' (did you mean 'Alice'?); coders: ...".
    """
    if coder in coders:
        return
    if not coders:
        raise InputError(f"no decisions by {coder!r}: the study has no decisions yet")
    message = f"no decisions by {coder!r}"
    same = [c for c in coders if c.casefold() == coder.casefold()]
    if same:
        message += f" (did you mean {same[0]!r}?)"
    listed = ", ".join(repr(c) for c in coders[:20])
    more = f" and {len(coders) - 20} more" if len(coders) > 20 else ""
    raise InputError(f"{message}; the study's coders are {listed}{more}")
