"""The screening panel's content: VRS screens of the decisions so far, in plain words.

Pure Python over the study's annotated pairs (no textual), run in a worker thread after
each decision. Per METHOD.md section 2: Insufficient data says how many more decisions
of which kind are needed; Valid adds phase B as selective-prediction sentences;
Indeterminate adds phase B under a warning; Invalid says why and shows no calibration
numbers at all.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from codebooks.model import Codebook, Scale
from screening.apply import decisions_agree, screen_coded
from screening.errors import ScreeningWarning
from screening.report import VRSReport, screen_report

#: What each 2x2 cell means to a coder.
CELL_WORDS = {
    "a": "the model agreed with you and was confident",
    "b": "the model disagreed with you but was confident",
    "c": "the model agreed with you but was unsure",
    "d": "the model disagreed with you and was unsure",
}

POOLED = "All codes"


@dataclass(frozen=True)
class Annotated:
    """Decided and scored pairs, as arrays (shape (n,) each).

    Attributes:
        code_ids: The pair's code.
        model_value: The model's pick (a scale value).
        coder_value: The coder's decision (a scale value).
        confidence: The model's confidence (p of its pick).
    """

    code_ids: npt.NDArray[np.object_]
    model_value: npt.NDArray[np.float64]
    coder_value: npt.NDArray[np.float64]
    confidence: npt.NDArray[np.float64]

    @property
    def n(self) -> int:
        return int(self.code_ids.size)


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


@dataclass(frozen=True)
class ScreeningSummary:
    """Every group's verdict, pooled first, and the agreement so far."""

    groups: tuple[GroupVerdict, ...]
    agreement: tuple[float, int] | None
    warnings: tuple[str, ...] = field(default=())

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
    report: VRSReport, name: str, code_id: str | None, confidence: npt.NDArray[np.float64]
) -> GroupVerdict:
    """Plain-language verdict of one group."""
    tier = report.tier
    n = report.n_items
    lines: list[str] = []
    if tier == "Insufficient data":
        headline = f"Not enough decisions yet to judge ({n} so far)."
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
        if distance.shortfalls and distance.more_items is not None:
            lines.append(f"In all, about {distance.more_items} more decisions.")
        if n and report.n_incorrect == 0:
            lines.append("The model has not disagreed with you yet: errors are needed to judge it.")
    elif tier == "Invalid":
        headline = "Invalid: the model's confidence is not a trustworthy signal here."
        lines.append("Why: " + report.flagging_reason + ".")
        if report.response_style:
            lines.append("Response style: " + report.response_style + ".")
        lines.append("Do not use its confidence to decide what to accept; code these yourself.")
    elif tier == "Indeterminate":
        headline = "Indeterminate: a flag was raised but the evidence is not conclusive."
        lines.append("Why: " + report.flagging_reason + ".")
        lines.append("⚠ The figures below are shown with caution; more decisions may settle it.")
        lines += selective_sentences(report, confidence)
    else:
        headline = "Valid: the model's confidence carries item-level information."
        lines += selective_sentences(report, confidence)
    if report.trin.warning:
        lines.append(
            "Note: near-total response dominance "
            f"(TRIN {report.trin.value:.2f}, {report.trin.direction})."
        )
    return GroupVerdict(
        name=name,
        code_id=code_id,
        tier=tier,
        n=n,
        headline=headline,
        lines=tuple(lines),
        report=report,
    )


def summarise(
    data: Annotated,
    codebook: Codebook,
    *,
    source: str = "",
    dataset: str = "",
    threshold: float = 0.5,
) -> ScreeningSummary:
    """Screen the decisions so far, pooled and per code.

    Codes on the same scale are screened together by :func:`screening.apply.screen_coded`;
    when codes use different scales, each scale is screened apart and the pool is
    screened from the concatenated correctness and confidence.
    """
    scales: dict[str, Scale] = {c.id: codebook.scale_for(c) for c in codebook.codes}
    names = {c.id: c.name for c in codebook.codes}
    caught: list[str] = []
    by_scale: dict[tuple[int, ...], list[int]] = {}
    for i, code_id in enumerate(data.code_ids.tolist()):
        scale = scales.get(str(code_id), codebook.scale)
        by_scale.setdefault(scale.values, []).append(i)

    groups: list[GroupVerdict] = []
    correct_parts: list[npt.NDArray[np.bool_]] = []
    conf_parts: list[npt.NDArray[np.float64]] = []
    per_code: dict[str, GroupVerdict] = {}
    pooled: GroupVerdict | None = None
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always", ScreeningWarning)
        for values, indices in by_scale.items():
            idx = np.asarray(indices, dtype=np.intp)
            codes = data.code_ids[idx]
            screened = screen_coded(
                data.model_value[idx],
                data.coder_value[idx],
                option_values=np.asarray(values, dtype=float),
                codes=codes,
                p_max=data.confidence[idx],
                threshold=threshold,
                with_phase_b=True,
                source=source,
                dataset=dataset,
            )
            for code_id, report in screened.per_code.items():
                mask = codes == code_id
                per_code[code_id] = describe(
                    report, names.get(code_id, code_id), code_id, data.confidence[idx][mask]
                )
            correct_parts.append(
                decisions_agree(
                    data.model_value[idx],
                    data.coder_value[idx],
                    option_values=np.asarray(values, float),
                )
            )
            conf_parts.append(data.confidence[idx])
            if len(by_scale) == 1:
                pooled = describe(screened.pooled, POOLED, None, data.confidence[idx])
        if data.n == 0:
            report = screen_report(
                np.zeros(0, bool), np.zeros(0), threshold=threshold, with_phase_b=False
            )
            pooled = describe(report, POOLED, None, np.zeros(0))
        elif pooled is None:
            correct = np.concatenate(correct_parts)
            conf = np.concatenate(conf_parts)
            report = screen_report(
                correct,
                conf,
                threshold=threshold,
                with_phase_b=True,
                source=source,
                dataset=dataset,
            )
            pooled = describe(report, POOLED, None, conf)
    caught = sorted({str(w.message) for w in record if issubclass(w.category, ScreeningWarning)})
    groups.append(pooled)
    order = [c.id for c in codebook.codes]
    groups += [per_code[c] for c in order if c in per_code]
    agreement: tuple[float, int] | None = None
    if correct_parts:
        allc = np.concatenate(correct_parts)
        agreement = (float(allc.mean()), int(allc.size))
    return ScreeningSummary(groups=tuple(groups), agreement=agreement, warnings=tuple(caught))


def annotated_from_rows(
    code_ids: Sequence[str],
    model_value: Sequence[float | None],
    coder_value: Sequence[float | None],
    confidence: Sequence[float | None],
) -> Annotated:
    """Keep the pairs that are both scored and decided."""
    keep = [
        i
        for i in range(len(code_ids))
        if model_value[i] is not None and coder_value[i] is not None and confidence[i] is not None
    ]
    return Annotated(
        code_ids=np.asarray([str(code_ids[i]) for i in keep], dtype=object),
        model_value=np.asarray([model_value[i] for i in keep], dtype=float),
        coder_value=np.asarray([coder_value[i] for i in keep], dtype=float),
        confidence=np.asarray([confidence[i] for i in keep], dtype=float),
    )


def tier_counts(summary: ScreeningSummary) -> Mapping[str, int]:
    counts: dict[str, int] = {}
    for group in summary.groups[1:]:
        counts[group.tier] = counts.get(group.tier, 0) + 1
    return counts
