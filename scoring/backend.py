"""The one interface every model backend implements.

A backend answers a single question in batches: for each prompt, what is the
log-probability of each option of a scale, under the model's full vocabulary, at the
position right after the prompt?

Contract of :meth:`Backend.option_logprobs`:

* The prompt is the exact text the model reads, already rendered (chat template applied
  by :meth:`Backend.render_chat` for chat models). The backend adds the tokenizer's
  beginning-of-sequence token if and only if the model expects one; nothing else.
* An option is a tuple of *surface variants* (``("3", " 3")``). Each variant is appended
  verbatim to the prompt: any space belongs to the variant, never to the prompt. A
  variant's tokens are the tokenization of the variant on its own (no special tokens).
  A multi-token variant is teacher-forced: its log-probability is the sum over its
  tokens. The variants' probabilities are summed (pooled) before taking the log
  (METHOD.md); a strict scale simply has one variant per option.
* Units are natural logarithms (nats). Values are ``<= 0``.
* Results come back in the order of ``prompts``.
* A prompt longer than the model's context is truncated from the middle of the text by
  the backend, never an error; the result is flagged ``truncated``.
* Features: given ``spans`` (per prompt, the response's ``(start, end)`` characters in
  it, or None), a backend with a :attr:`Backend.feature_layout` returns with every
  result a float16 vector computed in the same pass (for the local backends, the last
  hidden states at the answer position and pooled over the response, projected:
  :mod:`scoring.backends.local`). The log-probabilities are the same with or without
  spans; without them nothing is computed. Vectors of different layouts are never
  mixed. A server backend has no layout and ignores the spans.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: One option: its surface variants, the canonical label first.
OptionVariants = tuple[str, ...]


@dataclass(frozen=True)
class ModelIdentity:
    """Everything about a model that determines its numbers.

    Attributes:
        name: Model id or path as the user gave it (``embedded:SmolLM2-135M-Instruct``,
            ``Qwen/Qwen2.5-3B``, ``openai:NAME@URL``).
        revision: Commit hash, weights file hash or server-reported revision.
        dtype: ``float32``, ``bfloat16``, ...; a GGUF file in llama.cpp: its quantization
            (``Q4_K_M``).
        device: ``cpu``, ``cuda``, ``server``, ``gpu``.
        backend: ``transformers``, ``openai``, ``fake``, or ``llama.cpp VERSION`` (the
            binding's version: another build may round differently, so it is part of
            the key, and the same file in two backends is two configurations).
    """

    name: str
    revision: str
    dtype: str
    device: str
    backend: str

    def key(self) -> str:
        """A short stable hash; device is left out because it does not change the numbers
        beyond float noise, dtype is kept because it does."""
        blob = "\x1f".join((self.backend, self.name, self.revision, self.dtype))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def describe(self) -> str:
        return f"{self.name} ({self.revision[:12]}, {self.dtype}, {self.device}, {self.backend})"


@dataclass(frozen=True)
class OptionLogprobs:
    """A backend's answer for one prompt.

    Attributes:
        logprobs: shape (K,), pooled ``ln P(option_k | prompt)`` in nats.
        token_ids: per option, per variant, the token ids scored.
        missing: shape (K,), True where the backend could not see the option (a top-k
            server mode): the logprob is then an upper bound, not a value.
        truncated: the prompt was cut to fit the model's context.
        prompt_tokens: number of tokens in the (possibly truncated) prompt.
        features: shape (F,), float16: what the model computed for the prompt
            (:attr:`Backend.feature_layout` says what), when asked for with spans;
            None otherwise.
    """

    logprobs: FloatArray
    token_ids: tuple[tuple[tuple[int, ...], ...], ...]
    missing: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    truncated: bool = False
    prompt_tokens: int = 0
    features: npt.NDArray[np.float16] | None = field(default=None, compare=False, repr=False)


class Backend(ABC):
    """A language model that reads prompts and reports option log-probabilities."""

    @property
    @abstractmethod
    def identity(self) -> ModelIdentity:
        """The model's identity, part of every score's identity."""

    @property
    def is_chat(self) -> bool:
        """Whether prompts should be rendered with the model's chat template."""
        return False

    @property
    def max_context(self) -> int:
        """Longest prompt, in tokens, the backend accepts before truncating."""
        return 2048

    @property
    def batch_size(self) -> int:
        """Pairs per call the engine gives it unless told otherwise: what one forward
        pass holds well for a local model; enough to keep a server's requests in flight
        for a remote one."""
        return 16

    @property
    def batch_tokens(self) -> int | None:
        """Most prompt tokens one call should hold when a batch holds long prompts (over
        half of it), so that progress keeps coming; None (the default) = no bound beyond
        :attr:`batch_size`.
        """
        return None

    @property
    def feature_layout(self) -> str | None:
        """What the features this backend returns are (a short stable string naming the
        hidden width, the positions read, the projection and the dtype), or None when it
        returns none (a server)."""
        return None

    def count_tokens(self, prompt: str) -> int | None:
        """Tokens the model would read for ``prompt``, or None when the backend cannot tell.

        The engine uses it to cut an over-long response from its middle *before*
        rendering, so the prompt it records is exactly what the model read.
        """
        return None

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        """Render chat messages with the model's template, the assistant turn opened.

        Only called when :attr:`is_chat` is True.
        """
        raise NotImplementedError(f"{type(self).__name__} has no chat template")

    @abstractmethod
    def option_logprobs(
        self,
        prompts: Sequence[str],
        options: Sequence[OptionVariants],
        *,
        spans: Sequence[tuple[int, int] | None] | None = None,
    ) -> list[OptionLogprobs]:
        """Score every option after every prompt (see the module docstring for the contract).

        Args:
            prompts: N rendered prompts.
            options: K options, each a tuple of surface variants, shared by all prompts.
            spans: Per prompt, the (start, end) characters of the response in it (None
                where it cannot be located). Given, a backend with a
                :attr:`feature_layout` returns features with every result, from the same
                pass; not given, none are computed.

        Returns:
            N results, in the order of ``prompts``.
        """

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing to release
        """Release resources (server connections, GPU memory)."""


def cut_middle(ids: list[int], budget: int) -> tuple[list[int], bool]:
    """``ids`` cut from the middle to ``budget`` tokens, and whether anything was cut."""
    if len(ids) <= budget:
        return ids, False
    head = budget // 2
    return ids[:head] + ids[len(ids) - (budget - head) :], True
