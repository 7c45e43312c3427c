"""The screening panel's content: VRS screens of the decisions so far, in plain words.

No textual here: it runs in a worker thread after each decision, on the study's
thread-safe handle. Per METHOD.md section 2: Insufficient data says how many more decisions
of which kind are needed; Valid adds phase B as selective-prediction sentences;
Indeterminate adds phase B under a warning; Invalid says why and shows no calibration
numbers at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from screening.advice import Advice, to_verdict
from screening.headline import Headline
from screening.report import VRSReport
from screening.story import pattern_line, story
from tui.keymap import key

if TYPE_CHECKING:
    from study import Study

#: What each 2x2 cell means to a coder.
CELL_WORDS = {
    "a": "the model agreed with you and was confident",
    "b": "the model disagreed with you but was confident",
    "c": "the model agreed with you but was unsure",
    "d": "the model disagreed with you and was unsure",
}

POOLED = "All codes"


@dataclass(frozen=True)
class GroupVerdict:
    """The screen of one group (a code, or all codes pooled), ready to show."""

    name: str
    code_id: str | None
    tier: str
    n: int
    headline: str
    lines: tuple[str, ...]
    report: VRSReport | None = None
    #: The figures before any tier (agreement, kappa, AUROC, the picks' shares).
    figures: Headline | None = None

    @property
    def short(self) -> str:
        """A few words for the code selector and the per-code list: never the bare tier."""
        head = self.figures
        told = story(self.tier, head)
        if head is None or not head.n or told.adds_nothing:
            return told.verdict
        return f"κ {head.kappa.text()}"

    @property
    def pattern(self) -> str:
        """The response pattern the screen found, with AUROC and kappa beside it."""
        return pattern_line(self.tier, self.figures)

    @property
    def shown_tier(self) -> str:
        """The tier as it may be shown ("" where the model adds nothing: no tier)."""
        return "" if story(self.tier, self.figures).adds_nothing else self.tier


@dataclass(frozen=True)
class ScreeningSummary:
    """Every group's verdict, pooled first, and the agreement so far."""

    groups: tuple[GroupVerdict, ...]
    #: Share of decisions matching the model's pick, on how many, and kappa (nan: n/a).
    agreement: tuple[float, int, float] | None
    warnings: tuple[str, ...] = field(default=())
    advice: Advice | None = None
    advice_code_id: str | None = None
    study_warning: str | None = None
    cut: str = ""

    def group(self, code_id: str | None) -> GroupVerdict | None:
        for group in self.groups:
            if group.code_id == code_id:
                return group
        return None


def _percent(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.0%}"


def selective_sentences(report: VRSReport, confidence: npt.NDArray[np.float64]) -> list[str]:
    """Phase B as sentences: what accepting the model above a confidence would have done."""
    phase = report.phase_b
    if phase is None:
        return []
    ranked = np.sort(confidence)[::-1]
    n = int(ranked.size)
    lines = [
        f"Over all {n} decisions the model matched you {_percent(phase.base_accuracy)} of "
        f"the time; its confidence ranks right above wrong answers with AUROC {phase.auroc:.2f}."
    ]
    for point in phase.selective:
        if point.n_kept <= 0 or point.n_kept > n:
            continue
        cut = float(ranked[point.n_kept - 1])
        lines.append(
            f"Accepting the model wherever confidence ≥ {cut:.2f} would have matched your "
            f"decisions {_percent(point.accuracy)} of the time on {point.n_kept} items, "
            f"covering {point.n_kept / n:.0%} of items."
        )
    return lines


def describe(
    report: VRSReport,
    name: str,
    code_id: str | None,
    confidence: npt.NDArray[np.float64],
    figures: Headline | None = None,
    *,
    remaining: int | None = None,
    unscored: int = 0,
) -> GroupVerdict:
    """Plain-language verdict of one group: the figures first (``figures``), then what
    the screen of its confidence found."""
    tier = report.tier
    n = report.n_items
    lines: list[str] = []
    if figures is not None and figures.n:
        words = figures.figures()
        lines.append(words[:1].upper() + words[1:] + ".")
    if story(tier, figures).adds_nothing:
        headline = (
            "No tier, no calibration: the model adds nothing here, so the pattern of its "
            "confidence has nothing to show."
        )
    elif tier == "Insufficient data":
        headline = f"The screen cannot judge the confidence yet ({n} decisions so far)."
        distance = report.screen.distance
        for shortfall in distance.shortfalls:
            words = CELL_WORDS.get(shortfall.cell, shortfall.meaning)
            estimate = (
                f"about {shortfall.more_items} more decisions at the current rates"
                if shortfall.more_items is not None
                else "no estimate yet: none so far"
            )
            lines.append(
                f"Need {shortfall.missing} more where {words} (have {shortfall.count}); {estimate}."
            )
        if distance.shortfalls and (distance.more_items is not None or remaining is not None):
            verdict = to_verdict(
                report,
                None if code_id is None else name,
                remaining=remaining,
                unscored=unscored,
            )
            lines.append(f"In all: {verdict}.")
        if n and report.n_incorrect == 0:
            lines.append("The model has not disagreed with you yet: errors are needed to judge it.")
    elif tier == "Invalid":
        headline = (
            "Pathological response pattern: the model's confidence is not a trustworthy "
            "signal here."
        )
        lines.append("Why: " + report.flagging_reason + ".")
        if report.response_style:
            lines.append("Response style: " + report.response_style + ".")
        lines.append("Do not use its confidence to decide what to accept; code these yourself.")
    elif tier == "Indeterminate":
        headline = "Possible pathology: a flag was raised but the evidence is not conclusive."
        lines.append("Why: " + report.flagging_reason + ".")
        lines.append("⚠ The figures below are shown with caution; more decisions may settle it.")
        lines += selective_sentences(report, confidence)
    else:
        headline = (
            "No pathology found in the pattern of the model's confidence (this is not a "
            "verdict on the model: read agreement, kappa and AUROC)."
        )
        lines += selective_sentences(report, confidence)
    if report.trin.warning:
        lines.append(
            "Note: near-total response dominance "
            f"(TRIN {report.trin.value:.2f}, {report.trin.direction})."
        )
    if figures is not None and figures.n:
        # The honest headline comes first; what the screen found follows it.
        lines.insert(1, headline)
        headline = figures.sentence()[:1].upper() + figures.sentence()[1:] + "."
    return GroupVerdict(
        name=name,
        code_id=code_id,
        tier=tier,
        n=n,
        headline=headline,
        lines=tuple(lines),
        report=report,
        figures=figures,
    )


def message_summary(headline: str, *lines: str) -> ScreeningSummary:
    """A panel with nothing to screen yet (no scores, no decisions)."""
    group = GroupVerdict(
        name=POOLED, code_id=None, tier="Insufficient data", n=0, headline=headline, lines=lines
    )
    return ScreeningSummary(groups=(group,), agreement=None)


def summarise_study(
    study: Study, config_id: int | None, coder: str, *, cut: float | str = "scale"
) -> ScreeningSummary:
    """Screen ``coder``'s own decisions against the model's scores, pooled and per code.

    The screen itself is ``study.analysis.screen.screen_study`` (the same as ``codecurve
    screen``); this adds the words and the confidence cuts of the phase-B sentences.
    ``cut`` is the confidence cut: ``"scale"`` (each code's own), ``"median"`` or a
    number.
    """
    from study.analysis import screen_study
    from study.errors import StudyError

    if config_id is None:
        return message_summary(f"No scores yet: press {key('review.score')} to score the pairs.")
    frame = study.queries.annotated_pairs(config_id, coder=coder)
    mine = (
        frame[(frame["source"] == "human") & frame["scored"].astype(bool)] if len(frame) else frame
    )
    if len(mine) == 0:
        return message_summary(
            "No decisions of yours on scored pairs yet.",
            "Code a few pairs: the screen needs at least 5 in each cell of its 2x2 table.",
        )
    try:
        result = screen_study(study, config_id, coder=coder, phase_b=True, cut=cut)  # type: ignore[arg-type]
    except StudyError as exc:
        return message_summary(str(exc))
    names = {c.id: c.name for c in study.codebook.codes}
    ids = {name: code_id for code_id, name in names.items()}
    conf_all = mine["p_max"].to_numpy(float)
    groups = [describe(result.pooled, POOLED, None, conf_all, result.headline(None))]
    for name, report in result.per_code.items():
        code_id = ids.get(name, name)
        conf = mine.loc[mine["code_id"] == code_id, "p_max"].to_numpy(float)
        groups.append(
            describe(
                report,
                name,
                code_id,
                conf,
                result.headline(name),
                remaining=result.remaining.get(name),
                unscored=result.unscored.get(name, 0),
            )
        )
    agreement = None
    if result.agreements and result.agreements[0].n:
        first = result.agreements[0]
        pooled = result.headline(None)
        kappa = pooled.kappa.value if pooled is not None else math.nan
        agreement = (float(first.percent), int(first.n), float(kappa))
    advice = result.advice
    return ScreeningSummary(
        groups=tuple(groups),
        agreement=agreement,
        warnings=result.warnings,
        advice=advice,
        advice_code_id=None if advice is None or advice.code is None else ids.get(advice.code),
        study_warning=result.study_warning,
        cut=result.cut,
    )


def tier_counts(summary: ScreeningSummary) -> Mapping[str, int]:
    counts: dict[str, int] = {}
    for group in summary.groups[1:]:
        counts[group.tier] = counts.get(group.tier, 0) + 1
    return counts
