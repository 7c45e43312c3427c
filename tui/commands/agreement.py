"""``codecurve agreement STUDY``: inter-coder reliability, per code and pooled.

Needs no scores: two coders' imported decisions are enough. The model can take part as
a coder (``--coders ann,model``): its pick under the study's active scoring
configuration. The report is :func:`study.analysis.agreement.study_agreement`'s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import InputError
from tui.commands.types import coder_names, resamples, seed

if TYPE_CHECKING:
    from study.analysis import AgreementError, AgreementReport, CodeAgreement
    from study.errors import StudyError

FORMATS = ("table", "markdown", "json")
UNITS = ("all", "shared")

DESCRIPTION = """\
Inter-coder reliability of the decisions in a study, per code and pooled over codes:
the number of units (response x code pairs rated by two or more of the coders),
percent agreement, Cohen's kappa (two coders; quadratic-weighted on ordinal scales),
Krippendorff's alpha (nominal on two-option scales, ordinal on longer ones), each with a
95% percentile bootstrap interval over units (pooled: over responses), and the share of
each coder's decisions that say the code applies. No model scores are needed; add
'model' to --coders to include the model's picks (active scoring configuration), which
leaves out decisions that accepted the model's pick.

  codecurve agreement survey.codecurve
  codecurve agreement survey.codecurve --coders ann,bob --format markdown
  codecurve agreement survey.codecurve --coders ann,model --code Pay
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "agreement",
        help="inter-coder reliability: percent agreement, kappa, alpha with intervals",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument(
        "--coders",
        type=coder_names,
        metavar="A,B,...",
        help="the coders to compare, comma-separated; 'model' is the model's pick "
        "(default: every coder with decisions)",
    )
    parser.add_argument("--code", help="only this code (name or id)")
    parser.add_argument(
        "--units",
        choices=UNITS,
        default="all",
        help="all: pairs rated by two or more of the coders (default); shared: pairs "
        "rated by every one of them",
    )
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format")
    parser.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap (default 0)")
    parser.add_argument(
        "--resamples",
        type=resamples,
        default=1000,
        metavar="N",
        help="bootstrap resamples for the intervals (default 1000)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from study import Study
    from study.analysis import AgreementError, study_agreement

    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    with Study.open(args.study, read_only=True) as study:
        try:
            report = study_agreement(
                study,
                coders=args.coders,
                code=args.code,
                units=args.units,
                seed=args.seed,
                resamples=args.resamples,
            )
        except AgreementError as exc:
            raise _with_hint(exc, args) from None
    if args.format == "json":
        from tui.text import json_text

        sys.stdout.write(json_text(report.to_dict()) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(to_markdown(report) + "\n")
    else:
        _print_table(report)
    return 0


def _with_hint(exc: AgreementError, args: argparse.Namespace) -> StudyError:
    """The study's error, with what would help where something would."""
    from study.analysis import agreement_remedies
    from study.errors import StudyError

    remedies = agreement_remedies(exc, chosen=args.coders is not None, units=args.units)
    return StudyError(exc.message, path=exc.path, remedy=remedies) if remedies else exc


# --- output ----------------------------------------------------------------------------

COLUMNS = ("Code", "Scale", "Units", "Agreement", "Cohen's kappa", "Krippendorff's alpha")


def _cells(row: CodeAgreement, coders: tuple[str, ...]) -> list[str]:
    from study.analysis import describe_estimate, safe

    r = row.result
    applies = ", ".join(
        f"{safe(c)} {'-' if a is None else f'{a:.0%}'}"
        for c, a in zip(coders, row.applies, strict=True)
    )
    return [
        safe(row.code),
        safe(row.scale),
        str(r.n_units),
        describe_estimate(r.percent, percent=True),
        describe_estimate(r.kappa),
        describe_estimate(r.alpha),
        applies,
        "; ".join(row.notes()),
    ]


def to_markdown(report: AgreementReport) -> str:
    """A table a methods section can paste, with its caption and notes."""
    from study.analysis import safe

    header = [*COLUMNS, "Applies", "Notes"]

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * 2 + "--:|" * 4 + "---|" * 2,
    ]
    lines.extend(
        "| " + " | ".join(cell(c) for c in _cells(row, report.coders)) + " |" for row in report.rows
    )
    lines += ["", f"*Table: {cell(report.caption())}*"]
    lines += [f"\nNote: {safe(n)}." for n in report.notes]
    return "\n".join(lines)


def _print_table(report: AgreementReport) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from study.analysis import safe

    console = Console()
    table = Table(
        title=Text(f"Agreement: {', '.join(safe(c) for c in report.coders)}"),
        header_style="bold",
        caption=Text(report.caption()),
    )
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("Code", "Scale") else "right")
    table.add_column("Applies")
    for row in report.rows:
        table.add_row(*(Text(c) for c in _cells(row, report.coders)[:-1]))
    console.print(table)
    for row in report.rows:
        for note in row.notes():
            console.print(Text.assemble(("note ", "yellow"), f"{safe(row.code)}: {note}"))
    for note in report.notes:
        console.print(Text.assemble(("note ", "yellow"), safe(note)))
