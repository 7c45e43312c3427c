"""How a model answers: templates, backends, surprisal curves and the batch engine.

Importing this package loads neither torch nor transformers: the transformers backend
is imported when :func:`load_backend` first needs it.
"""

from scoring.backend import Backend, ModelIdentity, OptionLogprobs
from scoring.curves import Curve, curve_from_logprobs, sparkline
from scoring.engine import BatchResult, ScoringEngine
from scoring.errors import ModelNotFoundError, ScoringCancelled, ScoringError
from scoring.fake import FakeBackend
from scoring.loading import load_backend
from scoring.score import Pair, Score, ScoreConfig

__all__ = [
    "Backend",
    "BatchResult",
    "Curve",
    "FakeBackend",
    "ModelIdentity",
    "ModelNotFoundError",
    "OptionLogprobs",
    "Pair",
    "Score",
    "ScoreConfig",
    "ScoringCancelled",
    "ScoringEngine",
    "ScoringError",
    "curve_from_logprobs",
    "load_backend",
    "sparkline",
]
