"""``codecurve screen STUDY``: the validity screen of the model's confidence (VRS report)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import InputError
from tui.commands import UsageError

if TYPE_CHECKING:
    from rich.table import Table

    from screening.report import VRSReport
    from study.analysis.screen import Agreement, Cut, StudyScreening

FORMATS = ("table", "markdown", "json")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "screen",
        help="check whether the model's confidence deserves trust (VRS report)",
        description="Screen the model's confidence against the decisions already made "
        "(docs/method.md section 2): one headline in words and the next thing to do, then "
        "a 2x2 table of correct/incorrect by high/low confidence, "
        "the L, Fp, RBS and TRIN indices with intervals, and a tier (Valid, Indeterminate, "
        "Invalid, Insufficient data), pooled over codes and per code.",
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


def parse_cut(text: str) -> Cut:
    """``--cut``: ``scale``, ``median`` or a number in [0, 1].

    Raises:
        UsageError: anything else.
    """
    word = text.strip().lower()
    if word == "median":
        return "median"
    if word == "scale":
        return "scale"
    try:
        cut = float(text)
    except ValueError:
        raise UsageError(
            f"--cut must be 'scale', 'median' or a number in [0, 1], not {text!r}"
        ) from None
    if not 0.0 <= cut <= 1.0:
        raise UsageError(f"--cut must lie in [0, 1], not {cut}")
    return cut


def run(args: argparse.Namespace) -> int:
    from study import Study
    from study.analysis.screen import screen_study
    from tui.text import plural, printable

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
    advice = result.advice
    if args.format == "json":
        payload = {
            "config": {"id": result.config_id, "label": result.config},
            "cut": result.cut,
            "headline": advice.headline if advice else None,
            "next_action": advice.action if advice else None,
            "study_warning": result.study_warning,
            "sample": result.sample,
            "sample_size": result.n_decisions - result.n_unscored,
            "sample_note": result.sample_note,
            "pooling": result.pooling,
            "coder": result.coder,
            "n_decisions": result.n_decisions,
            "n_unscored": result.n_unscored,
            "pooled": result.pooled.to_dict(),
            "per_code": {name: r.to_dict() for name, r in result.per_code.items()},
            "agreement": [a.to_dict() for a in result.agreements],
            "warnings": list(result.warnings),
        }
        sys.stdout.write(json_text(payload) + "\n")
        return 0
    sample_lines = _sample_lines(result)
    if args.format == "markdown":
        parts = [f"{line}\n" for line in header_lines(result)]
        parts += [f"> {line}\n" for line in sample_lines]
        parts += ["\n## All codes pooled\n", glossed_markdown(result.pooled)]
        for name, report in result.per_code.items():
            parts += [f"\n## {name}\n", glossed_markdown(report)]
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
    console.print(
        Text(printable(f"configuration {result.config}; confidence cut: {result.cut}"), style="dim")
    )
    for line in sample_lines:
        console.print(Text(printable(line)), style="" if result.sample == "audit" else "yellow")
    if len(result.per_code) != 1:
        console.print(vrs_table(result.pooled, "all codes pooled"))
    for name, report in result.per_code.items():
        console.print(vrs_table(report, name))
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


def _sample_lines(result: StudyScreening) -> list[str]:
    """Which decisions the screen used, and what that means, in plain words."""
    from tui.text import plural

    n = result.n_decisions - result.n_unscored
    if result.sample == "all":
        return [f"Sample: all {plural(n, 'decision')}. Note: {result.sample_note}."]
    lines = [f"Sample: the blind random audit, {plural(n, 'decision')}."]
    if result.pooling and len(result.per_code) > 1:
        lines.append(f"Pooled: {result.pooling}.")
    for name, report in result.per_code.items():
        more = report.screen.distance.more_items
        if report.tier == "Insufficient data" and more:
            lines.append(f"To a verdict: code {plural(more, 'more audit pair')} of {name}.")
    return lines


def vrs_table(report: VRSReport, name: str) -> Table:
    """The report as a Rich table (tier coloured), every cell shown as text: a code's
    name is the user's, so it is never read as markup and its control characters show."""
    from rich.table import Table
    from rich.text import Text

    from screening.advice import GLOSSES
    from screening.report import TIER_STYLES
    from tui.text import printable

    title = Text(f"Validity report (VRS): {printable(name, single_line=True)}")
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("Row", style="dim", no_wrap=True)
    table.add_column("Value")
    for label, value in report.rows():
        style = TIER_STYLES.get(value, "") if label == "Tier classification" else ""
        words = GLOSSES.get(label)
        shown = Text(printable(label))
        if words:
            shown.append("\n" + words, style="italic")
        table.add_row(shown, Text(printable(value), style=style))
    return table


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


def glossed_markdown(report: VRSReport) -> str:
    """The report as a two-column Markdown table, each index label glossed."""
    from screening.advice import gloss

    lines = ["| VRS row | Value |", "|---|---|"]
    for label, value in report.rows():
        lines.append(f"| {gloss(label)} | {value.replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"


def json_text(payload: object) -> str:
    """JSON with non-ASCII text kept, but every control character escaped (json.dumps
    escapes C0 controls only; C1 controls, DEL and the bidirectional controls are written
    raw). The escapes are JSON's own: the values read back unchanged."""
    text = json.dumps(payload, indent=2, ensure_ascii=False)
    return re.sub(
        "[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]",
        lambda m: f"\\u{ord(m.group()):04x}",
        text,
    )


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
