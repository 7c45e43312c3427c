"""What the backends that run a model in this process share: one abstract base.

:class:`LocalBackend` holds the skeleton of :meth:`~scoring.backend.Backend.option_logprobs`
for the transformers and the llama.cpp backends, written once (as lm-evaluation-harness's
``TemplateLM`` does for its local models):

1. The options are checked and planned once per options list (:class:`OptionPlan`): each
   surface variant tokenized on its own, the *continuations* to feed (the leading tokens
   of multi-token variants, none a prefix of another), the longest variant, the token ids
   read.
2. Each prompt is encoded (the model's BOS prepended if it expects one and the text does
   not already open with it) and cut from the middle to the context left after the
   longest variant.
3. The prompts are ordered and grouped (:meth:`LocalBackend._groups`: longest first in
   groups of the batch size by default), and each group is scored, under the backend's
   lock, by the subclass's :meth:`LocalBackend._score_encoded`; variants are pooled with
   logsumexp (:func:`scoring.variants.pool_variants`) and the results come back in the
   caller's order.

A subclass provides the model: :meth:`~LocalBackend._tokenize` (a text's tokens, no
special tokens added), its BOS id (given to ``__init__``), its context
(:attr:`~scoring.backend.Backend.max_context`), its hidden width and layer count
(:meth:`~LocalBackend._hidden_width`, :meth:`~LocalBackend._layer_count`, None when it
cannot read hidden states), and :meth:`~LocalBackend._score_encoded`: the
log-probabilities of a group of encoded prompts and, when asked, the hidden states
(after :func:`feature_layer` layers) at given positions, from the same pass.

Features (what :attr:`~scoring.backend.OptionLogprobs.features` holds, one definition for
every local backend; :attr:`LocalBackend.feature_layout` names it):

* The model's hidden state halfway up: the residual stream after the first
  :func:`feature_layer` of its ``L`` layers (``L // 2``; transformers'
  ``hidden_states[L // 2]``, llama.cpp's ``l_out-{L // 2 - 1}``). A linear read of a
  middle layer says more about a text than the last layer does, which is shaped to
  predict the next token: on the NHS comments at 100 decisions per code in the app's
  order, the learned curve's mean AUROC on a blind audit was 0.79 from the middle layer
  against 0.76 from the last (``benchmarks/bench_learning.py``).
* Two vectors of that layer: its state at the *answer position* (the prompt's last token,
  where the options are read), and its mean over every token of the response. ``first``
  is the number of tokens of the prompt's text before the response, ``last`` one less
  than the number of tokens of the text up to the response's end (each encoded as a
  prompt is), mapped into the cut prompt when it was cut and clipped into its tokens. A
  prompt whose response is not located (span None) or has no tokens pools the answer
  position alone; so does one none of whose positions the backend could read (see the
  llama.cpp backend's prefix reuse).
* Each of the two vectors is projected to :data:`FEATURE_WIDTH` dimensions by a fixed
  Gaussian matrix (entries N(0, 1/512), drawn once per backend from a generator seeded
  by the hidden width) when the hidden width is larger, and the two are stored side by
  side as float16 (clipped to its range): at most 2 x 512 x 2 = 2,048 bytes per prompt.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scoring.backend import Backend, OptionLogprobs, OptionVariants, cut_middle
from scoring.errors import ScoringError
from scoring.variants import check_variant_ids, pool_variants

#: Most dimensions of each of the two feature vectors (wider hidden states are projected).
FEATURE_WIDTH = 512


def feature_layer(layers: int) -> int:
    """How many of a model's ``layers`` the features are read after (half, at least 1)."""
    return max(1, layers // 2)


#: Mixed with the hidden width into the projection's seed. Any fixed number would do;
#: changing it (or anything else in the definition) changes every feature, and then
#: :attr:`LocalBackend.feature_layout` must change too.
PROJECTION_SEED = 20_250_601

#: The hidden states a pass read for one prompt, by token position.
States = dict[int, npt.NDArray[np.float32]]

#: Per option, per variant, ``ln P(variant | prompt)``.
VariantValues = list[list[float]]


@dataclass(frozen=True)
class OptionPlan:
    """How a list of options is read from a model, computed once per options list.

    Attributes:
        token_ids: Per option, per variant, the variant's tokens.
        rows: Continuations to feed after the prompt (every multi-token variant's leading
            tokens), none a prefix of another, sorted.
        longest: Tokens of the longest variant.
        vocab_cols: Every token id any variant uses, sorted.
    """

    token_ids: tuple[tuple[tuple[int, ...], ...], ...]
    rows: tuple[tuple[int, ...], ...]
    longest: int
    vocab_cols: tuple[int, ...]


@dataclass(frozen=True)
class ScoredPrompt:
    """What :meth:`LocalBackend._score_encoded` found for one prompt.

    Attributes:
        values: Per option, per variant, ``ln P(variant | prompt)`` (nats).
        states: When positions were asked for: the hidden states (float32, shape
            (H,)) read, by token position: the answer position always, the asked
            positions the pass could read. None when none were asked for.
    """

    values: VariantValues
    states: States | None = None


class LocalBackend(Backend):
    """A model run in this process: the skeleton its subclasses share.

    Args:
        bos: The token id the model expects first (prepended when a prompt lacks it), or
            None when it expects none.
        max_batch: Prompts per group scored at once (:meth:`_groups`).
    """

    def __init__(self, *, bos: int | None, max_batch: int) -> None:
        self._bos = bos
        self._max_batch = max(1, max_batch)
        self._variant_ids: dict[str, tuple[int, ...]] = {}
        self._plans: dict[tuple[OptionVariants, ...], OptionPlan] = {}
        self._projection: npt.NDArray[np.float64] | None = None
        self._lock = threading.Lock()

    # -- what a subclass provides -------------------------------------------------------

    @abstractmethod
    def _tokenize(self, text: str) -> list[int]:
        """The tokens of ``text`` alone: no BOS or other special token added."""

    @abstractmethod
    def _hidden_width(self) -> int | None:
        """Width of the hidden state :meth:`_score_encoded` reads, or None when it cannot
        read hidden states (then no features are computed)."""

    @abstractmethod
    def _layer_count(self) -> int | None:
        """The model's number of layers (the features are read after
        :func:`feature_layer` of them), or None when it cannot read hidden states."""

    @abstractmethod
    def _score_encoded(
        self,
        prompts: list[list[int]],
        plan: OptionPlan,
        positions: list[tuple[int, ...]] | None,
    ) -> list[ScoredPrompt]:
        """Score one group of encoded prompts, in the order given.

        Args:
            prompts: The prompts' tokens (BOS included, already cut to the context).
            plan: The options' plan.
            positions: None (no hidden states are read), or per prompt the token
                positions whose hidden states to read besides the answer position
                (``len(prompt) - 1``, always read): sorted, within the prompt.

        Returns:
            Per prompt, its values, and its states when ``positions`` was given.
        """

    # -- Backend --------------------------------------------------------------------------

    @property
    def feature_layout(self) -> str | None:
        width, layers = self._hidden_width(), self._layer_count()
        if width is None or layers is None:
            return None
        # hidden width, the layer read of how many, positions read, dimensions per vector
        # after the projection, dtype
        return (
            f"h{width}:l{feature_layer(layers)}of{layers}:answer+mean:"
            f"p{min(width, FEATURE_WIDTH)}:f16"
        )

    def count_tokens(self, prompt: str) -> int:
        return len(self.encode(prompt))

    def encode(self, prompt: str) -> list[int]:
        """The token ids the model reads for a prompt (BOS included when expected)."""
        ids = self._tokenize(prompt)
        if self._bos is not None and (not ids or ids[0] != self._bos):
            ids.insert(0, self._bos)
        return ids

    def option_logprobs(
        self,
        prompts: Sequence[str],
        options: Sequence[OptionVariants],
        *,
        spans: Sequence[tuple[int, int] | None] | None = None,
    ) -> list[OptionLogprobs]:
        if len(options) < 1:
            raise ScoringError("no options to score")
        if spans is not None and len(spans) != len(prompts):
            raise ScoringError(f"{len(spans)} response spans for {len(prompts)} prompts")
        plan = self._plan(options)
        budget = self.max_context - plan.longest
        if budget < 2:
            raise ScoringError(f"context of {self.max_context} tokens is too short to score")
        full = [self.encode(p) for p in prompts]
        encoded = [cut_middle(ids, budget) for ids in full]
        positions: list[tuple[int, ...]] | None = None
        if spans is not None and self._hidden_width() is not None:
            positions = [
                self._pool_positions(prompt, span, len(ids), budget)
                for prompt, span, ids in zip(prompts, spans, full, strict=True)
            ]
        results: list[OptionLogprobs | None] = [None] * len(prompts)
        with self._lock:
            for group in self._groups([ids for ids, _ in encoded]):
                scored = self._score_encoded(
                    [encoded[i][0] for i in group],
                    plan,
                    None if positions is None else [positions[i] for i in group],
                )
                for i, one in zip(group, scored, strict=True):
                    ids, truncated = encoded[i]
                    features = None
                    if positions is not None and one.states is not None:
                        features = self._features(one.states, len(ids) - 1, positions[i])
                    results[i] = OptionLogprobs(
                        logprobs=pool_variants(one.values),
                        token_ids=plan.token_ids,
                        missing=np.zeros(len(options), dtype=bool),
                        truncated=truncated,
                        prompt_tokens=len(ids),
                        features=features,
                    )
        return [r for r in results if r is not None]

    # -- the shared internals -----------------------------------------------------------

    def _groups(self, prompts: list[list[int]]) -> list[list[int]]:
        """The order prompts are scored in, in groups (indices into ``prompts``).

        Longest first (memory errors surface early, estimates err high), ties in the
        caller's order, in groups of the batch size.
        """
        order = sorted(range(len(prompts)), key=lambda i: (-len(prompts[i]), i))
        return [order[s : s + self._max_batch] for s in range(0, len(order), self._max_batch)]

    def _plan(self, options: Sequence[OptionVariants]) -> OptionPlan:
        key = tuple(tuple(o) for o in options)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        token_ids = tuple(tuple(self._variant(v) for v in opt) for opt in key)
        check_variant_ids(key, token_ids)
        flat = [ids for opt in token_ids for ids in opt]
        heads = {ids[:-1] for ids in flat if len(ids) > 1}
        rows = tuple(
            sorted(h for h in heads if not any(o != h and o[: len(h)] == h for o in heads))
        )
        cols = tuple(sorted({t for ids in flat for t in ids}))
        plan = OptionPlan(token_ids, rows, max(len(ids) for ids in flat), cols)
        self._plans[key] = plan
        return plan

    def _variant(self, text: str) -> tuple[int, ...]:
        ids = self._variant_ids.get(text)
        if ids is None:
            ids = tuple(self._tokenize(text))
            if not ids:
                raise ScoringError(f"option variant {text!r} has no tokens")
            self._variant_ids[text] = ids
        return ids

    def _pool_positions(
        self, prompt: str, span: tuple[int, int] | None, length: int, budget: int
    ) -> tuple[int, ...]:
        """The response's token positions to pool, in the prompt as the model reads it.

        Args:
            prompt: The prompt's text.
            span: The response's (start, end) characters in it, or None.
            length: Tokens of the whole prompt, before any cut.
            budget: Tokens the prompt is cut to when longer (:func:`cut_middle`).
        """
        if span is None:
            return ()
        start, end = (min(max(0, c), len(prompt)) for c in span)
        first = len(self.encode(prompt[:start]))
        last = len(self.encode(prompt[:end])) - 1
        kept = min(length, budget)
        if length > budget:  # cut_middle kept the first `head` and the last tokens
            head, shift = budget // 2, length - budget
            first = first if first < head else max(head, first - shift)
            last = last if last < head else (head - 1 if last - shift < head else last - shift)
        first, last = max(first, 0), min(last, kept - 1)
        return tuple(range(first, last + 1))

    def _features(
        self, states: States, answer: int, positions: tuple[int, ...]
    ) -> npt.NDArray[np.float16]:
        """The answer state and the mean of the response's states, projected, as float16."""
        at_answer = states[answer].astype(np.float64)
        read = [states[p] for p in positions if p in states]
        pooled = np.stack(read).astype(np.float64).mean(axis=0) if read else at_answer
        both = np.concatenate([self._project(at_answer), self._project(pooled)])
        limit = float(np.finfo(np.float16).max)
        features: npt.NDArray[np.float16] = np.clip(both, -limit, limit).astype(np.float16)
        return features

    def _project(self, vector: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        width = vector.shape[0]
        if width <= FEATURE_WIDTH:
            return vector
        if self._projection is None or self._projection.shape[0] != width:
            rng = np.random.default_rng([PROJECTION_SEED, width])
            self._projection = rng.normal(0.0, FEATURE_WIDTH**-0.5, size=(width, FEATURE_WIDTH))
        projected: npt.NDArray[np.float64] = vector @ self._projection
        return projected
