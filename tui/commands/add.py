"""``codecurve add STUDY --responses FILE [--update]``: add a wave of responses.

Same id and text column rules as ``codecurve new`` (other columns kept). An id already in
the study is refused unless ``--update``, which replaces the text and clears that
response's decisions for re-review (they stay in the log). See :mod:`study.iteration._waves`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

DESCRIPTION = """\
Add a new wave of responses to a study.

  codecurve add survey.codecurve --responses wave2.csv
  codecurve add survey.codecurve --responses corrected.csv --update

Ids already in the study are refused (and listed) unless --update, which replaces their
texts and clears their decisions for re-review (the decisions stay in the study's log).
Score the new pairs with 'codecurve score STUDY'.
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "add",
        help="add a wave of responses to a study",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument(
        "--responses", type=Path, metavar="FILE", required=True, help="the responses to add"
    )
    parser.add_argument(
        "--update",
        action="store_true",
        help="replace the text of ids already in the study (their decisions are cleared)",
    )
    parser.add_argument("--id-column", metavar="C", help="column of the response ids")
    parser.add_argument("--text-column", metavar="C", help="column of the response texts")
    parser.add_argument("--encoding", help="text encoding of the file (detected by default)")
    parser.add_argument("--sheet", help="XLSX sheet name (the first by default)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codebooks.errors import InputError
    from study import Study, read_responses
    from study.analysis import after_wave
    from tui.commands.outputs import refuse_inputs
    from tui.commands.remedies import note_line
    from tui.text import plural, printable

    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    refuse_inputs(args.study, protect={"responses file": args.responses})
    with Study.open(args.study) as study:
        id_column = args.id_column or study.meta().get("responses_id_column") or None
        table = read_responses(
            args.responses,
            id_column=id_column,
            text_column=args.text_column,
            encoding=args.encoding,
            sheet=args.sheet,
        )
        for message in table.messages:
            line = note_line(message, study=args.study)
            sys.stderr.write(printable(f"{args.responses}: {line}") + "\n")
        result = study.versions.add_responses(table, update=args.update)
        lacks = after_wave(study, added=len(result.added), wave=result.wave)
    sys.stderr.write(
        f"wave {result.wave}: added {plural(len(result.added), 'response')}"
        + (
            f", updated {plural(len(result.updated), 'response')} "
            f"({plural(result.cleared, 'decision')} cleared for re-review)"
            if result.updated
            else ""
        )
        + (f", {len(result.unchanged)} unchanged" if result.unchanged else "")
        + "\n"
    )
    for lack in lacks:
        sys.stderr.write(printable(note_line(lack, study=args.study)) + "\n")
    return 0
