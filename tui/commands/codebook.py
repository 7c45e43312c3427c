"""``codecurve codebook STUDY [--revise FILE]``: the study's codebook versions.

Without ``--revise`` it lists every version with what changed from the one before. With
``--revise FILE`` (any codebook format) it prints the changes the file makes and, once
confirmed (``--yes`` for scripts), records them as the next version
(:meth:`study.iteration.versions.Versions.revise`); decisions are kept, a removed code's are
archived. A refused revision changes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

DESCRIPTION = """\
List a study's codebook versions, or revise its codebook.

  codecurve codebook survey.codecurve
  codecurve codebook survey.codecurve --revise codes-v2.yaml
  codecurve codebook survey.codecurve --revise codes-v2.yaml --yes

Codes are matched by id (or, for a new id, by name). The changes are printed (added,
removed, renamed, definition / criteria / examples changed, moved in the hierarchy);
decisions stay with their code and record the version they were made under; a removed
code is archived with its decisions (out of the queue, still exported). Pairs of new or
changed codes are scored again by the next 'codecurve score STUDY'.
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "codebook",
        help="list a study's codebook versions, or revise its codebook",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument(
        "--revise", type=Path, metavar="FILE", help="the revised codebook (YAML, JSON, CSV, QDC)"
    )
    parser.add_argument(
        "--yes", action="store_true", help="record the revision without asking (for scripts)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codebooks import load_codebook
    from codebooks.errors import InputError
    from study import Study
    from study.analysis import after_revision
    from tui.commands import UsageError
    from tui.commands.remedies import note_line
    from tui.text import printable

    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    if args.revise is None:
        if args.yes:
            raise UsageError("--yes confirms a revision: add --revise FILE")
        with Study.open(args.study, read_only=True) as study:
            for version in study.versions.all():
                sys.stdout.write(
                    printable(
                        f"version {version.version}  {version.at}  "
                        f"{len(version.codebook.codable)} codes  {version.source}",
                        single_line=True,
                    )
                    + "\n"
                )
                for change in version.changes:
                    sys.stdout.write("  " + printable(change.describe(), single_line=True) + "\n")
        return 0
    if not args.revise.exists():
        raise InputError("no such codebook file", path=args.revise)
    revised = load_codebook(args.revise)
    with Study.open(args.study) as study:
        diff = study.versions.plan_revision(revised)
        number = study.versions.current() + 1
        sys.stdout.write(f"version {number} would change:\n")
        for line in diff.lines():
            sys.stdout.write("  " + printable(line, single_line=True) + "\n")
        if not args.yes:
            if not sys.stdin.isatty():
                raise UsageError(
                    "not recorded: confirm the revision with --yes (no terminal to ask on)"
                )
            sys.stderr.write(f"record codebook version {number}? [y/N] ")
            sys.stderr.flush()
            if sys.stdin.readline().strip().casefold() not in ("y", "yes"):
                sys.stderr.write("not recorded\n")
                return 1
        recorded = study.versions.revise(revised, source=str(args.revise))
        lacks = after_revision(study, diff)
        pending = (
            len(study.scores.pending_pairs(study.scores.active_config_id() or 0))
            if (study.scores.active_config_id() is not None)
            else None
        )
    sys.stderr.write(f"recorded codebook version {recorded}\n")
    if pending:
        sys.stderr.write(
            f"{pending:,} pair(s) to score under the active configuration: "
            f"codecurve score {printable(str(args.study), single_line=True)}\n"
        )
    for lack in lacks:
        sys.stderr.write(printable(note_line(lack, study=args.study)) + "\n")
    return 0
