"""The screen in plain words: one headline, one next action, a gloss for every index.

Pure: it reads :class:`~screening.report.VRSReport` objects and returns text. The
``screen`` command and the app's screening panel both open with :func:`advise`'s
headline and action, then show the VRS details, each index label glossed by
:func:`gloss`.

The verdict chosen for a study of several codes (our choice): a code where the model
adds nothing (one answer to every pair, or no better than chance; see
:mod:`screening.headline`) comes first; then a code whose screen is Invalid (its
confidence must not be used); else the undecided code (Insufficient data or
Indeterminate) closest to a verdict, so that the next decisions settle one code; else
every code is Valid, which says only that no pathology was found. No step asks for more
pairs than the study has left to code (``remaining``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from screening.headline import Headline
from screening.report import VRSReport

__all__ = ["GLOSSES", "Advice", "advise", "gloss", "out_of_reach", "to_verdict"]

#: Each index in a few words, for a coder who has not read the method.
GLOSSES: dict[str, str] = {
    "L": "confident when wrong",
    "Fp": "unsure when right",
    "RBS": "confidence inverted",
    "TRIN": "always the same confidence",
    "Tier classification": "response pattern only, not a verdict on the model",
}


def gloss(label: str) -> str:
    """A VRS row label with its plain-words gloss: ``"L (confident when wrong)"``."""
    words = GLOSSES.get(label)
    return f"{label} ({words})" if words else label


@dataclass(frozen=True)
class Advice:
    """The verdict in words and what to do next.

    Attributes:
        headline: One sentence: the verdict.
        action: One sentence: the next thing to do.
        code: The code both are about, or None for all codes.
        more: Decisions the action asks for (None: no number to give).
        remaining: Pairs left to code for the action's code (None: not known).
        audit: The pairs the action asks for are blind audit pairs.
    """

    headline: str
    action: str
    code: str | None = None
    more: int | None = None
    remaining: int | None = None
    audit: bool = False


def _more(report: VRSReport) -> int | None:
    distance = report.screen.distance
    estimates = [n for n in (distance.more_items, distance.more_items_for_l) if n is not None]
    if report.tier == "Insufficient data" and distance.more_items is not None:
        return max(1, distance.more_items)
    return max(1, min(estimates)) if estimates else None


def to_verdict(
    report: VRSReport,
    name: str | None,
    *,
    audit: bool = False,
    remaining: int | None = None,
    unscored: int = 0,
) -> str:
    """What a screen still needs before it settles, in words; the one wording of it.

    Args:
        report: The screen of one code (or of all codes pooled).
        name: The code's name; None for no code in particular.
        audit: The decisions are the blind audit sample's, so the pairs to code are
            the next audit pairs.
        remaining: Pairs this study still has to code for it (audit pairs not yet coded
            blind, or pairs without a decision); None: not known. No step asks for more.

    Returns:
        ``"code 23 more audit pairs of Workload"`` (``audit``), ``"code 1 more Workload
        pair"``, ``"code 23 more pairs"`` (no name); ``"code more ..."`` where no number
        can be given yet (a cell of the table is still empty and there is no error).
        When the study has fewer pairs left than the screen needs, it says so:
        ``"code the 45 audit pairs of Workload left (every one); the screen needs about
        60, so a verdict may be out of reach in this study"``, and with none left, that
        it is out of reach, unless ``unscored`` of the coder's decisions are on pairs
        not scored yet (scoring still runs): then that they join the screen once scored.
    """
    more = _more(report)

    def pairs_of(count: int | None) -> str:
        noun = "pair" if count == 1 else "pairs"
        if audit:
            return f"audit {noun}" + (f" of {name}" if name is not None else "")
        return f"{name} {noun}" if name is not None else noun

    if remaining is not None and remaining <= 0:
        if audit:
            every = "every audit pair" + (f" of {name}" if name is not None else "")
        else:
            every = f"every {name} pair" if name is not None else "every pair"
        if unscored > 0:
            return (
                f"{every} is coded, but {unscored:,} of those decisions are on pairs not "
                "scored yet and are not in the screen: score them and "
                "screen again"
            )
        return f"{every} is coded: {out_of_reach(report)}"
    if more is None:
        left = f" ({remaining} left)" if remaining is not None else ""
        return f"code more {pairs_of(None)}{left}"
    if remaining is not None and more > remaining:
        return (
            f"code the {remaining} {pairs_of(remaining)} left (every one); the screen "
            f"needs about {more} at the current rates, so a verdict may be out of reach in "
            "this study"
        )
    return f"code {more} more {pairs_of(more)}"


def out_of_reach(report: VRSReport) -> str:
    """Why no verdict can come in this study, and what to do instead."""
    t = report.table
    return (
        f"no verdict can be reached in this study (its table a={t.a}, b={t.b}, c={t.c}, "
        f"d={t.d} needs at least 5 in each cell); read the agreement and kappa as they "
        "are, code the pairs yourself, or score with a bigger model"
    )


def _undecided_action(
    report: VRSReport,
    name: str,
    *,
    audit: bool = False,
    remaining: int | None = None,
    unscored: int = 0,
) -> Advice:
    more = _more(report)
    headline = f"the screen of the model's confidence is not settled yet for {name}"
    if remaining is not None and remaining <= 0:
        action = to_verdict(report, name, audit=audit, remaining=remaining, unscored=unscored)
        more = 0
    elif report.n_items and report.n_incorrect == 0:
        what = f"audit pairs of {name}" if audit else f"{name} pairs"
        action = (
            f"code more {what}: the model has not disagreed with you yet, and the screen "
            "needs its errors"
        )
        if remaining is not None:
            action += f" ({remaining} left)"
    else:
        action = to_verdict(report, name, audit=audit, remaining=remaining)
    if more is not None and remaining is not None:
        more = min(more, remaining)
    if report.tier == "Indeterminate":
        headline = f"the model's confidence may be pathological for {name} ({_reasons(report)})"
    return Advice(
        headline=headline, action=action, code=name, more=more, remaining=remaining, audit=audit
    )


def _reasons(report: VRSReport) -> str:
    words = [GLOSSES[f.index] for f in report.screen.flags if f.index in GLOSSES]
    return ", ".join(dict.fromkeys(words)) or report.flagging_reason


def advise(
    pooled: VRSReport,
    per_code: Mapping[str, VRSReport],
    *,
    audit: bool = False,
    headlines: Mapping[str | None, Headline] | None = None,
    remaining: Mapping[str, int] | None = None,
    unscored: Mapping[str, int] | None = None,
) -> Advice:
    """The headline and next action of a study's screen.

    The order (our choice): a code where the model adds nothing (it gave one answer to
    every pair, or agrees no better than chance) comes first, since no tier can make its
    picks useful; then a code whose screen is Invalid; then the undecided code closest to
    a verdict; else every code is Valid, which means only that no pathology was found.

    Args:
        pooled: The screen of all codes pooled.
        per_code: One screen per code, by code name (may be empty).
        audit: The decisions are the blind audit sample's, so more of them means more
            audit pairs ("code 23 more audit pairs of Workload").
        headlines: The figures of each group by code name, None for the pool
            (:func:`screening.headline.make_headline`).
        remaining: Pairs left to code per code name; no step asks for more.
        unscored: Per code name, the coder's decisions on pairs not scored yet (they
            join the screen once scored: no verdict is called out of reach for them).

    Returns:
        The advice about one code (or all codes when there is none to single out).
    """
    heads = dict(headlines or {})
    left = dict(remaining or {})
    if not per_code:
        if pooled.n_items == 0:
            return Advice(
                headline="nothing to screen yet: no decisions on scored pairs",
                action="code a few pairs; the screen needs at least 5 in each cell",
            )
        per_code = {"all codes": pooled}
        if None in heads:
            heads["all codes"] = heads[None]
    useless = [n for n in per_code if n in heads and heads[n].adds_nothing]
    if useless:
        name = useless[0]
        every = len(useless) == len(per_code) > 1 and None in heads
        head = heads[None] if every else heads[name]
        if head.name is None:
            name = "all codes"
        n_others = len(useless) - 1
        also = (
            f" (and {n_others} more code{'s' if n_others > 1 else ''})"
            if n_others and head.name is not None
            else ""
        )
        subject = "every code" if head.name is None else name
        left_here = sum(left.values()) if head.name is None else left.get(name)
        if left_here != 0:
            step = f"code {subject} yourself"
        elif audit:
            # The audit is done, not the study: pairs outside it (a new wave) are left.
            step = (
                f"keep your own decisions for {subject} and code the pairs outside the "
                "audit yourself (every audit pair is coded)"
            )
        else:
            step = f"keep your own decisions for {subject} (every pair is coded)"
        return Advice(
            headline=head.sentence() + also,
            action=f"{step}: the model's picks and confidence cannot save you any work "
            "here (a bigger model or another prompt may do better)",
            code=None if head.name is None else name,
            remaining=None if head.name is None and not left else left_here,
        )
    invalid = [(n, r) for n, r in per_code.items() if r.tier == "Invalid"]
    if invalid:
        name, report = invalid[0]
        others = f" (and {len(invalid) - 1} more code{'s' if len(invalid) > 2 else ''})"
        return Advice(
            headline=f"the model's confidence cannot be trusted for {name}"
            + (others if len(invalid) > 1 else "")
            + f": {_reasons(report)}",
            action=f"code {name} yourself; do not accept the model's picks by its confidence",
            code=name,
            remaining=left.get(name),
        )
    open_codes = [(n, r) for n, r in per_code.items() if r.tier != "Valid"]
    if open_codes:

        def closeness(item: tuple[str, VRSReport]) -> tuple[int, int]:
            more = _more(item[1])
            reachable = more is not None and (item[0] not in left or more <= left[item[0]])
            return (0 if reachable else 1, more or 0)

        name, report = min(open_codes, key=closeness)
        return _undecided_action(
            report,
            name,
            audit=audit,
            remaining=left.get(name),
            unscored=dict(unscored or {}).get(name, 0),
        )
    figures = ""
    shown = heads.get(next(iter(per_code))) if len(per_code) == 1 else heads.get(None)
    if shown is not None and shown.n:
        figures = f" (agreement {shown.agreement:.0%}, kappa {shown.kappa.text()})"
    if len(per_code) == 1:
        name = next(iter(per_code))
        headline = f"the screen found no pathology in the model's confidence for {name}"
    else:
        headline = (
            f"the screen found no pathology in the model's confidence for all {len(per_code)} codes"
        )
    return Advice(
        headline=headline + figures,
        action="review the least confident pairs first; the confident ones can be checked "
        "by an audit sample",
    )
