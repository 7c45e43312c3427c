"""The llama.cpp backend: a quantized GGUF model run in-process by ``llama-cpp-python``.

How one batch is scored (see :mod:`scoring.backend` for the contract; encoding, the
options' plan, the lock and the pooling are written once in
:class:`scoring.backends.local.LocalBackend`):

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
5. Features (only when the caller says where the responses lie): the middle layer's
   hidden states (:func:`scoring.backends.local.feature_layer`) come from the same
   ``llama_decode``, read by an eval callback (the context's ``cb_eval``, installed at
   load) from the graph's ``l_out-{n}`` tensor, the residual stream after layer ``n``
   (llama.cpp's model builders name each layer's output so). Below the last layer
   llama.cpp computes every token of a batch, so the tensor holds a row per token fed and
   no position needs marking as an output: reading the features adds no LM-head row and
   leaves every logit as it was. Under prefix reuse, a pooled position inside the reused
   prefix is not evaluated again: its state is the one captured when it was evaluated.
   The order of one call is known before its first decode, so each prompt's pass also
   keeps the positions that later prompts of the call will pool inside the prefix they
   reuse from it; a position evaluated by an earlier call is used when that call
   captured it, and otherwise left out of the pool (the answer position is always
   evaluated now). Idle, the callback costs a Python call per graph node (about a
   millisecond per decode); ``features=False`` leaves it out.

``llama_cpp`` is imported by this module only, never by ``import scoring``.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from codebooks.errors import Remedy
from scoring.backend import ModelIdentity
from scoring.backends.gguf_file import GGUFError, GGUFInfo
from scoring.backends.kv_cache import common_prefix_len
from scoring.backends.llama.amx import repacking_works
from scoring.backends.llama.chat_jinja import render_chat_template
from scoring.backends.local import LocalBackend, OptionPlan, ScoredPrompt, States, feature_layer
from scoring.errors import LLAMA_EXTRA, NO_CHAT, ScoringError
from scoring.machine import physical_cores

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


def states_tensor(layers: int) -> bytes:
    """The graph tensor of the features' layer in a model of ``layers`` layers: the output
    of layer ``feature_layer(layers) - 1`` (counted from 0), one row per token fed."""
    return f"l_out-{feature_layer(layers) - 1}".encode()


INSTALL_HINT = (
    "the llama.cpp backend needs llama-cpp-python, which is not installed: install "
    "codecurve's llama extra (a CPU build, about 15 minutes to compile once), or score "
    "the file with transformers"
)
#: What to do without the binding: install it, or run the file in transformers.
INSTALL_REMEDIES = (
    LLAMA_EXTRA,
    Remedy("retry", "score the file with transformers", {"backend": "transformers"}),
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
def _load_defaults(*, plain_buffers: bool, eval_callback: Any) -> Iterator[None]:
    """Load a model with defaults the binding's ``Llama`` has no argument for.

    ``plain_buffers``: the weights in plain CPU buffers, not the "extra" buffer types
    that repack them (AMX, and the CPU's own repacking), for a binding whose AMX kernels
    crash (a GCC 12 build: :mod:`scoring.backends.llama.amx`). ``eval_callback``: the context's
    ``cb_eval`` (the features' reader), or None. ``Llama`` reads the model's and the
    context's defaults once, while it loads; they are changed for that time only.
    """
    low = llama_cpp.llama_cpp
    model_defaults = low.llama_model_default_params
    context_defaults = low.llama_context_default_params

    def plain() -> Any:
        params = model_defaults()
        params.use_extra_bufts = False
        return params

    def with_callback() -> Any:
        params = context_defaults()
        params.cb_eval = eval_callback
        return params

    with _DEFAULTS_LOCK:
        if plain_buffers:
            low.llama_model_default_params = plain
        if eval_callback is not None:
            low.llama_context_default_params = with_callback
        try:
            yield
        finally:
            low.llama_model_default_params = model_defaults
            low.llama_context_default_params = context_defaults


def _ggml() -> Any:
    """The binding's ggml library, its functions the eval callback uses declared; None
    when this binding does not expose it (then no features)."""
    try:
        lib = importlib.import_module("llama_cpp._ggml").libggml
        lib.ggml_get_name.restype = ctypes.c_char_p
        lib.ggml_get_name.argtypes = [ctypes.c_void_p]
        lib.ggml_nelements.restype = ctypes.c_int64
        lib.ggml_nelements.argtypes = [ctypes.c_void_p]
        lib.ggml_nbytes.restype = ctypes.c_size_t
        lib.ggml_nbytes.argtypes = [ctypes.c_void_p]
        lib.ggml_backend_tensor_get.restype = None
        lib.ggml_backend_tensor_get.argtypes = [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_size_t,
        ]
    except (ImportError, AttributeError, OSError):
        return None
    return lib


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


class LlamaCppBackend(LocalBackend):
    """A GGUF causal LM in llama.cpp.

    Args:
        info: The file's checked header (:func:`scoring.backends.gguf_file.read_gguf`).
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
        features: Install the eval callback that reads the hidden states, so that
            features can be returned (:attr:`feature_layout`); False saves its idle cost.
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
        features: bool = True,
    ) -> None:
        if llama_cpp is None:
            raise ScoringError(INSTALL_HINT, remedy=INSTALL_REMEDIES)
        n_ctx = context_size(info, max_context)
        if gpu_layers is None:
            gpu_layers = -1 if gpu_build() else 0
        threads = threads or physical_cores()
        windowed = info.get("{arch}.attention.sliding_window") is not None
        # The AMX kernels only where they were seen to work (scoring.backends.llama.amx).
        self.repacked = not amx_build() or repacking_works(llama_cpp, info.path)
        # The features' reader: set before the context exists, for its whole life.
        self._capturing = False
        self._captured: list[np.ndarray | None] = []
        self._lib = _ggml() if features else None
        self._on_eval = (
            None
            if self._lib is None
            else llama_cpp.llama_cpp.ggml_backend_sched_eval_callback(self._eval)
        )
        try:
            with _load_defaults(plain_buffers=not self.repacked, eval_callback=self._on_eval):
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
                "transformers",
                remedy=INSTALL_REMEDIES[1],
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
            raise ScoringError(
                f"model {name} has no chat template; score it with plain completion prompts",
                remedy=NO_CHAT,
            )
        self._chat = bool(self._template) if chat is None else chat
        super().__init__(bos=self._bos_to_add(), max_batch=max_batch)
        self._identity = ModelIdentity(
            name=name,
            revision=revision,
            dtype=info.quantization,
            device="cpu" if gpu_layers == 0 else "gpu",
            backend=f"{BACKEND_NAME} {binding_version()}",
        )
        self._cached: list[int] = []  # the tokens whose keys and values sit in the cache
        self._states: States = {}  # hidden states captured at cached positions
        self._layers = int(llama_cpp.llama_model_n_layer(model))
        self._states_tensor = states_tensor(self._layers)
        usable = self._on_eval is not None and self._layers >= 2
        self._width = self._probe_width() if usable else None
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
        self._states = {}

    # -- LocalBackend ---------------------------------------------------------------------

    def _tokenize(self, text: str) -> list[int]:
        if not text:
            return []
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def _hidden_width(self) -> int | None:
        return self._width

    def _layer_count(self) -> int | None:
        return None if self._width is None else self._layers

    def _groups(self, prompts: list[list[int]]) -> list[list[int]]:
        # Token order: each prompt shares the longest prefix with the one before it.
        order = sorted(range(len(prompts)), key=lambda i: prompts[i])
        return [order] if order else []

    def _score_encoded(
        self,
        prompts: list[list[int]],
        plan: OptionPlan,
        positions: list[tuple[int, ...]] | None,
    ) -> list[ScoredPrompt]:
        cols = np.array(plan.vocab_cols, dtype=np.int64)
        later = (
            [set[int]() for _ in prompts] if positions is None else self._later(prompts, positions)
        )
        out: list[ScoredPrompt] = []
        for k, ids in enumerate(prompts):
            wanted = None if positions is None else positions[k]
            values, states = self._score_one(ids, plan, cols, wanted, later[k])
            out.append(ScoredPrompt(values, states))
        return out

    # -- internals ------------------------------------------------------------------------

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

    def _score_one(
        self,
        ids: list[int],
        plan: OptionPlan,
        cols: np.ndarray,
        wanted: tuple[int, ...] | None,
        later: set[int],
    ) -> tuple[list[list[float]], States | None]:
        """Per option, per variant, ln P(variant | prompt); the prompt stays cached.

        With ``wanted`` (positions to pool), also the hidden states at the answer
        position and at the wanted positions: those evaluated now are captured from this
        pass, those in the reused prefix taken from when they were evaluated (where they
        were captured). ``later`` are positions later prompts will pool inside the prefix
        they reuse: captured now too when this pass evaluates them.
        """
        keep = common_prefix_len([self._cached, ids]) if self._reuse and self._cached else 0
        keep = min(keep, len(ids) - 1)  # the last prompt token is fed to read after it
        keep = self._forget_from(keep)
        self.stats["reused_tokens"] += keep
        n = len(ids)
        first_row = plan.rows[0] if plan.rows else ()
        # Reads: after the prompt, then after each leading token of the first continuation.
        feed = ids[keep:] + list(first_row)
        reads = [n - 1 - keep + t for t in range(len(first_row) + 1)]
        marks: list[int] = []
        if wanted is not None:
            marks = sorted(p - keep for p in {n - 1, *wanted, *later} if p >= keep)
        logp = self._decode(feed, keep, reads, cols, marks)
        self._cached = list(ids)
        after: dict[tuple[int, ...], np.ndarray] = {(): logp[0]}
        for t in range(len(first_row)):
            after[first_row[: t + 1]] = logp[t + 1]
        states = None
        if wanted is not None:
            states = {p: self._states[p] for p in (n - 1, *wanted) if p in self._states}
        for row in plan.rows[1:]:
            if self._forget_from(n) < n:  # not rewound: the prompt is evaluated again
                self._decode(ids, 0, [], cols)
                self._cached = list(ids)
            rows_lp = self._decode(list(row), n, list(range(len(row))), cols)
            for t in range(len(row)):
                after[row[: t + 1]] = rows_lp[t]
        self._forget_from(n)
        col = {int(tok): j for j, tok in enumerate(plan.vocab_cols)}
        values = [
            [sum(float(after[v[:t]][col[v[t]]]) for t in range(len(v))) for v in opt]
            for opt in plan.token_ids
        ]
        return values, states

    def _later(self, prompts: list[list[int]], positions: list[tuple[int, ...]]) -> list[set[int]]:
        """Per prompt (in scoring order), the positions later prompts pool inside the
        prefix they will reuse from its pass: only its pass evaluates them.

        A prompt evaluates its tokens from the prefix it shares with the one before it
        (:meth:`_score_one`); a position stays cached from that pass until a later
        prompt shares less.
        """
        keeps: list[int] = []
        previous = self._cached
        for ids in prompts:
            keep = common_prefix_len([previous, ids]) if self._reuse and previous else 0
            keeps.append(min(keep, len(ids) - 1))
            previous = ids
        later: list[set[int]] = [set() for _ in prompts]
        for i, ids in enumerate(prompts):
            reach = len(ids)
            for j in range(i + 1, len(prompts)):
                reach = min(reach, keeps[j])
                if reach <= keeps[i]:
                    break
                later[i].update(p for p in positions[j] if keeps[i] <= p < reach)
        return later

    def _forget_from(self, position: int) -> int:
        """Drop every cached position from ``position`` on; the positions kept (0 when
        the cache could not be rewound and was cleared instead)."""
        if position > 0 and llama_cpp.llama_memory_seq_rm(self._memory, 0, position, -1):
            del self._cached[position:]
            self._states = {p: v for p, v in self._states.items() if p < position}
            return position
        llama_cpp.llama_memory_clear(self._memory, True)
        self._cached = []
        self._states = {}
        return 0

    def _decode(
        self,
        tokens: list[int],
        start: int,
        reads: list[int],
        cols: np.ndarray,
        marks: Sequence[int] = (),
    ) -> list[np.ndarray]:
        """Feed ``tokens`` at positions ``start...``; the log-softmax (float64, full
        vocabulary) at each of ``reads`` (indices into ``tokens``), only ``cols`` kept.

        The hidden states at ``marks`` (indices into ``tokens``) are kept in
        :attr:`_states` by position.
        """
        wanted = set(reads)
        marked = set(marks)
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
            capture = any((lo + j) in marked for j in range(len(chunk)))
            self._captured = []
            self._capturing = capture
            try:
                code = llama_cpp.llama_decode(self._ctx, batch)
            finally:
                self._capturing = False
            if code != 0:
                self._cached = []
                self._states = {}
                llama_cpp.llama_memory_clear(self._memory, True)
                raise ScoringError(f"llama.cpp failed to evaluate the prompt (llama_decode {code})")
            self.stats["evaluated_tokens"] += len(chunk)
            for j in range(len(chunk)):
                if (lo + j) in wanted:
                    out[lo + j] = self._log_softmax(j, cols)
            if capture:
                rows = self._captured_rows(len(chunk))
                for j in range(len(chunk)):
                    if (lo + j) in marked:
                        self._states[start + lo + j] = rows[j]
        return [out[r] for r in reads]

    def _captured_rows(self, tokens: int) -> np.ndarray:
        """The last decode's captured states, one row per token fed (in batch order)."""
        parts = self._captured
        if not parts or any(p is None for p in parts):
            raise ScoringError("llama.cpp's hidden states could not be read")
        rows = np.concatenate([p for p in parts if p is not None])
        if self._width is None or rows.size != tokens * self._width:
            raise ScoringError(
                f"llama.cpp gave {rows.size} hidden values for {tokens} tokens "
                f"of width {self._width}"
            )
        return rows.reshape(tokens, self._width)

    def _eval(self, tensor: int | None, ask: bool, user_data: Any) -> bool:
        """The context's eval callback: while capturing, copy out the features' layer.

        Asked about each graph node before it is computed, it wants only the features'
        layer output (:func:`states_tensor`); told that one is computed, it copies it and
        lets the rest of the graph run.
        """
        if not self._capturing or self._lib is None:
            return False
        if self._lib.ggml_get_name(tensor) != self._states_tensor:
            return False
        if ask:
            return True
        count = int(self._lib.ggml_nelements(tensor))
        if int(self._lib.ggml_nbytes(tensor)) != 4 * count:  # not float32
            self._captured.append(None)
            return True
        data = np.empty(count, dtype=np.float32)
        self._lib.ggml_backend_tensor_get(tensor, data.ctypes.data, 0, data.nbytes)
        self._captured.append(data)
        return True

    def _probe_width(self) -> int | None:
        """Decode one token with the callback capturing: the width of the states read,
        or None when this model's graph has no :func:`states_tensor` as float32 (then no
        features). The cache is left empty and the counters untouched."""
        token = self._bos if self._bos is not None else 0
        batch = self._batch
        batch.n_tokens = 1
        batch.token[0] = token
        batch.pos[0] = 0
        batch.n_seq_id[0] = 1
        batch.seq_id[0][0] = 0
        batch.logits[0] = True
        self._captured = []
        self._capturing = True
        try:
            code = llama_cpp.llama_decode(self._ctx, batch)
        finally:
            self._capturing = False
        llama_cpp.llama_memory_clear(self._memory, True)
        parts = self._captured
        self._captured = []
        if code != 0 or len(parts) != 1 or parts[0] is None or parts[0].size == 0:
            log.info("llama.cpp gives no hidden states for this model: no features")
            return None
        return int(parts[0].size)

    def _log_softmax(self, index: int, cols: np.ndarray) -> np.ndarray:
        pointer = llama_cpp.llama_get_logits_ith(self._ctx, index)
        logits = np.ctypeslib.as_array(
            ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(self._n_vocab,)
        ).astype(np.float64)
        top = logits.max()
        lse = top + np.log(np.exp(logits - top).sum())
        result: np.ndarray = logits[cols] - lse
        return result
