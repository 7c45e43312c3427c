"""The llama.cpp backend: a quantized GGUF model run in-process by ``llama-cpp-python``.

How one batch is scored (see :mod:`scoring.backend` for the contract):

1. Each prompt is tokenized by the model's own tokenizer (special tokens in the rendered
   chat text are parsed as such), BOS prepended exactly when the GGUF file says the
   model expects one, and cut from the middle if it would not fit the context.
2. The options' variants are tokenized on their own. Every variant's first token is read
   from the distribution right after the prompt; the leading tokens of longer variants
   (*continuations*) are fed after the prompt and the later tokens read from there
   (teacher forcing).
3. Prefix reuse: one sequence lives in llama.cpp's KV cache. Prompts are taken in token
   order, so that neighbours share the longest prefix, and each prompt evaluates only the
   tokens after the prefix it shares with the cached one (positions past it are removed
   from the cache). Prompts of one code differ in the response only: each costs its
   response, the answer cue and its continuations. :attr:`LlamaCppBackend.stats` counts
   evaluated and reused tokens.
4. The logits of every read position (the full vocabulary) are copied out in float64
   and log-softmaxed there; variants are pooled with logsumexp.

``llama_cpp`` is imported by this module only, never by ``import scoring``.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from scoring.backend import Backend, ModelIdentity, OptionLogprobs, OptionVariants, cut_middle
from scoring.chat_jinja import render_chat_template
from scoring.errors import ScoringError
from scoring.gguf_file import GGUFError, GGUFInfo
from scoring.kv_cache import common_prefix_len
from scoring.llama_amx import repacking_works
from scoring.machine import physical_cores
from scoring.variants import check_variant_ids, pool_variants

llama_cpp: Any
try:
    llama_cpp = importlib.import_module("llama_cpp")
except ImportError:  # the optional extra is not installed
    llama_cpp = None

log = logging.getLogger(__name__)

BACKEND_NAME = "llama.cpp"

#: Context allocated when the caller names none: the KV cache is allocated up front, and
#: a model's full context (32k, 128k) would take gigabytes; the engine's prompt budget is
#: 2,048 tokens by default.
DEFAULT_CONTEXT = 4096

#: Tokens per llama_decode call.
BATCH = 512

#: Keys and values are kept in float32 (llama.cpp's default is float16). Some models'
#: activations do not fit float16: with Gemma 3's keys in float16, one option's
#: log-probability moved by up to 0.7 nats with the number of tokens a call fed (the
#: kernels convert differently by batch shape), so prefix reuse changed the numbers. In
#: float32 what is left is the quantized kernels' shape-dependent rounding: up to about
#: 0.07 nats on Gemma 3, under 0.002 on SmolLM2. The cost is the cache's memory (twice
#: float16's), small next to the weights at the default context.
KV_TYPE = 0  # GGML_TYPE_F32
KV_BYTES = 4

INSTALL_HINT = (
    "the llama.cpp backend needs llama-cpp-python: pip install 'codecurve[llama]' "
    "(a CPU build, about 15 minutes to compile once); or score the file with "
    "--backend transformers"
)


def binding_version() -> str | None:
    """The installed llama-cpp-python's version, or None when it is not importable."""
    if llama_cpp is None:
        return None
    return str(getattr(llama_cpp, "__version__", "unknown"))


def amx_build() -> bool:
    """Whether the installed binding's CPU backend has llama.cpp's AMX kernels (built on
    an Intel Xeon of Sapphire Rapids or later)."""
    return bool(
        llama_cpp is not None and b"AMX_INT8 = 1" in bytes(llama_cpp.llama_print_system_info())
    )


_DEFAULTS_LOCK = threading.Lock()


@contextmanager
def _plain_cpu_buffers() -> Iterator[None]:
    """Load models with their weights in plain CPU buffers, not the "extra" buffer types
    that repack them (AMX, and the CPU's own repacking).

    For a binding whose AMX kernels crash (a GCC 12 build: :mod:`scoring.llama_amx`). The
    binding's ``Llama`` has no argument for the model parameter ``use_extra_bufts``; it
    reads the defaults once, while it loads, and those are changed for that time only.
    """
    low = llama_cpp.llama_cpp
    defaults = low.llama_model_default_params

    def plain() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    with _DEFAULTS_LOCK:
        low.llama_model_default_params = plain
        try:
            yield
        finally:
            low.llama_model_default_params = defaults


def gpu_build() -> bool:
    """Whether the installed binding was built with a GPU backend (Metal, CUDA, Vulkan)."""
    return bool(llama_cpp is not None and llama_cpp.llama_supports_gpu_offload())


def context_size(info: GGUFInfo, max_context: int | None = None) -> int:
    """The context a backend allocates: what was asked for (default
    :data:`DEFAULT_CONTEXT`), at most what the model was trained on."""
    trained = int(info.get("{arch}.context_length", 0) or 0) or DEFAULT_CONTEXT
    return min(max_context or DEFAULT_CONTEXT, trained)


def memory_needed(info: GGUFInfo, n_ctx: int) -> int:
    """Bytes the model holds on the CPU: its weights (the file, all of it read), the KV
    cache (:data:`KV_TYPE`), and a working margin (logits, scratch buffers)."""
    layers = int(info.get("{arch}.block_count", 0) or 0)
    width = int(info.get("{arch}.embedding_length", 0) or 0)
    heads = int(info.get("{arch}.attention.head_count", 0) or 0) or 1
    kv_heads = int(info.get("{arch}.attention.head_count_kv", 0) or 0) or heads
    head_dim = int(info.get("{arch}.attention.key_length", 0) or 0) or width // heads
    kv_cache = 2 * KV_BYTES * n_ctx * layers * kv_heads * head_dim
    return int(info.size * 1.05) + kv_cache + (256 << 20)


@dataclass(frozen=True)
class _Plan:
    token_ids: tuple[tuple[tuple[int, ...], ...], ...]  # per option, per variant
    rows: tuple[tuple[int, ...], ...]  # continuations to feed, none a prefix of another
    longest: int
    cols: np.ndarray  # every token id any variant uses, sorted (int64)


class LlamaCppBackend(Backend):
    """A GGUF causal LM in llama.cpp.

    Args:
        info: The file's checked header (:func:`scoring.gguf_file.read_gguf`).
        name: Identity name (``embedded:...`` or the file's absolute path).
        revision: The file's hash.
        chat: Use the model's chat template; None = when it has one.
        max_context: Context to allocate, in tokens; default the smaller of the model's
            and :data:`DEFAULT_CONTEXT`.
        threads: CPU threads; default the physical cores.
        gpu_layers: Layers offloaded to the GPU; default all on a GPU build, else 0.
        max_batch: Pairs per engine call (:attr:`batch_size`).
        prefix_reuse: Keep the shared prefix of consecutive prompts in the KV cache
            (results are equal to rounding either way; off evaluates every prompt whole).
    """

    def __init__(
        self,
        info: GGUFInfo,
        *,
        name: str,
        revision: str,
        chat: bool | None = None,
        max_context: int | None = None,
        threads: int | None = None,
        gpu_layers: int | None = None,
        max_batch: int = 16,
        prefix_reuse: bool = True,
    ) -> None:
        if llama_cpp is None:
            raise ScoringError(INSTALL_HINT)
        n_ctx = context_size(info, max_context)
        if gpu_layers is None:
            gpu_layers = -1 if gpu_build() else 0
        threads = threads or physical_cores()
        windowed = info.get("{arch}.attention.sliding_window") is not None
        # The AMX kernels only where they were seen to work (scoring.llama_amx).
        self.repacked = not amx_build() or repacking_works(llama_cpp, info.path)
        loading: AbstractContextManager[None] = (
            nullcontext() if self.repacked else _plain_cpu_buffers()
        )
        try:
            with loading:
                self._llm: Any = llama_cpp.Llama(
                    model_path=str(info.path),
                    n_ctx=n_ctx,
                    n_batch=BATCH,
                    n_ubatch=BATCH,
                    n_threads=threads,
                    n_threads_batch=threads,
                    n_gpu_layers=gpu_layers,
                    type_k=KV_TYPE,
                    type_v=KV_TYPE,
                    # A sliding-window cache drops old positions; prefix reuse needs them all.
                    swa_full=True if windowed else None,
                    verbose=False,
                )
        except (ValueError, RuntimeError) as exc:
            raise GGUFError(
                f"llama.cpp {binding_version()} cannot load {info.path} (architecture "
                f"{info.architecture!r}): an architecture this build does not know, or a "
                f"damaged file ({exc}); a newer llama-cpp-python may know it, or try "
                "--backend transformers"
            ) from exc
        model = self._llm.model
        if not llama_cpp.llama_model_has_decoder(model) or llama_cpp.llama_model_has_encoder(model):
            self._llm.close()
            raise GGUFError(f"{info.path} is not a decoder-only causal language model")
        self._ctx = self._llm.ctx
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        # Recurrent state cannot be rewound to a position: every prompt starts afresh.
        self._reuse = prefix_reuse and not (
            llama_cpp.llama_model_is_recurrent(model) or llama_cpp.llama_model_is_hybrid(model)
        )
        self._n_vocab = int(self._llm.n_vocab())
        # llama.cpp pads the context it allocates; the budget is the one asked for.
        self._n_ctx = min(n_ctx, int(self._llm.n_ctx()))
        self._batch = llama_cpp.llama_batch_init(BATCH, 0, 1)
        self._info = info
        self._template = str(info.get("tokenizer.chat_template") or "")
        if chat and not self._template:
            self.close()
            raise ScoringError(f"model {name} has no chat template; score it without --chat")
        self._chat = bool(self._template) if chat is None else chat
        self._max_batch = max(1, max_batch)
        self._bos = self._bos_to_add()
        self._identity = ModelIdentity(
            name=name,
            revision=revision,
            dtype=info.quantization,
            device="cpu" if gpu_layers == 0 else "gpu",
            backend=f"{BACKEND_NAME} {binding_version()}",
        )
        self._cached: list[int] = []  # the tokens whose keys and values sit in the cache
        self._variant_ids: dict[str, tuple[int, ...]] = {}
        self._plans: dict[tuple[OptionVariants, ...], _Plan] = {}
        self._lock = threading.Lock()
        self.threads = threads
        self.gpu_layers = gpu_layers
        self.stats = {"evaluated_tokens": 0, "reused_tokens": 0}

    # -- Backend ------------------------------------------------------------------------

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    @property
    def is_chat(self) -> bool:
        return self._chat

    @property
    def max_context(self) -> int:
        return self._n_ctx

    @property
    def batch_size(self) -> int:
        return self._max_batch

    @property
    def info(self) -> GGUFInfo:
        return self._info

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        if not self._template:
            raise ScoringError(f"model {self._identity.name} has no chat template")
        return render_chat_template(self._template, messages, special_tokens=self._specials())

    def count_tokens(self, prompt: str) -> int:
        return len(self.encode(prompt))

    def encode(self, prompt: str) -> list[int]:
        """The token ids the model reads for a prompt (BOS included when expected)."""
        ids = self._tokenize(prompt)
        if self._bos is not None and (not ids or ids[0] != self._bos):
            ids.insert(0, self._bos)
        return ids

    def option_logprobs(
        self, prompts: Sequence[str], options: Sequence[OptionVariants]
    ) -> list[OptionLogprobs]:
        if len(options) < 1:
            raise ScoringError("no options to score")
        plan = self._plan(options)
        budget = self._n_ctx - plan.longest
        if budget < 2:
            raise ScoringError(f"context of {self._n_ctx} tokens is too short to score")
        encoded = [cut_middle(self.encode(p), budget) for p in prompts]
        # Token order: each prompt shares the longest prefix with the one before it.
        order = sorted(range(len(prompts)), key=lambda i: encoded[i][0])
        results: list[OptionLogprobs | None] = [None] * len(prompts)
        with self._lock:
            for i in order:
                ids, truncated = encoded[i]
                values = self._score_one(ids, plan)
                results[i] = OptionLogprobs(
                    logprobs=pool_variants(values),
                    token_ids=plan.token_ids,
                    missing=np.zeros(len(options), dtype=bool),
                    truncated=truncated,
                    prompt_tokens=len(ids),
                )
        return [r for r in results if r is not None]

    def close(self) -> None:
        llm = getattr(self, "_llm", None)
        if llm is None:
            return
        batch = getattr(self, "_batch", None)
        if batch is not None and llama_cpp is not None:
            llama_cpp.llama_batch_free(batch)
            self._batch = None
        llm.close()
        self._llm = None
        self._cached = []

    # -- internals ------------------------------------------------------------------------

    def _tokenize(self, text: str) -> list[int]:
        if not text:
            return []
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def _bos_to_add(self) -> int | None:
        """The BOS id if the model's tokenizer prepends one (the GGUF ``add_bos_token``
        flag, or llama.cpp's default for the tokenizer type), else None."""
        bos = int(self._llm.token_bos())
        if bos < 0:
            return None
        with_special = list(self._llm.tokenize(b"a", add_bos=True, special=False))
        return bos if with_special[:1] == [bos] else None

    def _specials(self) -> dict[str, str]:
        """The special tokens' texts a chat template may use, as transformers passes them."""
        out: dict[str, str] = {}
        for name, key in (
            ("bos_token", "tokenizer.ggml.bos_token_id"),
            ("eos_token", "tokenizer.ggml.eos_token_id"),
            ("unk_token", "tokenizer.ggml.unknown_token_id"),
            ("pad_token", "tokenizer.ggml.padding_token_id"),
        ):
            token = self._info.get(key)
            if isinstance(token, int) and 0 <= token < self._n_vocab:
                text = self._llm.detokenize([token], special=True)
                out[name] = text.decode("utf-8", errors="replace")
        return out

    def _plan(self, options: Sequence[OptionVariants]) -> _Plan:
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
        cols = np.array(sorted({t for ids in flat for t in ids}), dtype=np.int64)
        plan = _Plan(token_ids, rows, max(len(ids) for ids in flat), cols)
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

    def _score_one(self, ids: list[int], plan: _Plan) -> list[list[float]]:
        """Per option, per variant, ln P(variant | prompt); the prompt stays cached."""
        keep = common_prefix_len([self._cached, ids]) if self._reuse and self._cached else 0
        keep = min(keep, len(ids) - 1)  # the last prompt token is fed to read after it
        keep = self._forget_from(keep)
        self.stats["reused_tokens"] += keep
        n = len(ids)
        first_row = plan.rows[0] if plan.rows else ()
        # Reads: after the prompt, then after each leading token of the first continuation.
        feed = ids[keep:] + list(first_row)
        reads = [n - 1 - keep + t for t in range(len(first_row) + 1)]
        logp = self._decode(feed, keep, reads, plan.cols)
        self._cached = list(ids)
        after: dict[tuple[int, ...], np.ndarray] = {(): logp[0]}
        for t in range(len(first_row)):
            after[first_row[: t + 1]] = logp[t + 1]
        for row in plan.rows[1:]:
            if self._forget_from(n) < n:  # not rewound: the prompt is evaluated again
                self._decode(ids, 0, [], plan.cols)
                self._cached = list(ids)
            rows_lp = self._decode(list(row), n, list(range(len(row))), plan.cols)
            for t in range(len(row)):
                after[row[: t + 1]] = rows_lp[t]
        self._forget_from(n)
        col = {int(tok): j for j, tok in enumerate(plan.cols)}
        return [
            [sum(float(after[v[:t]][col[v[t]]]) for t in range(len(v))) for v in opt]
            for opt in plan.token_ids
        ]

    def _forget_from(self, position: int) -> int:
        """Drop every cached position from ``position`` on; the positions kept (0 when
        the cache could not be rewound and was cleared instead)."""
        if position > 0 and llama_cpp.llama_memory_seq_rm(self._memory, 0, position, -1):
            del self._cached[position:]
            return position
        llama_cpp.llama_memory_clear(self._memory, True)
        self._cached = []
        return 0

    def _decode(
        self, tokens: list[int], start: int, reads: list[int], cols: np.ndarray
    ) -> list[np.ndarray]:
        """Feed ``tokens`` at positions ``start...``; the log-softmax (float64, full
        vocabulary) at each of ``reads`` (indices into ``tokens``), only ``cols`` kept."""
        wanted = set(reads)
        out: dict[int, np.ndarray] = {}
        batch = self._batch
        for lo in range(0, len(tokens), BATCH):
            chunk = tokens[lo : lo + BATCH]
            batch.n_tokens = len(chunk)
            for j, tok in enumerate(chunk):
                batch.token[j] = tok
                batch.pos[j] = start + lo + j
                batch.n_seq_id[j] = 1
                batch.seq_id[j][0] = 0
                batch.logits[j] = (lo + j) in wanted
            code = llama_cpp.llama_decode(self._ctx, batch)
            if code != 0:
                self._cached = []
                llama_cpp.llama_memory_clear(self._memory, True)
                raise ScoringError(f"llama.cpp failed to evaluate the prompt (llama_decode {code})")
            self.stats["evaluated_tokens"] += len(chunk)
            for j in range(len(chunk)):
                if (lo + j) in wanted:
                    out[lo + j] = self._log_softmax(j, cols)
        return [out[r] for r in reads]

    def _log_softmax(self, index: int, cols: np.ndarray) -> np.ndarray:
        pointer = llama_cpp.llama_get_logits_ith(self._ctx, index)
        logits = np.ctypeslib.as_array(
            ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(self._n_vocab,)
        ).astype(np.float64)
        top = logits.max()
        lse = top + np.log(np.exp(logits - top).sum())
        result: np.ndarray = logits[cols] - lse
        return result
