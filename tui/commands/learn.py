"""``codecurve learn STUDY``: curves learned from a coder's decisions (docs/method.md,
"Learning from the coder").

The work is :func:`study.analysis._learning.learn`'s; this parses, calls it and prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import InputError

if TYPE_CHECKING:
    from study.analysis import CodeLearning, LearnRun

FORMATS = ("table", "json")

DESCRIPTION = """\
Fit, per code, a curve over the scale's points on one coder's decisions: a classifier
on what the model computed for each pair when it scored it (its hidden state at the
answer and over the response, kept with the scores) and on its zero-shot curve. Every
pair of the code is then rescored from the kept features, with no model pass, under a
learned configuration of its own (named after its base configuration and the coder),
which becomes the active one: the queue, screen, compare, delegate, findings, report and
export use it as any other.

It learns only from the coder's own decisions under the code's current definition,
never from an audit pair and never from a delegated or accepted model pick, so the blind
audit stays a fair test of it: 'codecurve compare STUDY --sample audit' puts the
zero-shot and learned configurations side by side there. A code needs at least 5
decisions of each scale value; until then it keeps its zero-shot curve. The learned
curve learns the coder, mistakes included.

  codecurve learn survey.codecurve
  codecurve learn survey.codecurve --coder ann --code Workload
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "learn",
        help="learn each code's curve from a coder's decisions (never the audit's)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument("--coder", help="whose decisions (needed when several coders decided)")
    parser.add_argument("--code", help="learn only this code (name or id)")
    parser.add_argument(
        "--config",
        type=int,
        metavar="ID",
        help="the scored configuration to learn on (default: the active one, or its base)",
    )
    parser.add_argument(
        "--no-activate",
        dest="activate",
        action="store_false",
        help="keep the active configuration as it is",
    )
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from study import Study
    from study.analysis import learn
    from tui.text import json_text, printable

    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    with Study.open(args.study, coder=None) as study:
        result = learn(
            study,
            coder=args.coder,
            code=args.code,
            config_id=args.config,
            activate=args.activate,
        )
    if args.format == "json":
        sys.stdout.write(json_text(result.to_dict()) + "\n")
        return 0
    lines = summary_lines(result, activated=args.activate)
    sys.stdout.write(printable("\n".join(lines)) + "\n")
    return 0


def summary_lines(result: LearnRun, *, activated: bool) -> list[str]:
    """What learning did, in words: the configuration, then one line per code."""
    lines = [
        f"learned configuration #{result.config_id}: {result.coder}'s decisions on "
        f"configuration #{result.base_config_id} (codebook version {result.codebook_version})"
        + (", now the active one" if activated else "")
    ]
    lines += [code_line(code) for code in result.codes]
    lines += [f"note: {note}" for note in result.notes]
    if result.learned:
        lines.append(
            "The cross-validated AUROC is measured on the coder's own decisions, which the "
            "queue chose: it is not the audit's. Judge the learned curve on the blind "
            "audit: codecurve compare STUDY --sample audit"
        )
    return lines


def code_line(code: CodeLearning) -> str:
    counts = ", ".join(f"{v}: {n}" for v, n in code.counts.items())
    audit = (
        f"; {code.left_out_audit} audit decision{'s' if code.left_out_audit != 1 else ''} left out"
        if code.left_out_audit
        else ""
    )
    if not code.learned:
        return (
            f"  {code.code_name}: zero-shot curve kept, {code.needs_text()} "
            f"[decisions {counts}]{audit}"
        )
    auroc = "n/a" if code.cv_auroc is None else f"{code.cv_auroc:.2f}"
    return (
        f"  {code.code_name}: learned from {sum(code.counts.values())} "
        f"decisions [{counts}], cross-validated AUROC {auroc} (not the audit's), "
        f"C = {code.penalty:g}, {code.pairs:,} pairs rescored in {code.seconds:.1f} s"
        f"{audit}"
    )
