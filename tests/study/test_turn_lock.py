"""The lock the threads of one study handle take in turns (study.file.locking.TurnLock)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from study.file.locking import TurnLock


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never came true"
        time.sleep(0.001)


def test_a_thread_that_lets_go_and_asks_again_queues_behind_the_waiting_one() -> None:
    # threading.RLock fails this: the worker takes the lock straight back, block after
    # block, while the coder's decision waits for all of them.
    lock = TurnLock()
    order: list[str] = []
    lock.acquire()

    def decide() -> None:
        with lock:
            order.append("decision")

    waiter = threading.Thread(target=decide)
    waiter.start()
    wait_for(lambda: lock.waiting == 1)
    lock.release()
    with lock:
        order.append("next block")
    waiter.join()
    assert order == ["decision", "next block"]


def test_it_is_reentrant_and_only_its_owner_releases_it() -> None:
    lock = TurnLock()
    refused: list[BaseException] = []

    def release_it() -> None:
        try:
            lock.release()
        except RuntimeError as exc:
            refused.append(exc)

    with lock, lock:
        intruder = threading.Thread(target=release_it)
        intruder.start()
        intruder.join()
        taken = threading.Event()

        def take() -> None:
            with lock:
                taken.set()

        other = threading.Thread(target=take)
        other.start()
        wait_for(lambda: lock.waiting == 1)
        assert not taken.is_set()  # held twice, released once below: still held
    other.join()
    assert refused
    assert taken.is_set()
    assert lock.waiting == 0


def test_a_waiter_interrupted_leaves_the_queue() -> None:
    lock = TurnLock()
    lock.acquire()
    failures: list[BaseException] = []

    def interrupted() -> None:
        try:
            lock.acquire()
        except KeyboardInterrupt as exc:
            failures.append(exc)

    # An interruption in the wait is simulated by the condition's wait raising.
    original = lock._state.wait

    def raising(timeout: float | None = None) -> bool:
        raise KeyboardInterrupt

    lock._state.wait = raising  # type: ignore[method-assign]
    worker = threading.Thread(target=interrupted)
    worker.start()
    worker.join()
    lock._state.wait = original  # type: ignore[method-assign]
    assert failures
    assert lock.waiting == 0
    lock.release()
    with lock:  # nobody is left queued in front
        pass
