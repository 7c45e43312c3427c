"""Slowing down a client that keeps presenting bad tokens.

Each client (by address) may fail :attr:`Backoff.free` times within :attr:`Backoff.window`
seconds at full speed; every later failure waits twice as long as the one before, up to
:attr:`Backoff.cap` seconds. Failures older than the window are forgotten, and what is
kept is bounded: :attr:`Backoff.clients` clients, and per client only the failures the
delay still grows with. The server holds at most one refusal of a client at a time
(:mod:`tui.serve.web`); a valid sign-in is never delayed. Pure bookkeeping with an
injectable clock: the server does the waiting.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Per-client failure counts and the delay each new failure earns.

    Attributes:
        free: Failures within the window answered without delay.
        base: The first delay, in seconds.
        cap: The longest delay, in seconds.
        window: Seconds after which a failure is forgotten.
        clients: At most this many clients are remembered (the oldest are dropped).
        clock: Monotonic seconds (tests pass their own).
    """

    free: int = 5
    base: float = 0.5
    cap: float = 30.0
    window: float = 900.0
    clients: int = 10_000
    clock: Callable[[], float] = time.monotonic
    _failures: OrderedDict[str, deque[float]] = field(default_factory=OrderedDict, repr=False)

    def failed(self, client: str) -> float:
        """Count one failure of ``client``; the seconds to wait before answering it."""
        now = self.clock()
        times = self._failures.pop(client, None) or deque(maxlen=self._kept)
        while times and now - times[0] > self.window:
            times.popleft()
        times.append(now)
        self._failures[client] = times
        while len(self._failures) > self.clients:
            self._failures.popitem(last=False)
        over = len(times) - self.free
        if over <= 0:
            return 0.0
        return float(min(self.cap, self.base * 2 ** (over - 1)))

    @property
    def _kept(self) -> int:
        """Failures kept per client: enough for the delay to reach its cap, and a few."""
        doublings = 1
        while self.base * 2 ** (doublings - 1) < self.cap:
            doublings += 1
        return self.free + doublings + 8

    def failures(self, client: str) -> int:
        """Failures of ``client`` still within the window (counted up to the number kept)."""
        now = self.clock()
        return sum(1 for t in self._failures.get(client, ()) if now - t <= self.window)
