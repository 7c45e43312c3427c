"""What the engine hands to the rest of codecurve: one scored (response, code) pair."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from codebooks.model import Code, Scale
from scoring.backend import ModelIdentity
from scoring.curves import Curve

#: What a prompt says about a code (METHOD.md section 1), least first; ``examples`` is
#: ``full`` with some of a coder's decided pairs of the code shown as worked examples
#: (METHOD.md section 5: the other way of learning from the coder).
CONTEXT_LEVELS = ("none", "definition", "full", "examples")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Pair:
    """A (response, code) pair to score.

    Attributes:
        response_id: The response's id in its study or file.
        text: The response text.
        code: The code asked about.
    """

    response_id: str
    text: str
    code: Code


@dataclass(frozen=True)
class ScoreConfig:
    """A scoring configuration: everything but the pair that fixes a score's numbers.

    Attributes:
        model: The backend's model identity.
        template_id: Versioned template name (``chat-v1``, ``base-v1``).
        template_hash: Hash of the template's text, so an edited template never reuses scores.
        context: ``none``, ``definition``, ``full`` or ``examples``.
        scale: The default scale asked (a code may carry its own).
        strict: Score one rendering per option instead of pooling surface variants.
        examples_hash: At context ``examples``, the hash of the worked examples shown per
            code (:func:`scoring.templates.examples_hash`); empty otherwise.
    """

    model: ModelIdentity
    template_id: str
    template_hash: str
    context: str
    scale: Scale
    strict: bool = False
    examples_hash: str = ""

    def key(self) -> str:
        parts = [
            self.model.key(),
            self.template_id,
            self.template_hash,
            self.context,
            repr(self.scale.to_dict()),
            str(self.strict),
        ]
        if self.examples_hash:
            # Only when set, so that every configuration without examples keeps its key.
            parts.append(self.examples_hash)
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Score:
    """A scored pair.

    Attributes:
        response_id: As in the :class:`Pair`.
        code_id: The code's id.
        config_key: :meth:`ScoreConfig.key` of the configuration that produced it.
        scale: The scale actually asked.
        curve: The surprisal curve and everything derived from it.
        token_ids: Per option, per surface variant, the token ids scored.
        missing: Per option, True when the backend could not see it (top-k server mode).
        prompt: The exact rendered prompt the model read.
        prompt_hash: Hash of ``prompt``.
        text_hash: Hash of the response text.
        code_hash: :meth:`Code.content_hash`.
        truncated: The prompt was cut from the middle to fit the context.
        features: What the model computed for the pair in the same pass (float16,
            :attr:`scoring.backend.Backend.feature_layout` says what), or None when the
            backend returns none; the learned curves are fitted on it
            (:mod:`scoring.learned`). Not part of the score's equality.
    """

    response_id: str
    code_id: str
    config_key: str
    scale: Scale
    curve: Curve
    token_ids: tuple[tuple[tuple[int, ...], ...], ...]
    missing: tuple[bool, ...]
    prompt: str
    prompt_hash: str
    text_hash: str
    code_hash: str
    truncated: bool = False
    features: npt.NDArray[np.float16] | None = field(default=None, compare=False, repr=False)

    @property
    def prediction(self) -> int:
        """The value of the curve's minimum (the model's pick)."""
        return self.scale.options[self.curve.mode].value

    @property
    def prediction_label(self) -> str:
        return self.scale.options[self.curve.mode].label
