"""The story a group's numbers tell: one reading, headline first, for every surface.

A code (or all codes pooled) has two kinds of numbers: what the model's picks are worth
(:class:`screening.headline.Headline`: agreement, kappa, AUROC, a constant model) and
what the screen found in the pattern of its confidence (the tier, METHOD.md section 2).
They can pull apart: a model that answers No to every pair can pass the screen, and a
"Valid" beside its calibration curve then reads as a good model. :func:`story` decides,
once, what may be said of a group, and every surface (the terminal's ``screen``, the
app's panel, the report, JSON, the exports' provenance, delegation) asks it:

- the headline sentence comes first;
- where the model adds nothing (one answer to every pair, or no better than chance), no
  tier is given (the screen has no signal to judge), no calibration or selective
  prediction is computed or drawn, and nothing is delegated **(our choice)**;
- otherwise the tier is given with its plain words, and phase B (calibration) as
  METHOD.md allows it: for Valid, and for Indeterminate under a warning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from screening.headline import Headline, left_to_code, pattern

__all__ = ["NO_TIER", "PHASE_B_TIERS", "Story", "pattern_line", "story", "vrs_rows"]

#: The tiers whose phase B (calibration, selective prediction) METHOD.md allows.
PHASE_B_TIERS = ("Valid", "Indeterminate")

#: What stands in the tier's place where the model adds nothing.
NO_TIER = "none: the model adds nothing here, so its confidence has nothing to screen"


@dataclass(frozen=True)
class Story:
    """What one group's numbers say.

    Attributes:
        tier: The screen's tier as computed (kept for the record; shown only through
            :attr:`tier_words`).
        headline: The headline sentence (no final full stop).
        verdict: A few words for a table's cell or a list: ``"adds nothing"``, or the
            tier's plain words (``"no pathology found"``).
        tier_words: What the VRS table's tier row says: the tier, or :data:`NO_TIER`.
        adds_nothing: The model's picks carry nothing about this group.
        calibration: Whether calibration and selective prediction (phase B) may be
            computed and shown.
        delegable: Whether a delegation may be certified (the screen is Valid and the
            model adds something).
        reason: Why phase B or delegation is withheld ("" when neither is).
    """

    tier: str
    headline: str
    verdict: str
    tier_words: str
    adds_nothing: bool
    calibration: bool
    delegable: bool
    reason: str

    def pattern_line(self, headline: Headline | None) -> str:
        """The screen's finding with AUROC and kappa beside it (never a bare tier)."""
        if self.adds_nothing:
            line = "response pattern: not judged, the model adds nothing here"
        else:
            line = f"response pattern: {pattern(self.tier)} (tier {self.tier})"
        if headline is None:
            return line
        return f"{line} · AUROC {_auroc_text(headline.auroc)} · kappa {headline.kappa.text()}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "headline": self.headline,
            "verdict": self.verdict,
            "tier": None if self.adds_nothing else self.tier,
            "adds_nothing": self.adds_nothing,
            "calibration": self.calibration,
            "delegable": self.delegable,
            "reason": self.reason,
        }


def story(tier: str, headline: Headline | None) -> Story:
    """The story of one group: its screen's ``tier`` read with its ``headline``."""
    tier = str(tier)
    adds_nothing = headline is not None and headline.adds_nothing
    if headline is not None and headline.n:
        sentence = headline.sentence()
    else:
        sentence = f"the screen of the model's confidence: {pattern(tier)}"
    if adds_nothing:
        return Story(
            tier=tier,
            headline=sentence,
            verdict="adds nothing",
            tier_words=NO_TIER,
            adds_nothing=True,
            calibration=False,
            delegable=False,
            reason=sentence,
        )
    calibration = tier in PHASE_B_TIERS
    delegable = tier == "Valid"
    reason = "" if delegable else f"the screen found: {pattern(tier)} (tier {tier})"
    return Story(
        tier=tier,
        headline=sentence,
        verdict=pattern(tier),
        tier_words=tier,
        adds_nothing=False,
        calibration=calibration,
        delegable=delegable,
        reason=reason,
    )


def _auroc_text(auroc: float) -> str:
    return "n/a" if math.isnan(auroc) else f"{auroc:.2f}"


def pattern_line(tier: str, headline: Headline | None) -> str:
    """What the screen found, with AUROC and kappa beside it: ``"response pattern: no
    pathology found (tier Valid) · AUROC 0.50 · kappa 0.00 [0.00, 0.00]"``; no tier where
    the model adds nothing."""
    return story(tier, headline).pattern_line(headline)


#: The rows of phase B in a VRS table (:meth:`screening.report.VRSReport.rows`).
_PHASE_B_ROWS = ("Phase B", "AUROC", "Base accuracy", "Selective accuracy", "AURC", "ECE",
                 "Brier score", "Cohen's kappa")  # fmt: skip


def vrs_rows(
    tier_rows: list[tuple[str, str]],
    headline: Headline | None,
    *,
    remaining: int | None = None,
    unscored: int = 0,
) -> list[tuple[str, str]]:
    """A VRS table's rows as the group's story tells them: the tier row says the story's
    :attr:`Story.tier_words`, AUROC and kappa follow it (the tier is never read without
    them), and phase B is left out, with why, where the story withholds it.
    ``remaining``: the pairs the study has left to code for the group, said beside the
    distance to a verdict (whose estimates may exceed it)."""
    tier = next((v for label, v in tier_rows if label == "Tier classification"), "")
    told = story(tier, headline)
    out: list[tuple[str, str]] = []
    for label, value in tier_rows:
        if not told.calibration and label.startswith(_PHASE_B_ROWS):
            continue
        if label == "Distance to a verdict" and remaining is not None:
            value = f"{value}; {left_to_code(remaining, unscored=unscored)}"
        if label == "Tier classification":
            value = told.tier_words
        out.append((label, value))
        if label == "Tier classification" and headline is not None:
            out.append(("AUROC (confidence for being right)", _auroc_text(headline.auroc)))
            out.append(("Kappa, model vs coder (applies / not)", headline.kappa.text(3)))
    if not told.calibration:
        out.append(("Phase B", f"not shown: {told.reason}"))
    return out
