"""The screen in plain words: one headline, one next action, a gloss for every index.

Pure: it reads :class:`~screening.report.VRSReport` objects and returns text. The
``screen`` command and the app's screening panel both open with :func:`advise`'s
headline and action, then show the VRS details, each index label glossed by
:func:`gloss`.

The verdict chosen for a study of several codes (our choice): a code whose screen is
Invalid comes first (its confidence must not be used); else the undecided code
(Insufficient data or Indeterminate) closest to a verdict, so that the next decisions
settle one code; else every code is Valid.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from screening.report import VRSReport

__all__ = ["GLOSSES", "Advice", "advise", "gloss", "to_verdict"]

#: Each index in a few words, for a coder who has not read the method.
GLOSSES: dict[str, str] = {
    "L": "confident when wrong",
    "Fp": "unsure when right",
    "RBS": "confidence inverted",
    "TRIN": "always the same confidence",
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
    """

    headline: str
    action: str
    code: str | None = None
    more: int | None = None


def _more(report: VRSReport) -> int | None:
    distance = report.screen.distance
    estimates = [n for n in (distance.more_items, distance.more_items_for_l) if n is not None]
    if report.tier == "Insufficient data" and distance.more_items is not None:
        return max(1, distance.more_items)
    return max(1, min(estimates)) if estimates else None


def to_verdict(report: VRSReport, name: str | None, *, audit: bool = False) -> str:
    """What a screen still needs before it settles, in words; the one wording of it.

    Args:
        report: The screen of one code (or of all codes pooled).
        name: The code's name; None for no code in particular.
        audit: The decisions are the blind audit sample's, so the pairs to code are
            the next audit pairs.

    Returns:
        ``"code 23 more audit pairs of Workload"`` (``audit``), ``"code 1 more Workload
        pair"``, ``"code 23 more pairs"`` (no name); ``"code more ..."`` where no number
        can be given yet (a cell of the table is still empty and there is no error).
    """
    more = _more(report)
    noun = "pair" if more == 1 else "pairs"
    if audit:
        pairs = f"audit {noun}" + (f" of {name}" if name is not None else "")
    else:
        pairs = f"{name} {noun}" if name is not None else noun
    return f"code more {pairs}" if more is None else f"code {more} more {pairs}"


def _undecided_action(report: VRSReport, name: str, *, audit: bool = False) -> Advice:
    more = _more(report)
    headline = f"the model's confidence does not yet tell right from wrong for {name}"
    if report.n_items and report.n_incorrect == 0:
        action = (
            f"code more {'audit pairs of ' + name if audit else name + ' pairs'}: the model "
            "has not disagreed with you yet, and the screen needs its errors"
        )
    else:
        action = to_verdict(report, name, audit=audit)
    if report.tier == "Indeterminate":
        headline = f"the model's confidence is in doubt for {name} ({_reasons(report)})"
    return Advice(headline=headline, action=action, code=name, more=more)


def _reasons(report: VRSReport) -> str:
    words = [GLOSSES[f.index] for f in report.screen.flags if f.index in GLOSSES]
    return ", ".join(dict.fromkeys(words)) or report.flagging_reason


def advise(pooled: VRSReport, per_code: Mapping[str, VRSReport], *, audit: bool = False) -> Advice:
    """The headline and next action of a study's screen.

    Args:
        pooled: The screen of all codes pooled.
        per_code: One screen per code, by code name (may be empty).
        audit: The decisions are the blind audit sample's, so more of them means more
            audit pairs ("code 23 more audit pairs of Workload").

    Returns:
        The advice about one code (or all codes when there is none to single out).
    """
    if not per_code:
        if pooled.n_items == 0:
            return Advice(
                headline="nothing to screen yet: no decisions on scored pairs",
                action="code a few pairs; the screen needs at least 5 in each cell",
            )
        per_code = {"all codes": pooled}
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
        )
    open_codes = [(n, r) for n, r in per_code.items() if r.tier != "Valid"]
    if open_codes:

        def closeness(item: tuple[str, VRSReport]) -> tuple[int, int]:
            more = _more(item[1])
            return (0 if more is not None else 1, more or 0)

        name, report = min(open_codes, key=closeness)
        return _undecided_action(report, name, audit=audit)
    if len(per_code) == 1:
        name = next(iter(per_code))
        headline = f"the model's confidence tells right from wrong for {name}"
    else:
        headline = f"the model's confidence tells right from wrong for all {len(per_code)} codes"
    return Advice(
        headline=headline,
        action="review the least confident pairs first; the confident ones can be checked "
        "by an audit sample",
    )
