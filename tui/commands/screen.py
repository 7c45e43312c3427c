"""``codecurve screen STUDY``: the validity screen of the model's confidence (VRS report)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import InputError
from tui.commands.types import parse_cut

if TYPE_CHECKING:
    from rich.table import Table

    from screening.headline import Headline
    from screening.report import VRSReport
    from study.analysis import Agreement, StudyScreening

FORMATS = ("table", "markdown", "json")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "screen",
        help="what the model's picks are worth, and whether its confidence deserves trust",
        description="Compare the model with the decisions already made (docs/method.md "
        "section 2): one headline in words and the next thing to do; per code and pooled, "
        "agreement, kappa with its interval and the share of each pick, in words when the "
        "model is constant or at chance; then the validity screen of its confidence: a 2x2 "
        "table of correct/incorrect by high/low confidence, the L, Fp, RBS and TRIN indices "
        "with intervals, and the response pattern it finds (the VRS tier: Valid = no "
        "pathology found, Indeterminate, Invalid, Insufficient data), never a verdict on "
        "the model by itself.",
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument(
        "--config",
        type=int,
        metavar="ID",
        help="the scoring configuration to screen (default: the study's active one)",
    )
    parser.add_argument("--code", help="screen only this code (name or id)")
    parser.add_argument("--coder", help="whose decisions (needed when there are several coders)")
    parser.add_argument(
        "--cut",
        default="scale",
        help="confidence at or above which an item counts as high confidence: 'scale' "
        "(default: halfway between chance and certainty on each code's own scale, p_max >= "
        "0.75 on yes/no, >= 0.6 on 1-5), 'median' or a number in [0, 1]",
    )
    parser.add_argument(
        "--agreement",
        choices=("applies", "exact", "within1"),
        default="applies",
        help="when the model counts as correct (default: both say applies / does not apply)",
    )
    parser.add_argument(
        "--confidence",
        choices=("pmax", "entropy"),
        default="pmax",
        help="confidence signal: p of the model's pick, or 1 - normalised entropy",
    )
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format")
    parser.add_argument(
        "--sample",
        choices=("audit", "all"),
        help="which decisions: the blind decisions on the audit sample (the default when "
        "there are any) or all decisions (not a random sample)",
    )
    parser.add_argument(
        "--phase-b",
        action="store_true",
        help="add AUROC, selective accuracy, AURC, ECE and Brier (Valid screens only; "
        "Indeterminate with a caveat)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from study import Study
    from study.analysis import screen_study
    from tui.commands import tell
    from tui.text import json_text, plural, printable

    cut = parse_cut(args.cut)
    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    with Study.open(args.study, read_only=True) as study:
        result = screen_study(
            study,
            args.config,
            code=args.code,
            coder=args.coder,
            cut=cut,
            agreement=args.agreement,
            confidence=args.confidence,
            phase_b=args.phase_b,
            sample=args.sample,
        ).labelled()
    tell(result.coder_note)
    advice = result.advice
    if args.format == "json":
        sys.stdout.write(json_text(result.to_dict()) + "\n")
        return 0
    sample_lines = _sample_lines(result)
    if args.format == "markdown":
        parts = [f"{line}\n" for line in header_lines(result)]
        parts += [f"- {line}" for line in headline_lines(result)] + [""]
        parts += [f"> {line}\n" for line in sample_lines]
        parts += [
            "\n## All codes pooled\n",
            glossed_markdown(
                result.pooled,
                result.headline(None),
                remaining=pooled_remaining(result),
                unscored=sum(result.unscored.values()),
            ),
        ]
        for name, report in result.per_code.items():
            parts += [
                f"\n## {name}\n",
                glossed_markdown(
                    report,
                    result.headline(name),
                    remaining=result.remaining.get(name),
                    unscored=result.unscored.get(name, 0),
                ),
            ]
        if result.agreements:
            parts += ["\n## Agreement\n", "| " + " | ".join(AGREEMENT_COLUMNS) + " |"]
            parts.append("|" + "---|" * len(AGREEMENT_COLUMNS))
            parts += ["| " + " | ".join(_agreement_row(a)) + " |" for a in result.agreements]
        sys.stdout.write(printable("\n".join(parts)) + "\n")
        return 0
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Code and coder names come from files: shown as Text (never read as markup), with
    # their control characters made visible.
    console = Console()
    if advice is not None:
        console.print(
            Text(printable(advice.headline[:1].upper() + advice.headline[1:] + "."), style="bold")
        )
        console.print(Text.assemble(("Next: ", "bold"), printable(advice.action) + "."))
    if result.study_warning:
        console.print(
            Text.assemble(("warning:", "bold yellow"), " ", printable(result.study_warning))
        )
    for line in headline_lines(result):
        console.print(Text(printable(line)))
    console.print(
        Text(printable(f"configuration {result.config}; confidence cut: {result.cut}"), style="dim")
    )
    for line in sample_lines:
        console.print(Text(printable(line)), style="" if result.sample == "audit" else "yellow")
    if len(result.per_code) != 1:
        console.print(
            vrs_table(
                result.pooled,
                "all codes pooled",
                result.headline(None),
                remaining=pooled_remaining(result),
            )
        )
    for name, report in result.per_code.items():
        console.print(
            vrs_table(
                report,
                name,
                result.headline(name),
                remaining=result.remaining.get(name),
                unscored=result.unscored.get(name, 0),
            )
        )
    if result.agreements:
        table = Table(title="Agreement", header_style="bold")
        for column in AGREEMENT_COLUMNS:
            table.add_column(column)
        for a in result.agreements:
            table.add_row(*(Text(printable(cell, single_line=True)) for cell in _agreement_row(a)))
        console.print(table)
    if result.n_unscored:
        n = result.n_unscored
        console.print(
            f"{plural(n, 'decision')} {'is' if n == 1 else 'are'} on "
            f"{'a pair' if n == 1 else 'pairs'} not scored yet and "
            f"{'was' if n == 1 else 'were'} left out.",
            style="yellow",
        )
    for message in result.warnings:
        console.print(Text.assemble(("note:", "yellow"), " ", printable(message)))
    return 0


def headline_lines(result: StudyScreening) -> list[str]:
    """Per group, pooled first: the headline in words, the figures, and the response
    pattern the screen found with AUROC and kappa beside it."""
    from screening.story import pattern_line

    groups: list[tuple[str | None, str, VRSReport]] = []
    if len(result.per_code) != 1:
        groups.append((None, "All codes", result.pooled))
    groups += [(name, name, report) for name, report in result.per_code.items()]
    lines = []
    for key, title, report in groups:
        head = result.headline(key)
        if head is None:
            continue
        lines.append(f"{title}: {head.sentence()}.")
        lines.append(f"  {head.figures()}")
        lines.append(f"  {pattern_line(report.tier, head)}")
    return lines


def _sample_lines(result: StudyScreening) -> list[str]:
    """Which decisions the screen used, and what that means, in plain words."""
    from screening.advice import to_verdict
    from tui.text import plural

    n = result.n_decisions - result.n_unscored
    if result.sample == "all":
        return [f"Sample: all {plural(n, 'decision')}. Note: {result.sample_note}."]
    lines = [f"Sample: the blind random audit, {plural(n, 'decision')}."]
    if result.pooling and len(result.per_code) > 1:
        lines.append(f"Pooled: {result.pooling}.")
    for name, report in result.per_code.items():
        if report.tier == "Insufficient data":
            left = result.remaining.get(name)
            waiting = result.unscored.get(name, 0)
            verdict = to_verdict(report, name, audit=True, remaining=left, unscored=waiting)
            lines.append(f"To a verdict: {verdict}.")
    return lines


def vrs_table(
    report: VRSReport,
    name: str,
    headline: Headline | None = None,
    *,
    remaining: int | None = None,
    unscored: int = 0,
) -> Table:
    """The report as a Rich table (tier coloured, with AUROC and kappa right after it),
    every cell shown as text: a code's name is the user's, so it is never read as markup
    and its control characters show."""
    from rich.table import Table
    from rich.text import Text

    from screening.advice import GLOSSES
    from screening.report import TIER_STYLES
    from screening.story import vrs_rows
    from tui.text import printable

    title = Text(f"Validity report (VRS): {printable(name, single_line=True)}")
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("Row", style="dim", no_wrap=True)
    table.add_column("Value")
    for label, value in vrs_rows(
        report.rows(remaining=remaining), headline, remaining=remaining, unscored=unscored
    ):
        style = TIER_STYLES.get(value, "") if label == "Tier classification" else ""
        words = GLOSSES.get(label)
        shown = Text(printable(label))
        if words:
            shown.append("\n" + words, style="italic")
        table.add_row(shown, Text(printable(value), style=style))
    return table


def pooled_remaining(result: StudyScreening) -> int | None:
    """The pairs left to code over every code screened (None: not known)."""
    return sum(result.remaining.values()) if result.remaining else None


def header_lines(result: StudyScreening) -> list[str]:
    """The headline, the next action, the study's warning and the cut, as lines."""
    lines = []
    if result.advice is not None:
        headline = result.advice.headline
        lines.append(f"**{headline[:1].upper() + headline[1:]}.**")
        lines.append(f"Next: {result.advice.action}.")
    if result.study_warning:
        lines.append(f"Warning: {result.study_warning}.")
    lines.append(f"Configuration {result.config}; confidence cut: {result.cut}.")
    return lines


def glossed_markdown(
    report: VRSReport,
    headline: Headline | None = None,
    *,
    remaining: int | None = None,
    unscored: int = 0,
) -> str:
    """The report as a two-column Markdown table, each index label glossed, AUROC and
    kappa right after the tier."""
    from screening.advice import gloss
    from screening.story import vrs_rows

    lines = ["| VRS row | Value |", "|---|---|"]
    for label, value in vrs_rows(
        report.rows(remaining=remaining), headline, remaining=remaining, unscored=unscored
    ):
        lines.append(f"| {gloss(label)} | {value.replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"


AGREEMENT_COLUMNS = (
    "between",
    "N",
    "% agree",
    "kappa",
    "kappa (quadratic)",
    "alpha nominal",
    "alpha ordinal",
)


def _agreement_row(a: Agreement) -> list[str]:
    return [
        f"{a.between[0]} / {a.between[1]}",
        str(a.n),
        _f(a.percent),
        _f(a.kappa),
        _f(a.kappa_quadratic),
        _f(a.alpha_nominal),
        _f(a.alpha_ordinal),
    ]


def _f(value: float) -> str:
    return "n/a" if value != value else f"{value:.3f}"
