"""Read connections of their own, so that a long read never holds up a write.

A study has one writing connection, and the handle's lock serialises everything done on
it. A read that scans the whole study (the screening of a million pairs, an export)
used to hold that lock for hundreds of milliseconds, and the coder's next decision, on
the app's thread, waited for it before it could be written. In WAL mode SQLite lets
readers and the writer work at once, each reader on a snapshot of what was committed
when its read began: :class:`Readers` lends each thread a read-only connection of its
own, kept for the next read once it is handed back.

A read on the thread that is inside a write transaction stays on the writing connection
(under its lock), so that it sees what the transaction has written so far; a read nested
in another read on the same thread shares that read's connection, so a snapshot spans
the nested reads too.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator


class Readers:
    """Read-only connections to one study file, lent one per thread at a time."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        """
        Args:
            connect: Opens one more read-only connection to the study.
        """
        self._connect = connect
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._local = threading.local()
        self._closed = False

    @contextlib.contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """This thread's read connection for the block (the same one when nested)."""
        current: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError("the study is closed")
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect()
        self._local.conn = conn
        try:
            yield conn
        finally:
            self._local.conn = None
            if conn.in_transaction:  # a read left open: end it, or it pins the WAL
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            with self._lock:
                if self._closed:
                    conn.close()
                else:
                    self._idle.append(conn)

    def close(self) -> None:
        """Close the idle connections now, and each lent one as it is handed back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
