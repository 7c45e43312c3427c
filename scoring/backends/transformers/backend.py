"""The transformers backend: any Hugging Face causal LM, a local folder or a GGUF file.

How one batch is scored (see :mod:`scoring.backend` for the contract; encoding, the
options' plan, the order, the lock and the pooling are written once in
:class:`scoring.backends.local.LocalBackend`):

1. Each prompt is tokenized on its own (the model's BOS prepended if it expects one) and
   cut from the middle if it would not fit the context.
2. The options' surface variants are tokenized on their own. Every variant's first token
   is read from the distribution right after the prompt. Longer variants are
   teacher-forced: their leading tokens (a *continuation*, e.g. the space of " 3" in
   tokenizers that split it off) are fed after the prompt and the later tokens read from
   the positions that follow.
3. Prefix sharing: prompts of one code share a long prefix (templates put the response
   last). The batch's longest common token prefix is run once, at batch size one, and
   its KV cache is kept: the next batch of the same code reuses it, and a batch of the
   next code reuses the part both prefixes have in common (the instructions). The
   prefix pass's hidden states are kept with its cache (a few hundred kilobytes:
   no computation), so that a position inside a shared prefix has its state for the
   features.
4. Packing (the default where the model allows a custom mask: sdpa or eager attention,
   no sliding windows): the prompts' suffixes after the prefix are laid end to end in
   one row, with a block-diagonal causal mask and each token at the position it would
   have alone; no padding is computed and the prefix cache is not copied per prompt.
   The row is a token tree (tree attention): prompts that go on alike past the shared
   prefix share those tokens' nodes, so the leave-one-sentence-out variants of a
   response (:mod:`scoring.evidence`) compute what comes before the sentence left out
   once; each continuation is a branch after its prompt, so every variant comes out of
   the same pass. Only the positions read get logits (``logits_to_keep`` as indices).
5. Otherwise (flash attention, sliding windows, one prompt): prompts are sorted by
   length, longest first, and left-padded, with position ids from the attention mask's
   cumulative sum; the prefix cache is expanded over the batch; a single distinct
   continuation is appended to every prompt, several get a second pass over the KV cache.
   Only the last positions' logits are computed (``logits_to_keep``).
6. The log-softmax runs over the full vocabulary in float64; variants of one option are
   pooled with logsumexp. Every layout computes the same tokens at the same positions,
   so results agree to float rounding (the tests hold them to 1e-4 nats of a plain
   one-prompt forward pass).
7. Features (only when the caller says where the responses lie): the output of the
   middle decoder layer (:func:`scoring.backends.local.feature_layer`; the residual
   stream, ``hidden_states[L // 2]``) is taken from the same pass by a forward hook on
   that layer, registered for that pass only. It is read at the answer position and at
   the response's positions: in a packed row at the prompt's suffix, in a left-padded
   row after its padding, and below a shared prefix from the prefix pass's kept states.
   The continuations' second pass is never read. (``output_hidden_states=True`` gives
   the same state, but records every layer's output besides.)

torch and transformers are imported by this module only, never by ``import scoring``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

from scoring.backend import ModelIdentity

# Bound under module names, so a test can make a cache unshareable here.
from scoring.backends.kv_cache import Unshareable as _Unshareable
from scoring.backends.kv_cache import cache_of as _cache_of
from scoring.backends.kv_cache import common_prefix_len as _common_prefix_len
from scoring.backends.kv_cache import layers_kv as _layers_kv
from scoring.backends.local import LocalBackend, OptionPlan, ScoredPrompt, States, feature_layer
from scoring.backends.transformers.model_config import bos_to_add, can_pack, model_context, pad_id
from scoring.devices import pick_device
from scoring.errors import NO_CHAT, ModelNotFoundError, ScoringError

log = logging.getLogger(__name__)

#: Share a prefix only when it is at least this many tokens (shorter saves nothing).
MIN_SHARED_PREFIX = 16

#: Keep the previous batch's prefix cache when it covers all but this many shared tokens.
PREFIX_REUSE_SLACK = 16

#: Most tokens packed into one row (the mask is quadratic in it).
PACK_TOKENS = 2048

#: Most prompt tokens per call the engine is asked to send when a batch holds a prompt of
#: over half of it (:attr:`Backend.batch_tokens`): long prompts (the engine's default
#: budget is 2,048 tokens) go one by one, so progress comes every prompt; batches of
#: ordinary prompts stay one call.
BATCH_TOKENS = PACK_TOKENS


@dataclass(frozen=True)
class _Prefix:
    """A shared prompt prefix: its KV cache, computed at batch size one, and its last
    hidden states (None when the model's cannot be read)."""

    ids: tuple[int, ...]
    kv: list[tuple[torch.Tensor, torch.Tensor]]
    states: torch.Tensor | None  # (len(ids), H)


class _Read(NamedTuple):
    """Where a left-padded pass left each prompt's hidden states (the features' layer)."""

    states: torch.Tensor  # (B, T, H): the decoder's output over the pass's tokens
    starts: list[int]  # per row, the column of the prompt's position 0 (may be negative)
    prefix: _Prefix | None  # the shared prefix before the pass's tokens, if any


class TransformersBackend(LocalBackend):
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
        packing: Pack a batch's prompts into one row without padding where the model
            allows it (equal to rounding; off uses left-padded rows).
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
        packing: bool = True,
    ) -> None:
        self._model = model
        self._tok = tokenizer
        self._device = next(model.parameters()).device
        self._dtype = next(model.parameters()).dtype
        has_template = bool(getattr(tokenizer, "chat_template", None))
        if chat and not has_template:
            raise ScoringError(
                f"model {name} has no chat template; score it with plain completion prompts",
                remedy=NO_CHAT,
            )
        self._chat = has_template if chat is None else chat
        self._max_context = max_context or model_context(model, tokenizer)
        self.prefix_sharing = prefix_sharing
        self.packing = packing
        self._packable = can_pack(model)
        self._identity = ModelIdentity(
            name=name,
            revision=revision,
            dtype=str(self._dtype).removeprefix("torch."),
            device=self._device.type,
            backend="transformers",
        )
        super().__init__(bos=bos_to_add(tokenizer), max_batch=max_batch)
        self._pad = pad_id(tokenizer)
        params = inspect.signature(model.forward).parameters
        # transformers renamed past_key_values to cache in 5.x; accept either.
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._decoder, self._width, self._layers = _feature_layer_of(model)
        self._prefix: _Prefix | None = None
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
        threads: int | None = None,
        **kwargs: Any,
    ) -> TransformersBackend:
        """Load a model folder or hub id (already resolved by :mod:`scoring.loading`).

        ``threads`` sets torch's CPU threads for the process (torch has one pool).
        """
        from scoring.weights import quiet_hf_progress

        if threads is not None:
            torch.set_num_threads(threads)
        source = str(path_or_id)
        dev, dtype = pick_device(device, model_dtype=_stored_dtype(source))
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
    def batch_tokens(self) -> int:
        return BATCH_TOKENS

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

    def close(self) -> None:
        self._prefix = None

    # -- LocalBackend ---------------------------------------------------------------------

    def _tokenize(self, text: str) -> list[int]:
        return list(self._tok(text, add_special_tokens=False)["input_ids"])

    def _hidden_width(self) -> int | None:
        return self._width

    def _layer_count(self) -> int | None:
        return self._layers

    def _score_encoded(
        self,
        prompts: list[list[int]],
        plan: OptionPlan,
        positions: list[tuple[int, ...]] | None,
    ) -> list[ScoredPrompt]:
        """Log-probabilities of every variant after every prompt, and the states asked for."""
        with torch.inference_mode():
            # Columns: only the variants' tokens leave the device, after the full log-softmax.
            index = torch.tensor(plan.vocab_cols, device=self._device)
            # A prompt longer than a packed row is better off alone, with the causal kernel.
            packable = (
                self.packing and self._packable and max(len(p) for p in prompts) < PACK_TOKENS
            )
            if packable and len(prompts) > 1:
                first, cont, states = self._packed(prompts, plan, index, positions)
            else:
                first, cont, states = self._padded(prompts, plan, index, positions)
        col = {tok: j for j, tok in enumerate(plan.vocab_cols)}
        out: list[ScoredPrompt] = []
        for b in range(len(prompts)):
            values: list[list[float]] = []
            for opt in plan.token_ids:
                per_variant: list[float] = []
                for ids in opt:
                    total = float(first[b, col[ids[0]]])
                    for t in range(1, len(ids)):
                        total += float(cont[ids[:t]][b, col[ids[t]]])
                    per_variant.append(total)
                values.append(per_variant)
            out.append(ScoredPrompt(values, None if states is None else states[b]))
        return out

    # -- internals ------------------------------------------------------------------------

    @contextmanager
    def _last_hidden(self, wanted: bool) -> Iterator[list[torch.Tensor]]:
        """While open, each pass appends the middle layer's output (B, T, H) to the list
        yielded (when ``wanted`` and the model's can be read; else it stays empty)."""
        seen: list[torch.Tensor] = []
        if not wanted or self._decoder is None:
            yield seen
            return

        def keep(module: Any, args: Any, output: Any) -> None:
            # A decoder layer returns its hidden states, alone or first of a tuple.
            seen.append(output if isinstance(output, torch.Tensor) else output[0])

        handle = self._decoder.register_forward_hook(keep)
        try:
            yield seen
        finally:
            handle.remove()

    def _padded(
        self,
        prompts: list[list[int]],
        plan: OptionPlan,
        index: torch.Tensor,
        positions: list[tuple[int, ...]] | None,
    ) -> tuple[np.ndarray, dict[tuple[int, ...], np.ndarray], list[States] | None]:
        """Left-padded rows; a single continuation rides along, several get a second pass."""
        one_row = plan.rows[0] if len(plan.rows) == 1 else ()
        feed = [ids + list(one_row) for ids in prompts]
        keep = 1 + len(one_row)
        need_cache = len(plan.rows) > 1
        logits, cache, mask, read = self._forward(
            feed, keep=keep, use_cache=need_cache, capture=positions is not None
        )
        logp = _log_softmax_cols(logits, index)  # (B, keep, C), positions: 0 = after prompt
        cont: dict[tuple[int, ...], np.ndarray] = {}
        if one_row:
            for j in range(len(one_row)):
                cont[one_row[: j + 1]] = logp[:, j + 1, :]
        elif plan.rows:
            if cache is None or mask is None:
                raise ScoringError("the model returned no cache for the continuations")
            cont = self._continuations(cache, mask, len(prompts), plan.rows, index)
        states: list[States] | None = None
        if positions is not None and read is not None:
            states = [
                _read_states(
                    read.states,
                    b,
                    _after(read.starts[b]),
                    read.prefix,
                    len(ids),
                    positions[b],
                )
                for b, ids in enumerate(prompts)
            ]
        return logp[:, 0, :], cont, states

    def _packed(
        self,
        prompts: list[list[int]],
        plan: OptionPlan,
        index: torch.Tensor,
        positions: list[tuple[int, ...]] | None,
    ) -> tuple[np.ndarray, dict[tuple[int, ...], np.ndarray], list[States] | None]:
        """Prompts packed into one row, no padding: a block-diagonal causal mask.

        The common prefix is computed once (its cache reused while batches share it);
        each prompt's suffix follows it, attending to the prefix and to itself only, with
        the positions it would have alone. Each continuation row is a branch after its
        prompt's suffix (tree attention), so every variant is read in the same pass.
        Groups are cut at :data:`PACK_TOKENS` so the mask stays small.
        """
        shared = _common_prefix_len(prompts) if self.prefix_sharing else 0
        shared = min(shared, min(len(p) for p in prompts) - 1)
        prefix: _Prefix | None = None
        if shared >= MIN_SHARED_PREFIX:
            try:
                prefix = self._prefix_for(prompts, shared)
            except _Unshareable as exc:
                log.info("prefix sharing is off for %s: %s", self._identity.name, exc)
                self.prefix_sharing = False
        plen = 0 if prefix is None else len(prefix.ids)
        batch, width = len(prompts), len(plan.vocab_cols)
        first = np.empty((batch, width))
        cont: dict[tuple[int, ...], np.ndarray] = {}
        for row in plan.rows:
            for t in range(len(row)):
                cont[row[: t + 1]] = np.empty((batch, width))
        states: list[States] | None = None if positions is None else [{} for _ in prompts]
        branch_tokens = sum(len(r) for r in plan.rows)
        group: list[int] = []
        tree = _Tree(plen)  # the group's, to count what each prompt adds to the row
        size = 0
        for b, ids in enumerate(prompts):
            need = tree.missing(ids[plen:]) + branch_tokens
            if group and size + need > PACK_TOKENS:
                self._pack_group(
                    prompts, group, prefix, plan, index, first, cont, positions, states
                )
                group, size, tree = [], 0, _Tree(plen)
                need = len(ids) - plen + branch_tokens
            tree.add(ids[plen:])
            group.append(b)
            size += need
        self._pack_group(prompts, group, prefix, plan, index, first, cont, positions, states)
        return first, cont, states

    def _pack_group(
        self,
        prompts: list[list[int]],
        group: list[int],
        prefix: _Prefix | None,
        plan: OptionPlan,
        index: torch.Tensor,
        first: np.ndarray,
        cont: dict[tuple[int, ...], np.ndarray],
        positions: list[tuple[int, ...]] | None,
        states: list[States] | None,
    ) -> None:
        """One packed row: the group's suffixes as a token tree (:class:`_Tree`), each
        token attending to the prefix and to its own ancestors."""
        plen = 0 if prefix is None else len(prefix.ids)
        tree = _Tree(plen)
        paths = [tree.add(prompts[b][plen:]) for b in group]
        reads: dict[int, list[tuple[int, tuple[int, ...] | None]]] = {}
        for b, path in zip(group, paths, strict=True):
            reads.setdefault(path[-1], []).append((b, None))
        for end in dict.fromkeys(path[-1] for path in paths):  # an end shared: once
            # The prompts that end here (a node may also be another's continuation).
            ends = [b for b, context in reads[end] if context is None]
            for row in plan.rows:
                node = end
                for t, token in enumerate(row):
                    node = tree.child(node, token)
                    reads.setdefault(node, []).extend((b, row[: t + 1]) for b in ends)
        keep = sorted(reads)
        dev = self._device
        n = len(tree.ids)
        mask = torch.zeros(1, 1, n, plen + n, dtype=self._dtype, device=dev)
        allowed = torch.from_numpy(tree.ancestry()).to(dev)
        mask[0, 0, :, plen:].masked_fill_(~allowed, torch.finfo(self._dtype).min)
        kwargs: dict[str, Any] = {}
        if prefix is not None:
            kwargs[self._cache_kw] = DynamicCache(ddp_cache_data=prefix.kv)
        with self._last_hidden(states is not None) as seen:
            out = self._model(
                input_ids=torch.tensor([tree.ids], device=dev),
                attention_mask=mask,
                position_ids=torch.tensor([tree.positions], device=dev),
                use_cache=prefix is not None,
                logits_to_keep=torch.tensor(keep, device=dev),
                **kwargs,
            )
        self.stats["forward_tokens"] += n
        self.stats["shared_tokens_saved"] += (
            plen * len(group) + sum(len(prompts[b]) for b in group) - plen * len(group) - n
        )
        logp = _log_softmax_cols(out.logits, index)[0]  # (len(keep), C)
        for r, node in enumerate(keep):
            for b, context in reads[node]:
                if context is None:
                    first[b] = logp[r]
                else:
                    cont[context][b] = logp[r]
        if states is not None and positions is not None and seen:
            for b, path in zip(group, paths, strict=True):
                states[b] = _read_states(
                    seen[0],
                    0,
                    _along(path, plen),
                    prefix,
                    len(prompts[b]),
                    positions[b],
                )

    def _forward(
        self, feed: list[list[int]], *, keep: int, use_cache: bool, capture: bool
    ) -> tuple[torch.Tensor, Any, torch.Tensor | None, _Read | None]:
        """One left-padded pass, sharing the common prefix when it pays.

        Returns the logits of the last ``keep`` positions (B, keep, V), the cache (when
        asked for), the attention mask over the cache's positions, and (when ``capture``
        and the model's can be read) where the pass left its hidden states.
        """
        shared = _common_prefix_len(feed) if len(feed) > 1 and self.prefix_sharing else 0
        shared = min(shared, min(len(f) for f in feed) - keep)
        if shared >= MIN_SHARED_PREFIX:
            try:
                return self._forward_shared(
                    feed, shared, keep=keep, use_cache=use_cache, capture=capture
                )
            except _Unshareable as exc:
                log.info("prefix sharing is off for %s: %s", self._identity.name, exc)
                self.prefix_sharing = False
        ids, mask = self._left_pad(feed)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with self._last_hidden(capture) as seen:
            out = self._model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=positions,
                use_cache=use_cache,
                logits_to_keep=keep,
            )
        self.stats["forward_tokens"] += int(mask.sum())
        width = ids.shape[1]
        read = _Read(seen[0], [width - len(f) for f in feed], None) if seen else None
        return out.logits, _cache_of(out) if use_cache else None, mask, read

    def _forward_shared(
        self, feed: list[list[int]], shared: int, *, keep: int, use_cache: bool, capture: bool
    ) -> tuple[torch.Tensor, Any, torch.Tensor | None, _Read | None]:
        prefix = self._prefix_for(feed, shared)
        plen = len(prefix.ids)
        batch = len(feed)
        suffix_ids, suffix_mask = self._left_pad([f[plen:] for f in feed])
        mask = torch.cat(
            [torch.ones(batch, plen, dtype=suffix_mask.dtype, device=self._device), suffix_mask],
            dim=1,
        )
        positions = (plen + suffix_mask.cumsum(-1) - 1).clamp(min=plen)
        cache = DynamicCache(
            ddp_cache_data=[
                (k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)) for k, v in prefix.kv
            ]
        )
        with self._last_hidden(capture) as seen:
            out = self._model(
                input_ids=suffix_ids,
                attention_mask=mask,
                position_ids=positions,
                use_cache=True,
                logits_to_keep=keep,
                **{self._cache_kw: cache},
            )
        self.stats["forward_tokens"] += int(suffix_mask.sum())
        self.stats["shared_tokens_saved"] += plen * batch
        width = suffix_ids.shape[1]
        read = _Read(seen[0], [width - len(f) for f in feed], prefix) if seen else None
        return out.logits, _cache_of(out) if use_cache else None, mask, read

    def _prefix_for(self, feed: list[list[int]], shared: int) -> _Prefix:
        """The KV cache of a common prefix, at batch size one, and its hidden states.

        The previous batch's is reused when it still covers nearly all of the shared
        tokens (the next batch of the same code). Otherwise the part both prefixes have
        in common (the instructions before a new code's name) is kept and only the rest
        is computed.
        """
        common = 0
        previous: _Prefix | None = self._prefix
        if previous is not None:
            n = len(previous.ids)
            if shared - PREFIX_REUSE_SLACK <= n <= shared and all(
                tuple(f[:n]) == previous.ids for f in feed
            ):
                return previous
            common = _common_prefix_len([list(previous.ids), feed[0][:shared]])
            if common == shared:
                # The previous prefix runs on past this batch's and holds it whole.
                return _Prefix(
                    previous.ids[:shared],
                    [(k[:, :, :shared], v[:, :, :shared]) for k, v in previous.kv],
                    None if previous.states is None else previous.states[:shared],
                )
        prefix = feed[0][:shared]
        kwargs: dict[str, Any] = {}
        if previous is not None and common >= MIN_SHARED_PREFIX:
            base = [(k[:, :, :common], v[:, :, :common]) for k, v in previous.kv]
            kwargs[self._cache_kw] = DynamicCache(ddp_cache_data=base)
        else:
            common = 0
        # The states cost no computation and are kept whether or not this call wants
        # features: a later call that does may reuse the prefix.
        with self._last_hidden(True) as seen:
            out = self._model(
                input_ids=torch.tensor([prefix[common:]], device=self._device),
                position_ids=torch.arange(common, shared, device=self._device).unsqueeze(0),
                use_cache=True,
                logits_to_keep=1,
                **kwargs,
            )
        self.stats["forward_tokens"] += shared - common
        kv = _layers_kv(_cache_of(out))
        states: torch.Tensor | None = None
        if seen:
            states = seen[0][0]
            if common:
                earlier = None if previous is None else previous.states
                states = None if earlier is None else torch.cat([earlier[:common], states])
        self._prefix = _Prefix(tuple(prefix), kv, states)
        return self._prefix

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


class _Tree:
    """A packed row's tokens as a tree: prompts (and the options' continuations after
    them) that begin with the same tokens share those tokens' nodes, which are computed
    once. The leave-one-sentence-out variants of a response share everything before
    the sentence left out. Nodes are numbered in the order they are added, a parent
    before its children; a node's position is the one its token has in its prompt.
    """

    def __init__(self, offset: int) -> None:
        self.offset = offset  # the position of a root's children (the shared prefix's length)
        self.ids: list[int] = []
        self.positions: list[int] = []
        self.parents: list[int] = []
        self._children: dict[tuple[int, int], int] = {}

    def child(self, parent: int, token: int) -> int:
        """The node of ``token`` after ``parent`` (-1: the root), added if new."""
        node = self._children.get((parent, token))
        if node is None:
            node = len(self.ids)
            self._children[(parent, token)] = node
            self.ids.append(token)
            self.positions.append(self.offset if parent < 0 else self.positions[parent] + 1)
            self.parents.append(parent)
        return node

    def add(self, tokens: Sequence[int]) -> list[int]:
        """The nodes of a prompt's tokens after the shared prefix (at least one)."""
        path: list[int] = []
        node = -1
        for token in tokens:
            node = self.child(node, token)
            path.append(node)
        return path

    def missing(self, tokens: Sequence[int]) -> int:
        """How many nodes :meth:`add` would add for ``tokens``."""
        node = -1
        for k, token in enumerate(tokens):
            found = self._children.get((node, token))
            if found is None:
                return len(tokens) - k
            node = found
        return 0

    def ancestry(self) -> np.ndarray:
        """(n, n) bool: whether node j is node i or one of its ancestors (what i attends
        to besides the shared prefix)."""
        n = len(self.ids)
        seen = np.zeros((n, n), dtype=bool)
        for node, parent in enumerate(self.parents):
            if parent >= 0:
                seen[node, : parent + 1] = seen[parent, : parent + 1]
            seen[node, node] = True
        return seen


def _log_softmax_cols(logits: torch.Tensor, index: torch.Tensor) -> np.ndarray:
    """log-softmax over the full vocabulary, then only the wanted columns.

    In float64: the normaliser sums ~50k terms, and float32 leaves errors near 1e-5 nats.
    """
    logp = torch.log_softmax(logits.double(), dim=-1).index_select(-1, index)
    result: np.ndarray = logp.cpu().numpy()
    return result


def _after(start: int) -> Callable[[int], int]:
    """A row's columns when its prompt's position 0 is at column ``start``."""
    return lambda position: start + position


def _along(path: list[int], offset: int) -> Callable[[int], int]:
    """A packed prompt's columns: its tree ``path`` from position ``offset`` on."""
    return lambda position: path[position - offset]


def _read_states(
    hidden: torch.Tensor,
    row: int,
    column: Callable[[int], int],
    prefix: _Prefix | None,
    length: int,
    positions: tuple[int, ...],
) -> States:
    """One prompt's hidden states at the answer position and at ``positions``.

    Args:
        hidden: A pass's decoder output (rows, T, H).
        row: The prompt's row in it.
        column: The column of a position of the prompt at or past the shared prefix.
        prefix: The shared prefix before the pass: positions below its length are read
            from its kept states (left out when it kept none).
        length: The prompt's tokens.
        positions: The other positions to read.
    """
    plen = 0 if prefix is None else len(prefix.ids)
    wanted = sorted({*positions, length - 1})
    here = [p for p in wanted if p >= plen]
    values = hidden[row, torch.tensor([column(p) for p in here], device=hidden.device)]
    found = values.float().cpu().numpy()
    states: States = {p: found[k] for k, p in enumerate(here)}
    earlier = [p for p in wanted if p < plen]
    if earlier and prefix is not None and prefix.states is not None:
        kept = prefix.states[torch.tensor(earlier, device=prefix.states.device)]
        states.update(zip(earlier, kept.float().cpu().numpy(), strict=True))
    return states


def _feature_layer_of(model: Any) -> tuple[Any, int | None, int | None]:
    """The decoder layer whose output the features read
    (:func:`~scoring.backends.local.feature_layer` of the causal LM's ``layers``), the
    hidden width and the number of layers; (None, None, None) when the model has no such
    list of layers."""
    decoder = getattr(model, "base_model", None)
    layers = getattr(decoder, "layers", None)
    width = getattr(getattr(model, "config", None), "hidden_size", None)
    if decoder is None or decoder is model or not isinstance(layers, torch.nn.ModuleList):
        return None, None, None
    if not isinstance(width, int) or len(layers) < 2:
        return None, None, None
    return layers[feature_layer(len(layers)) - 1], width, len(layers)


def _stored_dtype(source: str) -> str | None:
    """The dtype a local model folder's config says its weights are in, if it says."""
    import json

    try:
        config = json.loads((Path(source) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = config.get("dtype") or config.get("torch_dtype") if isinstance(config, dict) else None
    return value if isinstance(value, str) else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
