"""A deterministic stand-in for a model, for fast tests of the engine and the app.

The log-probabilities of a prompt are a function of the prompt's hash alone: the same
prompt always gets the same curve, different prompts get different curves (some sharp,
some flat, a few mostly off-scale). No torch, no model files. A delay per batch and
failure injection let tests exercise progress, cancellation and error handling.

Told where the response lies in each prompt, it returns features as a local model does:
a hashed bag of the response's words (:data:`FAKE_FEATURES` dimensions, float16), so
that a curve learned from decisions that follow the words (:mod:`scoring.learned`) can
be tested without a model.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from scoring.backend import Backend, ModelIdentity, OptionLogprobs, OptionVariants
from scoring.errors import ScoringError

#: Pseudo vocabulary size for the fake token ids.
FAKE_VOCAB = 50_000

#: Width of the fake features (a hashed bag of words).
FAKE_FEATURES = 64

#: The fake's :attr:`~scoring.backend.Backend.feature_layout`.
FAKE_LAYOUT = f"fake:bag{FAKE_FEATURES}:f16"


class FakeBackend(Backend):
    """Deterministic fake backend (identity backend ``fake``).

    Args:
        delay: Seconds to sleep per :meth:`option_logprobs` call (one engine batch).
        fail_on_call: Raise :class:`ScoringError` on this call (0-based), once.
        fail_always: Raise on every call.
        chat: Pretend to be a chat model (a simple tagged chat format).
        max_context: Context length in fake tokens (whitespace-separated words + 1).
        name: Identity name; ``revision`` likewise.
        off_scale: Extra log-weight of the mass outside the scale; higher means more
            off-scale curves.
        batch_tokens: Most prompt tokens per call the engine should give it (None: no
            bound), and ``delay_per_token`` seconds slept per prompt token, to model
            long prompts.
        gate: Calls from number ``gate_from`` on (0-based) wait until this event is set,
            for at most ``gate_timeout`` seconds: a test holds a run with it at a known
            point, whatever the machine's speed.
        features: Return features when told where the responses lie (a model that
            cannot, like a server, when False).
    """

    def __init__(
        self,
        *,
        delay: float = 0.0,
        fail_on_call: int | None = None,
        fail_always: bool = False,
        chat: bool = False,
        max_context: int = 2048,
        name: str = "fake",
        revision: str = "1",
        off_scale: float = -1.0,
        batch_tokens: int | None = None,
        delay_per_token: float = 0.0,
        gate: threading.Event | None = None,
        gate_from: int = 0,
        gate_timeout: float = 120.0,
        features: bool = True,
    ) -> None:
        self.delay = delay
        self.gate = gate
        self.gate_from = gate_from
        self.gate_timeout = gate_timeout
        self.fail_on_call = fail_on_call
        self.fail_always = fail_always
        self._chat = chat
        self._max_context = max_context
        self._off_scale = off_scale
        self._batch_tokens = batch_tokens
        self.delay_per_token = delay_per_token
        self._identity = ModelIdentity(
            name=name, revision=revision, dtype="float32", device="cpu", backend="fake"
        )
        self._features = features
        self.calls = 0
        #: Every call's prompts, in call order.
        self.batches: list[list[str]] = []
        self._lock = threading.Lock()

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    @property
    def is_chat(self) -> bool:
        return self._chat

    @property
    def max_context(self) -> int:
        return self._max_context

    @property
    def batch_tokens(self) -> int | None:
        return self._batch_tokens

    @property
    def feature_layout(self) -> str | None:
        return FAKE_LAYOUT if self._features else None

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        if not self._chat:
            raise NotImplementedError("this FakeBackend has no chat template")
        body = "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages)
        return body + "<|assistant|>\n"

    def count_tokens(self, prompt: str) -> int:
        return _count(prompt)

    def option_logprobs(
        self,
        prompts: Sequence[str],
        options: Sequence[OptionVariants],
        *,
        spans: Sequence[tuple[int, int] | None] | None = None,
    ) -> list[OptionLogprobs]:
        with self._lock:
            call = self.calls
            self.calls += 1
            self.batches.append(list(prompts))
        held = self.gate is not None and call >= self.gate_from
        if held and self.gate is not None and not self.gate.wait(self.gate_timeout):
            raise ScoringError(f"the fake model's gate stayed shut for {self.gate_timeout:g} s")
        if self.delay:
            time.sleep(self.delay)
        if self.delay_per_token:
            time.sleep(self.delay_per_token * sum(_count(p) for p in prompts))
        if self.fail_always or (self.fail_on_call is not None and call == self.fail_on_call):
            raise ScoringError(f"fake failure on call {call}")
        token_ids = tuple(tuple(_fake_ids(v) for v in opt) for opt in options)
        answers = [self._one(p, len(options), token_ids) for p in prompts]
        if spans is None or not self._features:
            return answers
        return [
            replace(answer, features=fake_features(prompt, span))
            for answer, prompt, span in zip(answers, prompts, spans, strict=True)
        ]

    def _one(
        self, prompt: str, k: int, token_ids: tuple[tuple[tuple[int, ...], ...], ...]
    ) -> OptionLogprobs:
        seed = int.from_bytes(hashlib.sha256(prompt.encode("utf-8")).digest()[:8], "little")
        rng = np.random.default_rng(seed)
        sharpness = rng.uniform(0.2, 4.0)  # flat to peaked curves
        logits = np.append(rng.normal(0.0, sharpness, size=k), self._off_scale + rng.normal())
        top = logits.max()
        logp = logits - (top + np.log(np.exp(logits - top).sum()))
        truncated = _count(prompt) > self._max_context
        return OptionLogprobs(
            logprobs=np.minimum(logp[:k], 0.0),
            token_ids=token_ids,
            missing=np.zeros(k, dtype=bool),
            truncated=truncated,
            prompt_tokens=min(_count(prompt), self._max_context),
        )


def fake_features(prompt: str, span: tuple[int, int] | None) -> np.ndarray:
    """A hashed bag of the response's words (the whole prompt's without a span),
    L2-normalised, as float16."""
    text = prompt if span is None else prompt[span[0] : span[1]]
    vec = np.zeros(FAKE_FEATURES)
    for word in text.lower().split():
        word = word.strip(".,;:!?\"'()")
        if word:
            slot = int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:4], "little")
            vec[slot % FAKE_FEATURES] += 1.0
    norm = float(np.linalg.norm(vec))
    return (vec / norm if norm else vec).astype(np.float16)


def _count(prompt: str) -> int:
    """Fake tokens: whitespace-separated words, and one for BOS."""
    return len(prompt.split()) + 1


def _fake_ids(variant: str) -> tuple[int, ...]:
    """One fake token per whitespace-separated piece, a leading space its own token."""
    pieces = ([" "] if variant.startswith(" ") else []) + variant.split()
    return tuple(
        int.from_bytes(hashlib.sha256(p.encode("utf-8")).digest()[:4], "little") % FAKE_VOCAB
        for p in pieces
    ) or (0,)
