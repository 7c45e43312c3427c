"""What the review app reads from a study, as the small protocols its widgets need.

The queue widget never sees a whole study: it asks a :class:`PairSource` for a count and
for one page of rows at a time, so a study of 100,000 pairs paints as fast as one of 100.
:class:`Query` holds the order and filters the coder chose; it is a frozen value so a
widget can compare the query it painted with the one it is asked to paint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from study.rows import ORDERS, Order, Status

__all__ = ["ORDERS", "ORDER_LABELS", "STATUSES", "STATUS_LABELS", "PairSource", "Query", "Row"]

ORDER_LABELS: dict[Order, str] = {
    "entropy": "most uncertain first",
    "id": "response id",
    "pick": "model's pick",
    "confidence": "least confident first",
}

#: Status filters in the order the filter bar offers them, ``None`` meaning every pair.
STATUSES: tuple[Status | None, ...] = (None, "undecided", "decided", "human", "model")

STATUS_LABELS: dict[Status | None, str] = {
    None: "any status",
    "undecided": "undecided",
    "decided": "decided",
    "human": "coded by hand",
    "model": "accepted from the model",
}


class Row(Protocol):
    """One (response, code) pair as the queue and the detail pane show it.

    ``study.PairRow`` satisfies it; the attributes are read-only here.
    """

    @property
    def response_id(self) -> str: ...
    @property
    def code_id(self) -> str: ...
    @property
    def code_name(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def surprisal(self) -> tuple[float, ...] | None: ...
    @property
    def probs(self) -> tuple[float, ...] | None: ...
    @property
    def pick(self) -> int | None: ...
    @property
    def pick_label(self) -> str | None: ...
    @property
    def confidence(self) -> float | None: ...
    @property
    def norm_entropy(self) -> float | None: ...
    @property
    def decision(self) -> int | None: ...
    @property
    def source(self) -> str | None: ...
    @property
    def coder(self) -> str | None: ...
    @property
    def note(self) -> str | None: ...


@dataclass(frozen=True)
class Query:
    """The order and filters of the queue.

    Attributes:
        order: One of :data:`~study.rows.ORDERS`.
        code_id: Only pairs of this code, or every code.
        status: One of :data:`STATUSES`.
        search: Only responses whose text contains this (case-insensitive).
        reverse: The order backwards.
        wave: Only the responses this wave added (:meth:`study.store.Study.waves`).
    """

    order: Order = "entropy"
    code_id: str | None = None
    status: Status | None = None
    search: str | None = None
    reverse: bool = False
    wave: int | None = None

    def next_order(self) -> Query:
        """The next order of :data:`~study.rows.ORDERS`, forwards."""
        index = ORDERS.index(self.order) if self.order in ORDERS else -1
        return replace(self, order=ORDERS[(index + 1) % len(ORDERS)], reverse=False)

    def reversed(self) -> Query:
        """The same order backwards (or forwards again)."""
        return replace(self, reverse=not self.reverse)

    @property
    def filtered(self) -> bool:
        return (
            self.code_id is not None
            or self.status is not None
            or bool(self.search)
            or self.wave is not None
        )


class PairSource(Protocol):
    """Counts and pages of pairs under a :class:`Query`; all the queue widget needs."""

    def count(self, query: Query) -> int:
        """How many pairs the query selects."""
        ...

    def page(self, query: Query, offset: int, limit: int) -> Sequence[Row]:
        """Rows ``offset .. offset + limit`` of the query, in its order."""
        ...


def row_key(row: Row) -> tuple[str, str]:
    """The identity of a row across reloads: (response id, code id)."""
    return (row.response_id, row.code_id)
