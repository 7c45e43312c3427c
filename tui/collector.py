"""Python's cyclic garbage collector, run while the coder pauses rather than mid-key.

A full collection walks every tracked object: in the app, with a study's pages and
rendered lines cached, that is 20-40 ms, and it used to land on a random key press (the
p99 of key-to-screen). A middle collection walks what young ones kept since the last one
(rendered lines, rows, the detail pane's parts): 4-5 ms, on one key in three while the
coder moves through the queue. The app freezes what it loaded at start (never garbage),
stops automatic full collections, and collects itself once the keyboard has been idle
for a moment, only if young collections ran since the last time. Middle collections run
after the screen shows a key (:meth:`IdleCollector.after_key`), as often as Python's
own would, so never between a key and its screen; a bound (:data:`MIDDLE`) still runs
one should keys come without a repaint. What the imports made is frozen when the app is
built (a full collection of it would delay the first paint by tens of milliseconds), and
what the first paint loaded after it. Young collections (half a millisecond) run as
usual, so memory stays bounded.
"""

from __future__ import annotations

import gc
import time

#: A threshold for full collections that is never reached (CPython counts young
#: collections against it).
NEVER = 1 << 30

#: Young collections after which :meth:`IdleCollector.after_key` runs a middle one
#: (Python's own threshold).
YOUNG_PER_MIDDLE = 10

#: Young collections after which Python itself runs a middle one, should no repaint
#: come to run it after a key: each costs in proportion to the young ones before it.
MIDDLE = 50


class IdleCollector:
    """Defers full collections to idle moments (see the module's docstring)."""

    def __init__(self, idle: float = 1.0) -> None:
        """
        Args:
            idle: Seconds without input before a full collection may run.
        """
        self.idle = idle
        self.collections = 0
        self._last_input = time.monotonic()
        self._thresholds: tuple[int, int, int] | None = None
        self._promotions = 0
        self._stopped = False

    def start(self) -> None:
        """Freeze what exists now and take over full collections (not after :meth:`stop`:
        a start scheduled for after the first paint may run after a quick exit)."""
        if self._thresholds is not None or self._stopped:
            return
        gc.freeze()
        self._thresholds = gc.get_threshold()
        young, _, _ = self._thresholds
        gc.set_threshold(young, MIDDLE, NEVER)
        self._promotions = self._middle_collections()

    @staticmethod
    def freeze() -> None:
        """Move every object that exists now out of the collector's scans (what the
        imports made, then what the first paint loaded: the study's caches, the first
        page); :meth:`stop` puts them back."""
        gc.freeze()

    def stop(self) -> None:
        """Give full collections back to the interpreter, for good."""
        self._stopped = True
        if self._thresholds is None:
            return
        gc.set_threshold(*self._thresholds)
        self._thresholds = None
        gc.unfreeze()

    def input(self) -> None:
        """Record a key press or mouse event."""
        self._last_input = time.monotonic()

    def after_key(self) -> bool:
        """Run the middle collection Python would run now, once the key is on screen;
        whether one ran."""
        if self._thresholds is None or gc.get_count()[1] < YOUNG_PER_MIDDLE:
            return False
        gc.collect(1)
        return True

    def tick(self) -> bool:
        """Collect if the input has been idle long enough and there may be garbage."""
        if self._thresholds is None or time.monotonic() - self._last_input < self.idle:
            return False
        promotions = self._middle_collections()
        if promotions == self._promotions and not gc.get_count()[1]:
            return False  # no young collection since the last time: nothing new
        gc.collect()
        self.collections += 1
        self._promotions = self._middle_collections()
        return True

    @staticmethod
    def _middle_collections() -> int:
        # Each collection of generation 1 moves its survivors into the oldest one.
        return int(gc.get_stats()[1]["collections"])
