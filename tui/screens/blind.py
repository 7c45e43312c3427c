"""What blind work allows a queue of pairs: the blind audit, blind double coding.

:class:`BlindWork` is the review screen's collaborator for the rules, over the coder's
session: the orders ``o`` passes over now, the query the pairs left for review are
shown by, the order a queue falls back to when blind coding turns on, and what the model
said about a pair once a blind decision on it is saved. The screen opens the views and
the dialogs (the audit, the delegation's confirmation) and tells the coder.
"""

from __future__ import annotations

from dataclasses import replace

from study.rows import Order
from tui.session import ReviewSession
from tui.source import MODEL_ORDERS, Query
from tui.text import one_line


class BlindWork:
    """The blind audit's and blind coding's rules for one session's queue."""

    def __init__(self, session: ReviewSession) -> None:
        self.session = session

    @property
    def has_audit(self) -> bool:
        """Whether the study has an audit sample to walk."""
        return self.session.study.audit.sample() is not None

    def unavailable_orders(self) -> set[str]:
        """Orders ``o`` passes over now: the audit without an audit sample, the shared
        sample with no other coder's decisions, the model's orders under blind coding."""
        session = self.session
        skip: set[str] = set()
        if not self.has_audit:
            skip.add("audit")
        if not [c for c in session.study.decisions.coders() if c != session.coder]:
            skip.add("shared")
        if session.blind_coding:
            skip.update(MODEL_ORDERS)
        return skip

    def review_left(self) -> Query:
        """The pairs left for review, in an order that gives nothing away under blind
        coding."""
        order: Order = "id" if self.session.blind_coding else "entropy"
        return Query(order=order, status="review")

    def within_blind_coding(self, query: Query) -> Query:
        """``query``, by id instead of by a model's order while blind coding is on."""
        if self.session.blind_coding and query.order in MODEL_ORDERS:
            return replace(query, order="id", reverse=False)
        return query

    def revealed(self, response_id: str, code_id: str) -> str | None:
        """After a blind decision: what the model said, now that it may be seen (None:
        the model has no pick for the pair)."""
        rows = self.session.response_rows(response_id)
        row = next((r for r in rows if r.code_id == code_id), None)
        if row is None or row.pick is None:
            return None
        scale = self.session.scale(code_id)
        pick = scale.label_of(row.pick)
        confidence = "" if row.confidence is None else f" at {row.confidence:.0%} confidence"
        return f"Blind decision saved. The model said {one_line(pick)}{confidence}."
