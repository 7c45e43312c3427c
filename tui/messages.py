"""Messages that cross widgets, named as past events.

Workers report only through these (posted to the app); widgets' own messages are nested
in the widget classes (``PairQueue.Highlighted``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from scoring.engine import ScoringEngine
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
    """A scoring run began over ``total`` pending pairs."""

    def __init__(self, total: int, config_id: int) -> None:
        super().__init__()
        self.total = total
        self.config_id = config_id


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
    """A decision (or its undo, or a note) is durable in the study."""

    def __init__(
        self, response_id: str, code_id: str, value: int | None, *, undone: bool = False
    ) -> None:
        super().__init__()
        self.response_id = response_id
        self.code_id = code_id
        self.value = value
        self.undone = undone


class ScreeningUpdated(Message):
    """A fresh screening of the decisions so far (see :mod:`tui.verdicts`)."""

    def __init__(self, summary: ScreeningSummary) -> None:
        super().__init__()
        self.summary = summary
