"""Errors of the scoring layer (see :mod:`codebooks.errors` for the whole hierarchy)."""

from __future__ import annotations

from typing import Any

from codebooks.errors import CodecurveError


class ScoringError(CodecurveError, RuntimeError):
    """A model or backend failed to produce scores."""


class ModelNotFoundError(ScoringError, FileNotFoundError):
    """The requested model (path, id, embedded wheel) is not available."""


class ScoringCancelled(ScoringError):
    """Scoring was cancelled between batches; finished batches were kept.

    Attributes:
        scores: What :meth:`scoring.engine.ScoringEngine.score` had finished, in the
            caller's order, ``None`` where a pair was not scored.
    """

    def __init__(self, message: str, *, scores: list[Any] | None = None) -> None:
        super().__init__(message)
        self.scores: list[Any] = [] if scores is None else scores
