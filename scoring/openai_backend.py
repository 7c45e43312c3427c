"""Score through an OpenAI-compatible completion server: vLLM, or llama.cpp's server.

``--model openai:NAME --server URL`` (or ``CODECURVE_SERVER``); an API key, when the server
wants one, comes from ``CODECURVE_API_KEY`` or ``OPENAI_API_KEY``. Nothing is generated:
the server is only asked for log-probabilities, and the contract of
:mod:`scoring.backend` holds unchanged.

How one prompt is scored:

1. The server tokenizes it (``/tokenize``), so the ids in the score ledger are the
   server's. The model's BOS is prepended when its tokenizer adds one to plain text and
   the prompt does not already start with it (the transformers backend's rule). Each
   option variant is tokenized on its own, once per options list. The prompt travels as
   token ids with the variant's ids appended, so a variant never merges with the prompt.
   A prompt that does not fit is cut from the middle, as the local backend does.
2. Every variant token's log-probability is read in one of four ways (``mode``):

   ``logprob_token_ids``  vLLM's one-token read of chosen tokens (``max_tokens: 1`` with
                        ``logprob_token_ids``; recent vLLM, 0.32 has it): the full-vocabulary
                        log-probability of exactly the variants' tokens, after the prompt
                        and after each leading part of a multi-token variant, one request
                        per prompt. Exact, tiny answers, and it keeps vLLM's prefix cache:
                        prompts of one code share their instructions, computed once.
   ``prompt_logprobs``  vLLM's extra body field. One request per prompt whose ``prompt``
                        is the list of sequences prompt + variant; each position's entry
                        is keyed by token id, so reading it is exact. vLLM computes every
                        sequence in full (no prefix cache for prompt log-probabilities).
   ``echo``             ``echo: true, logprobs: 0, max_tokens: 0`` on the same list of
                        sequences; a variant's tokens are the last ``token_logprobs``
                        entries of its sequence (read by position, exact).
   ``topk``             ``max_tokens: 1, logprobs: k`` on the prompt (and on the prompt
                        followed by the leading tokens of multi-token variants). Cheap,
                        and works without echo (llama.cpp's server), but a token outside
                        the top k is not seen: such an option is reported ``missing`` with
                        an upper bound (the k-th log-probability), never as zero.

   ``auto`` (the default) probes the server once, in that order, and keeps the first
   mode the server answers properly: the fastest exact way the server has.
3. Variants of one option are pooled with logsumexp (float64), as in the local backend.
   In ``topk`` mode an option is missing as soon as one token of one of its variants is
   outside the top k: every unseen token is bounded by the k-th probability at its
   position, so the pooled value reported is an upper bound, never a guess. A pooled
   scale (``"3"`` and ``" 3"``) is therefore missing more often than a strict one.

Prompts are scored concurrently: an ``httpx.AsyncClient`` runs on a private event loop in
a daemon thread, so the synchronous :meth:`OpenAIBackend.option_logprobs` works from any
thread, including a worker thread of an app that runs its own loop. At most
``concurrency`` requests are in flight. 429 and 5xx answers and dropped connections are
retried with exponential backoff and jitter (``Retry-After`` is honoured); a request
that runs past ``timeout`` is not retried, since retrying an overloaded server only adds
load.

Identity: ``openai:NAME``, revision = what the server reports as the model's origin
(vLLM's ``root``: the weights' path or hub id), dtype and device ``server``. The server's
URL is deliberately left out: the numbers do not depend on where the server runs, so a
study scored against a laptop's server keeps its cache when it moves to a cluster.

Errors, all :class:`~scoring.errors.ScoringError`::

    ScoringError
    ├── ModelNotFoundError                       the server does not serve NAME
    └── ServerError                              the server failed or refused a request
        ├── ServerUnreachableError (ConnectionError)   nothing answers at the URL
        ├── ServerTimeoutError (TimeoutError)          a request ran past ``timeout``
        └── ServerRejectedError                        a 4xx: e.g. echo or prompt_logprobs
                                                       refused, a key that is wrong
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import random
import re
import threading
import weakref
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import numpy as np

from scoring.backend import Backend, ModelIdentity, OptionLogprobs, OptionVariants
from scoring.errors import ModelNotFoundError, ScoringError

log = logging.getLogger(__name__)

#: Environment variables read when the caller does not say.
SERVER_ENV = "CODECURVE_SERVER"
API_KEY_ENVS = ("CODECURVE_API_KEY", "OPENAI_API_KEY")
MODE_ENV = "CODECURVE_SERVER_MODE"
CONCURRENCY_ENV = "CODECURVE_SERVER_CONCURRENCY"
TIMEOUT_ENV = "CODECURVE_SERVER_TIMEOUT"

MODES = ("auto", "logprob_token_ids", "prompt_logprobs", "echo", "topk")

#: vLLM's cap on ``logprob_token_ids`` per request.
MAX_LOGPROB_TOKEN_IDS = 128

#: Requests in flight. vLLM batches whatever is queued, so a few dozen keep one GPU busy;
#: each request carries every variant of one prompt.
DEFAULT_CONCURRENCY = 32

#: Seconds one request may take, queueing inside the server included.
DEFAULT_TIMEOUT = 120.0

#: Top-k asked in ``topk`` mode; vLLM caps it at ``--max-logprobs`` (default 20).
DEFAULT_TOPK = 20

#: Answers worth retrying: rate limits and a server that is restarting or overloaded.
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})

DEFAULT_RETRIES = 5
DEFAULT_BACKOFF = 0.5
MAX_BACKOFF = 20.0

#: Context assumed when the server does not report one.
FALLBACK_CONTEXT = 2048

#: A sentinel in chat contents while learning a template's layout; ASCII so that no
#: tokenizer normalises it.
_SLOT = "CodecurveSlot{i}x{nonce}"

T = TypeVar("T")

Seq = tuple[int, ...]


class ServerError(ScoringError):
    """The server failed or refused a request.

    Attributes:
        status: The HTTP status, when there was an answer.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ServerUnreachableError(ServerError, ConnectionError):
    """Nothing answers at the server's URL (refused, reset, unknown host)."""


class ServerTimeoutError(ServerError, TimeoutError):
    """A request ran past the per-request timeout."""


class ServerRejectedError(ServerError):
    """The server refused a request (4xx): a parameter it does not support, a bad key."""


class _Unsupported(Exception):
    """An answer that lacks what a mode needs (a server that ignores the parameter)."""


@dataclass(frozen=True)
class _Plan:
    """How one options list is read, computed once per list.

    Attributes:
        token_ids: Per option, per variant, the variant's token ids.
        sequences: Continuations sent after the prompt: every variant that is not a
            prefix of another (its sequence also yields the shorter one's tokens).
        contexts: Continuations after which the next-token distribution is needed
            (``()`` is right after the prompt); what the one-token modes ask for.
        next_tokens: Per context, the variant tokens that follow it.
        longest: Tokens of the longest variant.
    """

    token_ids: tuple[tuple[Seq, ...], ...]
    sequences: tuple[Seq, ...]
    contexts: tuple[Seq, ...]
    next_tokens: tuple[Seq, ...]
    longest: int

    @classmethod
    def build(cls, token_ids: tuple[tuple[Seq, ...], ...]) -> _Plan:
        flat = list(dict.fromkeys(ids for opt in token_ids for ids in opt))
        sequences = tuple(s for s in flat if not any(o != s and o[: len(s)] == s for o in flat))
        following: dict[Seq, dict[int, None]] = {}
        for s in flat:
            for j in range(len(s)):
                following.setdefault(s[:j], {})[s[j]] = None
        return cls(
            token_ids=token_ids,
            sequences=sequences,
            contexts=tuple(following),
            next_tokens=tuple(tuple(t) for t in following.values()),
            longest=max(len(s) for s in flat),
        )


@dataclass
class _Reading:
    """What the server said about one prompt: ``lp[context][token]`` in nats.

    ``bound[context]`` is set in ``topk`` mode: the lowest log-probability listed there,
    an upper bound for every token that was not.
    """

    lp: dict[Seq, dict[int, float]]
    bound: dict[Seq, float]


@dataclass(frozen=True)
class _Template:
    """A chat template's layout: literal text around each message's content."""

    pieces: tuple[str, ...]

    def fill(self, contents: Sequence[str]) -> str:
        out = [self.pieces[0]]
        for content, piece in zip(contents, self.pieces[1:], strict=True):
            out.append(content)
            out.append(piece)
        return "".join(out)


class _LoopThread:
    """A private asyncio loop in a daemon thread; :meth:`run` blocks the caller only."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()  # also when stopped by a finaliser, with nobody to join

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("OpenAIBackend was called from its own event loop")
        if self.loop.is_closed() or not self._thread.is_alive():
            coro.close()
            raise ScoringError("the server backend is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # an interrupt in the caller stops the requests too
            raise

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


def _release(loop: asyncio.AbstractEventLoop, client: httpx.AsyncClient | None) -> None:
    """Close the client and stop the loop, from a finaliser: schedule, never wait."""

    async def close_then_stop() -> None:
        try:
            if client is not None:
                await client.aclose()
        finally:
            loop.stop()

    with contextlib.suppress(RuntimeError):  # the loop is already closed
        asyncio.run_coroutine_threadsafe(close_then_stop(), loop)


def _setting(value: float | None, env: str, default: float) -> float:
    if value is not None:
        return value
    text = os.environ.get(env, "").strip()
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        raise ScoringError(f"{env}={text!r} is not a number") from None


def resolve_server(server: str | None) -> str:
    """The server's root URL (no trailing ``/v1``) from the argument or ``CODECURVE_SERVER``.

    Raises:
        ScoringError: neither names a server.
    """
    url = server or os.environ.get(SERVER_ENV, "")
    url = url.strip()
    if not url:
        raise ScoringError(
            f"an openai: model needs a server: pass --server URL or set {SERVER_ENV} "
            "(e.g. http://127.0.0.1:8000; see docs/vllm.md)"
        )
    if "://" not in url:
        url = "http://" + url
    url = url.rstrip("/")
    return url.removesuffix("/v1")


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
            raise ScoringError("an openai: model needs a name: --model openai:NAME")
        mode = (mode or os.environ.get(MODE_ENV) or "auto").strip().lower().replace("-", "_")
        if mode not in MODES:
            raise ScoringError(f"unknown server mode {mode!r}; use one of {', '.join(MODES)}")
        concurrency = int(_setting(concurrency, CONCURRENCY_ENV, DEFAULT_CONCURRENCY))
        timeout = _setting(timeout, TIMEOUT_ENV, DEFAULT_TIMEOUT)
        if concurrency < 1:
            raise ScoringError(f"concurrency must be at least 1, got {concurrency}")
        if timeout <= 0:
            raise ScoringError(f"timeout must be positive, got {timeout:g} s")
        self.url = resolve_server(server)
        self.name = name
        self.timeout = float(timeout)
        self.retries = max(0, retries)
        self.backoff = max(0.0, backoff)
        self.concurrency = concurrency
        self._wanted_mode = mode
        self._mode: str | None = None if mode == "auto" else mode
        self._topk = max(1, topk)
        self._api_key = api_key or next(
            (os.environ[k] for k in API_KEY_ENVS if os.environ.get(k)), None
        )
        self._transport = transport
        self._flavor = "unknown"  # vllm, llamacpp or unknown: which endpoint dialect
        self._bos: int | None = None
        self._context = FALLBACK_CONTEXT
        self._revision = name
        self._variant_ids: dict[str, Seq] = {}
        self._plans: dict[tuple[OptionVariants, ...], _Plan] = {}
        self._pieces: dict[int, str] = {}
        self._templates: dict[tuple[str, ...], _Template | None] = {}
        self._local_tokenizer: Any = None
        self._client: httpx.AsyncClient | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._mode_lock: asyncio.Lock | None = None
        self.stats = {"requests": 0, "retries": 0, "sequences": 0}
        self._finalizer: Any = None
        self._loop = _LoopThread(f"codecurve-openai-{name}")
        try:
            self._loop.run(self._connect())
            # A backend dropped without close() still closes its connections and stops
            # its thread; a finaliser must not block, so it only schedules that.
            self._finalizer = weakref.finalize(self, _release, self._loop.loop, self._client)
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

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        if not self._chat:
            raise ScoringError(f"openai:{self.name} is scored without a chat template")
        msgs = [{"role": m["role"], "content": m["content"]} for m in messages]
        if self._local_tokenizer is not None:
            text = self._local_tokenizer.apply_chat_template(
                msgs, tokenize=False, add_generation_prompt=True
            )
            return str(text)
        return self._loop.run(self._render(msgs))

    def option_logprobs(
        self, prompts: Sequence[str], options: Sequence[OptionVariants]
    ) -> list[OptionLogprobs]:
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
        return len(self._loop.run(self._encode(text)))

    def close(self) -> None:
        loop = getattr(self, "_loop", None)
        if loop is None or loop.loop.is_closed():
            return
        if self._finalizer is not None:
            self._finalizer.detach()
        if getattr(self, "_client", None) is not None:
            assert self._client is not None
            # Already stopping: nothing is left to free.
            with contextlib.suppress(RuntimeError, ScoringError):
                loop.run(self._client.aclose())
            self._client = None
        loop.stop()

    def __enter__(self) -> OpenAIBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connection -----------------------------------------------------------------------

    async def _connect(self) -> None:
        headers = {"User-Agent": "codecurve"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        limits = httpx.Limits(
            max_connections=self.concurrency + 4, max_keepalive_connections=self.concurrency + 4
        )
        self._client = httpx.AsyncClient(
            base_url=self.url, headers=headers, limits=limits, transport=self._transport
        )
        self._semaphore = asyncio.Semaphore(self.concurrency)
        self._mode_lock = asyncio.Lock()
        # A server that is down should fail in seconds, not after the full retry budget.
        models = await self._request("GET", "/v1/models", retries=min(self.retries, 2))
        self._check_model(models)
        if self._flavor == "llamacpp":
            await self._llamacpp_context()
        tok = await self._tokenize("a", special=True)
        plain = await self._tokenize("a", special=False)
        if len(tok) == len(plain) + 1 and tok[1:] == plain:
            self._bos = tok[0]

    def _check_model(self, models: Any) -> None:
        data = models.get("data") if isinstance(models, dict) else None
        if not isinstance(data, list):
            raise ServerError(f"{self.url}/v1/models did not answer a model list")
        entries = {str(e.get("id")): e for e in data if isinstance(e, dict)}
        entry = entries.get(self.name)
        if entry is None:
            served = ", ".join(sorted(entries)) or "none"
            hint = f"; use --model openai:{next(iter(sorted(entries)))}" if entries else ""
            raise ModelNotFoundError(
                f"the server at {self.url} does not serve model {self.name!r} "
                f"(it serves: {served}){hint}"
            )
        owner = str(entry.get("owned_by", "")).lower()
        if "vllm" in owner:
            self._flavor = "vllm"
        elif "llama" in owner:
            self._flavor = "llamacpp"
        for key in ("revision", "root"):
            value = entry.get(key)
            if isinstance(value, str) and value:
                self._revision = value
                break
        value = entry.get("max_model_len")  # vLLM; other servers are asked below
        if isinstance(value, int) and value > 1:
            self._context = value

    async def _llamacpp_context(self) -> None:
        try:
            props = await self._request("GET", "/props", retries=0)
        except ServerError:
            return
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        if isinstance(n_ctx, int) and n_ctx > 1:
            self._context = n_ctx

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
            has = self._loop.run(self._server_has_template())
            where = f"the server at {self.url}"
        if chat and not has:
            raise ScoringError(
                f"{where} has no chat template for {self.name}; score it with --no-chat"
            )
        return has

    async def _server_has_template(self) -> bool:
        try:
            await self._render_on_server([{"role": "user", "content": "Hello"}])
        except (ServerRejectedError, _Unsupported) as exc:
            log.info("no chat template on the server (%s); plain prompts", exc)
            return False
        return True

    # -- HTTP -------------------------------------------------------------------------------

    async def _request(
        self, method: str, path: str, payload: Any = None, *, retries: int | None = None
    ) -> Any:
        """One JSON request, retried on 429, 5xx and dropped connections."""
        assert self._client is not None
        assert self._semaphore is not None
        budget = self.retries if retries is None else retries
        attempt = 0
        while True:
            delay: float | None = None
            last: str
            status: int | None
            try:
                async with self._semaphore:
                    self.stats["requests"] += 1
                    # A deadline for the whole request: httpx's own timeouts are per read,
                    # and a server that trickles its answer would never trip them.
                    async with asyncio.timeout(self.timeout):
                        response = await self._client.request(
                            method, path, json=payload, timeout=self._httpx_timeout()
                        )
            except httpx.ConnectTimeout as exc:
                last = f"no answer to connect within {min(self.timeout, 10.0):g} s ({exc})"
                kind, status = "unreachable", None
            except (httpx.TimeoutException, TimeoutError) as exc:
                raise ServerTimeoutError(
                    f"{method} {self.url}{path} took longer than {self.timeout:g} s "
                    "(a larger timeout, or a lower concurrency, gives a slow server room)"
                ) from exc
            except (httpx.ConnectError, httpx.ReadError, httpx.WriteError) as exc:
                last = f"{type(exc).__name__}: {exc}"
                kind, status = "unreachable", None
            except httpx.RemoteProtocolError as exc:
                last = f"connection dropped: {exc}"
                kind, status = "unreachable", None
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError as exc:
                        raise ServerError(
                            f"{self.url}{path} answered something that is not JSON",
                            status=response.status_code,
                        ) from exc
                if response.status_code not in RETRY_STATUS:
                    raise self._error_for(response, path)
                status = response.status_code
                last = f"HTTP {status}: {_server_message(response)}"
                kind = "status"
                delay = _retry_after(response)
            if attempt >= budget:
                if kind == "unreachable":
                    raise ServerUnreachableError(
                        f"cannot reach the server at {self.url} ({last}); is it running? "
                        "See docs/vllm.md for how to start one"
                    )
                raise ServerError(
                    f"the server at {self.url} kept failing on {path} after "
                    f"{attempt + 1} tries ({last})",
                    status=status,
                )
            attempt += 1
            self.stats["retries"] += 1
            if delay is None:
                delay = min(MAX_BACKOFF, self.backoff * 2 ** (attempt - 1))
                delay *= 0.5 + random.random()  # jitter, not cryptography
            log.debug("retrying %s in %.2f s after %s", path, delay, last)
            await asyncio.sleep(delay)

    def _httpx_timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0))

    def _error_for(self, response: httpx.Response, path: str) -> ScoringError:
        message = _server_message(response)
        status = response.status_code
        if status in (401, 403):
            return ServerRejectedError(
                f"the server at {self.url} refused the API key (HTTP {status}: {message}); "
                f"set {API_KEY_ENVS[0]}",
                status=status,
            )
        if status == 404 and "model" in message.lower():
            return ModelNotFoundError(f"the server at {self.url}: {message}")
        return ServerRejectedError(
            f"the server at {self.url} rejected {path} (HTTP {status}): {message}", status=status
        )

    # -- tokens -----------------------------------------------------------------------------

    async def _tokenize(self, text: str, *, special: bool) -> list[int]:
        if self._flavor == "llamacpp":
            body = await self._request(
                "POST", "/tokenize", {"content": text, "add_special": special}
            )
        else:
            body = await self._request(
                "POST",
                "/tokenize",
                {"model": self.name, "prompt": text, "add_special_tokens": special},
            )
        tokens = body.get("tokens") if isinstance(body, dict) else None
        if not isinstance(tokens, list):
            raise ServerError(f"{self.url}/tokenize answered no token list")
        # llama.cpp answers {"id", "piece"} objects when asked for pieces; plain ints else.
        return [int(t["id"]) if isinstance(t, dict) else int(t) for t in tokens]

    async def _encode(self, prompt: str) -> list[int]:
        ids = await self._tokenize(prompt, special=False)
        if self._bos is not None and (not ids or ids[0] != self._bos):
            ids.insert(0, self._bos)
        return ids

    async def _piece(self, token: int) -> str:
        """A token's text, to match answers keyed by token strings (servers without ids)."""
        piece = self._pieces.get(token)
        if piece is None:
            body = await self._request(
                "POST", "/detokenize", {"model": self.name, "tokens": [token]}
            )
            piece = str(body.get("prompt", body.get("content", "")))
            self._pieces[token] = piece
        return piece

    async def _plan(self, options: list[OptionVariants]) -> _Plan:
        key = tuple(options)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        todo = sorted({v for opt in options for v in opt} - set(self._variant_ids))
        found = await asyncio.gather(*(self._tokenize(v, special=False) for v in todo))
        for text, tokens in zip(todo, found, strict=True):
            if not tokens:
                raise ScoringError(f"option variant {text!r} has no tokens")
            self._variant_ids[text] = tuple(tokens)
        token_ids = tuple(tuple(self._variant_ids[v] for v in opt) for opt in options)
        for opt, per_variant in zip(options, token_ids, strict=True):
            if not opt:
                raise ScoringError("an option has no surface variant")
            if len(set(per_variant)) != len(per_variant):
                raise ScoringError(f"option variants {opt!r} tokenize identically")
        plan = _Plan.build(token_ids)
        self._plans[key] = plan
        return plan

    # -- chat templates --------------------------------------------------------------------

    async def _render(self, msgs: list[dict[str, str]]) -> str:
        """Render through a layout learned from the server, or the server itself.

        Rendering every prompt on the server costs two round trips per pair, one pair at a
        time. So the template's layout is learned once per sequence of roles, by rendering
        sentinel contents, and kept only if it reproduces the server's own rendering of
        real and of whitespace-padded contents (templates that trim or branch on content
        fail that check and stay on the server).
        """
        roles = tuple(m["role"] for m in msgs)
        if roles not in self._templates:
            self._templates[roles] = await self._learn_template(msgs)
        template = self._templates[roles]
        if template is not None:
            return template.fill([m["content"] for m in msgs])
        return await self._render_on_server(msgs)

    async def _learn_template(self, msgs: list[dict[str, str]]) -> _Template | None:
        nonce = f"{random.randrange(16**8):08x}"  # uniqueness, not secrecy
        slots = [_SLOT.format(i=i, nonce=nonce) for i in range(len(msgs))]
        text = await self._render_on_server(
            [{"role": m["role"], "content": s} for m, s in zip(msgs, slots, strict=True)]
        )
        pieces: list[str] = []
        rest = text
        for slot in slots:
            head, sep, rest = rest.partition(slot)
            if not sep or slot in rest:
                log.info("chat template does not place contents verbatim; server renders")
                return None
            pieces.append(head)
        pieces.append(rest)
        template = _Template(tuple(pieces))
        padded = [f" \n{s}\n " for s in slots]
        checks = [
            ([m["content"] for m in msgs], msgs),
            (
                padded,
                [{"role": m["role"], "content": p} for m, p in zip(msgs, padded, strict=True)],
            ),
        ]
        for contents, real in checks:
            if template.fill(contents) != await self._render_on_server(real):
                log.info("chat template changes contents (trim or branch); server renders")
                return None
        return template

    async def _render_on_server(self, msgs: list[dict[str, str]]) -> str:
        if self._flavor == "llamacpp":
            body = await self._request("POST", "/apply-template", {"messages": msgs})
            text = body.get("prompt") if isinstance(body, dict) else None
            if not isinstance(text, str):
                raise _Unsupported("/apply-template answered no prompt")
            return text
        body = await self._request(
            "POST",
            "/tokenize",
            {"model": self.name, "messages": msgs, "add_generation_prompt": True},
        )
        tokens = body.get("tokens") if isinstance(body, dict) else None
        if not isinstance(tokens, list):
            raise _Unsupported("/tokenize with messages answered no tokens")
        body = await self._request(
            "POST", "/detokenize", {"model": self.name, "tokens": [int(t) for t in tokens]}
        )
        text = body.get("prompt") if isinstance(body, dict) else None
        if not isinstance(text, str):
            raise _Unsupported("/detokenize answered no text")
        return text

    # -- scoring ------------------------------------------------------------------------------

    async def _score_all(
        self, prompts: list[str], options: list[OptionVariants]
    ) -> list[OptionLogprobs]:
        mode = await self._ensure_mode()
        plan = await self._plan(options)
        budget = self.max_context - plan.longest
        if budget < 2:
            raise ScoringError(f"context of {self._context} tokens is too short to score")
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._score_one(p, plan, mode, budget)) for p in prompts]
        except BaseExceptionGroup as group_error:
            raise _first_leaf(group_error) from None
        return [t.result() for t in tasks]

    async def _score_one(self, prompt: str, plan: _Plan, mode: str, budget: int) -> OptionLogprobs:
        ids = await self._encode(prompt)
        truncated = len(ids) > budget
        if truncated:
            head = budget // 2
            ids = ids[:head] + ids[len(ids) - (budget - head) :]
        try:
            logprobs, missing = _pool(await self._read(mode, ids, plan), plan)
        except _Unsupported as exc:
            raise ServerError(
                f"the server at {self.url} answered without what {mode} mode needs ({exc})"
            ) from exc
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
        assert self._mode_lock is not None
        async with self._mode_lock:
            if self._mode is None:
                self._mode = await self._probe()
        return self._mode

    async def _probe(self) -> str:
        """Try each mode on a tiny prompt; keep the first that gives sound numbers."""
        ids = await self._encode("The answer is")
        # Two answers, one of them improbable: a server that ignores a parameter and
        # answers its plain top k cannot pass for one that honours it.
        likely, unlikely = [
            tuple(await self._tokenize(t, special=False)) for t in (" yes", " zebra")
        ]
        plan = _Plan.build(((likely,), (unlikely,)))
        reasons = []
        for mode in MODES[1:]:
            try:
                reading = await self._read(mode, ids, plan)
                value, _ = _pool(reading, plan)
            except (_Unsupported, ServerRejectedError) as exc:
                reasons.append(f"{mode}: {exc}")
                continue
            if np.isfinite(value).all():
                if mode == "topk":
                    log.warning(
                        "the server at %s has neither prompt_logprobs nor echo: scoring in "
                        "top-%d mode, options outside the top k are reported missing",
                        self.url,
                        self._topk,
                    )
                else:
                    log.info("the server at %s is scored in %s mode", self.url, mode)
                return mode
            reasons.append(f"{mode}: answered no usable number")
        raise ServerError(
            f"the server at {self.url} gives no usable log-probabilities for {self.name} ("
            + "; ".join(reasons)
            + ")"
        )

    async def _read(self, mode: str, ids: list[int], plan: _Plan) -> _Reading:
        try:
            if mode == "logprob_token_ids":
                return await self._read_token_ids(ids, plan)
            if mode == "prompt_logprobs":
                return await self._read_prompt_logprobs(ids, plan)
            if mode == "echo":
                return await self._read_echo(ids, plan)
            return await self._read_topk(ids, plan)
        except ServerRejectedError as exc:
            if self._wanted_mode == "auto" and self._mode is None:
                raise  # still probing: the next mode is tried
            raise ServerRejectedError(
                f"{exc} (scoring in {mode} mode; another mode may work: "
                f"{MODE_ENV}={'|'.join(MODES)})",
                status=exc.status,
            ) from exc

    async def _completions(self, payload: dict[str, Any], n: int) -> list[dict[str, Any]]:
        payload = {"model": self.name, "temperature": 0.0, **payload}
        body = await self._request("POST", "/v1/completions", payload)
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or len(choices) != n:
            raise _Unsupported(f"expected {n} choices in the answer")
        ordered = sorted(choices, key=lambda c: int(c.get("index", 0)))
        self.stats["sequences"] += n
        return [c if isinstance(c, dict) else {} for c in ordered]

    async def _read_token_ids(self, ids: list[int], plan: _Plan) -> _Reading:
        """One-token reads of exactly the variant tokens, one sequence per context."""
        union = sorted({t for tokens in plan.next_tokens for t in tokens})
        chunks = [
            union[i : i + MAX_LOGPROB_TOKEN_IDS]
            for i in range(0, len(union), MAX_LOGPROB_TOKEN_IDS)
        ]
        seqs = [ids + list(c) for c in plan.contexts]
        answers = await asyncio.gather(
            *(
                self._completions(
                    {
                        "prompt": seqs,
                        "max_tokens": 1,
                        "logprobs": len(chunk),
                        "logprob_token_ids": chunk,
                        "return_tokens_as_token_ids": True,
                    },
                    len(seqs),
                )
                for chunk in chunks
            )
        )
        reading = _Reading({}, {})
        for choices in answers:
            for context, wanted, choice in zip(
                plan.contexts, plan.next_tokens, choices, strict=True
            ):
                found = {t: v for t, _, v in _top_entries(choice) if t is not None}
                table = reading.lp.setdefault(context, {})
                table.update((t, found[t]) for t in wanted if t in found)
        for context, wanted in zip(plan.contexts, plan.next_tokens, strict=True):
            if any(t not in reading.lp.get(context, {}) for t in wanted):
                raise _Unsupported("the answer lacks a requested token's log-probability")
        return reading

    async def _read_prompt_logprobs(self, ids: list[int], plan: _Plan) -> _Reading:
        seqs = [ids + list(s) for s in plan.sequences]
        choices = await self._completions(
            {"prompt": seqs, "max_tokens": 1, "prompt_logprobs": 0}, len(seqs)
        )
        reading = _Reading({}, {})
        start = len(ids)
        for cont, seq, choice in zip(plan.sequences, seqs, choices, strict=True):
            entries = choice.get("prompt_logprobs")
            if not isinstance(entries, list) or len(entries) < len(seq):
                raise _Unsupported("no prompt_logprobs in the answer")
            for j, token in enumerate(cont):
                entry = entries[start + j]
                value = entry.get(str(token)) if isinstance(entry, dict) else None
                if not isinstance(value, dict) or "logprob" not in value:
                    raise _Unsupported(f"prompt_logprobs lack token {token}")
                reading.lp.setdefault(cont[:j], {})[token] = float(value["logprob"])
        return reading

    async def _read_echo(self, ids: list[int], plan: _Plan) -> _Reading:
        seqs = [ids + list(s) for s in plan.sequences]
        choices = await self._completions(
            {"prompt": seqs, "max_tokens": 0, "echo": True, "logprobs": 0}, len(seqs)
        )
        reading = _Reading({}, {})
        start = len(ids)
        for cont, seq, choice in zip(plan.sequences, seqs, choices, strict=True):
            logprobs = choice.get("logprobs")
            values = logprobs.get("token_logprobs") if isinstance(logprobs, dict) else None
            if not isinstance(values, list) or len(values) < len(seq):
                raise _Unsupported("no echoed token_logprobs in the answer")
            for j, token in enumerate(cont):
                value = values[start + j]
                if value is None:
                    raise _Unsupported("echoed token_logprobs lack a value")
                reading.lp.setdefault(cont[:j], {})[token] = float(value)
        return reading

    async def _read_topk(self, ids: list[int], plan: _Plan) -> _Reading:
        found = await asyncio.gather(*(self._topk_at(ids + list(c)) for c in plan.contexts))
        reading = _Reading({}, {})
        for context, wanted, entries in zip(plan.contexts, plan.next_tokens, found, strict=True):
            table: dict[int, float] = {}
            by_piece: dict[str, float] = {}
            for token, piece, value in entries:
                if token is not None:
                    table[token] = value
                elif piece is not None:
                    by_piece[piece] = value
            if by_piece:
                for token in set(wanted) - set(table):
                    piece = await self._piece(token)
                    if piece in by_piece:
                        table[token] = by_piece[piece]
            reading.lp[context] = table
            reading.bound[context] = min(v for _, _, v in entries)
        return reading

    async def _topk_at(self, seq: list[int]) -> list[tuple[int | None, str | None, float]]:
        payload: dict[str, Any] = {"prompt": seq, "max_tokens": 1, "logprobs": self._topk}
        if self._flavor == "vllm":
            payload["return_tokens_as_token_ids"] = True
        try:
            choices = await self._completions(payload, 1)
        except ServerRejectedError as exc:
            cap = re.search(r"max(?:imum)? allowed:?\s*(\d+)", str(exc))
            if cap is None or int(cap.group(1)) >= self._topk or int(cap.group(1)) < 1:
                raise
            self._topk = int(cap.group(1))
            log.info("the server allows top-%d log-probabilities; asking for that", self._topk)
            payload["logprobs"] = self._topk
            choices = await self._completions(payload, 1)
        entries = _top_entries(choices[0])
        if not entries:
            raise _Unsupported("no top log-probabilities in the answer")
        return entries


def _pool(reading: _Reading, plan: _Plan) -> tuple[np.ndarray, np.ndarray]:
    """Per option: logsumexp over variants; missing (an upper bound) when a token was unseen."""
    out = np.empty(len(plan.token_ids), dtype=np.float64)
    missing = np.zeros(len(plan.token_ids), dtype=bool)
    for k, opt in enumerate(plan.token_ids):
        values: list[float] = []
        for ids in opt:
            total = 0.0
            for j, token in enumerate(ids):
                context = ids[:j]
                value = reading.lp.get(context, {}).get(token)
                if value is None:
                    if context not in reading.bound:
                        raise _Unsupported(f"the answer lacks token {token}")
                    value, missing[k] = reading.bound[context], True
                total += value
            values.append(total)
        out[k] = _logsumexp(values)
    return np.minimum(out, 0.0), missing


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    if not math.isfinite(top):
        return top
    return top + math.log(sum(math.exp(v - top) for v in values))


def _top_entries(choice: dict[str, Any]) -> list[tuple[int | None, str | None, float]]:
    """The first generated position's top log-probabilities: (id, piece, logprob).

    Understands the completions format (``top_logprobs``: one dict per position, keyed by
    the token's text or, with vLLM's ``return_tokens_as_token_ids``, ``token_id:N``) and
    the chat-style one llama.cpp's server uses (``content``: entries with ``id``).
    """
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        return []
    tops = logprobs.get("top_logprobs")
    if isinstance(tops, list) and tops and isinstance(tops[0], dict):
        out: list[tuple[int | None, str | None, float]] = []
        for key, value in tops[0].items():
            if value is None:
                continue
            if key.startswith("token_id:") and key[9:].lstrip("-").isdigit():
                out.append((int(key[9:]), None, float(value)))
            else:
                out.append((None, key, float(value)))
        return out
    content = logprobs.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        entries = content[0].get("top_logprobs") or []
        return [
            (
                int(e["id"]) if isinstance(e.get("id"), int) else None,
                e.get("token") if isinstance(e.get("token"), str) else None,
                float(e["logprob"]),
            )
            for e in entries
            if isinstance(e, dict) and e.get("logprob") is not None
        ]
    return []


def _server_message(response: httpx.Response) -> str:
    """The server's own words from an error answer (vLLM, llama.cpp and OpenAI shapes)."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            for key in ("message", "detail"):
                if isinstance(error.get(key), str):
                    return str(error[key])
        if isinstance(error, str):
            return error
        if isinstance(body.get("detail"), str):
            return str(body["detail"])
    return str(body)[:300]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return min(MAX_BACKOFF, max(0.0, float(value)))
    except ValueError:
        return None


def _first_leaf(error: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error
