"""Score through an OpenAI-compatible completion server: vLLM, or llama.cpp's server.

``--model openai:NAME --server URL`` (or ``CODECURVE_SERVER``); an API key, when the server
wants one, comes from ``CODECURVE_API_KEY`` or ``OPENAI_API_KEY``. Nothing is generated:
the server is only asked for log-probabilities, and the contract of
:mod:`scoring.backend` holds unchanged.

How one prompt is scored, and where each step lives:

1. The server tokenizes it, so the ids in the score ledger are the server's; each option
   variant is tokenized on its own, once, and an options list becomes a token plan
   (:mod:`scoring.backends.server.tokens`). The prompt travels as token ids with the variant's
   ids appended, so a variant never merges with the prompt. A prompt that does not fit
   is cut from the middle, as the local backend does.
2. Every variant token's log-probability is read in one of four modes
   (:mod:`scoring.backends.server.modes`: the payloads and the answers): ``logprob_token_ids``
   (vLLM's exact one-token read of chosen tokens; keeps its prefix cache),
   ``prompt_logprobs``, ``echo``, and ``topk`` (cheap, works on llama.cpp's server, but
   a token outside the top k is reported ``missing`` with an upper bound, never as
   zero). ``auto`` (the default) probes the server once, in that order, and keeps the
   first mode the server answers properly (:mod:`scoring.backends.server.probe`).
3. Variants of one option are pooled with logsumexp (float64) by
   :func:`scoring.variants.pool_variants`, as in the local backend. In ``topk`` mode an
   option is missing as soon as one token of one of its variants is outside the top k,
   so a pooled scale (``"3"`` and ``" 3"``) is missing more often than a strict one.

Chat prompts are rendered by the server's template, through a layout learned from it
when that is provably identical (:mod:`scoring.backends.server.chat`). Requests run concurrently
on a private event loop, bounded, with retries (:mod:`scoring.backends.server.transport`), so the
synchronous :meth:`OpenAIBackend.option_logprobs` works from any thread.

Identity: ``openai:NAME``, revision = what the server reports as the model's origin
(vLLM's ``root``: the weights' path or hub id), dtype and device ``server``. The server's
URL is deliberately left out: the numbers do not depend on where the server runs, so a
study scored against a laptop's server keeps its cache when it moves to a cluster.

Answers are checked before anything is stored: a value that is not a log-probability
(a logit, a probability, NaN, ``true``), a reading that is no curve (every option at
probability zero or unseen) and an answer larger than a request could need are refused
with :class:`~scoring.errors.ServerAnswerError` (:mod:`scoring.backends.server.modes`,
:mod:`scoring.backends.server.transport`).

Errors: :class:`~scoring.errors.ServerError` and its subclasses, and
:class:`~scoring.errors.ModelNotFoundError` when the server does not serve NAME (the
tree is drawn in :mod:`codebooks.errors`); they are importable from here too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from codebooks.errors import Remedy
from scoring.backend import Backend, ModelIdentity, OptionLogprobs, OptionVariants, cut_middle
from scoring.backends.server.chat import ServerChat
from scoring.backends.server.modes import (
    DEFAULT_TOPK,
    MAX_LOGPROB_TOKEN_IDS,
    MODES,
    ModeReader,
    NotALogprob,
    Reading,
    Unsupported,
    pool_reading,
    unusable,
)
from scoring.backends.server.probe import (
    FALLBACK_CONTEXT,
    choose_mode,
    llamacpp_context,
    served_model,
)
from scoring.backends.server.tokens import ServerTokens, TokenPlan
from scoring.backends.server.transport import (
    API_KEY_ENVS,
    CONCURRENCY_ENV,
    DEFAULT_BACKOFF,
    DEFAULT_CONCURRENCY,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    MAX_BACKOFF,
    RETRY_STATUS,
    SERVER_ENV,
    TIMEOUT_ENV,
    LoopThread,
    ServerTransport,
    first_leaf,
    release,
    resolve_server,
    setting,
)
from scoring.errors import (
    NO_CHAT,
    ScoringError,
    ServerAnswerError,
    ServerError,
    ServerRejectedError,
    ServerTimeoutError,
    ServerUnreachableError,
)

log = logging.getLogger(__name__)

MODE_ENV = "CODECURVE_SERVER_MODE"

__all__ = [
    "API_KEY_ENVS",
    "CONCURRENCY_ENV",
    "DEFAULT_BACKOFF",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TOPK",
    "FALLBACK_CONTEXT",
    "MAX_BACKOFF",
    "MAX_LOGPROB_TOKEN_IDS",
    "MODES",
    "MODE_ENV",
    "RETRY_STATUS",
    "SERVER_ENV",
    "TIMEOUT_ENV",
    "OpenAIBackend",
    "ServerAnswerError",
    "ServerError",
    "ServerRejectedError",
    "ServerTimeoutError",
    "ServerUnreachableError",
    "resolve_server",
]


class OpenAIBackend(Backend):
    """A model behind an OpenAI-compatible completion server.

    The server is contacted at construction: an unreachable server or a model it does not
    serve fails here, with a message that says what to do.

    Args:
        model: The served model name, with or without the ``openai:`` prefix.
        server: The server's URL; default ``CODECURVE_SERVER``.
        api_key: Bearer token; default ``CODECURVE_API_KEY``, then ``OPENAI_API_KEY``.
        mode: ``auto``, ``logprob_token_ids``, ``prompt_logprobs``, ``echo`` or ``topk``;
            default ``CODECURVE_SERVER_MODE``, else ``auto``.
        chat: Render prompts with the model's chat template; None = when it has one.
        tokenizer: A local tokenizer folder whose chat template renders prompts (needs
            transformers); by default the server renders them.
        concurrency: Most requests in flight; default ``CODECURVE_SERVER_CONCURRENCY``,
            else 32.
        timeout: Seconds per request, queueing in the server included; default
            ``CODECURVE_SERVER_TIMEOUT``, else 120. May be changed through :attr:`timeout`.
        retries: Retries of a request after 429, 5xx or a dropped connection.
        backoff: First retry delay in seconds; it doubles per retry, with jitter.
        topk: The k of ``topk`` mode (lowered to the server's limit when it says so).
        transport: An httpx transport, for tests.
    """

    def __init__(
        self,
        model: str,
        *,
        server: str | None = None,
        api_key: str | None = None,
        mode: str | None = None,
        chat: bool | None = None,
        tokenizer: str | Path | None = None,
        concurrency: int | None = None,
        timeout: float | None = None,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        topk: int = DEFAULT_TOPK,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        name = model.removeprefix("openai:").strip()
        if not name:
            raise ScoringError(
                "an openai: model needs a name after 'openai:'",
                remedy=Remedy("retry", "name the served model", {"model": "openai:NAME"}),
            )
        mode = (mode or os.environ.get(MODE_ENV) or "auto").strip().lower().replace("-", "_")
        if mode not in MODES:
            raise ScoringError(f"unknown server mode {mode!r}; use one of {', '.join(MODES)}")
        concurrency = int(setting(concurrency, CONCURRENCY_ENV, DEFAULT_CONCURRENCY))
        timeout = setting(timeout, TIMEOUT_ENV, DEFAULT_TIMEOUT)
        if concurrency < 1:
            raise ScoringError(f"concurrency must be at least 1, got {concurrency}")
        if timeout <= 0:
            raise ScoringError(f"timeout must be positive, got {timeout:g} s")
        self.url = resolve_server(server)
        self.name = name
        self._http = ServerTransport(
            self.url,
            api_key=api_key
            or next((os.environ[k] for k in API_KEY_ENVS if os.environ.get(k)), None),
            concurrency=concurrency,
            timeout=float(timeout),
            retries=retries,
            backoff=backoff,
            transport=transport,
        )
        self.stats = self._http.stats
        self._wanted_mode = mode
        self._mode: str | None = None if mode == "auto" else mode
        self._context = FALLBACK_CONTEXT
        self._revision = name
        self._tokens = ServerTokens(self._http.request, url=self.url, name=name, flavor="unknown")
        self._reader = ModeReader(
            self._http.request, self._tokens, name=name, stats=self.stats, topk=topk
        )
        self._chat_server = ServerChat(self._http.request, name=name, flavor="unknown")
        self._local_tokenizer: Any = None
        self._mode_lock: asyncio.Lock | None = None
        self._finalizer: Any = None
        self._loop = LoopThread(f"codecurve-openai-{name}")
        try:
            self._loop.run(self._connect())
            # A backend dropped without close() still closes its connections and stops
            # its thread; a finaliser must not block, so it only schedules that.
            self._finalizer = weakref.finalize(self, release, self._loop.loop, self._http.client)
            self._chat = self._decide_chat(chat, tokenizer)
        except BaseException:
            self.close()
            raise
        self._identity = ModelIdentity(
            name=f"openai:{name}",
            revision=self._revision,
            dtype="server",
            device="server",
            backend="openai",
        )

    # -- Backend ------------------------------------------------------------------------

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    @property
    def is_chat(self) -> bool:
        return self._chat

    @property
    def batch_size(self) -> int:
        # Requests are only in flight within one batch: give the engine enough pairs per
        # batch that the bound, not the batch, limits them (a batch's last requests
        # leave some slots idle, so twice the bound).
        return max(16, 2 * self.concurrency)

    @property
    def max_context(self) -> int:
        # vLLM wants prompt + variant + one generated token within max_model_len.
        return max(2, self._context - 1)

    @property
    def mode(self) -> str:
        """The mode in use; ``auto`` until the first request has probed the server."""
        return self._mode or "auto"

    @property
    def concurrency(self) -> int:
        return self._http.concurrency

    @property
    def retries(self) -> int:
        return self._http.retries

    @property
    def backoff(self) -> float:
        return self._http.backoff

    @property
    def timeout(self) -> float:
        """Seconds per request, queueing in the server included."""
        return self._http.timeout

    @timeout.setter
    def timeout(self, value: float) -> None:
        self._http.timeout = float(value)

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        if not self._chat:
            raise ScoringError(f"openai:{self.name} is scored without a chat template")
        msgs = [{"role": m["role"], "content": m["content"]} for m in messages]
        if self._local_tokenizer is not None:
            text = self._local_tokenizer.apply_chat_template(
                msgs, tokenize=False, add_generation_prompt=True
            )
            return str(text)
        return self._loop.run(self._chat_server.render(msgs))

    def option_logprobs(
        self,
        prompts: Sequence[str],
        options: Sequence[OptionVariants],
        *,
        spans: Sequence[tuple[int, int] | None] | None = None,
    ) -> list[OptionLogprobs]:
        # A server returns no hidden states: the spans are not needed, features stay None.
        if len(options) < 1:
            raise ScoringError("no options to score")
        if not prompts:
            return []
        return self._loop.run(self._score_all(list(prompts), [tuple(o) for o in options]))

    def probe(self) -> str:
        """Choose the mode now (``auto`` otherwise does it on the first batch); return it."""
        return self._loop.run(self._ensure_mode())

    def count_tokens(self, text: str) -> int:
        """Tokens the server reads for ``text`` (BOS included when expected)."""
        return len(self._loop.run(self._tokens.encode(text)))

    def close(self) -> None:
        loop = getattr(self, "_loop", None)
        if loop is None or loop.loop.is_closed():
            return
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._http.client is not None:
            # Already stopping: nothing is left to free.
            with contextlib.suppress(RuntimeError, ScoringError):
                loop.run(self._http.aclose())
        loop.stop()

    def __enter__(self) -> OpenAIBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connection -----------------------------------------------------------------------

    async def _connect(self) -> None:
        await self._http.open()
        self._mode_lock = asyncio.Lock()
        # A server that is down should fail in seconds, not after the full retry budget.
        models = await self._http.request("GET", "/v1/models", retries=min(self._http.retries, 2))
        served = served_model(models, url=self.url, name=self.name)
        self._tokens.flavor = self._chat_server.flavor = served.flavor
        self._revision = served.revision
        context = served.context
        if served.flavor == "llamacpp":
            context = await llamacpp_context(self._http.request)
        if context is not None:
            self._context = context
        await self._tokens.learn_bos()

    def _decide_chat(self, chat: bool | None, tokenizer: str | Path | None) -> bool:
        if chat is False:
            return False
        if tokenizer is not None:
            from transformers import AutoTokenizer

            self._local_tokenizer = AutoTokenizer.from_pretrained(
                str(tokenizer), local_files_only=True
            )
            has = bool(getattr(self._local_tokenizer, "chat_template", None))
            where = f"the tokenizer in {tokenizer}"
        else:
            has = self._loop.run(self._chat_server.available())
            where = f"the server at {self.url}"
        if chat and not has:
            raise ScoringError(
                f"{where} has no chat template for {self.name}; score it with plain "
                "completion prompts",
                remedy=NO_CHAT,
            )
        return has

    # -- scoring ------------------------------------------------------------------------------

    async def _score_all(
        self, prompts: list[str], options: list[OptionVariants]
    ) -> list[OptionLogprobs]:
        mode = await self._ensure_mode()
        plan = await self._tokens.plan(options)
        budget = self.max_context - plan.longest
        if budget < 2:
            raise ScoringError(f"context of {self._context} tokens is too short to score")
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._score_one(p, plan, mode, budget)) for p in prompts]
        except BaseExceptionGroup as group_error:
            raise first_leaf(group_error) from None
        return [t.result() for t in tasks]

    async def _score_one(
        self, prompt: str, plan: TokenPlan, mode: str, budget: int
    ) -> OptionLogprobs:
        ids, truncated = cut_middle(await self._tokens.encode(prompt), budget)
        try:
            logprobs, missing = pool_reading(await self._read(mode, ids, plan), plan)
        except NotALogprob as exc:
            raise ServerAnswerError(
                f"the server at {self.url} answered {exc} (scoring in {mode} mode)"
            ) from exc
        except Unsupported as exc:
            raise ServerError(
                f"the server at {self.url} answered without what {mode} mode needs ({exc})"
            ) from exc
        reason = unusable(logprobs, missing, plan)
        if reason is not None:
            hint = (
                f"; an exact mode gives every option ({MODE_ENV}=logprob_token_ids, "
                "prompt_logprobs or echo)"
                if mode == "topk"
                else ""
            )
            raise ServerAnswerError(
                f"the server at {self.url} {reason} for a prompt of {len(ids)} tokens "
                f"(scoring in {mode} mode){hint}"
            )
        return OptionLogprobs(
            logprobs=logprobs,
            token_ids=plan.token_ids,
            missing=missing,
            truncated=truncated,
            prompt_tokens=len(ids),
        )

    async def _ensure_mode(self) -> str:
        if self._mode is not None:
            return self._mode
        if self._mode_lock is None:
            raise ScoringError("the server backend is closed")
        async with self._mode_lock:
            if self._mode is None:
                self._mode = await choose_mode(
                    self._reader, self._tokens, url=self.url, name=self.name
                )
        return self._mode

    async def _read(self, mode: str, ids: list[int], plan: TokenPlan) -> Reading:
        try:
            return await self._reader.read(mode, ids, plan)
        except ServerRejectedError as exc:
            raise ServerRejectedError(
                f"{exc} (scoring in {mode} mode; another mode may work: "
                f"{MODE_ENV}={'|'.join(MODES)})",
                status=exc.status,
            ) from exc
