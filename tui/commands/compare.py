"""``codecurve compare STUDY``: the scoring configurations side by side on your decisions.

The statistics are :func:`study.analysis.compare.compare_configs`'s (described in docs/method.md,
"Comparing configurations").
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.commands import tell
from tui.commands.types import seed, whole_number

if TYPE_CHECKING:
    from study.analysis import Comparison, ConfigMetrics

FORMATS = ("table", "markdown", "json")

DESCRIPTION = """\
Compare every scoring configuration of a study (model, context level, template,
strictness) against one coder's own decisions, on the pairs every configuration has
scored: per code and pooled, n, agreement on applies / does not apply, Cohen's kappa
(quadratic-weighted on ordinal scales) with a 95% bootstrap interval, Spearman's rho,
the response pattern the validity screen finds (its tier, never a verdict on the model
by itself) with the AUROC of confidence for correctness beside it, mean normalised
entropy and mean off-scale mass; then which kappa differences are larger than their
paired bootstrap intervals. With --sample audit, only the coder's blind decisions on
the audit sample count (see 'codecurve audit').

  codecurve compare survey.codecurve
  codecurve compare survey.codecurve --coder ann --format markdown
  codecurve compare survey.codecurve --sample audit
"""

HEADERS = (
    "config",
    "n",
    "agree",
    "kappa [95% CI]",
    "rho",
    "response pattern",
    "AUROC",
    "entropy",
    "off-scale",
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare scoring configurations (models, context levels) on your decisions",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument("--coder", help="whose decisions (needed when several coders decided)")
    parser.add_argument(
        "--sample",
        choices=("all", "audit"),
        default="all",
        help="all decided pairs (default), or the blind decisions on the audit sample",
    )
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format")
    parser.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap (default 0)")
    parser.add_argument(
        "--resamples",
        type=whole_number(10, 100_000),
        default=1000,
        metavar="N",
        help="bootstrap resamples (1000)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codebooks.errors import InputError
    from study import Study
    from study.analysis import compare_configs

    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    with Study.open(args.study, read_only=True) as study:
        result = compare_configs(
            study,
            coder=args.coder,
            sample=args.sample,
            resamples=args.resamples,
            seed=args.seed,
        )
    tell(result.coder_note)
    if args.format == "json":
        from tui.text import json_text

        sys.stdout.write(json_text(result.to_dict()) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(to_markdown(result) + "\n")
    else:
        sys.stdout.write(to_text(result) + "\n")
    return 0


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _cells(row: ConfigMetrics) -> list[str]:
    from screening.headline import pattern

    k = row.kappa
    ci = "" if math.isnan(k.low) else f" [{_num(k.low)}, {_num(k.high)}]"
    return [
        str(row.config_id),
        str(row.n),
        _num(row.agreement),
        _num(k.point) + ci + (" q" if row.weighted else ""),
        _num(row.rho),
        row.verdict or (pattern(row.tier) if row.tier != "-" else "-"),
        _num(row.auroc),
        _num(row.entropy),
        _num(row.off_scale, 3),
    ]


def _by_code(result: Comparison) -> dict[str, list[ConfigMetrics]]:
    out: dict[str, list[ConfigMetrics]] = {}
    for row in result.rows:
        out.setdefault(row.code, []).append(row)
    return out


def _footer(result: Comparison) -> list[str]:
    from tui.text import printable

    sample = (
        "the blind decisions on the audit sample"
        if result.sample == "audit"
        else "every decided pair (not a random sample)"
    )
    lines = [
        f"compared on {sample}: {result.n_pairs} pairs",
        f"configurations (coder {printable(result.coder, single_line=True)}):",
    ]
    lines += [f"  {cid}: {printable(label, single_line=True)}" for cid, label in result.configs]
    clear = [d for d in result.differences if d.clear]
    lines.append(
        f"kappa differences larger than their {result.level:.0%} paired bootstrap interval "
        f"({result.resamples} resamples over pairs): " + ("none" if not clear else "")
    )
    for d in clear:
        lines.append(
            f"  {printable(result.code_name(d.code), single_line=True)}: {d.a} - {d.b} = "
            f"{_num(d.kappa.point)} "
            f"[{_num(d.kappa.low)}, {_num(d.kappa.high)}]"
        )
    lines.append("q: quadratic-weighted kappa (ordinal scale); pooled kappa is on applies.")
    lines.append(
        "response pattern: what the validity screen found in the confidence (its tier: no "
        "pathology found = Valid); read it with kappa and AUROC, never alone."
    )
    return lines


def to_text(result: Comparison) -> str:
    from tui.text import printable

    rows = []
    for code, metrics in _by_code(result).items():
        rows.append([printable(result.code_name(code), single_line=True), *[""] * len(HEADERS)])
        rows.extend(["", *_cells(m)] for m in metrics)
    headers = ["code", *HEADERS]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "-" * len(line)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join([*out, "", *_footer(result)])


def to_markdown(result: Comparison) -> str:
    from tui.text import printable

    headers = ["code", *HEADERS]
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for code, metrics in _by_code(result).items():
        for m in metrics:
            name = printable(result.code_name(code), single_line=True).replace("|", "\\|")
            cells = [name, *_cells(m)]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join([*out, "", *_footer(result)])
