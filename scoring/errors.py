"""Errors of the scoring layer (see :mod:`codebooks.errors` for the whole hierarchy)."""

from __future__ import annotations

from codebooks.errors import CodecurveError


class ScoringError(CodecurveError, RuntimeError):
    """A model or backend failed to produce scores."""


class ModelNotFoundError(ScoringError, FileNotFoundError):
    """The requested model (path, id, embedded wheel) is not available."""


class ScoringCancelled(ScoringError):
    """Scoring was cancelled between batches; finished batches were kept."""
