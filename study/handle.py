"""What the namespaces of an open study need of it: :class:`StudyHandle`.

:class:`study.store.Study` is the handle: it owns the connection, the writer's file
and coder's locks, the lock that serialises threads, the transactions, the index and the codebook.
Its namespaces (``study.scores``, ``study.decisions``, ``study.queries``,
``study.audit``, ``study.delegations``, ``study.versions``) are typed against this
protocol, not against the store, so the store can build them without an import cycle.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Protocol

from codebooks.model import Code, Codebook
from study.index import StudyIndex


class StudyHandle(Protocol):
    """An open study's file, ids and codebook, and its reads and writes."""

    @property
    def path(self) -> Path: ...

    @property
    def codebook(self) -> Codebook: ...

    @property
    def index(self) -> StudyIndex: ...

    @property
    def read_only(self) -> bool: ...

    @property
    def codes(self) -> tuple[Code, ...]: ...

    def query(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A connection for a read (no transaction): a read-only one of this thread's
        own, or inside a write transaction the writing one."""
        ...

    def snapshot(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A consistent read of several statements (nested calls share it)."""
        ...

    def transaction(
        self, *, current: bool = False
    ) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """One write transaction, committed before leaving, rolled back on an exception;
        ``current``: refused (``StudyChangedError``) if another session changed the
        study's structure since the change was prepared."""
        ...

    def install(self, codebook: Codebook, index: StudyIndex) -> None:
        """Use ``codebook`` and ``index`` from now on (after a committed revision or wave)."""
        ...

    def response_count(self) -> int: ...

    def response_ids(self) -> list[str]: ...

    def pair_count(self) -> int: ...

    def meta(self) -> dict[str, str]: ...
