"""Tier classification of a 2x2 table, its flags and the distance to a verdict.

The rules (METHOD.md section 2) are applied in this order and reproduce the reference
implementation ``validity-screen`` 0.1.0:

1. any cell below 5: "Insufficient data", nothing else is judged;
2. Fp >= .50: invalid if its Wilson lower bound > .40, else indeterminate;
3. L >= .95: invalid if its Wilson lower bound > .90, else indeterminate;
4. RBS > 0: invalid if its Wald lower bound > 0, else indeterminate;
5. any invalid -> "Invalid"; else any indeterminate -> "Indeterminate"; else "Valid".

Differences from the reference, all outside the cases it classifies: indices are still
computed (and nan where undefined, with a warning) for "Insufficient data", where the
reference leaves them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy.typing as npt

from screening.indices import (
    FP_THRESHOLD,
    L_THRESHOLD,
    IndexEstimate,
    PointBiserial,
    Trin,
    estimate_fp,
    estimate_l,
    estimate_point_biserial,
    estimate_rbs,
    estimate_trin,
    undefined_quantities,
)
from screening.intervals import wilson_interval
from screening.table import CELL_MEANINGS, CELL_NAMES, CellName, Table2x2, contingency_table
from screening.validation import check_confidence_level, warn

__all__ = [
    "MIN_CELL_COUNT",
    "CellShortfall",
    "Flag",
    "ScreenResult",
    "Tier",
    "VerdictDistance",
    "distance_to_verdict",
    "screen",
    "screen_table",
]

Tier = Literal["Valid", "Indeterminate", "Invalid", "Insufficient data"]
FlagLevel = Literal["invalid", "indeterminate", "insufficient"]
IndexStatus = Literal["ok", "invalid", "indeterminate", "warning", "not judged"]

#: Every cell needs at least this many items before anything is judged.
MIN_CELL_COUNT = 5
FP_CI_LOWER = 0.40
L_CI_LOWER = 0.90

STYLE_BLANKET = "blanket confidence on errors"
STYLE_WITHDRAWAL = "excessive withdrawal of correct items"
STYLE_INVERTED = "inverted monitoring"
STYLE_DOMINANCE = "near-total response dominance"
STYLE_NEAR_THRESHOLD = "Near-threshold values"


@dataclass(frozen=True)
class Flag:
    """One reason a result is not Valid.

    Attributes:
        index: ``"Fp"``, ``"L"``, ``"RBS"``, or ``"cells"`` for the cell-count guard.
        level: ``"invalid"``, ``"indeterminate"`` or ``"insufficient"``.
        reason: Plain-language reason, worded as in the reference implementation,
            e.g. ``"Fp = 0.946 exceeds .50 (Wilson CI lower = 0.921 > .40)"``.
    """

    index: str
    level: FlagLevel
    reason: str


@dataclass(frozen=True)
class CellShortfall:
    """A cell below the minimum count.

    Attributes:
        cell: ``"a"``, ``"b"``, ``"c"`` or ``"d"``.
        meaning: What the cell counts, e.g. ``"incorrect & low confidence"``.
        count: Items in the cell now.
        missing: Items the cell still lacks (``MIN_CELL_COUNT - count``).
        more_items: Estimated further annotated items for this cell to reach the
            minimum if new items fall into cells at the current rates; None when the
            cell is empty (rate 0: no estimate is possible).
    """

    cell: CellName
    meaning: str
    count: int
    missing: int
    more_items: int | None


@dataclass(frozen=True)
class VerdictDistance:
    """How far a table is from a verdict.

    Attributes:
        shortfalls: The cells below ``MIN_CELL_COUNT`` (empty when none is short).
        more_items: Estimated further annotated items until every cell reaches the
            minimum at current rates: 0 if none is short, None if a short cell is empty.
        n_incorrect: Errors so far.
        l_min_errors: Fewest errors with which L can be judged Invalid under these
            rules: L >= .95 with Wilson lower bound > .90 *and* d >= 5 (113 at 95%).
        l_wilson_min_errors: Fewest errors for which the Wilson lower bound of L
            can exceed .90 at all, ignoring the cell guard (35 at 95%: 35/35 gives .901).
        more_items_for_l: Estimated further annotated items to reach ``l_min_errors``
            at the current error rate; 0 if already reached, None with no errors yet.
    """

    shortfalls: tuple[CellShortfall, ...]
    more_items: int | None
    n_incorrect: int
    l_min_errors: int
    l_wilson_min_errors: int
    more_items_for_l: int | None

    @property
    def l_certifiable(self) -> bool:
        """Whether the current number of errors could ever certify L as Invalid."""
        return self.n_incorrect >= self.l_min_errors

    def describe(self, *, remaining: int | None = None) -> tuple[str, ...]:
        """Plain-language lines for the screening panel; ``remaining``: the items the
        study has left, said beside each estimate above it (out of reach here)."""

        def about(more: int, what: str = "annotated items") -> str:
            text = f"about {more} more {what}"
            if remaining is not None and more > remaining:
                text += f" (more than the {remaining} left in this study: out of reach here)"
            return text

        lines: list[str] = []
        for s in self.shortfalls:
            est = (
                f"{about(s.more_items)} at current rates"
                if s.more_items is not None
                else "no estimate yet (no items in this cell)"
            )
            lines.append(
                f"cell {s.cell} ({s.meaning}) has {s.count}, needs {s.missing} more: {est}"
            )
        if self.shortfalls and self.more_items is not None:
            lines.append(
                f"all cells reach {MIN_CELL_COUNT} after {about(self.more_items, 'items')}"
            )
        if self.l_certifiable:
            lines.append(f"{self.n_incorrect} errors: enough for L to be certified Invalid")
        else:
            tail = (
                f"; {about(self.more_items_for_l)} at the current error rate"
                if self.more_items_for_l is not None
                else ""
            )
            lines.append(
                f"{self.n_incorrect} errors: L can be certified Invalid only from "
                f"{self.l_min_errors} errors on (Wilson bound alone: "
                f"{self.l_wilson_min_errors}; the cell guard needs 5 low-confidence errors){tail}"
            )
        return tuple(lines)


@dataclass(frozen=True)
class ScreenResult:
    """The validity screen of one 2x2 table (stage A).

    Attributes:
        table: The 2x2 table.
        trin: Fixed-responding index.
        l: L, lack of monitoring, P(high | incorrect), Wilson interval.
        fp: Fp, over-withdrawal, P(low | correct), Wilson interval.
        rbs: RBS, inversion, Fp - (1 - L), Wald interval.
        r: Point-biserial r of binarised confidence with correctness.
        tier: ``"Valid"``, ``"Indeterminate"``, ``"Invalid"`` or ``"Insufficient data"``.
        flags: Reasons for a non-Valid tier, in rule order (Fp, L, RBS).
        response_style: For non-Valid judged results, the styles named with their
            values, e.g. ``"excessive withdrawal of correct items (Fp = 0.946)"``,
            joined by ``"; "``; empty for Valid and Insufficient data.
        distance: How far the table is from a verdict.
        confidence_level: Coverage of all intervals.
    """

    table: Table2x2
    trin: Trin
    l: IndexEstimate  # noqa: E741 - the method's own name for the index
    fp: IndexEstimate
    rbs: IndexEstimate
    r: PointBiserial
    tier: Tier
    flags: tuple[Flag, ...]
    response_style: str
    distance: VerdictDistance
    confidence_level: float = 0.95

    @property
    def reasons(self) -> tuple[str, ...]:
        """The flags' plain-language reasons."""
        return tuple(f.reason for f in self.flags)

    @property
    def flagging_reason(self) -> str:
        """Reasons joined by ``"; "``, or ``"None"`` when there is no flag."""
        return "; ".join(self.reasons) if self.flags else "None"

    @property
    def judged(self) -> bool:
        """False for "Insufficient data", where no index is judged."""
        return self.tier != "Insufficient data"

    @property
    def phase_b_allowed(self) -> bool:
        """Whether phase-B metrics may be shown (Valid, or Indeterminate with a caveat)."""
        return self.tier in ("Valid", "Indeterminate")

    def status(self, index: str) -> IndexStatus:
        """Status of one index (``"Fp"``, ``"L"``, ``"RBS"``, ``"TRIN"`` or ``"r"``).

        Returns:
            ``"ok"``, ``"invalid"``, ``"indeterminate"``, ``"warning"`` (TRIN only) or
            ``"not judged"`` (Insufficient data).

        Raises:
            ValueError: For an unknown index name.
        """
        if index not in ("Fp", "L", "RBS", "TRIN", "r"):
            raise ValueError(f"unknown index {index!r}; expected Fp, L, RBS, TRIN or r")
        if not self.judged:
            return "not judged"
        if index == "TRIN":
            return "warning" if self.trin.warning else "ok"
        for flag in self.flags:
            if flag.index == index and flag.level != "insufficient":
                return flag.level
        return "ok"


@lru_cache(maxsize=16)
def _l_min_errors(confidence_level: float) -> tuple[int, int]:
    """(with the cell guard, Wilson bound alone) fewest errors that can certify L."""
    bare = 1
    while not wilson_interval(bare, bare, confidence_level=confidence_level).lower > L_CI_LOWER:
        bare += 1
    guarded = max(bare, 2 * MIN_CELL_COUNT)
    while True:
        b = guarded - MIN_CELL_COUNT  # the most errors that can be high with d >= 5
        lower = wilson_interval(b, guarded, confidence_level=confidence_level).lower
        if b / guarded >= L_THRESHOLD and lower > L_CI_LOWER:
            return guarded, bare
        guarded += 1


def _more_items(n: int, count: int, target: int) -> int | None:
    """Further items for ``count`` out of ``n`` to reach ``target`` at rate count/n."""
    if count >= target:
        return 0
    if count == 0:
        return None
    return -(-n * (target - count) // count)  # ceil(n * (target - count) / count)


def distance_to_verdict(table: Table2x2, *, confidence_level: float = 0.95) -> VerdictDistance:
    """How many more annotations a table needs before the screen can judge it.

    Estimates assume that new items fall into the cells at the current rates; an empty
    cell has rate 0 and gets no estimate (None).

    Args:
        table: The 2x2 table.
        confidence_level: Coverage of the Wilson interval used for L's minimum.

    Returns:
        The short cells and the error count needed to certify L.
    """
    check_confidence_level(confidence_level)
    cells = table.cells()
    shortfalls = tuple(
        CellShortfall(
            cell=name,
            meaning=CELL_MEANINGS[name],
            count=cells[name],
            missing=MIN_CELL_COUNT - cells[name],
            more_items=_more_items(table.n, cells[name], MIN_CELL_COUNT),
        )
        for name in CELL_NAMES
        if cells[name] < MIN_CELL_COUNT
    )
    estimates = [s.more_items for s in shortfalls]
    more: int | None = None if None in estimates else max((e or 0 for e in estimates), default=0)
    l_min, l_bare = _l_min_errors(confidence_level)
    return VerdictDistance(
        shortfalls=shortfalls,
        more_items=more,
        n_incorrect=table.n_incorrect,
        l_min_errors=l_min,
        l_wilson_min_errors=l_bare,
        more_items_for_l=_more_items(table.n, table.n_incorrect, l_min),
    )


def _response_style(
    tier: Tier, trin: Trin, l_: IndexEstimate, fp: IndexEstimate, rbs: IndexEstimate
) -> str:
    if tier in ("Valid", "Insufficient data"):
        return ""
    styles: list[str] = []
    if l_.value >= L_THRESHOLD:
        styles.append(f"{STYLE_BLANKET} (L = {l_.value:.3f})")
    if fp.value >= FP_THRESHOLD:
        styles.append(f"{STYLE_WITHDRAWAL} (Fp = {fp.value:.3f})")
    if rbs.value > 0:
        styles.append(f"{STYLE_INVERTED} (RBS = {rbs.value:+.3f})")
    if trin.warning:
        styles.append(f"{STYLE_DOMINANCE} (TRIN = {trin.value:.3f})")
    # Unreachable under the rules (every flag implies a style); kept as the reference has it.
    return "; ".join(styles) if styles else STYLE_NEAR_THRESHOLD


def _judge(table: Table2x2, l_: IndexEstimate, fp: IndexEstimate, rbs: IndexEstimate) -> list[Flag]:
    if table.min_cell < MIN_CELL_COUNT:
        reason = f"Cell count below {MIN_CELL_COUNT} (min cell = {table.min_cell})"
        return [Flag("cells", "insufficient", reason)]
    flags: list[Flag] = []
    if fp.value >= FP_THRESHOLD:
        lo = fp.interval.lower
        if lo > FP_CI_LOWER:
            flags.append(
                Flag(
                    "Fp",
                    "invalid",
                    f"Fp = {fp.value:.3f} exceeds .50 (Wilson CI lower = {lo:.3f} > .40)",
                )
            )
        else:
            flags.append(
                Flag(
                    "Fp",
                    "indeterminate",
                    f"Fp = {fp.value:.3f} at .50 but Wilson CI lower = {lo:.3f} spans .40",
                )
            )
    if l_.value >= L_THRESHOLD:
        lo = l_.interval.lower
        if lo > L_CI_LOWER:
            flags.append(
                Flag(
                    "L",
                    "invalid",
                    f"L = {l_.value:.3f} exceeds .95 (Wilson CI lower = {lo:.3f} > .90)",
                )
            )
        else:
            flags.append(
                Flag(
                    "L",
                    "indeterminate",
                    f"L = {l_.value:.3f} at .95 but Wilson CI lower = {lo:.3f} spans .90",
                )
            )
    if rbs.value > 0:
        lo, hi = rbs.interval
        ci = f"CI [{lo:+.3f}, {hi:+.3f}]"
        if lo > 0:
            flags.append(Flag("RBS", "invalid", f"RBS = {rbs.value:+.3f}, {ci} excludes zero"))
        else:
            flags.append(
                Flag("RBS", "indeterminate", f"RBS = {rbs.value:+.3f}, {ci} includes zero")
            )
    return flags


def screen_table(table: Table2x2, *, confidence_level: float = 0.95) -> ScreenResult:
    """Screen a 2x2 table: indices, intervals, tier, flags, response style.

    Args:
        table: The 2x2 table.
        confidence_level: Coverage of every interval (0.95: z = 1.959964).

    Returns:
        The screen. With a cell below 5 the tier is "Insufficient data" and the
        indices are descriptive only.

    Raises:
        ValueError: If ``confidence_level`` is not in (0, 1).

    Warns:
        ScreeningWarning: Once, listing the indices left undefined by an empty margin
            (no errors, no correct items, all high or all low confidence). Such a
            table is always "Insufficient data".
    """
    check_confidence_level(confidence_level)
    undefined = undefined_quantities(table)
    if undefined:
        warn("undefined, returned as nan: " + "; ".join(undefined))
    l_ = estimate_l(table, confidence_level)
    fp = estimate_fp(table, confidence_level)
    rbs = estimate_rbs(l_, fp, confidence_level)
    trin = estimate_trin(table)
    flags = _judge(table, l_, fp, rbs)
    tier: Tier
    if table.min_cell < MIN_CELL_COUNT:
        tier = "Insufficient data"
    elif any(f.level == "invalid" for f in flags):
        tier = "Invalid"
    elif flags:
        tier = "Indeterminate"
    else:
        tier = "Valid"
    return ScreenResult(
        table=table,
        trin=trin,
        l=l_,
        fp=fp,
        rbs=rbs,
        r=estimate_point_biserial(table, confidence_level),
        tier=tier,
        flags=tuple(flags),
        response_style=_response_style(tier, trin, l_, fp, rbs),
        distance=distance_to_verdict(table, confidence_level=confidence_level),
        confidence_level=confidence_level,
    )


def screen(
    correct: npt.ArrayLike, high_confidence: npt.ArrayLike, *, confidence_level: float = 0.95
) -> ScreenResult:
    """Screen per-item correctness against binarised confidence.

    Args:
        correct: Shape (n_items,), bool or 0/1.
        high_confidence: Shape (n_items,), bool or 0/1; use
            :func:`~screening.table.binarise_confidence` for a continuous signal.
        confidence_level: Coverage of every interval.

    Returns:
        The screen of the 2x2 table of the two arrays.

    Raises:
        ValueError: If an array is not 1-D boolean/0-1 or the lengths differ.

    Warns:
        ScreeningWarning: See :func:`screen_table`.
    """
    return screen_table(
        contingency_table(correct, high_confidence), confidence_level=confidence_level
    )
