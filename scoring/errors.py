"""Errors of the scoring layer (see :mod:`codebooks.errors` for the whole hierarchy)."""

from __future__ import annotations

from typing import Any

from codebooks.errors import CodecurveError, Remedy

#: What to do about a model without a chat template when chat prompts were asked for.
NO_CHAT = Remedy("retry", "score it with plain completion prompts", {"no_chat": True})
#: Install llama-cpp-python, as codecurve's ``llama`` extra.
LLAMA_EXTRA = Remedy("install", "install codecurve's llama extra", {"package": "codecurve[llama]"})


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


class ServerError(ScoringError):
    """An OpenAI-compatible server failed or refused a request.

    Attributes:
        status: The HTTP status, when there was an answer.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        remedy: Remedy | tuple[Remedy, ...] | None = None,
    ) -> None:
        super().__init__(message, remedy=remedy)
        self.status = status


class ServerUnreachableError(ServerError, ConnectionError):
    """Nothing answers at the server's URL (refused, reset, unknown host)."""


class ServerTimeoutError(ServerError, TimeoutError):
    """A request ran past the per-request timeout."""


class ServerRejectedError(ServerError):
    """The server refused a request (4xx): a parameter it does not support, a bad key."""


class ServerAnswerError(ServerError):
    """The server answered something that cannot be scores: values that are not
    log-probabilities (logits, probabilities, NaN, ``true``), a reading with no option in
    it, or an answer larger than any request could need."""


__all__ = [
    "LLAMA_EXTRA",
    "NO_CHAT",
    "ModelNotFoundError",
    "ScoringCancelled",
    "ScoringError",
    "ServerAnswerError",
    "ServerError",
    "ServerRejectedError",
    "ServerTimeoutError",
    "ServerUnreachableError",
]
