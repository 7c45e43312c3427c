"""The review screen's blind work: the blind audit, blind double coding, delegation.

A base of :class:`tui.screens.review.ReviewScreen`: the orders ``o`` offers now, the
audit started from the screening panel, the pairs left for review, the delegation plan
applied after a confirmation, the blind coding setting toggled, and what the model said
once a blind decision is saved.
"""

from __future__ import annotations

from dataclasses import replace

from textual.screen import Screen

from study.rows import Order
from tui.messages import AuditRequested, DelegationRequested, ReviewLeftRequested
from tui.screens.outcomes import report
from tui.session import ReviewSession
from tui.source import MODEL_ORDERS, Query
from tui.text import one_line, plural
from tui.widgets.queue import PairQueue


class BlindWork(Screen[None]):
    """Blind audit, blind coding and delegation, for a screen with a pair queue."""

    session: ReviewSession

    @property
    def pair_queue(self) -> PairQueue:
        return self.query_one(PairQueue)

    def set_query(self, query: Query) -> None:
        raise NotImplementedError

    def update_status(self) -> None:
        raise NotImplementedError

    def first_undecided(self) -> None:
        raise NotImplementedError

    def _reveal(self, response_id: str, code_id: str) -> None:
        """After a blind decision: what the model said, now that it may be seen."""
        rows = self.session.response_rows(response_id)
        row = next((r for r in rows if r.code_id == code_id), None)
        if row is None or row.pick is None:
            return
        scale = self.session.scale(code_id)
        pick = next((o.label for o in scale.options if o.value == row.pick), str(row.pick))
        confidence = "" if row.confidence is None else f" at {row.confidence:.0%} confidence"
        self.notify(
            f"Blind decision saved. The model said {one_line(pick)}{confidence}.",
            timeout=2,
            markup=False,
        )

    def unavailable_orders(self) -> set[str]:
        """Orders ``o`` passes over now: the audit without an audit sample, the shared
        sample with no other coder's decisions, the model's orders under blind coding."""
        session = self.session
        skip: set[str] = set()
        if session.study.audit.sample() is None:
            skip.add("audit")
        if not [c for c in session.study.decisions.coders() if c != session.coder]:
            skip.add("shared")
        if session.blind_coding:
            skip.update(MODEL_ORDERS)
        return skip

    def show_audit(self) -> None:
        """The blind audit: its pairs in their random order, from the first undecided."""
        if self.session.study.audit.sample() is None:
            self.notify(
                "No audit sample yet: draw one with 'codecurve audit STUDY'.",
                severity="warning",
                timeout=5,
            )
            return
        self.set_query(Query(order="audit"))
        self.first_undecided()
        self.pair_queue.focus()

    def on_audit_requested(self, message: AuditRequested) -> None:
        message.stop()
        self.show_audit()

    def on_review_left_requested(self, message: ReviewLeftRequested) -> None:
        message.stop()
        order: Order = "id" if self.session.blind_coding else "entropy"
        self.set_query(Query(order=order, status="review"))
        self.pair_queue.focus()

    def on_delegation_requested(self, message: DelegationRequested) -> None:
        from tui.plans import confirm_text
        from tui.screens.confirm import ConfirmScreen

        message.stop()
        plan = message.plan

        def apply(yes: bool | None) -> None:
            if not yes:
                self.notify("Nothing delegated.", timeout=2)
                return
            saved = report(self, self.session.apply_delegation(plan))
            if saved is not None:
                self.pair_queue.reload()
                self.update_status()
                self.notify(
                    f"Delegated {plural(saved.value or 0, 'pair')} to the model; u undoes.",
                    timeout=4,
                )

        self.app.push_screen(ConfirmScreen("Apply the delegation?", confirm_text(plan)), apply)

    def action_toggle_blind_coding(self) -> None:
        """Turn blind double coding on or off for the study (recorded in its log)."""
        if report(self, self.session.toggle_blind_coding()) is None:
            return
        query = self.pair_queue.pair_query
        if self.session.blind_coding and query.order in MODEL_ORDERS:
            query = replace(query, order="id", reverse=False)
        self.pair_queue.set_source(self.session.source)
        self.set_query(query)
        on = self.session.blind_coding
        self.notify(
            "Blind coding on: other coders' decisions and the model stay hidden until you "
            "decide a pair."
            if on
            else "Blind coding off.",
            timeout=4,
        )
