"""Codebook versions and waves of responses, as methods of :class:`study.store.Study`.

:class:`CodebookIteration` is a mixin: the store provides the connection, its lock and
its transactions (``_query``, ``_write``), the codebook and the index; the work is done by
:mod:`study.iteration.revisions` and :mod:`study.iteration.waves`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from codebooks.diff import CodebookDiff
from codebooks.model import Codebook
from study.index import StudyIndex
from study.intake.responses import ResponseTable
from study.iteration import revisions
from study.iteration import waves as response_waves


class CodebookIteration:
    """Codebook revisions and added responses.

    See :mod:`study.iteration.revisions` and :mod:`study.iteration.waves`.
    """

    _path: Path
    _codebook: Codebook
    _index: StudyIndex

    def _query(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # provided by study.store.Study

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # provided by study.store.Study

    def codebook_versions(self) -> list[revisions.CodebookVersion]:
        """Every codebook the study has had, oldest first (the last is the current one)."""
        with self._query() as conn:
            return revisions.read_versions(conn, path=self._path)

    def codebook_version(self) -> int:
        """The current codebook version (1: the codebook the study was created with)."""
        with self._query() as conn:
            return revisions.current_version(conn)

    def plan_revision(self, codebook: Codebook) -> CodebookDiff:
        """The changes ``codebook`` would make, checked; nothing is written.

        Raises:
            StudyError: the revision is refused
                (see :func:`study.iteration.revisions.plan_revision`).
        """
        with self._query() as conn:
            return revisions.plan_revision(conn, self._codebook, codebook, path=self._path)

    def revise_codebook(self, codebook: Codebook, *, source: str = "") -> int:
        """Record ``codebook`` as the next version, all or nothing; return its number.

        Raises:
            StudyError: the revision is refused; the study is unchanged.
        """
        with self._write() as conn:
            diff = revisions.plan_revision(conn, self._codebook, codebook, path=self._path)
            version = revisions.apply_revision(conn, self._codebook, codebook, diff, source=source)
            index = revisions.load_index(self._path, conn, codebook)
        self._codebook, self._index = codebook, index
        return version

    def waves(self) -> list[response_waves.Wave]:
        """Every wave of responses, the first being the study's creation."""
        with self._query() as conn:
            return response_waves.read_waves(conn)

    def wave_response_ids(self, wave: int) -> list[str]:
        """The ids of the responses wave ``wave`` added (for the queue's wave filter)."""
        with self._query() as conn:
            return response_waves.wave_response_ids(conn, wave)

    def add_responses(
        self, table: ResponseTable, *, update: bool = False
    ) -> response_waves.WaveResult:
        """Append ``table`` as a new wave, all or nothing (see :mod:`study.iteration.waves`).

        Raises:
            StudyError: another id column, ids already in the study without ``update``.
        """
        with self._write() as conn:
            result = response_waves.add_wave(conn, table, update=update, path=self._path)
            index = revisions.load_index(self._path, conn, self._codebook)
        self._index = index
        return result
