"""An option's surface variants: checking their token ids and pooling their probabilities.

An option of a scale is scored through one or more surface variants (``"3"`` and
``" 3"``); the option's probability is the sum of its variants' (METHOD.md), taken here
in log space with a logsumexp in float64. Every backend pools through
:func:`pool_variants`, so the local and the server backends agree to the last bit on
the same variant log-probabilities.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from scoring.backend import FloatArray, OptionVariants
from scoring.errors import ScoringError

#: Per option, per variant, the variant's token ids.
VariantIds = tuple[tuple[tuple[int, ...], ...], ...]


def check_variant_ids(options: Sequence[OptionVariants], token_ids: VariantIds) -> None:
    """Refuse options whose variants cannot be told apart or that have none.

    Raises:
        ScoringError: an option has no variant, or two of its variants tokenize alike.
    """
    for opt, per_variant in zip(options, token_ids, strict=True):
        if not opt:
            raise ScoringError("an option has no surface variant")
        if len(set(per_variant)) != len(per_variant):
            raise ScoringError(f"option variants {tuple(opt)!r} tokenize identically")


def pool_variants(values: Sequence[Sequence[float]]) -> FloatArray:
    """Per option, the logsumexp of its variants' log-probabilities (nats, float64).

    Args:
        values: Per option, its variants' log-probabilities (at least one each).

    Returns:
        Shape (K,), each value at most 0 (rounding can push a sum of probabilities
        that is 1 a hair above it).
    """
    out = np.empty(len(values), dtype=np.float64)
    for k, per_variant in enumerate(values):
        chunk = np.asarray(per_variant, dtype=np.float64)
        top = chunk.max()
        out[k] = top if not np.isfinite(top) else top + math.log(float(np.exp(chunk - top).sum()))
    return np.minimum(out, 0.0)
