"""Full garbage collections deferred to idle moments, and handed back on exit."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from study.store import Study
from tests.tui.waiting import wait_for
from tui.app import make_app
from tui.collector import MIDDLE, NEVER, YOUNG_PER_MIDDLE, IdleCollector


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def old_cycle() -> tuple[list[Node], weakref.ref[Node]]:
    """A reference cycle that survives young collections while ``holder`` holds it."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return [a], weakref.ref(a)


@pytest.fixture
def collector() -> Iterator[IdleCollector]:
    collector = IdleCollector(idle=0.0)
    before = gc.get_threshold()
    collector.start()
    yield collector
    collector.stop()
    assert gc.get_threshold() == before


def test_start_takes_over_full_collections_and_stop_hands_them_back() -> None:
    before = gc.get_threshold()
    collector = IdleCollector()
    collector.start()
    try:
        assert gc.get_threshold() == (before[0], MIDDLE, NEVER)
        assert gc.get_freeze_count() > 0
    finally:
        collector.stop()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_freeze_adds_what_exists_now_and_stop_puts_it_back() -> None:
    collector = IdleCollector()
    collector.start()
    try:
        frozen = gc.get_freeze_count()
        later = [[i] for i in range(1000)]
        collector.freeze()
        assert gc.get_freeze_count() >= frozen + len(later)
    finally:
        collector.stop()
    assert gc.get_freeze_count() == 0


async def test_the_app_takes_over_collections_before_its_first_paint(study: Study) -> None:
    seen: list[int] = []
    app = make_app(study, coder="tester")
    paint = app._display

    def display(screen: object, renderable: object) -> None:
        if renderable is not None and not seen:
            seen.append(gc.get_threshold()[2])
        paint(screen, renderable)  # type: ignore[arg-type]

    app._display = display  # type: ignore[method-assign]
    async with app.run_test() as pilot:
        await wait_for(pilot, lambda: seen)
    assert seen == [NEVER]


def test_a_start_after_stop_changes_nothing() -> None:
    before = gc.get_threshold()
    collector = IdleCollector()
    collector.stop()  # the app exited before its first paint
    collector.start()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_an_idle_tick_collects_cycles_in_the_oldest_generation(
    collector: IdleCollector,
) -> None:
    holder, ref = old_cycle()
    gc.collect(1)  # survivors of a young pass move into the oldest generation
    holder.clear()  # now garbage, but only a full pass looks there
    gc.collect(1)
    assert ref() is not None
    assert collector.tick()
    assert ref() is None


def test_middle_collections_wait_for_the_screen_after_a_key(collector: IdleCollector) -> None:
    """A middle collection walks all that young ones kept (rendered lines, rows): it
    runs after a key is on screen, as often as Python's own, not in the middle of one."""
    gc.collect()
    middle = gc.get_stats()[1]["collections"]
    young = gc.get_stats()[0]["collections"]
    kept = [[i] for i in range(20 * gc.get_threshold()[0])]  # many young collections
    assert gc.get_stats()[0]["collections"] >= young + YOUNG_PER_MIDDLE
    assert gc.get_stats()[1]["collections"] == middle  # none of its own
    assert collector.after_key()
    assert gc.get_stats()[1]["collections"] == middle + 1
    assert not collector.after_key()  # no young collections since
    assert kept


async def test_the_app_runs_middle_collections_after_its_keys(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test() as pilot:
        await wait_for(pilot, lambda: gc.get_threshold()[1] == MIDDLE)
        middle = gc.get_stats()[1]["collections"]
        kept = [[i] for i in range(20 * gc.get_threshold()[0])]
        await pilot.press("j")
        await wait_for(pilot, lambda: gc.get_stats()[1]["collections"] > middle)
        assert kept


def test_no_tick_collects_while_the_coder_is_typing(collector: IdleCollector) -> None:
    collector.idle = 60.0
    collector.input()
    gc.collect(1)
    assert not collector.tick()
    assert collector.collections == 0


def test_a_tick_with_nothing_promoted_does_not_walk_the_heap(collector: IdleCollector) -> None:
    gc.collect(1)
    assert collector.tick()
    assert not collector.tick()  # no young collection since: nothing new to find
    assert collector.collections == 1


async def test_the_app_hands_collections_back_when_it_exits(study: Study) -> None:
    before = gc.get_threshold()
    app = make_app(study, coder="tester")
    async with app.run_test() as pilot:
        await wait_for(pilot, lambda: gc.get_threshold()[2] == NEVER)
    assert gc.get_threshold() == before
