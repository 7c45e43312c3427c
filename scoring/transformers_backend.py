"""The transformers backend: any Hugging Face causal LM, a local folder or a GGUF file.

How one batch is scored (see :mod:`scoring.backend` for the contract):

1. Each prompt is tokenized on its own (the model's BOS prepended if it expects one) and
   cut from the middle if it would not fit the context.
2. The options' surface variants are tokenized on their own. Every variant's first token
   is read from the distribution right after the prompt. Longer variants are
   teacher-forced: their leading tokens (a *continuation*, e.g. the space of " 3" in
   tokenizers that split it off) are fed after the prompt and the later tokens read from
   the positions that follow. With a single distinct continuation (the common case) it is
   appended to every prompt and the same forward pass returns both positions; with
   several, a second pass feeds them all over the first pass's KV cache.
3. Prompts are sorted by length (longest first) and left-padded, with position ids from
   the attention mask's cumulative sum, so padding never shifts a position. Only the
   last positions' logits are computed (``logits_to_keep``); the log-softmax runs over
   the full vocabulary in float64.
4. Prefix sharing: prompts of one code share a long prefix (templates put the response
   last). The batch's longest common token prefix is run once, at batch size one, and
   its KV cache is expanded over the batch; only the differing suffixes are computed.
   The prefix's cache is kept for the next batch when that batch shares it. Tokens and
   positions are identical to the unshared path, so results agree to float rounding.
5. Variants of one option are pooled with logsumexp (float64).

torch and transformers are imported by this module only, never by ``import scoring``.
"""

from __future__ import annotations

import inspect
import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

from scoring.backend import Backend, ModelIdentity, OptionLogprobs, OptionVariants
from scoring.errors import ModelNotFoundError, ScoringError

log = logging.getLogger(__name__)

#: Share a prefix only when it is at least this many tokens (shorter saves nothing).
MIN_SHARED_PREFIX = 16

#: Keep the previous batch's prefix cache when it covers all but this many shared tokens.
PREFIX_REUSE_SLACK = 16

#: Context used when neither config nor tokenizer states a sane one.
FALLBACK_CONTEXT = 2048


@dataclass(frozen=True)
class _Plan:
    """How a set of options is read from the model, computed once per options list."""

    token_ids: tuple[tuple[tuple[int, ...], ...], ...]  # per option, per variant
    first_ids: tuple[int, ...]  # every variant's first token, deduplicated
    rows: tuple[tuple[int, ...], ...]  # continuations to feed, none a prefix of another
    longest: int  # tokens of the longest variant
    vocab_cols: tuple[int, ...]  # every token id any variant uses, sorted


def pick_device(device: str | None) -> tuple[torch.device, torch.dtype]:
    """CUDA with bfloat16 where available, else CPU with float32."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ScoringError("CUDA was asked for, and torch sees no CUDA device")
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    return dev, dtype


class TransformersBackend(Backend):
    """A causal LM through transformers.

    Args:
        model: A loaded causal LM, in eval mode.
        tokenizer: Its tokenizer.
        name: Identity name (``embedded:...``, a hub id, an absolute path).
        revision: Commit hash or weights hash.
        chat: Use the tokenizer's chat template; None = when it has one.
        max_batch: Most prompts per forward pass.
        max_context: Longest prompt in tokens; defaults to the model's.
        prefix_sharing: Compute a batch's common prefix once (results are equal to
            rounding either way; off is slower).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str,
        revision: str,
        chat: bool | None = None,
        max_batch: int = 16,
        max_context: int | None = None,
        prefix_sharing: bool = True,
    ) -> None:
        self._model = model
        self._tok = tokenizer
        self._device = next(model.parameters()).device
        self._dtype = next(model.parameters()).dtype
        has_template = bool(getattr(tokenizer, "chat_template", None))
        if chat and not has_template:
            raise ScoringError(f"model {name} has no chat template; score it without --chat")
        self._chat = has_template if chat is None else chat
        self._max_batch = max(1, max_batch)
        self._max_context = max_context or _model_context(model, tokenizer)
        self.prefix_sharing = prefix_sharing
        self._identity = ModelIdentity(
            name=name,
            revision=revision,
            dtype=str(self._dtype).removeprefix("torch."),
            device=self._device.type,
            backend="transformers",
        )
        self._bos = _bos_to_add(tokenizer)
        self._pad = _pad_id(tokenizer)
        params = inspect.signature(model.forward).parameters
        # transformers renamed past_key_values to cache in 5.x; accept either.
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._variant_ids: dict[str, tuple[int, ...]] = {}
        self._plans: dict[tuple[OptionVariants, ...], _Plan] = {}
        self._prefix: tuple[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] | None = None
        self._lock = threading.Lock()
        self.stats = {"forward_tokens": 0, "shared_tokens_saved": 0}

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_pretrained(
        cls,
        path_or_id: str | Path,
        *,
        name: str,
        revision: str,
        device: str | None = None,
        chat: bool | None = None,
        local_files_only: bool = False,
        **kwargs: Any,
    ) -> TransformersBackend:
        """Load a model folder or hub id (already resolved by :mod:`scoring.loading`)."""
        from scoring.weights import quiet_hf_progress

        dev, dtype = pick_device(device)
        source = str(path_or_id)
        model: Any
        try:
            with quiet_hf_progress():
                tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local_files_only)
                model = AutoModelForCausalLM.from_pretrained(
                    source, dtype=dtype, local_files_only=local_files_only
                )
        except OSError as exc:
            raise ModelNotFoundError(f"cannot load model {name}: {_first_line(exc)}") from exc
        except (ValueError, KeyError) as exc:
            raise ScoringError(
                f"model {name} is not a causal language model transformers can load: "
                f"{_first_line(exc)}"
            ) from exc
        model.to(dev)
        model.eval()
        return cls(model, tokenizer, name=name, revision=revision, chat=chat, **kwargs)

    # -- Backend ------------------------------------------------------------------------

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    def set_revision(self, revision: str) -> None:
        """Record the revision once known (a hub model's commit, found after loading)."""
        self._identity = replace(self._identity, revision=revision)

    @property
    def is_chat(self) -> bool:
        return self._chat

    @property
    def max_context(self) -> int:
        return self._max_context

    @property
    def tokenizer(self) -> Any:
        return self._tok

    @property
    def model(self) -> Any:
        return self._model

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        if not getattr(self._tok, "chat_template", None):
            raise ScoringError(f"model {self._identity.name} has no chat template")
        text = self._tok.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=True
        )
        return str(text)

    def count_tokens(self, text: str) -> int:
        return len(self.encode(text))

    def encode(self, prompt: str) -> list[int]:
        """The token ids the model reads for a prompt (BOS included when expected)."""
        ids: list[int] = list(self._tok(prompt, add_special_tokens=False)["input_ids"])
        if self._bos is not None and (not ids or ids[0] != self._bos):
            ids.insert(0, self._bos)
        return ids

    def option_logprobs(
        self, prompts: Sequence[str], options: Sequence[OptionVariants]
    ) -> list[OptionLogprobs]:
        if len(options) < 1:
            raise ScoringError("no options to score")
        plan = self._plan(options)
        budget = self._max_context - plan.longest
        if budget < 2:
            raise ScoringError(f"context of {self._max_context} tokens is too short to score")
        encoded: list[tuple[list[int], bool]] = []
        for prompt in prompts:
            ids = self.encode(prompt)
            encoded.append(_cut_middle(ids, budget) if len(ids) > budget else (ids, False))
        order = sorted(range(len(prompts)), key=lambda i: (-len(encoded[i][0]), i))
        results: list[OptionLogprobs | None] = [None] * len(prompts)
        with self._lock, torch.inference_mode():
            for start in range(0, len(order), self._max_batch):
                chunk = order[start : start + self._max_batch]
                variant_lp = self._score_chunk([encoded[i][0] for i in chunk], plan)
                for row, i in enumerate(chunk):
                    results[i] = OptionLogprobs(
                        logprobs=_pool(variant_lp[row], plan),
                        token_ids=plan.token_ids,
                        missing=np.zeros(len(options), dtype=bool),
                        truncated=encoded[i][1],
                        prompt_tokens=len(encoded[i][0]),
                    )
        return [r for r in results if r is not None]

    def close(self) -> None:
        self._prefix = None

    # -- internals ------------------------------------------------------------------------

    def _plan(self, options: Sequence[OptionVariants]) -> _Plan:
        key = tuple(tuple(o) for o in options)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        token_ids = tuple(tuple(self._variant(v) for v in opt) for opt in key)
        for opt, ids in zip(key, token_ids, strict=True):
            if not opt:
                raise ScoringError("an option has no surface variant")
            if len(set(ids)) != len(ids):
                raise ScoringError(f"option variants {opt!r} tokenize identically")
        flat = [ids for opt in token_ids for ids in opt]
        first = tuple(dict.fromkeys(ids[0] for ids in flat))
        heads = {ids[:-1] for ids in flat if len(ids) > 1}
        rows = tuple(
            sorted(h for h in heads if not any(o != h and o[: len(h)] == h for o in heads))
        )
        cols = tuple(sorted({t for ids in flat for t in ids}))
        plan = _Plan(token_ids, first, rows, max(len(ids) for ids in flat), cols)
        self._plans[key] = plan
        return plan

    def _variant(self, text: str) -> tuple[int, ...]:
        ids = self._variant_ids.get(text)
        if ids is None:
            ids = tuple(self._tok(text, add_special_tokens=False)["input_ids"])
            if not ids:
                raise ScoringError(f"option variant {text!r} has no tokens")
            self._variant_ids[text] = ids
        return ids

    def _score_chunk(self, prompts: list[list[int]], plan: _Plan) -> list[list[float]]:
        """Log-probabilities of every variant after every prompt: [prompt][flat variant]."""
        one_row = plan.rows[0] if len(plan.rows) == 1 else ()
        feed = [ids + list(one_row) for ids in prompts]
        keep = 1 + len(one_row)
        need_cache = len(plan.rows) > 1
        logits, cache, mask = self._forward(feed, keep=keep, use_cache=need_cache)
        # Columns: only the variants' tokens leave the device, after the full log-softmax.
        cols = plan.vocab_cols
        index = torch.tensor(cols, device=logits.device)
        col = {tok: j for j, tok in enumerate(cols)}
        logp = _log_softmax_cols(logits, index)  # (B, keep, C), positions: 0 = after prompt
        first = logp[:, 0, :]
        cont: dict[tuple[int, ...], np.ndarray] = {}
        if one_row:
            for j in range(len(one_row)):
                cont[one_row[: j + 1]] = logp[:, j + 1, :]
        elif plan.rows:
            if cache is None or mask is None:
                raise ScoringError("the model returned no cache for the continuations")
            cont = self._continuations(cache, mask, len(prompts), plan.rows, index)
        out: list[list[float]] = []
        for b in range(len(prompts)):
            values: list[float] = []
            for opt in plan.token_ids:
                for ids in opt:
                    total = float(first[b, col[ids[0]]])
                    for t in range(1, len(ids)):
                        total += float(cont[ids[:t]][b, col[ids[t]]])
                    values.append(total)
            out.append(values)
        return out

    def _forward(
        self, feed: list[list[int]], *, keep: int, use_cache: bool
    ) -> tuple[torch.Tensor, Any, torch.Tensor | None]:
        """One left-padded pass, sharing the common prefix when it pays.

        Returns the logits of the last ``keep`` positions (B, keep, V), the cache (when
        asked for) and the attention mask over the cache's positions.
        """
        shared = _common_prefix_len(feed) if len(feed) > 1 and self.prefix_sharing else 0
        shared = min(shared, min(len(f) for f in feed) - keep)
        if shared >= MIN_SHARED_PREFIX:
            try:
                return self._forward_shared(feed, shared, keep=keep, use_cache=use_cache)
            except _Unshareable as exc:
                log.info("prefix sharing is off for %s: %s", self._identity.name, exc)
                self.prefix_sharing = False
        ids, mask = self._left_pad(feed)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        out = self._model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=use_cache,
            logits_to_keep=keep,
        )
        self.stats["forward_tokens"] += int(mask.sum())
        return out.logits, _cache_of(out) if use_cache else None, mask

    def _forward_shared(
        self, feed: list[list[int]], shared: int, *, keep: int, use_cache: bool
    ) -> tuple[torch.Tensor, Any, torch.Tensor | None]:
        prefix_kv, plen = self._prefix_for(feed, shared)
        batch = len(feed)
        suffix_ids, suffix_mask = self._left_pad([f[plen:] for f in feed])
        mask = torch.cat(
            [torch.ones(batch, plen, dtype=suffix_mask.dtype, device=self._device), suffix_mask],
            dim=1,
        )
        positions = (plen + suffix_mask.cumsum(-1) - 1).clamp(min=plen)
        cache = DynamicCache(
            ddp_cache_data=[
                (k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)) for k, v in prefix_kv
            ]
        )
        out = self._model(
            input_ids=suffix_ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=keep,
            **{self._cache_kw: cache},
        )
        self.stats["forward_tokens"] += int(suffix_mask.sum())
        self.stats["shared_tokens_saved"] += plen * (batch - 1)
        return out.logits, _cache_of(out) if use_cache else None, mask

    def _prefix_for(
        self, feed: list[list[int]], shared: int
    ) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], int]:
        """The KV cache of a common prefix: the previous batch's if it still fits."""
        if self._prefix is not None:
            ids, kv = self._prefix
            n = len(ids)
            if shared - PREFIX_REUSE_SLACK <= n <= shared and all(
                tuple(f[:n]) == ids for f in feed
            ):
                return kv, n
        prefix = feed[0][:shared]
        out = self._model(
            input_ids=torch.tensor([prefix], device=self._device),
            use_cache=True,
            logits_to_keep=1,
        )
        self.stats["forward_tokens"] += shared
        kv = _layers_kv(_cache_of(out))
        self._prefix = (tuple(prefix), kv)
        return kv, shared

    def _continuations(
        self,
        cache: Any,
        mask: torch.Tensor,
        batch: int,
        rows: tuple[tuple[int, ...], ...],
        index: torch.Tensor,
    ) -> dict[tuple[int, ...], np.ndarray]:
        """Second pass: every continuation row after every prompt, over the KV cache."""
        m = len(rows)
        width = max(len(r) for r in rows)
        cache.batch_repeat_interleave(m)
        ids = torch.full((batch * m, width), self._pad, dtype=torch.long, device=self._device)
        tail = torch.zeros(batch * m, width, dtype=mask.dtype, device=self._device)
        for b in range(batch):
            for j, row in enumerate(rows):
                ids[b * m + j, : len(row)] = torch.tensor(row, device=self._device)
                tail[b * m + j, : len(row)] = 1
        full_mask = torch.cat([mask.repeat_interleave(m, dim=0), tail], dim=1)
        start = mask.sum(-1).repeat_interleave(m).unsqueeze(1)  # next position per row
        positions = start + torch.arange(width, device=self._device).unsqueeze(0)
        out = self._model(
            input_ids=ids,
            attention_mask=full_mask,
            position_ids=positions,
            use_cache=False,
            logits_to_keep=0,
            **{self._cache_kw: cache},
        )
        self.stats["forward_tokens"] += int(tail.sum())
        logp = _log_softmax_cols(out.logits, index)
        result: dict[tuple[int, ...], np.ndarray] = {}
        for j, row in enumerate(rows):
            for t in range(len(row)):
                result[row[: t + 1]] = logp[j::m, t, :]
        return result

    def _left_pad(self, seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self._pad, dtype=torch.long)
        mask = torch.zeros(len(seqs), width, dtype=torch.long)
        for i, s in enumerate(seqs):
            if s:
                ids[i, width - len(s) :] = torch.tensor(s, dtype=torch.long)
                mask[i, width - len(s) :] = 1
        return ids.to(self._device), mask.to(self._device)


def _log_softmax_cols(logits: torch.Tensor, index: torch.Tensor) -> np.ndarray:
    """log-softmax over the full vocabulary, then only the wanted columns.

    In float64: the normaliser sums ~50k terms, and float32 leaves errors near 1e-5 nats.
    """
    logp = torch.log_softmax(logits.double(), dim=-1).index_select(-1, index)
    result: np.ndarray = logp.cpu().numpy()
    return result


def _pool(values: list[float], plan: _Plan) -> np.ndarray:
    """logsumexp over each option's variants (nats, float64)."""
    out = np.empty(len(plan.token_ids), dtype=np.float64)
    i = 0
    for k, opt in enumerate(plan.token_ids):
        chunk = np.asarray(values[i : i + len(opt)], dtype=np.float64)
        i += len(opt)
        top = chunk.max()
        out[k] = top if not np.isfinite(top) else top + math.log(float(np.exp(chunk - top).sum()))
    return np.minimum(out, 0.0)


def _cut_middle(ids: list[int], budget: int) -> tuple[list[int], bool]:
    head = budget // 2
    return ids[:head] + ids[len(ids) - (budget - head) :], True


def _common_prefix_len(seqs: list[list[int]]) -> int:
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for s in seqs[1:]:
        i = 0
        while i < n and s[i] == first[i]:
            i += 1
        n = i
    return n


def _cache_of(out: Any) -> Any:
    cache = getattr(out, "cache", None)
    return cache if cache is not None else getattr(out, "past_key_values", None)


class _Unshareable(Exception):
    """The model's cache is not a plain per-layer key/value cache (sliding windows,
    linear attention, ...): its prefix cannot be expanded over a batch."""


def _layers_kv(cache: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    layers = getattr(cache, "layers", None)
    if layers is None:
        raise _Unshareable(f"cache of type {type(cache).__name__}")
    kv = []
    for layer in layers:
        # exact type: subclasses (sliding windows) keep only part of the prefix
        if type(layer).__name__ != "DynamicLayer" or not getattr(layer, "is_initialized", True):
            raise _Unshareable(f"cache layer of type {type(layer).__name__}")
        kv.append((layer.keys, layer.values))
    return kv


def _bos_to_add(tokenizer: Any) -> int | None:
    """The BOS id if the tokenizer prepends one to plain text, else None."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return None
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    return int(bos) if with_special[:1] == [bos] and plain[:1] != [bos] else None


def _pad_id(tokenizer: Any) -> int:
    for attr in ("pad_token_id", "eos_token_id", "unk_token_id"):
        value = getattr(tokenizer, attr, None)
        if isinstance(value, int):
            return value
    return 0


def _model_context(model: Any, tokenizer: Any) -> int:
    candidates = []
    for attr in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(model.config, attr, None)
        if isinstance(value, int) and value > 0:
            candidates.append(value)
            break
    value = getattr(tokenizer, "model_max_length", None)
    if isinstance(value, int) and 0 < value < 10_000_000:
        candidates.append(value)
    return min(candidates) if candidates else FALLBACK_CONTEXT


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
