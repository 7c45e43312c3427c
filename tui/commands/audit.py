"""``codecurve audit STUDY``: draw, extend or follow the blind random audit sample.

The audit sample is what makes the screen and a delegation describe the pairs nobody
coded (METHOD.md section 3): a seeded random order of the responses, drawn without
looking at any score; a code's audit pairs are the first N responses of it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import InputError
from tui.commands import UsageError, tell
from tui.commands.types import parse_cut, positive_int, seed

if TYPE_CHECKING:
    from study import Study
    from study.audit import AuditSample

FORMATS = ("table", "json")

DESCRIPTION = """\
Draw the blind random audit sample of a study, extend it, or show how far its coding
has come. The sample is one seeded random order of the responses, shared by all codes
and drawn without looking at any score; each code's audit pairs are the first N
responses of it (default 150 per code, capped by the number of responses: enough for
the screen to reach a verdict). Code the audit pairs without looking at the model's
answer (the review app's audit mode); the screen and delegation then use those blind
decisions. Every draw is kept in the study's log. Without options the command only
reports: drawing takes --draw (or a size, --per-code / --size, or --seed).

  codecurve audit survey.codecurve                  how far the audit's coding has come
  codecurve audit survey.codecurve --draw           draw the default sample
  codecurve audit survey.codecurve --per-code 200 --seed 42
  codecurve audit survey.codecurve --extend 100     the next 100 responses of the same order
  codecurve audit survey.codecurve --extend 50 --code Pay
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="show the blind random audit's progress, or draw (--draw) or extend it",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--draw",
        action="store_true",
        help="draw the sample (150 responses per code by default, capped by the responses)",
    )
    size.add_argument(
        "--per-code", type=positive_int, metavar="N", help="audit N responses on every code"
    )
    size.add_argument(
        "--size", type=positive_int, metavar="N", help="audit N pairs in all, split over the codes"
    )
    size.add_argument(
        "--extend",
        type=positive_int,
        metavar="N",
        help="add the next N responses of the same random order to every code's sample",
    )
    parser.add_argument("--seed", type=seed, help="the random order's seed (new draws)")
    parser.add_argument(
        "--code", action="append", metavar="CODE", help="only this code (repeatable)"
    )
    parser.add_argument("--coder", help="whose decisions count (needed with several coders)")
    parser.add_argument(
        "--cut",
        default="scale",
        help="the screen's confidence cut, as for 'codecurve screen': 'scale' (default), "
        "'median' or a number in [0, 1]",
    )
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from screening.sampling import DEFAULT_AUDIT_PER_CODE
    from study import Study, StudyError
    from study.analysis import check_screen_coder
    from tui.text import printable

    if args.extend is not None and args.seed is not None:
        raise UsageError("--seed chooses the order of a new draw; --extend keeps the drawn one")
    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    drawing = (
        args.draw or args.per_code is not None or args.size is not None or args.seed is not None
    )
    action = "extended" if args.extend is not None else "drawn" if drawing else ""
    if not action:
        with Study.open(args.study, read_only=True) as study:
            if study.audit.sample() is not None:
                return _show(study, args, action="")
            # Each code's default is capped by its own responses (a code scoped to a
            # question has only the answers to it).
            scope = study.index.scope
            sizes = sorted(
                {min(DEFAULT_AUDIT_PER_CODE, scope.count(cid)) for cid in study.index.codable_keys}
            )
        # Only a report: a draw is for good, so it is never a side effect of asking.
        name = printable(str(args.study), single_line=True)
        size = (
            f"{sizes[0]}"
            if len(sizes) == 1
            else f"{sizes[0]} to {sizes[-1]} (each code's own responses)"
            if sizes
            else "0"
        )
        raise StudyError(
            "the study has no audit sample yet, and nothing was drawn ('codecurve audit' "
            f"only reports now); draw one of {size} responses per code with: "
            f"codecurve audit {name} --draw",
            path=args.study,
        )
    with Study.open(args.study) as study:
        # What could refuse the report after the draw is checked before it: a failed
        # command leaves no sample behind.
        check_screen_coder(study, args.coder)
        if action == "extended":
            study.audit.extend(args.extend, codes=args.code)
        else:
            study.audit.draw(
                per_code=args.per_code, total=args.size, seed=args.seed, codes=args.code
            )
        return _show(study, args, action=action)


def _show(study: Study, args: argparse.Namespace, *, action: str) -> int:
    from tui.text import printable

    sample = study.audit.sample()
    assert sample is not None
    progress = study.audit.progress(coder=args.coder)
    verdicts, note = _verdicts(study, args.coder, cut=args.cut)
    tell(note)
    codes = [study.code(c) for c in args.code] if args.code else list(study.codes)
    rows = []
    for code in codes:
        p = progress[code.id]
        rows.append(
            {
                "code_id": code.id,
                "code": code.name,
                "questions": list(code.questions),
                "size": p.progress.size,
                "coded": p.progress.coded,
                "skipped": p.progress.skipped,
                "remaining": p.progress.remaining,
                "unblind": p.unblind,
                **verdicts.get(code.id, {"verdict": "", "delegation": "", "tier": ""}),
            }
        )
    shown = printable(str(args.study), single_line=True)
    steps = next_steps(
        shown,
        rows,
        action=action,
        population=sample.population,
        added=study.response_count() - sample.population,
    )
    if args.format == "json":
        from tui.text import json_text

        payload = {
            "action": action or "progress",
            "seed": sample.seed,
            "population": sample.population,
            "drawn_at": sample.drawn_at,
            "draws": list(sample.draws),
            "codes": rows,
            "next": steps,
        }
        sys.stdout.write(json_text(payload) + "\n")
        return 0
    _print_table(sample, rows, action=action, scoped=study.codebook.scoped)
    for line in steps:
        print(line)
    return 0


def _verdicts(
    study: Study, coder: str | None, *, cut: str
) -> tuple[dict[str, dict[str, str]], str]:
    """code id -> the code's figures and response pattern (never a bare tier), how far it
    is from a verdict and from delegation, in words, no step larger than what is left;
    and whose decisions, where taken by default among several coders ("" otherwise)."""
    from screening.advice import to_verdict
    from screening.story import pattern_line
    from study.analysis import plan_delegation, screen_study
    from study.errors import NoBlindDecisionsError

    chosen = parse_cut(cut)
    if study.scores.active_config_id() is None:
        note = "not scored yet"
        return {c.id: {"verdict": note, "delegation": note} for c in study.codes}, ""
    try:
        screened = screen_study(study, coder=coder, sample="audit", cut=chosen)
    except NoBlindDecisionsError:
        note = "no blind audit decision yet"
        return {c.id: {"verdict": note, "delegation": note} for c in study.codes}, ""
    plan = plan_delegation(study, coder=coder, cut=chosen, screened=screened)
    out: dict[str, dict[str, str]] = {}
    for one in plan.codes:
        report = screened.per_code.get(one.code_name)
        head = screened.headline(one.code_name)
        left = screened.remaining.get(one.code_name)
        tier = ""
        if report is None:
            verdict = "no blind audit decision yet"
        else:
            tier = report.tier
            told = screened.story(one.code_name)
            verdict = told.pattern_line(head)
            if told.adds_nothing:
                verdict = f"{told.headline}; {verdict}"
            elif report.tier == "Insufficient data":
                verdict = to_verdict(report, one.code_name, audit=True, remaining=left)
                verdict += f" ({pattern_line(report.tier, head)})"
        if one.certified:
            delegation = f"certified at >= {one.delegation.threshold:.3f}"
        elif one.outlook is not None and one.outlook.n_above:
            delegation = one.outlook.describe(one.code_name, remaining=one.audit_left)
        else:
            delegation = one.delegation.reason
        out[one.code_id] = {"verdict": verdict, "delegation": delegation, "tier": tier}
    return out, screened.coder_note


def next_steps(
    study_path: str,
    rows: list[dict[str, Any]],
    *,
    action: str,
    population: int | None = None,
    added: int = 0,
) -> list[str]:
    """What to do now: code a fresh draw blind; at a complete audit, read the screen.

    ``population``: the responses the audit was drawn from (its random order covers no
    others), so that ``--extend`` is named only where some code can still grow;
    ``added``: responses added after the draw (a new wave), which no audit step reaches.
    """
    if not rows:
        return []
    if action == "drawn" or action == "extended":
        pairs = sum(r["remaining"] for r in rows)
        return [
            f"Next: code the {pairs:,} audit pairs blind, the model's answer hidden: "
            f"codecurve review {study_path}, then s (the screening panel) and b (the blind "
            "audit, in its random order); imported gold decisions count as blind too."
        ]
    if all(r["remaining"] == 0 for r in rows):
        room = population is None or any(r["size"] < population for r in rows)
        grow = (
            "; extend it with --extend N where a code needs more"
            if room
            else f"; it covers all {population:,} responses it was drawn from, so it cannot grow"
        )
        lines = [
            f"The audit is fully coded. Next: read what it says with codecurve screen "
            f"{study_path} (and codecurve delegate {study_path} for the plan){grow}."
        ]
        if added > 0:
            lines.append(
                f"{added:,} response(s) added after the draw (a new wave) are outside the "
                "audit: the screen and delegation do not speak for them; code them yourself."
            )
        return lines
    left = sum(r["remaining"] for r in rows)
    return [
        f"Next: {left:,} audit pairs are still to code blind: codecurve review {study_path}, "
        "then s and b."
    ]


def _print_table(
    sample: AuditSample, rows: list[dict[str, Any]], *, action: str, scoped: bool = False
) -> None:
    """The audit table; ``scoped``: a column says which questions each code applies to."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from tui.text import printable

    console = Console()
    head = f"Audit sample {action}" if action else "Audit sample"
    console.print(
        f"{head}: seed {sample.seed}, a random order of {sample.population} responses "
        f"(draws: {len(sample.draws)}, last {sample.drawn_at})."
    )
    table = Table(header_style="bold")
    table.add_column("Code")
    if scoped:
        table.add_column("Question")
    for column in ("Audit pairs", "Coded blind", "Skipped", "Remaining", "Seen model"):
        table.add_column(column, justify="right")
    table.add_column("Screen (response pattern, AUROC, kappa)")
    table.add_column("Delegation")
    for row in rows:
        asked = [Text(printable(", ".join(row["questions"]) or "all", single_line=True))]
        table.add_row(
            Text(printable(row["code"], single_line=True)),
            *(asked if scoped else []),
            str(row["size"]),
            str(row["coded"]),
            str(row["skipped"]),
            str(row["remaining"]),
            str(row["unblind"]),
            Text(printable(row["verdict"])),
            Text(printable(row["delegation"])),
        )
    console.print(table)
    if any(r["skipped"] for r in rows):
        console.print(
            "Skipped audit pairs are missing values: skipping the hard ones biases the sample.",
            style="yellow",
        )
    if any(r["unblind"] for r in rows):
        console.print(
            "Audit pairs decided while seeing the model's answer are left out of the screen.",
            style="yellow",
        )
