"""The read side of an open study, as queries and exporters use it: :class:`StudyView`.

The handle (:class:`study.handle.StudyHandle`) with the namespaces its readers need
beside it: the scores (configurations, score counts), the decisions (counts, coders)
and the evidence (the sentence that moved the model). :class:`study.store.Study` provides it.
"""

from __future__ import annotations

from typing import Protocol

from study.handle import StudyHandle
from study.log.decisions import Decisions
from study.scores.evidence import EvidenceLedger
from study.scores.ledger import Scores


class StudyView(StudyHandle, Protocol):
    """An open study with its scores and decisions."""

    @property
    def scores(self) -> Scores: ...

    @property
    def decisions(self) -> Decisions: ...

    @property
    def evidence(self) -> EvidenceLedger: ...
