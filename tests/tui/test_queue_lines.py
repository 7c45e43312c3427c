"""The queue's rendered lines are keyed by what they show, so they outlive a reload."""

from __future__ import annotations

from typing import Any

import pytest

import tui.widgets.queue as queue_module
from study.store import Study
from tests.tui.waiting import settle
from tui.app import make_app
from tui.widgets.queue import PairQueue


def count_rendered(monkeypatch: pytest.MonkeyPatch, *, codes: bool = False) -> list[str]:
    """The response id (or ``codes``: the code id) of every queue line drawn from now
    on (not taken from the cache)."""
    drawn: list[str] = []
    real = queue_module.render_row  # type: ignore[attr-defined]

    def counting(row: Any, **kwargs: Any) -> Any:
        drawn.append(row.code_id if codes else row.response_id)
        return real(row, **kwargs)

    monkeypatch.setattr(queue_module, "render_row", counting)
    return drawn


def screen_text(queue: PairQueue) -> list[str]:
    return [queue.render_line(y).text for y in range(1, queue.size.height)]


async def test_an_order_seen_before_is_drawn_from_the_cache(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        first = queue.pair_query.order
        before = screen_text(queue)
        drawn = count_rendered(monkeypatch)
        for _ in range(12):
            await pilot.press("o")
            await settle(pilot)
            if queue.pair_query.order == first:
                break
        assert queue.pair_query.order == first
        assert drawn  # the other orders' rows were drawn
        drawn.clear()
        await pilot.press("o")  # away and back once more: every line of both is kept
        await settle(pilot)
        while queue.pair_query.order != first:
            await pilot.press("o")
            await settle(pilot)
        assert drawn == []
        assert screen_text(queue) == before


async def test_a_decision_draws_its_row_again_with_the_decision(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        row = queue.current
        assert row is not None
        assert row.decision is None
        before = screen_text(queue)
        drawn = count_rendered(monkeypatch)
        await pilot.press("1")
        await settle(pilot)
        assert row.response_id in drawn
        after = screen_text(queue)
        assert after != before
        # Back where it was, undecided: the old line again, from the cache or drawn anew.
        await pilot.press("u")
        await settle(pilot)
        assert screen_text(queue) == before


async def test_the_filter_bar_reads_its_next_choice_ahead(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the bar is open, what ``→`` shows next is read and drawn ahead: the key
    then queries nothing and draws no queue line, and shows what a fresh read shows."""
    import tui.session as session

    app = make_app(study, coder="tester")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        await pilot.press("f")
        await settle(pilot)
        reads: list[object] = []
        for name in ("page", "count"):
            real = getattr(session.StudySource, name)

            def spy(self: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
                reads.append(args[0])
                return _real(self, *args, **kwargs)

            monkeypatch.setattr(session.StudySource, name, spy)
        drawn = count_rendered(monkeypatch, codes=True)
        await pilot.press("right")  # the first code, read ahead when the bar opened
        shown = queue.pair_query
        assert shown.code_id is not None
        assert shown not in reads  # read before the key, not on it
        assert shown.code_id not in drawn  # drawn ahead too (the next code's lines are)
        ahead = screen_text(queue)
        await settle(pilot)  # (reads the next code ahead in turn)
        queue.set_query(shown)  # read afresh: nothing ahead for the query shown
        await settle(pilot)
        assert shown in reads
        assert screen_text(queue) == ahead


def spy_reads(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The query of every page and count the review screen reads from now on."""
    import tui.session as session

    reads: list[object] = []
    for name in ("page", "count"):
        real = getattr(session.StudySource, name)

        def spy(self: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            reads.append(args[0])
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(session.StudySource, name, spy)
    return reads


@pytest.mark.parametrize("decide_first", [False, True])
async def test_the_next_order_is_read_ahead(
    study: Study, monkeypatch: pytest.MonkeyPatch, decide_first: bool
) -> None:
    """While the coder reads, what ``o`` shows next is read and drawn ahead (again after
    a decision, which drops it): the key queries nothing and draws no queue line, and
    shows what a fresh read shows."""
    app = make_app(study, coder="tester")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        if decide_first:
            await pilot.press("1")
            await settle(pilot)
        before = queue.pair_query
        following = before.next_order(skip=app.review.blind.unavailable_orders())
        assert following in queue._ahead  # read while the coder reads
        # Only what ``o`` does is counted (not what is read ahead after it).
        monkeypatch.setattr(app.review, "_read_ahead_order", lambda: None)
        reads = spy_reads(monkeypatch)
        drawn = count_rendered(monkeypatch)
        await pilot.press("o")
        shown = queue.pair_query
        assert shown == following
        assert shown not in reads  # read before the key, not on it
        assert drawn == []  # and drawn before it
        ahead = screen_text(queue)
        top = app.review.detail.row
        assert top == queue.current
        queue.set_query(shown)  # read afresh: nothing ahead for the query shown
        await settle(pilot)
        assert shown in reads
        assert screen_text(queue) == ahead
        assert app.review.detail.row == top


async def test_a_decision_drops_what_was_read_ahead(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        status = queue.pair_query.__class__(status="undecided")
        row = queue.read_ahead(status)
        assert row is not None
        assert queue._ahead
        await pilot.press("1")
        await settle(pilot)
        assert status not in queue._ahead  # the decision may have changed what was read
