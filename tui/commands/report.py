"""``codecurve report STUDY -o report.html``: the study in one self-contained report.

The numbers are the analysis wing's, the same the commands print with ``--format
json`` (``screen --phase-b``, ``delegate``, ``agreement``, ``compare``); the work is in
:mod:`study.report`. Here: the options, the checks on the output paths (never the study,
never the responses file it was made from, never a folder or a missing folder), and
one line saying what was written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from codebooks.errors import InputError
from tui.commands import UsageError, tell
from tui.commands.types import coder_names, resamples, seed, unit_interval

#: What a report may replace: an earlier report (never a codebook or a data file).
REPORT_SUFFIXES = (".html", ".htm")

DESCRIPTION = """\
Write a study report for a methods section, a supervisor or an ethics board: one HTML
file that opens offline and prints to PDF from a browser (figures inline as SVG, no
script, no font or link from the network). It holds the study and its scoring ledger,
the audit's design and progress, the validity screen with a reliability diagram and a
risk-coverage curve (where the screen allows them), the certified delegation,
inter-coder reliability with a forest plot, the model against the reference coder (a
confusion matrix per code), entropy by code, example surprisal curves, and the
configurations compared. A section the study cannot fill yet says what to do.

--figures DIR also writes each figure as SVG and PNG (300 dpi) and each table as CSV,
named by figure and code, for a paper or slides.

  codecurve report survey.codecurve -o report.html
  codecurve report survey.codecurve -o report.html --figures figures/ --coder ana
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write the study's report (HTML with figures) and, if asked, its figures",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="the HTML report to write"
    )
    parser.add_argument(
        "--methods",
        action="store_true",
        help="print the paragraph a methods section needs (model, audit, reliability, "
        "screen, delegation, prevalence; each number from the study) and its references",
    )
    parser.add_argument(
        "--figures",
        type=Path,
        metavar="DIR",
        help="also write each figure (SVG and PNG, 300 dpi) and each table (CSV) into DIR",
    )
    parser.add_argument(
        "--coder",
        help="whose decisions the screen, delegation and confusion use (default: the only "
        "coder, or the one with the most blind audit decisions, said at the start)",
    )
    parser.add_argument(
        "--coders",
        type=coder_names,
        metavar="A,B,...",
        help="the coders the inter-coder reliability compares (default: every coder; two "
        "give Cohen's kappa)",
    )
    parser.add_argument(
        "--config",
        type=int,
        metavar="ID",
        help="the scoring configuration (default: the study's active one)",
    )
    parser.add_argument(
        "--max-error",
        type=unit_interval,
        default=0.05,
        help="the delegation's largest error rate (default 0.05)",
    )
    parser.add_argument(
        "--level", type=unit_interval, default=0.95, help="the delegation's confidence level"
    )
    parser.add_argument(
        "--with-model",
        action="store_true",
        help="add the model's picks as a coder to the inter-coder reliability",
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the bootstraps (default 0)")
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
    from study.report import warm
    from tui.commands.outputs import check_output, recorded_sources
    from tui.text import plural, printable

    if args.output is None and args.figures is None and not args.methods:
        raise UsageError(
            "give -o FILE for the report, --figures DIR for its figures, --methods for its "
            "methods paragraph, or several"
        )
    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    protect = {"study": args.study}
    if args.output is not None:
        check_output(args.output, protect=protect, kinds=REPORT_SUFFIXES, what="HTML report")
    if args.figures is not None:
        check_figures(args.figures, protect={**protect, **recorded_sources(protect)})
    with Study.open(args.study, read_only=True) as study:
        # The drawing processes start first: their imports (matplotlib) then overlap
        # those of the analyses (pandas, scipy), as well as the analyses themselves.
        if args.output is not None or args.figures is not None:
            warm(len(study.codes))
        from study.report import ReportOptions, report_data, write_report

        options = ReportOptions(
            coder=args.coder,
            config_id=args.config,
            max_error=args.max_error,
            level=args.level,
            with_model=args.with_model,
            coders=None if args.coders is None else tuple(args.coders),
            resamples=args.resamples,
            seed=args.seed,
        )
        data = report_data(study, options)
        screen = data.section("screen")
        tell(screen.get("coder_note", "") if screen is not None else "")
        sources = tuple(recorded_sources(protect).values())
    if args.methods:
        from study.report import cited, methods_paragraph

        paragraph = methods_paragraph(data)
        print(printable(paragraph))
        print()
        print("References:")
        for reference in cited(paragraph):
            print(printable(f"- {reference}"))
        if args.output is None and args.figures is None:
            return 0
    written = write_report(data, args.output, figures=args.figures, protect=(args.study, *sources))
    if written.path is not None:
        print(printable(f"Report written to {written.path}", single_line=True))
    # A section left empty is said here too, not only inside the file.
    for name, todo in data.missing.items():
        sys.stderr.write(
            printable(f"note: the {name} section is not in the report: {todo}", single_line=True)
            + "\n"
        )
    if args.figures is not None:
        print(
            printable(
                f"{plural(len(written.files), 'file')} written to {args.figures}",
                single_line=True,
            )
        )
    return 0


def check_figures(folder: Path, *, protect: dict[str, Path]) -> None:
    """Refuse a figures folder that is a file, an input, or inside a missing folder."""
    from tui.commands.outputs import check_folder, same_file

    for what, other in protect.items():
        if same_file(folder, other):
            raise InputError(f"refusing to overwrite the {what} {other} with the figures")
    if folder.exists() and not folder.is_dir():
        raise InputError("is a file; give a folder for the figures", path=folder)
    if not folder.parent.is_dir():
        raise InputError(f"folder {folder.parent} does not exist", path=folder)
    check_folder(folder / "figure" if folder.is_dir() else folder)
