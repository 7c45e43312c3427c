"""What the review app reads from a study, as the small protocols its widgets need.

The queue widget never sees a whole study: it asks a :class:`PairSource` for a count and
for one page of rows at a time, so a study of 100,000 pairs paints as fast as one of 100.
:class:`Query` holds the order and filters the coder chose; it is a frozen value so a
widget can compare the query it painted with the one it is asked to paint.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from study.rows import ORDERS, Order, Status

__all__ = [
    "BLIND_ORDERS",
    "ORDERS",
    "ORDER_LABELS",
    "STATUSES",
    "STATUS_LABELS",
    "HiddenRow",
    "PairSource",
    "Query",
    "Row",
    "hide_model",
    "hides_model",
]

ORDER_LABELS: dict[Order, str] = {
    "entropy": "most uncertain first",
    "id": "response id",
    "pick": "model's pick",
    "confidence": "least confident first",
    "audit": "blind audit",
    "shared": "shared sample",
}

#: Orders that hide the model's answer on pairs the coder has not decided: the blind
#: audit, and the shared sample of blind double coding.
BLIND_ORDERS: tuple[Order, ...] = ("audit", "shared")


def hides_model(order: str, *, blind_coding: bool) -> bool:
    """Whether rows in ``order`` hide the model's answer until the coder decides: a
    blind order, or any order under blind coding."""
    return blind_coding or order in BLIND_ORDERS


#: Orders that sort by the model's scores: under blind coding they would give its answer
#: away, so the app does not offer them then.
MODEL_ORDERS: tuple[Order, ...] = ("entropy", "pick", "confidence")

#: Status filters in the order the filter bar offers them, ``None`` meaning every pair.
STATUSES: tuple[Status | None, ...] = (
    None,
    "undecided",
    "decided",
    "human",
    "model",
    "disagreement",
    "review",
)

STATUS_LABELS: dict[Status | None, str] = {
    None: "any status",
    "undecided": "undecided",
    "decided": "decided",
    "human": "coded by hand",
    "model": "accepted from the model",
    "disagreement": "coders disagree",
    "review": "left for review",
}


class Row(Protocol):
    """One (response, code) pair as the queue and the detail pane show it.

    ``study.PairRow`` satisfies it; the attributes are read-only here. A row is hashable
    and equal to another with the same content (``PairRow`` is a frozen dataclass): the
    queue keys its rendered lines by it.
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
    @property
    def memo(self) -> bool: ...


@dataclass(frozen=True)
class Query:
    """The order and filters of the queue.

    Attributes:
        order: One of :data:`~study.rows.ORDERS`.
        code_id: Only pairs of this code, or every code.
        status: One of :data:`STATUSES`.
        search: Only responses whose text contains this (case-insensitive).
        reverse: The order backwards.
        wave: Only the responses this wave added (:meth:`study.iteration.versions.Versions.waves`).
    """

    order: Order = "entropy"
    code_id: str | None = None
    status: Status | None = None
    search: str | None = None
    reverse: bool = False
    wave: int | None = None

    def next_order(self, *, skip: Collection[str] = ()) -> Query:
        """The next order of :data:`~study.rows.ORDERS`, forwards, passing over ``skip``
        (orders the study cannot offer now)."""
        offered = [o for o in ORDERS if o not in skip or o == self.order]
        index = offered.index(self.order) if self.order in offered else -1
        return replace(self, order=offered[(index + 1) % len(offered)], reverse=False)

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


@dataclass(frozen=True)
class HiddenRow:
    """A pair whose model answer (curve, pick, confidence, entropy) is hidden: the coder
    has not decided it yet, in a blind order or under blind coding. It reads as a
    :class:`Row` with no scores; ``hidden`` tells it from a pair not scored yet."""

    response_id: str
    code_id: str
    code_name: str
    text: str
    decision: int | None
    source: str | None
    coder: str | None
    note: str | None
    scored: bool
    memo: bool = False
    surprisal: tuple[float, ...] | None = None
    probs: tuple[float, ...] | None = None
    pick: int | None = None
    pick_label: str | None = None
    confidence: float | None = None
    norm_entropy: float | None = None
    hidden: bool = True


def hide_model(row: Row) -> HiddenRow:
    """``row`` with the model's answer taken out (see :class:`HiddenRow`)."""
    return HiddenRow(
        response_id=row.response_id,
        code_id=row.code_id,
        code_name=row.code_name,
        text=row.text,
        decision=row.decision,
        source=row.source,
        coder=row.coder,
        note=row.note,
        scored=row.probs is not None,
        memo=row.memo,
    )


def is_hidden(row: Row | None) -> bool:
    """Whether the row's model answer is hidden from the coder."""
    return bool(getattr(row, "hidden", False))


def row_key(row: Row) -> tuple[str, str]:
    """The identity of a row across reloads: (response id, code id)."""
    return (row.response_id, row.code_id)
