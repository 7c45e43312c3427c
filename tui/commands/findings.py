"""``codecurve findings STUDY``: how often each code applies, overall and by group.

Per code: the prediction-powered estimate (PPI++, the model's picks on every response
and the blind audit decisions), the audit alone, and the count of final codes (labelled
descriptive); with ``--by COLUMN`` the same per group and the groups' differences.
``--co-occurrence`` shows which codes apply together; ``--code C --list`` lists the
responses coded C with their notes and memos. ``-o FILE`` writes CSV or XLSX with the
method and each code's sentence in the provenance.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import InputError
from tui.commands import UsageError, tell
from tui.text import printable

if TYPE_CHECKING:
    import pandas as pd
    from rich.table import Table

    from screening.prevalence import Estimate
    from study.analysis import CoOccurrence, Findings

FORMATS = ("table", "markdown", "json", "csv")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "findings",
        help="how often each code applies, overall and by group, with valid intervals",
        description="Estimate the share of responses each code applies to (docs/method.md, "
        "'Estimating prevalence'): prediction-powered inference (PPI++) from the model's "
        "picks on every response and the blind random audit decisions, the audit alone "
        "(Wilson interval), and the plain count of final codes, which is descriptive when "
        "model picks are among them. With --by, per group of a response column (or 'wave') "
        "and the difference between groups.",
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument("--by", metavar="COLUMN", help="group by this response column")
    parser.add_argument(
        "--top",
        type=int,
        metavar="N",
        help="with --by: keep the N largest groups, the rest pooled as '(other)'",
    )
    parser.add_argument("--coder", help="whose blind audit decisions (needed with several)")
    parser.add_argument("--code", help="only this code (name or id)")
    parser.add_argument(
        "--config", type=int, metavar="ID", help="the scoring configuration (default: active)"
    )
    parser.add_argument(
        "--level", type=float, default=0.95, help="confidence level of the intervals"
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="with --code: list the responses the code applies to, with notes and memos",
    )
    parser.add_argument(
        "--co-occurrence",
        action="store_true",
        help="show how often codes apply together (counts, Jaccard, phi) on the final codes",
    )
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format")
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write the table as .csv or .xlsx"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from study import Study
    from study.analysis import (
        co_occurrence,
        coded_responses,
        findings_provenance,
        study_findings,
        write_table,
    )

    if args.list and not args.code:
        raise UsageError("--list needs --code (the code whose responses to list)")
    if args.list and args.co_occurrence:
        raise UsageError("--list and --co-occurrence are separate reports; choose one")
    if args.top is not None and not args.by:
        raise UsageError("--top goes with --by")
    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    if args.output is not None:
        from tui.commands.outputs import check_output

        check_output(args.output, protect={"study": args.study})
    config: int | str = "active" if args.config is None else args.config
    with Study.open(args.study, read_only=True) as study:
        if args.list:
            frame = coded_responses(study, args.code, coder=args.coder, config=config)
            info = findings_provenance(study)
            info["report"] = f"responses coded {args.code} (final codes)"
            return _emit_frame(frame, args, info, title=f"Responses coded {args.code}")
        if args.co_occurrence:
            table = co_occurrence(study, coder=args.coder, config=config)
            info = findings_provenance(study)
            info["report"] = "co-occurrence of codes on the final codes"
            info["final values by source"] = _sources(table.sources)
            return _emit_co_occurrence(table, args, info)
        result = study_findings(
            study,
            by=args.by,
            coder=args.coder,
            code=args.code,
            config=config,
            level=args.level,
            top=args.top,
        )
        info = findings_provenance(study, result)
    tell(result.coder_note)
    if args.output is not None:
        written = write_table(_with_differences(result), args.output, info=info)
        sys.stdout.write(printable(f"wrote {written}", single_line=True) + "\n")
        return 0
    if args.format == "json":
        from tui.text import json_text

        sys.stdout.write(json_text(result.to_dict()) + "\n")
    elif args.format == "csv":
        from tui.text import for_stream

        sys.stdout.write(for_stream(_with_differences(result).to_csv(index=False), sys.stdout))
    elif args.format == "markdown":
        sys.stdout.write(markdown(result))
    else:
        _print_table(result)
    return 0


def _with_differences(result: Findings) -> pd.DataFrame:
    """The findings' rows, then one row per group difference (its ``group`` 'A - B')."""
    import pandas as pd

    frame = result.table()
    diffs = result.difference_table()
    if not len(diffs):
        return frame
    rows = pd.DataFrame(
        {
            "code": diffs["code"],
            "group": diffs["group"] + " - " + diffs["versus"],
            "ppi": diffs["ppi_difference"],
            "ppi_lower": diffs["ppi_lower"],
            "ppi_upper": diffs["ppi_upper"],
            "audit": diffs["audit_difference"],
            "audit_lower": diffs["audit_lower"],
            "audit_upper": diffs["audit_upper"],
            "notes": diffs["reason"],
        }
    )
    return pd.concat([frame, rows], ignore_index=True)


def _sources(sources: dict[str, int] | Any) -> str:
    return ", ".join(f"{k} {v}" for k, v in sources.items())


def _pct(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{100 * value:.1f}%"


def _cell(e: Estimate) -> str:
    if not e.ok:
        return "n/a"
    return f"{_pct(e.estimate)} [{_pct(e.lower)}, {_pct(e.upper)}]"


def _count_cell(
    applies: int, valued: int, share: float, descriptive: bool, exact: bool = False
) -> str:
    if not valued:
        return "n/a"
    text = f"{_pct(share)} ({applies}/{valued})"
    if exact:
        return text + " exact"
    return text + " descriptive" if descriptive else text


HEADERS = (
    "code",
    "group",
    "responses",
    "PPI++ [CI]",
    "lambda",
    "interval",
    "audit [CI]",
    "audit n",
    "count",
)


def _rows(result: Findings) -> list[list[str]]:
    return [
        [
            f.code_name,
            "(all)" if f.group is None else f.group,
            f"{f.pairs:,}",
            _cell(f.ppi),
            "n/a" if math.isnan(f.ppi.lam) else f"{f.ppi.lam:.2f}",
            "exact count" if f.exact else (f.ppi.interval or "n/a"),
            _cell(f.audit),
            str(f.labelled),
            _count_cell(
                f.count.applies, f.count.valued, f.count.share, f.count.descriptive, f.exact
            ),
        ]
        for f in (*result.codes, *result.groups)
    ]


def _difference_rows(result: Findings) -> list[list[str]]:
    def cell(estimate: float, lower: float, upper: float, reason: str) -> str:
        if reason:
            return "n/a"
        return f"{100 * estimate:+.1f} [{100 * lower:+.1f}, {100 * upper:+.1f}] points"

    return [
        [
            d.code_name,
            f"{d.group} - {d.versus}",
            cell(d.ppi.estimate, d.ppi.lower, d.ppi.upper, d.ppi.reason),
            cell(d.audit.estimate, d.audit.lower, d.audit.upper, d.audit.reason),
            "yes" if d.ppi.excludes_zero() else "no",
        ]
        for d in result.differences
    ]


DIFFERENCE_HEADERS = ("code", "groups", "PPI++ difference [CI]", "audit difference [CI]", "clear")


def _header(result: Findings) -> list[str]:
    lines = [
        f"Study {result.study}; configuration {result.config or '(not scored)'}; "
        f"audit coder {result.coder or '(none)'}; {round(100 * result.level)}% intervals; "
        f"{result.population:,} responses."
    ]
    lines += [f"Note: {n}." for n in result.notes]
    return lines


def markdown(result: Findings) -> str:
    """The findings as Markdown: header, tables, then each code's sentence and notes."""

    def table(headers: tuple[str, ...], rows: list[list[str]]) -> list[str]:
        out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
        return out

    parts = [*_header(result), "", *table(HEADERS, _rows(result))]
    if result.differences:
        parts += ["", "## Differences between groups", ""]
        parts += table(DIFFERENCE_HEADERS, _difference_rows(result))
    parts += ["", "## Sentences", ""]
    parts += [f"- {f.sentence}" for f in (*result.codes, *result.groups)]
    notes = [(f, n) for f in (*result.codes, *result.groups) for n in f.notes]
    if notes:
        parts += ["", "## Notes", ""]
        parts += [
            f"- {f.code_name}{'' if f.group is None else f' [{f.group}]'}: {n}" for f, n in notes
        ]
    parts += ["", f"Method: {result.method}", ""]
    return printable("\n".join(parts)) + "\n"


def _rich_table(title: str, headers: tuple[str, ...], rows: list[list[str]]) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, header_style="bold")
    for header in headers:  # a header may be a code's name: text, never markup
        table.add_column(Text(printable(header, single_line=True)))
    for row in rows:
        table.add_row(*(Text(printable(c, single_line=True)) for c in row))
    return table


def _print_table(result: Findings) -> None:
    from rich.console import Console
    from rich.text import Text

    console = Console()
    for line in _header(result):
        console.print(Text(printable(line)), style="yellow" if line.startswith("Note") else "dim")
    console.print(_rich_table("Prevalence of each code", HEADERS, _rows(result)))
    if result.differences:
        console.print(
            _rich_table("Differences between groups", DIFFERENCE_HEADERS, _difference_rows(result))
        )
    for f in result.codes:
        console.print(Text(printable(f.sentence)))
        if f.mean is not None:
            audit, ppi = f.mean
            console.print(
                Text(printable(f"  mean value: PPI++ {_mean(ppi)}; audit {_mean(audit)}")),
                style="dim",
            )
        for note in f.notes:
            console.print(Text.assemble(("  note: ", "yellow"), printable(note)))
    for f in result.groups:
        for note in f.notes:
            console.print(
                Text.assemble(
                    ("  note: ", "yellow"), printable(f"{f.code_name} [{f.group}]: {note}")
                )
            )


def _mean(e: Estimate) -> str:
    if not e.ok:
        return f"n/a ({e.reason})"
    return f"{e.estimate:.2f} [{e.lower:.2f}, {e.upper:.2f}]"


def _emit_frame(
    frame: pd.DataFrame, args: argparse.Namespace, info: dict[str, str], *, title: str
) -> int:
    from study.analysis import write_table

    if args.output is not None:
        written = write_table(frame, args.output, info=info)
        sys.stdout.write(printable(f"wrote {written}", single_line=True) + "\n")
        return 0
    if args.format == "json":
        from tui.text import json_text

        records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
        sys.stdout.write(json_text(records) + "\n")
        return 0
    if args.format == "csv":
        from tui.text import for_stream

        sys.stdout.write(for_stream(frame.to_csv(index=False), sys.stdout))
        return 0
    rows = [
        ["" if v is None or v != v else str(v) for v in r] for r in frame.itertuples(index=False)
    ]
    if args.format == "markdown":
        lines = [f"## {title}", "", "| " + " | ".join(frame.columns) + " |"]
        lines.append("|" + "---|" * len(frame.columns))
        lines += [
            "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in r) + " |"
            for r in rows
        ]
        sys.stdout.write(printable("\n".join(lines)) + "\n")
        return 0
    from rich.console import Console

    console = Console()
    console.print(_rich_table(f"{title} ({len(rows)})", tuple(frame.columns), rows))
    return 0


def _emit_co_occurrence(table: CoOccurrence, args: argparse.Namespace, info: dict[str, str]) -> int:
    import pandas as pd

    if args.output is not None or args.format == "csv":
        long = pd.concat(
            {what: table.frame(what).stack() for what in ("counts", "jaccard", "phi")}, axis=1
        ).reset_index(names=["code", "with"])
        if args.output is not None:
            from study.analysis import write_table

            written = write_table(long, args.output, info=info)
            sys.stdout.write(printable(f"wrote {written}", single_line=True) + "\n")
        else:
            from tui.text import for_stream

            sys.stdout.write(for_stream(long.to_csv(index=False), sys.stdout))
        return 0
    if args.format == "json":
        from tui.text import json_text

        sys.stdout.write(json_text(table.to_dict()) + "\n")
        return 0
    names = list(table.codes)
    rows = []
    for i, name in enumerate(names):
        row = [name]
        for k, _other in enumerate(names):
            n = table.counts[i][k]
            j = table.jaccard[i][k]
            row.append(str(n) if i == k or math.isnan(j) else f"{n} (J {j:.2f})")
        rows.append(row)
    source_line = f"Final codes by source: {_sources(table.sources)}."
    if args.format == "markdown":
        lines = [source_line, "", "| code | " + " | ".join(names) + " |"]
        lines.append("|" + "---|" * (len(names) + 1))
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        sys.stdout.write(printable("\n".join(lines)) + "\n")
        return 0
    from rich.console import Console
    from rich.text import Text

    console = Console()
    console.print(Text(printable(source_line)), style="dim")
    console.print(_rich_table("Codes applying together (count, Jaccard)", ("code", *names), rows))
    return 0
