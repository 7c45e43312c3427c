"""``codecurve export STUDY -o FILE``: write the coded dataset (or the codebook)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from codebooks.errors import InputError

DESCRIPTION = """\
Write the coded dataset. Long layout: one row per (response, code) with the model's
curve, the coder's decision and the final decision (the coder's where there is one,
else the model's pick, marked as such). Wide layout: one row per response with a 0/1
column per code (applies) and the model's confidence per code. The format follows the
suffix (.csv, .xlsx, .parquet, .jsonl) unless --format says otherwise; an XLSX file has
a second sheet, "provenance". The study may stay open in the app meanwhile.

  codecurve export survey.codecurve -o coded.xlsx --layout wide
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
        "--codebook",
        type=Path,
        metavar="FILE",
        help="write the study's codebook (.yaml, .json, .csv or .qdc)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from study.export import export_codebook, export_study
    from study.store import Study

    if args.output is None and args.codebook is None:
        raise InputError("nothing to write: give -o FILE, --codebook FILE or both")
    if args.output is None and (args.format or args.coder or args.config is not None):
        raise InputError("--format, --coder and --config describe the dataset: add -o FILE")
    with Study.open(args.study, read_only=True) as study:
        if args.output is not None:
            written = export_study(
                study,
                args.output,
                format=args.format,
                layout=args.layout,
                config_id="active" if args.config is None else args.config,
                coder=args.coder,
            )
            sys.stderr.write(f"wrote {written} ({args.layout} layout)\n")
        if args.codebook is not None:
            written = export_codebook(study, args.codebook)
            sys.stderr.write(f"wrote {written}\n")
    return 0
