"""Draw a report's figures in worker processes beside this one.

Matplotlib draws in Python, one figure at a time: a report of ten codes has some forty
figures, and each takes tens of milliseconds (a 300 dpi PNG, a hundred more). With
several cores, :func:`draw_all` shares them out.

The workers are started by the ``forkserver`` method (``spawn`` where there is none):
a fresh interpreter imports matplotlib once, then forks each worker from itself. This
process is never forked, which would be unsafe from the app, whose reports are written
from a worker thread. :func:`warm` starts the forkserver before the report's analyses,
whose time its imports then overlap; the workers then draw every figure, and this
process need not import matplotlib at all. Not warm, the workers' start costs them a
moment, and this process draws meanwhile, from the last figure backwards while the
workers take them from the first: each figure is drawn once, by whoever reaches it
first. A worker that cannot start or dies leaves its figures to this process.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from study.report._figure import Figure

T = TypeVar("T")

#: Fewer figures than this are drawn here alone: starting workers would cost more.
PARALLEL_FROM = 16
#: At most this many processes draw (this one included).
MOST_PROCESSES = 4

#: What the forkserver imports before it forks a worker.
PRELOAD = (
    "matplotlib",
    "matplotlib.figure",
    "matplotlib.backends.backend_agg",
    "matplotlib.backends.backend_svg",
    "PIL.PngImagePlugin",
    "study.report._draw",
)


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_processes(figures: int) -> int:
    """How many processes draw ``figures`` figures: one for a few, else one per core
    (at most :data:`MOST_PROCESSES`)."""
    if figures < PARALLEL_FROM:
        return 1
    return max(1, min(cores(), MOST_PROCESSES))


class _Queue:
    """The figures' places still to draw, shared by every process: the workers take
    them from the front, this process from the back."""

    def __init__(self, context: multiprocessing.context.BaseContext, count: int) -> None:
        self.lock = context.Lock()
        self.front = context.RawValue("i", 0)  # both read and written under the lock
        self.back = context.RawValue("i", count)

    def take_front(self) -> int | None:
        with self.lock:
            at = int(self.front.value)
            if at >= self.back.value:
                return None
            self.front.value = at + 1
            return at

    def take_back(self) -> int | None:
        with self.lock:
            at = int(self.back.value) - 1
            if at < self.front.value:
                return None
            self.back.value = at
            return at

    def drop(self) -> None:
        """Nothing more to take (a figure failed)."""
        with self.lock:
            self.front.value = self.back.value


#: The shared queue, in a worker process.
_queue: _Queue | None = None


def _start(queue: _Queue) -> None:
    """A worker's start: keep the queue, and write nothing to the terminal (the app's
    screen is there); what it draws and what goes wrong come back through the pool."""
    global _queue
    _queue = queue
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)


def _work(figures: Sequence[Figure], job: Callable[[Figure], T]) -> list[tuple[int, T]]:
    """In a worker: draw figures from the front of the queue until none is left."""
    assert _queue is not None
    done = []
    try:
        while (at := _queue.take_front()) is not None:
            done.append((at, job(figures[at])))
    except BaseException:
        _queue.drop()
        raise
    return done


#: A report draws about this many figures per code (and a few of all codes).
FIGURES_PER_CODE = 4


def warm(codes: int) -> None:
    """Start the forkserver now, where a report on ``codes`` codes will draw in
    parallel: its imports then overlap the report's analyses, and the workers start
    at once when the figures are drawn."""
    expected = FIGURES_PER_CODE * codes + 2
    if default_processes(expected) < 2:
        return
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return
    from multiprocessing import forkserver

    _context()
    with contextlib.suppress(OSError, RuntimeError):
        forkserver.ensure_running()
        if not _warm:
            _warm.append(True)


#: Whether :func:`warm` started the forkserver (then this process need not draw).
_warm: list[bool] = []


def _context() -> multiprocessing.context.BaseContext:
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(PRELOAD))
        return context
    return multiprocessing.get_context("spawn")


def draw_all(
    figures: Sequence[Figure], job: Callable[[Figure], T], *, processes: int | None = None
) -> list[T]:
    """``job(figure)`` for each figure, in their order, by ``processes`` processes (this
    one among them; by default :func:`default_processes`).

    ``job`` must be picklable (a module's function, or a ``functools.partial`` of one)
    when more than one process draws. An exception raised by ``job`` (here or in a
    worker) is raised here as it was raised; the figures no process took yet are then
    left undrawn.
    """
    count = default_processes(len(figures)) if processes is None else processes
    count = min(count, len(figures))
    if count <= 1:
        return [job(f) for f in figures]
    context = _context()
    queue = _Queue(context, len(figures))
    # Warm, the workers start at once with matplotlib loaded: this process, which may
    # not have imported it yet, leaves them the figures.
    workers = count if _warm else count - 1
    results: dict[int, T] = {}
    futures: list[Future[list[tuple[int, T]]]] = []
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_start, initargs=(queue,)
    ) as pool:

        def submit() -> None:
            # No worker could start (whatever the reason: a daemon process may have no
            # children): this process draws them all.
            with contextlib.suppress(Exception):
                futures.extend(pool.submit(_work, figures, job) for _ in range(workers))

        # Starting a worker waits for the forkserver's imports: not on this thread,
        # which draws meanwhile.
        starting = threading.Thread(target=submit, daemon=True)
        starting.start()
        try:
            while not _warm and (at := queue.take_back()) is not None:
                results[at] = job(figures[at])
        except BaseException:
            queue.drop()
            raise
        finally:
            starting.join()
        for future in futures:
            # A worker died: what it had taken is drawn below.
            with contextlib.suppress(BrokenProcessPool):
                results.update(future.result())
    for at in range(len(figures)):
        if at not in results:
            results[at] = job(figures[at])
    return [results[i] for i in range(len(figures))]
