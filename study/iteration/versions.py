"""Codebook versions and waves of responses of a study: :class:`Versions` (``study.versions``).

The handle (:class:`study.handle.StudyHandle`) provides the connection, its transactions,
the codebook and the index, and installs the codebook and index a revision or a wave
leaves; the work is done by :mod:`study.iteration.revisions` and
:mod:`study.iteration._waves`.
"""

from __future__ import annotations

import study.iteration._waves as response_waves
from codebooks.diff import CodebookDiff
from codebooks.model import Codebook
from study.file import scoped_pairs
from study.handle import StudyHandle
from study.intake.responses import ResponseTable
from study.iteration import revisions


class Versions:
    """Codebook revisions and added responses.

    See :mod:`study.iteration.revisions` and :mod:`study.iteration._waves`.
    """

    def __init__(self, study: StudyHandle) -> None:
        self._study = study

    def all(self) -> list[revisions.CodebookVersion]:
        """Every codebook the study has had, oldest first (the last is the current one)."""
        with self._study.query() as conn:
            return revisions.read_versions(conn, path=self._study.path)

    def current(self) -> int:
        """The current codebook version (1: the codebook the study was created with)."""
        with self._study.query() as conn:
            return revisions.current_version(conn)

    def plan_revision(self, codebook: Codebook) -> CodebookDiff:
        """The changes ``codebook`` would make, checked; nothing is written.

        Raises:
            StudyError: the revision is refused
                (see :func:`study.iteration.revisions.plan_revision`).
        """
        with self._study.query() as conn:
            return revisions.plan_revision(
                conn, self._study.codebook, codebook, path=self._study.path
            )

    def revise(self, codebook: Codebook, *, source: str = "") -> int:
        """Record ``codebook`` as the next version, all or nothing; return its number.

        Raises:
            StudyError: the revision is refused; the study is unchanged.
        """
        with self._study.transaction() as conn:
            old = self._study.codebook
            diff = revisions.plan_revision(conn, old, codebook, path=self._study.path)
            version = revisions.apply_revision(conn, old, codebook, diff, source=source)
            index = revisions.load_index(self._study.path, conn, codebook)
            scoped_pairs.sync(conn, index.scope)  # the new scoping, in the same commit
        self._study.install(codebook, index)
        return version

    def waves(self) -> list[response_waves.Wave]:
        """Every wave of responses, the first being the study's creation."""
        with self._study.query() as conn:
            return response_waves.read_waves(conn)

    def wave_response_ids(self, wave: int) -> list[str]:
        """The ids of the responses wave ``wave`` added (for the queue's wave filter)."""
        with self._study.query() as conn:
            return response_waves.wave_response_ids(conn, wave)

    def add_responses(
        self, table: ResponseTable, *, update: bool = False
    ) -> response_waves.WaveResult:
        """Append ``table`` as a new wave, all or nothing (see :mod:`study.iteration._waves`).

        Raises:
            StudyError: another id column, ids already in the study without ``update``.
        """
        with self._study.transaction() as conn:
            result = response_waves.add_wave(conn, table, update=update, path=self._study.path)
            index = revisions.load_index(self._study.path, conn, self._study.codebook)
            # The new responses' pairs, and those of an updated response whose question changed.
            scoped_pairs.sync(conn, index.scope)
        self._study.install(self._study.codebook, index)
        return result
