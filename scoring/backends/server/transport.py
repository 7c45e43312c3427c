"""Transport to an OpenAI-compatible server: a private event loop, one client, retries.

Requests run on an ``httpx.AsyncClient`` inside a private event loop in a daemon thread
(:class:`LoopThread`), so synchronous callers in any thread (an app's worker thread
included, which may run a loop of its own) can wait for them. At most ``concurrency``
requests are in flight. 429 and 5xx answers and dropped connections are retried with
exponential backoff and jitter (``Retry-After`` is honoured); a request that runs past
``timeout`` is not retried, since retrying an overloaded server only adds load. An
answer is read only up to :func:`answer_limit` bytes and refused beyond it.

What is sent and how answers are read lives elsewhere (:mod:`scoring.backends.server.modes`);
this module only moves JSON and turns failures into :class:`~scoring.errors.ServerError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx

from codebooks.errors import Remedy
from scoring.errors import (
    ModelNotFoundError,
    ScoringError,
    ServerAnswerError,
    ServerError,
    ServerRejectedError,
    ServerTimeoutError,
    ServerUnreachableError,
)

log = logging.getLogger(__name__)

#: Environment variables read when the caller does not say.
SERVER_ENV = "CODECURVE_SERVER"
API_KEY_ENVS = ("CODECURVE_API_KEY", "OPENAI_API_KEY")
CONCURRENCY_ENV = "CODECURVE_SERVER_CONCURRENCY"
TIMEOUT_ENV = "CODECURVE_SERVER_TIMEOUT"

#: Requests in flight. vLLM batches whatever is queued, so a few dozen keep one GPU busy;
#: each request carries every variant of one prompt.
DEFAULT_CONCURRENCY = 32

#: Seconds one request may take, queueing inside the server included.
DEFAULT_TIMEOUT = 120.0

#: Answers worth retrying: rate limits and a server that is restarting or overloaded.
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})

#: Bytes any answer may have, and more per byte of the request (see :func:`answer_limit`).
MIN_ANSWER_BYTES = 16 * 2**20
ANSWER_BYTES_PER_SENT = 64

DEFAULT_RETRIES = 5
DEFAULT_BACKOFF = 0.5
MAX_BACKOFF = 20.0

T = TypeVar("T")


class LoopThread:
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

    @property
    def thread(self) -> threading.Thread:
        return self._thread

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


def release(loop: asyncio.AbstractEventLoop, client: httpx.AsyncClient | None) -> None:
    """Close the client and stop the loop, from a finaliser: schedule, never wait."""

    async def close_then_stop() -> None:
        try:
            if client is not None:
                await client.aclose()
        finally:
            loop.stop()

    with contextlib.suppress(RuntimeError):  # the loop is already closed
        asyncio.run_coroutine_threadsafe(close_then_stop(), loop)


def setting(value: float | None, env: str, default: float) -> float:
    """``value``, else the number in ``env``, else ``default``.

    Raises:
        ScoringError: ``env`` holds something that is not a number.
    """
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
            f"an openai: model needs a server: give its URL or set {SERVER_ENV} "
            "(e.g. http://127.0.0.1:8000; see docs/vllm.md)",
            remedy=Remedy("retry", "give the server's URL", {"server": "URL"}),
        )
    if "://" not in url:
        url = "http://" + url
    url = url.rstrip("/")
    return url.removesuffix("/v1")


class ServerTransport:
    """JSON requests to one server, bounded in flight and retried.

    Created inside the loop that will run its requests (:meth:`open`).

    Args:
        url: The server's root URL.
        api_key: Bearer token, or None.
        concurrency: Most requests in flight.
        timeout: Seconds per request, queueing in the server included; may be changed.
        retries: Retries of a request after 429, 5xx or a dropped connection.
        backoff: First retry delay in seconds; it doubles per retry, with jitter.
        transport: An httpx transport, for tests.
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None,
        concurrency: int,
        timeout: float,
        retries: int,
        backoff: float,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url
        self.api_key = api_key
        self.concurrency = concurrency
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = max(0.0, backoff)
        self._transport = transport
        self.client: httpx.AsyncClient | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self.stats = {"requests": 0, "retries": 0, "sequences": 0}

    async def open(self) -> None:
        """Create the client and the bound on requests in flight, in the running loop."""
        headers = {"User-Agent": "codecurve"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        limits = httpx.Limits(
            max_connections=self.concurrency + 4, max_keepalive_connections=self.concurrency + 4
        )
        self.client = httpx.AsyncClient(
            base_url=self.url, headers=headers, limits=limits, transport=self._transport
        )
        self._semaphore = asyncio.Semaphore(self.concurrency)

    async def request(
        self, method: str, path: str, payload: Any = None, *, retries: int | None = None
    ) -> Any:
        """One JSON request, retried on 429, 5xx and dropped connections.

        Raises:
            ServerUnreachableError: nothing answered, after the retries.
            ServerTimeoutError: the request ran past :attr:`timeout`.
            ServerRejectedError: a 4xx answer.
            ModelNotFoundError: a 404 that names the model.
            ServerError: 5xx answers after the retries, or an answer that is not JSON.
        """
        client = self.client
        if client is None or self._semaphore is None:
            raise ScoringError("the server backend is closed")
        budget = self.retries if retries is None else retries
        content = None if payload is None else json.dumps(payload).encode()
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
                        response, body = await self._exchange(client, method, path, content)
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
                        return json.loads(body)
                    except ValueError as exc:
                        raise ServerError(
                            f"{self.url}{path} answered something that is not JSON",
                            status=response.status_code,
                        ) from exc
                if response.status_code not in RETRY_STATUS:
                    raise self._error_for(response, body, path)
                status = response.status_code
                last = f"HTTP {status}: {server_message(response, body)}"
                kind = "status"
                delay = retry_after(response)
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

    async def _exchange(
        self, client: httpx.AsyncClient, method: str, path: str, content: bytes | None
    ) -> tuple[httpx.Response, bytes]:
        """Send one request and read its answer, refusing one beyond :func:`answer_limit`."""
        limit = answer_limit(0 if content is None else len(content))
        headers = {} if content is None else {"Content-Type": "application/json"}
        request = client.build_request(
            method, path, content=content, headers=headers, timeout=self._httpx_timeout()
        )
        response = await client.send(request, stream=True)
        try:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise self._too_large(path, limit, f"it declared {int(declared):,}")
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():  # decoded: a gzip bomb counts whole
                size += len(chunk)
                if size > limit:
                    raise self._too_large(path, limit, "read no further")
                chunks.append(chunk)
        finally:
            await response.aclose()
        return response, b"".join(chunks)

    def _too_large(self, path: str, limit: int, what: str) -> ServerAnswerError:
        return ServerAnswerError(
            f"the server at {self.url} answered {path} with more than {limit:,} bytes, "
            f"more than such a request can need ({what}); refused"
        )

    async def aclose(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            await client.aclose()

    def _httpx_timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0))

    def _error_for(self, response: httpx.Response, body: bytes, path: str) -> ScoringError:
        message = server_message(response, body)
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


def answer_limit(sent: int) -> int:
    """The most bytes an answer to a request of ``sent`` bytes is read to.

    :data:`MIN_ANSWER_BYTES`, plus :data:`ANSWER_BYTES_PER_SENT` per byte sent: the
    longest honest answers (``prompt_logprobs``: some 80 bytes per prompt token, sent as
    about 6) stay well inside, while a tiny request cannot be answered with gigabytes
    (up to ``concurrency`` answers are read at once).
    """
    return MIN_ANSWER_BYTES + ANSWER_BYTES_PER_SENT * sent


def server_message(response: httpx.Response, body: bytes) -> str:
    """The server's own words from an error answer (vLLM, llama.cpp and OpenAI shapes)."""
    try:
        answer = json.loads(body)
    except ValueError:
        text = body[:300].decode("utf-8", "replace").strip()
        return text or response.reason_phrase
    return message_of(answer)


def message_of(body: Any) -> str:
    """The message inside a JSON error answer."""
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


def retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asks to wait (``Retry-After``), capped; None when it does not say."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return min(MAX_BACKOFF, max(0.0, float(value)))
    except ValueError:
        return None


def first_leaf(error: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error
