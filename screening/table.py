"""The 2x2 table of correctness by binarised confidence, and binarisation itself.

Cells (METHOD.md section 2)::

                 high confidence   low confidence
    correct            a                 c
    incorrect          b                 d
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from screening.validation import BoolArray, as_bool_1d, as_float_1d, same_length, warn

__all__ = ["Binarisation", "Table2x2", "binarise_confidence", "contingency_table"]

CellName = Literal["a", "b", "c", "d"]
CELL_NAMES: tuple[CellName, ...] = ("a", "b", "c", "d")
CELL_MEANINGS: dict[CellName, str] = {
    "a": "correct & high confidence",
    "b": "incorrect & high confidence",
    "c": "correct & low confidence",
    "d": "incorrect & low confidence",
}


@dataclass(frozen=True)
class Table2x2:
    """Counts of the four correctness x confidence cells.

    Attributes:
        a: Correct and high confidence.
        b: Incorrect and high confidence.
        c: Correct and low confidence.
        d: Incorrect and low confidence.
    """

    a: int
    b: int
    c: int
    d: int

    def __post_init__(self) -> None:
        for name in CELL_NAMES:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"cell {name} must be an integer count, got {value!r}")
            if value < 0:
                raise ValueError(f"cell {name} must be >= 0, got {value}")
            # Normalise numpy integers so that arithmetic and JSON output are plain ints.
            object.__setattr__(self, name, int(value))

    @property
    def n(self) -> int:
        """Number of items, a + b + c + d."""
        return self.a + self.b + self.c + self.d

    @property
    def n_correct(self) -> int:
        """Correct items, a + c."""
        return self.a + self.c

    @property
    def n_incorrect(self) -> int:
        """Incorrect items, b + d."""
        return self.b + self.d

    @property
    def n_high(self) -> int:
        """High-confidence items, a + b."""
        return self.a + self.b

    @property
    def n_low(self) -> int:
        """Low-confidence items, c + d."""
        return self.c + self.d

    @property
    def min_cell(self) -> int:
        """Smallest of the four cells."""
        return min(self.a, self.b, self.c, self.d)

    @property
    def accuracy(self) -> float:
        """Share of correct items; nan (no warning) for an empty table."""
        return self.n_correct / self.n if self.n else float("nan")

    def cells(self) -> dict[CellName, int]:
        """The four counts keyed by cell name, in a, b, c, d order."""
        return {"a": self.a, "b": self.b, "c": self.c, "d": self.d}

    def swapped(self) -> Table2x2:
        """The table with high and low confidence exchanged (a<->c, b<->d)."""
        return Table2x2(a=self.c, b=self.d, c=self.a, d=self.b)


def contingency_table(correct: npt.ArrayLike, high_confidence: npt.ArrayLike) -> Table2x2:
    """Cross-tabulate correctness against binarised confidence.

    Args:
        correct: Shape (n_items,), bool or 0/1; whether the model's decision matched.
        high_confidence: Shape (n_items,), bool or 0/1; True where confidence is high.

    Returns:
        The 2x2 table.

    Raises:
        ValueError: If an input is not 1-D, not boolean/0-1, or the lengths differ.
    """
    ok = as_bool_1d(correct, "correct")
    high = as_bool_1d(high_confidence, "high_confidence")
    same_length(correct=ok, high_confidence=high)
    return Table2x2(
        a=int(np.sum(ok & high)),
        b=int(np.sum(~ok & high)),
        c=int(np.sum(ok & ~high)),
        d=int(np.sum(~ok & ~high)),
    )


@dataclass(frozen=True)
class Binarisation:
    """High/low split of a continuous confidence signal.

    Attributes:
        high: Shape (n_items,); True where confidence >= ``threshold``.
        threshold: The cut actually applied (the sample median for ``method="median"``).
        method: ``"fixed"`` (a cut chosen in advance) or ``"median"``.
    """

    high: BoolArray
    threshold: float
    method: Literal["fixed", "median"]

    def describe(self) -> str:
        """Plain-language description for the report, e.g. ``">= 0.500 (fixed)"``."""
        if self.method == "median":
            return f">= {self.threshold:.3f} (sample median)"
        return f">= {self.threshold:.3f} (fixed)"


def binarise_confidence(
    confidence: npt.ArrayLike, *, threshold: float | Literal["median"] = 0.5
) -> Binarisation:
    """Split continuous confidence into high (``>=`` the cut) and low.

    Args:
        confidence: Shape (n_items,), finite numbers (no nan).
        threshold: A fixed cut chosen in advance, or ``"median"`` for the sample median.

    Returns:
        The split, with the cut used.

    Raises:
        ValueError: If ``confidence`` is not 1-D finite numeric, or ``threshold`` is
            neither a finite number nor ``"median"``.

    Warns:
        ScreeningWarning: If ``confidence`` is empty and ``threshold="median"``
            (the cut is then nan and ``high`` is empty).
    """
    values = as_float_1d(confidence, "confidence")
    if isinstance(threshold, str):
        if threshold != "median":
            raise ValueError(f"threshold must be a number or 'median', got {threshold!r}")
        if values.size == 0:
            warn("confidence is empty; the median cut is undefined")
            return Binarisation(high=np.zeros(0, bool), threshold=float("nan"), method="median")
        cut = float(np.median(values))
        method: Literal["fixed", "median"] = "median"
    else:
        cut = float(threshold)
        if not np.isfinite(cut):
            raise ValueError(f"threshold must be finite, got {threshold!r}")
        method = "fixed"
    # A one-sided split is well defined here; the indices it leaves undefined warn later.
    high = values >= cut
    return Binarisation(high=high, threshold=cut, method=method)
