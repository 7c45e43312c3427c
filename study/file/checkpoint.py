"""Copy the WAL back into the database in a background thread, off the decision path.

SQLite's automatic checkpoint runs inside the commit that crosses the threshold (1,000
pages), and its fsync of the database file then lands on one unlucky key press: on the
benchmark's disk that alone put a decision's p99 near 10 ms. The writer therefore turns
the automatic checkpoint off and this thread runs a PASSIVE checkpoint (never blocks the
writer or readers) every ``interval`` seconds on its own connection. Closing the study
stops it; SQLite checkpoints the rest when the last connection closes. Crash safety is
SQLite's: a checkpoint interrupted by a kill is redone from the WAL on the next open.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger(__name__)


class WalCheckpointer:
    """A daemon thread running ``PRAGMA wal_checkpoint(PASSIVE)`` periodically."""

    def __init__(self, path: Path, *, interval: float = 1.0) -> None:
        self._path = path
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name=f"codecurve-checkpoint-{path.name}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        try:
            conn = sqlite3.connect(str(self._path), isolation_level=None, timeout=1.0)
        except sqlite3.Error as exc:  # the writer still checkpoints when it closes
            log.warning("no background checkpoints for %s: %s", self._path, exc)
            return
        try:
            conn.execute("PRAGMA busy_timeout = 1000")
            while not self._stop.wait(self._interval):
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            conn.close()
