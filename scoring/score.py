"""What the engine hands to the rest of codecurve: one scored (response, code) pair."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from codebooks.model import Code, Scale
from scoring.backend import ModelIdentity
from scoring.curves import Curve

CONTEXT_LEVELS = ("none", "definition", "full")


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
        context: ``none``, ``definition`` or ``full``.
        scale: The default scale asked (a code may carry its own).
        strict: Score one rendering per option instead of pooling surface variants.
    """

    model: ModelIdentity
    template_id: str
    template_hash: str
    context: str
    scale: Scale
    strict: bool = False

    def key(self) -> str:
        blob = "\x1f".join(
            (
                self.model.key(),
                self.template_id,
                self.template_hash,
                self.context,
                repr(self.scale.to_dict()),
                str(self.strict),
            )
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


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

    @property
    def prediction(self) -> int:
        """The value of the curve's minimum (the model's pick)."""
        return self.scale.options[self.curve.mode].value

    @property
    def prediction_label(self) -> str:
        return self.scale.options[self.curve.mode].label
