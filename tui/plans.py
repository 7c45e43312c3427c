"""The delegation plan as the screening panel shows it (no textual here: it is made in the
screening worker, on the study's thread-safe handle).

Per code: the certified threshold and its audit evidence (n, errors, the upper bound),
how many uncoded pairs would be delegated and how many are left for review, or why the
code is refused (its screen is not Valid, no threshold qualifies, the audit still needs
coding). :func:`study.analysis.delegation_plan.plan_delegation` makes the plan; this module
words it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from tui.keymap import key
from tui.remedies import in_words, said
from tui.text import one_line, plural, printable

if TYPE_CHECKING:
    from study import Study
    from study.log import CodePlan, DelegationPlan


def plan_for(study: Study, coder: str) -> tuple[DelegationPlan | None, str, str | None]:
    """``(plan, note, audit)``: the plan on ``coder``'s blind audit decisions (None when
    there is none, ``note`` saying why) and the audit's progress in words (None without
    an audit sample)."""
    from study.analysis import plan_delegation
    from study.errors import DRAW_AUDIT, StudyError

    sample = study.audit.sample()
    if sample is None:
        return (
            None,
            f"No audit sample yet: {in_words(DRAW_AUDIT)}, then code it blind "
            f"({key('screening.audit')}).",
            None,
        )
    progress = study.audit.progress(coder=coder)
    coded = sum(p.progress.coded for p in progress.values())
    # The current codes' pairs (the status line's count): an archived code's stay drawn.
    size = sum(p.progress.size for p in progress.values())
    audit = f"{coded:,} of {size:,} audit pairs coded blind by you"
    if study.scores.active_config_id() is None:
        return None, f"No scores yet: press {key('review.score')} to score the pairs.", audit
    if not coded:
        return (
            None,
            (
                f"No blind audit decision of yours yet: press {key('screening.audit')} to code "
                "the audit blind."
            ),
            audit,
        )
    try:
        plan = plan_delegation(study, coder=coder)
    except StudyError as exc:
        return None, said(exc), audit
    return plan, "", audit


def plan_renderable(plan: DelegationPlan | None, note: str, audit: str | None) -> Group:
    """The plan as a table, each refusal's reason below it, and the keys."""
    parts: list[RenderableType] = [Text("Delegation", style="bold dim")]
    if audit is not None:
        blind = f"  {key('screening.audit')} codes it blind"
        parts.append(Text.assemble(("Audit: ", "dim"), audit, (blind, "dim")))
    if plan is None:
        parts.append(Text(printable(note), style="italic"))
        parts.append(Text(""))
        return Group(*parts)
    parts.append(
        Text(
            f"At most {plan.max_error:.0%} errors among delegated pairs, "
            f"{plan.level:.0%} confidence; blind audit decisions only. From: the "
            "confidence threshold; n, Err: audit pairs above it and the model's errors "
            "there; UB: the error rate's upper bound; Del.: pairs delegated.",
            style="dim",
        )
    )
    table = Table(box=None, padding=(0, 1), header_style="bold dim", show_edge=False)
    # Short headers: the panel is about 55 columns wide beside the queue.
    table.add_column("Code", no_wrap=True, min_width=8, max_width=16, overflow="ellipsis")
    for column in ("From", "n", "Err", "UB", "Del.", "Left"):
        table.add_column(column, justify="right", no_wrap=True)
    for code in plan.codes:
        d = code.delegation
        certified = d.threshold is not None
        table.add_row(
            Text(printable(code.code_name, single_line=True)),
            f"≥ {d.threshold:.3f}" if certified else Text("refused", style="yellow"),
            str(d.n) if certified else "-",
            str(d.errors) if certified else "-",
            f"{d.upper_bound:.1%}" if certified else "-",
            f"{code.delegated:,}",
            f"{code.left:,}",
        )
    table.add_row(
        Text("Total", style="bold"), "", "", "", "", f"{plan.delegated:,}", f"{plan.left:,}"
    )
    parts.append(table)
    for code in plan.codes:
        if code.certified:
            continue
        name = printable(code.code_name, single_line=True)
        reason = printable(code.delegation.reason or "no threshold qualifies")
        line = Text.assemble((f"{name}: ", "bold"), reason)
        if code.outlook is not None and code.outlook.n_above:
            line.append(
                " " + printable(code.outlook.describe(code.code_name, remaining=code.audit_left)),
                style="dim",
            )
        parts.append(line)
    notes = (left_out(code) for code in plan.codes)
    parts.extend(Text(printable(note), style="italic") for note in notes if note is not None)
    parts.extend(
        Text(
            printable(f"{code.code_name}: audit evidence: {code.evidence_note()}."), style="italic"
        )
        for code in plan.codes
        if code.evidence_note()
    )
    keys = f"{key('screening.left')} shows the pairs left for review"
    if plan.delegated:
        delegates = f"{key('screening.delegate')} delegates {plural(plan.delegated, 'pair')}"
        keys = f"{delegates} (asks first) · {keys}"
    parts.append(Text(f"{keys} · {key('review.undo')} undoes", style="dim"))
    parts.append(Text(""))
    return Group(*parts)


def left_out(code: CodePlan) -> str | None:
    """What a code's delegation left out beside the audit, and what to do (None: nothing)."""
    parts = []
    if code.not_covered:
        parts.append(
            f"{plural(code.not_covered, 'pair')} of responses added after the audit was drawn "
            "(code them yourself: the audit cannot be extended over responses added after "
            "its draw, since its random order covers only the responses it was drawn from)"
        )
    if code.stale:
        parts.append(
            f"{plural(code.stale, 'pair')} whose score is stale after a changed definition or "
            "text (score them again: codecurve score)"
        )
    if not parts:
        return None
    name = code.code_name
    return f"{name}: not delegated, left for review: {'; '.join(parts)}."


def confirm_text(plan: DelegationPlan) -> Text:
    """What applying the plan will do, for the confirmation dialog."""
    text = Text()
    text.append(
        f"Record the model's pick as a delegated decision on "
        f"{plural(plan.delegated, 'uncoded pair')}:\n",
        style="bold",
    )
    for code in plan.certified:
        text.append(
            f"• {printable(code.code_name, single_line=True)}: {code.delegated:,} pairs at "
            f"confidence ≥ {code.delegation.threshold:.3f}\n"
        )
    text.append(
        f"\n{plural(plan.left, 'pair')} stay left for review. No human decision is "
        f"touched; {key('review.undo')} undoes the whole delegation as one action.",
        style="dim",
    )
    return text


def nothing_to_delegate(plan: DelegationPlan | None, note: str) -> str:
    """Why ``d`` delegates nothing: the reason there is no plan, or each code's refusal."""
    if plan is None:
        reason = note or "the plan is still being worked out; try again in a moment"
        return f"Nothing to delegate: {reason}"
    reasons = []
    for code in plan.codes:
        name = one_line(code.code_name)
        if code.certified:
            reasons.append(f"{name}: certified, but no undecided pair is above its threshold")
        else:
            reason = code.delegation.reason or "no threshold qualifies"
            reasons.append(f"{name}: {one_line(reason)}")
    shown = reasons[:3]
    if len(reasons) > 3:
        shown.append(f"and {len(reasons) - 3} more codes (in the panel)")
    return "Nothing to delegate: no pair is certified. " + "; ".join(shown) + "."
