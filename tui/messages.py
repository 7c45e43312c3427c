"""Messages that cross widgets and screens, named as past events.

Workers report only through these (posted to the app); screens tell the app what they
did by posting them (a screen never calls the app, nor imports it), and the app tells the
screens below the active one with :class:`StudyChanged`. Widgets' own messages are nested
in the widget classes (``PairQueue.Highlighted``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from scoring.engine import ScoringEngine
    from scoring.evidence import Evidence
    from scoring.learned import LearnedCurve
    from study.analysis import Comparison
    from study.log import DelegationPlan
    from study.rows import ScoringRate, Source
    from tui.learning import Learned
    from tui.session import ChangeKind, Saved
    from tui.verdicts import ScreeningSummary


@dataclass(frozen=True)
class Progress:
    """Where a scoring run stands."""

    done: int
    total: int
    rate: float
    eta: float

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


class ModelLoaded(Message):
    """The scoring backend is loaded, its engine built and its configuration registered."""

    def __init__(self, engine: ScoringEngine, config_id: int, description: str) -> None:
        super().__init__()
        self.engine = engine
        self.config_id = config_id
        self.description = description


class ScoringStarted(Message):
    """A scoring run began over ``total`` pending pairs; ``rate`` is the speed the
    study's earlier runs measured, read before this run stored anything (the run may
    finish before the message is handled)."""

    def __init__(self, total: int, config_id: int, rate: ScoringRate | None = None) -> None:
        super().__init__()
        self.total = total
        self.config_id = config_id
        self.rate = rate


class ScoringProgressed(Message):
    """A batch of scores was written; a newer progress message replaces an unhandled one."""

    def __init__(self, progress: Progress) -> None:
        super().__init__()
        self.progress = progress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ScoringProgressed)


class ScoringFinished(Message):
    """A scoring run ended; ``cancelled`` when the coder stopped it."""

    def __init__(self, done: int, total: int, *, cancelled: bool = False) -> None:
        super().__init__()
        self.done = done
        self.total = total
        self.cancelled = cancelled


class AnnotationSaved(Message):
    """A decision, its undo or a note is durable in the study (posted by a screen; it
    bubbles to the app). ``source``: ``model`` for a pick accepted from the model."""

    def __init__(
        self,
        response_id: str,
        code_id: str,
        value: int | None,
        *,
        kind: ChangeKind = "record",
        source: Source = "human",
    ) -> None:
        super().__init__()
        self.response_id = response_id
        self.code_id = code_id
        self.value = value
        self.kind: ChangeKind = kind
        self.source: Source = source

    @classmethod
    def of(cls, saved: Saved) -> AnnotationSaved:
        """The message for a session's :class:`~tui.session.Saved` outcome."""
        return cls(
            saved.response_id, saved.code_id, saved.value, kind=saved.kind, source=saved.source
        )

    @property
    def undone(self) -> bool:
        return self.kind == "undo"


class StudyChanged(Message, bubble=False):
    """The study changed from another screen: what a screen shows may be out of date.

    The app posts it to every screen under the active one after an
    :class:`AnnotationSaved`; it does not bubble back.
    """


class ScreeningShown(Message):
    """The coder opened the screening panel (the app refreshes its verdicts)."""


class ExportFinished(Message):
    """The export worker wrote ``path``."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class ReportRequested(Message):
    """The coder asked for the study's report (from the screening panel): the app writes
    it in a worker."""


class ReportFinished(Message):
    """The report worker wrote ``path``."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class ScreeningUpdated(Message):
    """A fresh screening of the decisions so far (see :mod:`tui.verdicts`)."""

    def __init__(self, summary: ScreeningSummary) -> None:
        super().__init__()
        self.summary = summary


class ScreeningCutChanged(Message):
    """The coder chose another confidence cut in the screening panel (the app screens
    again with it): ``"scale"``, ``"median"`` or a fixed p_max."""

    def __init__(self, cut: float | str) -> None:
        super().__init__()
        self.cut = cut


class ScreeningFilterRequested(Message):
    """The screening panel's next action: show the queue's undecided pairs of
    ``code_id`` (None: of every code), least confident first. The review screen
    handles it."""

    def __init__(self, code_id: str | None) -> None:
        super().__init__()
        self.code_id = code_id


class AuditRequested(Message):
    """The coder asked for the blind audit (from the screening panel): the review screen
    shows the audit order."""


class ReviewLeftRequested(Message):
    """The coder asked for the pairs left for review (those a delegation did not
    cover): the review screen filters the queue to them."""


class DelegationRequested(Message):
    """The coder asked to apply the delegation plan the screening panel shows (the
    review screen confirms, then applies it)."""

    def __init__(self, plan: DelegationPlan) -> None:
        super().__init__()
        self.plan = plan


class DelegationPlanned(Message):
    """A fresh delegation plan for the screening panel; ``plan`` None with ``note``
    saying why there is none (no scores, no audit sample, no blind decisions)."""

    def __init__(self, plan: DelegationPlan | None, note: str, audit: str | None) -> None:
        super().__init__()
        self.plan = plan
        self.note = note
        self.audit = audit


class ComparisonReady(Message):
    """The comparison of the study's configurations (None: fewer than two scored)."""

    def __init__(self, comparison: Comparison | None, note: str = "") -> None:
        super().__init__()
        self.comparison = comparison
        self.note = note


class LearningFinished(Message):
    """The learning worker did a request (:class:`~tui.learning.Learned`): curves
    refitted on the coder's decisions, or where each code's learning stands."""

    def __init__(self, learned: Learned) -> None:
        super().__init__()
        self.learned = learned


class EvidenceMeasured(Message):
    """The evidence worker measured which sentence moved the model for some pairs (kept
    in the study under ``config_id``), through the learned ``curves`` (by code id) of a
    learned configuration; ``waiting``: none, its learned curves are not those the
    coder's decisions give now (until the next refit)."""

    def __init__(
        self,
        config_id: int,
        evidence: tuple[Evidence, ...],
        *,
        curves: Mapping[str, LearnedCurve] | None = None,
        waiting: bool = False,
    ) -> None:
        super().__init__()
        self.config_id = config_id
        self.evidence = evidence
        self.curves = dict(curves or {})
        self.waiting = waiting
