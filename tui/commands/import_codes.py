"""``codecurve import-codes STUDY FILE --coder NAME``: store existing codes as decisions."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tui.commands import UsageError

DESCRIPTION = """\
Import codes already assigned (by hand, in a spreadsheet, by another tool) as one coder's
decisions. The file is keyed by response id and holds either one column per code
(named by the code; a scale value, a label, 0/1 or yes/no; blank = not coded) or one
column listing the codes that apply, separated by ';' (every other code: does not
apply; blank = not coded). Unknown response ids, and unknown code names in a codes
list, stop the import and are listed (--skip-unknown imports the rest); a column that
names no code is left out, with a warning. Nothing is stored unless everything is.

A REFI-QDA project (.qdpx or .qde, from NVivo, ATLAS.ti, MAXQDA, QualCoder ...) is
read too: its sources are matched to responses by name and its codes to the study's by
name; a code applies where a coding of it lies in the source, and every other code of a
coded source does not apply. A project coded by several users needs --user to choose one.

  codecurve import-codes survey.codecurve coded.csv --coder alice
  codecurve import-codes survey.codecurve labels.csv --coder gold --codes-column label
  codecurve import-codes survey.codecurve coded.qdpx --coder bob --user "Bob Smith"
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "import-codes",
        help="import existing codes as a coder's decisions",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument(
        "file", type=Path, help="CSV, TSV, XLSX, JSONL, JSON, Parquet, or a .qdpx/.qde project"
    )
    parser.add_argument("--coder", required=True, metavar="NAME", help="whose codes these are")
    parser.add_argument(
        "--user", metavar="NAME", help="a project's user whose codings to import (.qdpx/.qde)"
    )
    parser.add_argument(
        "--id-column", metavar="NAME", help="column of response ids (default: guessed)"
    )
    parser.add_argument(
        "--codes-column",
        metavar="NAME",
        help="a column listing the codes that apply (default: guessed when no column is "
        "named after a code)",
    )
    parser.add_argument("--separator", default=";", help="separator of a codes list (default ;)")
    parser.add_argument("--encoding", metavar="NAME", help="text encoding (default: UTF-8)")
    parser.add_argument("--sheet", metavar="NAME", help="XLSX sheet: a name or 0-based number")
    parser.add_argument(
        "--replace",
        action="store_true",
        help="overwrite this coder's existing decisions that differ (default: refuse)",
    )
    parser.add_argument(
        "--skip-unknown",
        action="store_true",
        help="import the rest when some ids or code names are unknown (they are listed)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codebooks.errors import InputError
    from study import Study
    from study.exchange import import_codes
    from study.refi import is_project_file
    from tui.commands.remedies import note_line
    from tui.text import plural, printable

    if not args.separator.strip():
        raise UsageError(
            f"--separator must be a visible character such as ';', not {args.separator!r}"
        )
    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    if is_project_file(args.file):
        return run_project(args)
    if getattr(args, "user", None) is not None:
        raise UsageError("--user chooses a user of a .qdpx or .qde project file")
    with Study.open(args.study, coder=args.coder) as study:
        report = import_codes(
            study,
            args.file,
            coder=args.coder,
            id_column=args.id_column,
            codes_column=args.codes_column,
            separator=args.separator,
            encoding=args.encoding,
            sheet=args.sheet,
            replace=args.replace,
            skip_unknown=args.skip_unknown,
        )
    for message in report.codes_file.messages:
        line = note_line(message, study=args.study)
        sys.stderr.write(printable(f"{args.file}: {line}") + "\n")
    summary = (
        f"imported {plural(len(report.codes_file.items), 'decision')} on "
        f"{plural(report.codes_file.responses, 'response')} by {args.coder!r} "
        f"({report.codes_file.layout} layout): {report.added:,} new, {report.changed:,} "
        f"changed, {report.unchanged:,} already there"
    )
    sys.stdout.write(printable(summary) + "\n")
    return 0


def run_project(args: argparse.Namespace) -> int:
    """Import a REFI-QDA project's codings as ``args.coder``'s decisions."""
    from study import Study
    from study.refi import import_project_codes
    from tui.commands.remedies import note_line
    from tui.text import plural, printable

    table_options = [
        f"--{name.replace('_', '-')}"
        for name in ("id_column", "codes_column", "encoding", "sheet")
        if getattr(args, name) is not None
    ]
    if table_options:
        raise UsageError(
            f"{', '.join(table_options)} describe a table; a project file needs none of them"
        )
    with Study.open(args.study, coder=args.coder) as study:
        done = import_project_codes(
            study, args.file, coder=args.coder, user=args.user, replace=args.replace
        )
    for message in done.messages:
        for line in note_line(message, study=args.study).splitlines():
            sys.stderr.write(printable(f"{args.file}: {line}") + "\n")
    count = sum(done.decisions.values())
    summary = f"imported {plural(count, 'decision')} by {args.coder!r} from the project" + (
        f" and {plural(done.notes, 'note')}" if done.notes else ""
    )
    if done.unchanged:
        summary += f"; {done.unchanged:,} already there as given"
    sys.stdout.write(printable(summary) + "\n")
    return 0
