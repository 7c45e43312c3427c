"""``codecurve delegate STUDY``: certify, apply or undo the delegation of confident pairs.

Per code, on the blind audit decisions: the screen must be Valid; then the lowest
confidence threshold whose error rate is at most the maximum, at the chosen level, is
certified (exact finite-population bounds on the delegated pairs, thresholds tested from
the highest down in a fixed sequence, the first failure ending the search). Without
``--apply`` a plan; with it, the
model's picks on the uncoded pairs at or above each threshold are recorded as
``delegated`` decisions, in one undoable action.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import InputError
from tui.commands import UsageError, tell
from tui.commands.types import parse_cut, unit_interval

if TYPE_CHECKING:
    from study import Study
    from study.analysis import StudyScreening
    from study.log import DelegationPlan

FORMATS = ("table", "json")

DESCRIPTION = """\
Delegate to the model the pairs its confidence has earned, with a guarantee a methods
section can quote: "with 95% confidence, the model's error rate among Workload pairs with
confidence >= 0.912 is at most 5%". Needs a blind random audit sample coded blind
(codecurve audit). A code is refused, with the reason, when its screen on the audit
sample is not Valid or no threshold qualifies. Human decisions are never overridden.
The guarantee holds for the responses the audit was drawn from and the scoring
configuration screened; a rescored study or a new wave needs its audit again.

  codecurve delegate survey.codecurve                     the plan, per code and in total
  codecurve delegate survey.codecurve --max-error 0.1 --apply --coder ana
  codecurve delegate survey.codecurve --undo --coder ana
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "delegate",
        help="certify and apply the delegation of the model's confident pairs",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument(
        "--max-error",
        type=unit_interval,
        default=0.05,
        help="the largest error rate to accept among delegated pairs (default 0.05)",
    )
    parser.add_argument(
        "--level", type=unit_interval, default=0.95, help="confidence level (default 0.95)"
    )
    parser.add_argument("--code", help="only this code (name or id)")
    parser.add_argument(
        "--study-wide",
        action="store_true",
        help="one guarantee for all codes together at --level (each code certified at "
        "1 - (1 - level) / codes); by default each code's guarantee holds on its own",
    )
    parser.add_argument(
        "--coder", help="whose audit decisions, and whose name the delegated decisions carry"
    )
    parser.add_argument(
        "--cut",
        default="scale",
        help="the screen's confidence cut, as for 'codecurve screen': 'scale' (default), "
        "'median' or a number in [0, 1]",
    )
    parser.add_argument(
        "--agreement",
        choices=("applies", "exact", "within1"),
        default="applies",
        help="when the model counts as correct (default: both say applies / does not apply)",
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--apply", action="store_true", help="record the plan's decisions")
    action.add_argument("--undo", action="store_true", help="undo the latest delegation")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from study import Study, StudyError
    from study.analysis import plan_delegation, screen_study
    from tui.text import json_text, plural, printable

    cut = parse_cut(args.cut)
    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    if args.undo:
        if args.code:
            raise UsageError("--undo takes back the whole latest delegation; drop --code")
        with Study.open(args.study, coder=args.coder) as study:
            undone = study.delegations.undo(coder=args.coder)
        if undone is None:
            who = f" by {args.coder}" if args.coder else ""
            raise StudyError(f"no delegation{who} to undo", path=args.study)
        print(printable(f"Delegation {undone.id} by {undone.coder} undone."))
        return 0
    with Study.open(args.study, read_only=not args.apply) as study:
        if study.audit.sample() is not None and study.scores.active_config_id() is not None:
            screened = screen_study(
                study, code=args.code, coder=args.coder, cut=cut, agreement=args.agreement,
                sample="audit",
            )  # fmt: skip
        else:
            screened = None  # plan_delegation says what is missing
        if screened is not None:
            if args.apply and args.coder is None and screened.coder_note:
                raise UsageError(
                    "--apply records decisions under a coder's name, and the study has "
                    "several coders: give --coder NAME"
                )
            tell(screened.coder_note)
        plan = plan_delegation(
            study,
            max_error=args.max_error,
            level=args.level,
            code=args.code,
            coder=args.coder,
            cut=cut,
            agreement=args.agreement,
            study_wide=args.study_wide,
            screened=screened,
        )
        # The pairs this coder has not decided though another coder has: not delegated
        # (a decision is never recorded over another's), and not "left for review" either.
        others = _decided_by_others(study, plan) if plan.coder is not None else 0
        applied = None
        if args.apply:
            coder = args.coder or plan.coder
            if coder is None:
                raise UsageError("--apply needs --coder NAME: whose name the decisions carry")
            applied = study.delegations.apply(plan, coder=coder)
    if args.format == "json":
        payload: dict[str, Any] = plan.to_dict()
        if applied is not None:
            payload["applied"] = {
                "event_id": applied.event_id,
                "recorded": dict(applied.recorded),
                "withdrawn": dict(applied.withdrawn),
                "unchanged": dict(applied.unchanged),
            }
        sys.stdout.write(json_text(payload) + "\n")
        return 0
    _print_plan(plan, screened)
    if others:
        print(
            printable(
                f"Left for review counts the pairs nobody has decided; {plan.coder} has "
                f"{plural(others, 'pair')} of their own still undecided that another coder "
                "decided (never delegated: a delegated decision is never recorded over "
                "another coder's)."
            )
        )
    standing = sum(applied.unchanged.values()) if applied is not None else 0
    if applied is not None and applied.event_id is None:
        print(
            f"Nothing new: the {plural(standing, 'delegated decision')} of the latest "
            "delegation already stand; nothing was recorded."
        )
    elif applied is not None:
        withdrawn = sum(applied.withdrawn.values())
        tail = (
            f"; {plural(withdrawn, 'earlier delegated decision')} no longer covered "
            f"{'was' if withdrawn == 1 else 'were'} withdrawn"
            if withdrawn
            else ""
        )
        kept = f"; {standing:,} already delegated stand as they were" if standing else ""
        print(
            f"Recorded {plural(applied.total, 'new delegated decision')} "
            f"(event {applied.event_id}){tail}{kept}. "
            f"Undo: codecurve delegate {printable(str(args.study), single_line=True)} --undo"
        )
    elif plan.delegated:
        print("This is a plan: add --apply to record it.")
    return 0


def _print_plan(plan: DelegationPlan, screened: StudyScreening | None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from screening.headline import pattern
    from tui.plans import left_out
    from tui.text import printable

    console = Console()
    console.print(
        f"Delegation at <= {plan.max_error:.1%} errors, {plan.level:.0%} confidence; "
        f"blind audit decisions of {printable(str(plan.coder), single_line=True)}; "
        f"model {printable(plan.config, single_line=True)}."
    )
    if plan.codes:
        words = plan.codes[0].delegation.procedure_words()
        console.print(Text(printable(f"Procedure: {words}.")))
    table = Table(header_style="bold")
    for column in ("Code", "Response pattern", "AUROC", "Kappa"):
        table.add_column(column, justify="left" if column != "AUROC" else "right")
    for column in ("Threshold", "Audit n", "Errors", "Bound"):
        table.add_column(column, justify="right")
    table.add_column("Delegated", justify="right")
    table.add_column("Left for review", justify="right")
    for code in plan.codes:
        d = code.delegation
        certified = d.threshold is not None
        head = screened.headline(code.code_name) if screened is not None else None
        auroc = "-" if head is None or head.auroc != head.auroc else f"{head.auroc:.2f}"
        table.add_row(
            Text(printable(code.code_name, single_line=True)),
            code.screen or pattern(d.tier),
            auroc,
            head.kappa.text() if head is not None else "-",
            f"{d.threshold:.3f}" if d.threshold is not None else "refused",
            str(d.n) if certified else "-",
            str(d.errors) if certified else "-",
            f"{d.upper_bound:.1%}" if certified else "-",
            str(code.delegated),
            str(code.left),
        )
    table.add_row(
        "Total", "", "", "", "", "", "", "", str(plan.delegated), str(plan.left), style="bold"
    )
    console.print(table)
    for code in plan.codes:
        console.print(Text(printable(code.guarantee())))
        if not code.certified and code.outlook is not None and code.outlook.n_above:
            console.print(
                Text(
                    "  "
                    + printable(code.outlook.describe(code.code_name, remaining=code.audit_left))
                )
            )
        note = left_out(code)
        if note is not None:
            console.print(Text("  " + printable(note)))


def _decided_by_others(study: Study, plan: DelegationPlan) -> int:
    """Pairs of the planned codes ``plan.coder`` has not decided and another coder has
    (a human decision, not a delegated one)."""
    codes = [c.code_id for c in plan.codes]
    if not codes:
        return 0
    with study.query() as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM (SELECT DISTINCT rid, cid FROM annotations "
            "WHERE coder != ? AND source != 'delegated' AND cid IN "
            f"({', '.join('?' * len(codes))}) EXCEPT SELECT rid, cid FROM annotations "
            "WHERE coder = ?)",
            [plan.coder, *(study.index.code_key(c) for c in codes), plan.coder],
        ).fetchone()
    return int(row[0])
