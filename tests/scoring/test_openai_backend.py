"""The server backend against a fake OpenAI-compatible server (httpx.MockTransport), fast.

The fake speaks vLLM's dialect (``/v1/models``, ``/tokenize``, ``/detokenize``,
``/v1/completions`` with ``prompt_logprobs``, ``echo`` and top-k ``logprobs``) over a toy
model whose log-probabilities are known exactly, so every mode is checked against the
true numbers; failures (503, 429, dropped connections, timeouts) are injected per
request. The real vLLM server is tested in ``tests/integration/test_vllm.py``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx
import numpy as np
import pytest

from scoring.backends.server.backend import (
    OpenAIBackend,
    ServerAnswerError,
    ServerError,
    ServerRejectedError,
    ServerTimeoutError,
    ServerUnreachableError,
    resolve_server,
)
from scoring.errors import ModelNotFoundError, ScoringError
from tui.commands.remedies import error_line

URL = "http://fake-server:8000"
VOCAB = 200  # ids 0..199: 1 is BOS, characters are ord(c) - 22 (printable ASCII)
BOS = 1

#: Options with a multi-token variant: " 3" is the space token then "3".
OPTIONS = [("1",), ("2",), ("3", " 3"), ("yes",)]


def encode(text: str) -> list[int]:
    return [ord(c) - 22 for c in text]


def decode(ids: list[int]) -> str:
    return "".join("<s>" if t == BOS else chr(t + 22) for t in ids)


def true_logprobs(last: int) -> np.ndarray:
    """The toy model: the next token depends on the last one only."""
    z = np.array([((last * 31 + t * 17) % 97) / 9.0 for t in range(VOCAB)])
    z[0] = -30.0  # one token of negligible probability: never in any top k
    return z - (z.max() + math.log(np.exp(z - z.max()).sum()))


def true_sequence_lp(prefix: list[int], cont: list[int]) -> float:
    total, seq = 0.0, list(prefix)
    for token in cont:
        total += float(true_logprobs(seq[-1] if seq else 0)[token])
        seq.append(token)
    return total


def expected(prompt_ids: list[int], options: Sequence[tuple[str, ...]]) -> np.ndarray:
    out = []
    for opt in options:
        values = [true_sequence_lp(prompt_ids, encode(v)) for v in opt]
        out.append(math.log(sum(math.exp(v) for v in values)))
    return np.array(out)


def render(messages: list[dict[str, str]], *, trim: bool = False) -> str:
    parts = []
    for m in messages:
        content = m["content"].strip() if trim else m["content"]
        parts.append(f"[{m['role']}]{content}[/]")
    return "".join(parts) + "[assistant]"


class FakeServer:
    """A vLLM-like server; ``failures`` are consumed one per completions request."""

    def __init__(
        self,
        *,
        name: str = "toy",
        token_ids: bool = True,
        prompt_logprobs: bool = True,
        echo: bool = True,
        max_logprobs: int = 20,
        bos: bool = False,
        max_model_len: int = 512,
        chat: bool = True,
        trim: bool = False,
        owned_by: str = "vllm",
        delay: float = 0.0,
    ) -> None:
        self.name = name
        self.token_ids = token_ids
        self.prompt_logprobs = prompt_logprobs
        self.echo = echo
        self.max_logprobs = max_logprobs
        self.bos = bos
        self.max_model_len = max_model_len
        self.chat = chat
        self.trim = trim
        self.owned_by = owned_by
        self.delay = delay
        self.failures: list[str | int] = []
        #: Applied to every log-probability answered, except for the probe's prompt
        #: while ``spare_probe`` is set.
        self.corrupt: Callable[[float], Any] | None = None
        self.spare_probe = True
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.headers: list[httpx.Headers] = []
        self.in_flight = 0
        self.max_in_flight = 0
        #: Completions are held until this many are in flight at once (then all go).
        self.release_at: int | None = None
        self._released: asyncio.Event | None = None

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    async def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        path = request.url.path
        self.requests.append((path, body))
        self.headers.append(request.headers)
        if path == "/v1/completions" and self.failures:
            failure = self.failures.pop(0)
            if failure == "reset":
                raise httpx.ReadError("connection reset by peer", request=request)
            if failure == "timeout":
                raise httpx.ReadTimeout("timed out", request=request)
            headers = {"Retry-After": "0"} if failure == 429 else {}
            return httpx.Response(
                int(failure), json={"error": {"message": "busy"}}, headers=headers
            )
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.release_at is not None and path == "/v1/completions":
                if self._released is None:
                    self._released = asyncio.Event()
                if self.in_flight >= self.release_at:
                    self._released.set()
                await asyncio.wait_for(self._released.wait(), timeout=60)
            if self.delay:
                await asyncio.sleep(self.delay)
            return self.route(path, body)
        finally:
            self.in_flight -= 1

    def route(self, path: str, body: dict[str, Any]) -> httpx.Response:
        if path == "/v1/models":
            entry: dict[str, Any] = {
                "id": self.name,
                "object": "model",
                "root": f"/models/{self.name}",
            }
            entry.update(owned_by=self.owned_by, max_model_len=self.max_model_len)
            return httpx.Response(200, json={"object": "list", "data": [entry]})
        if path == "/tokenize":
            if "messages" in body:
                if not self.chat:
                    return error(400, "this model has no chat template")
                ids = encode(render(body["messages"], trim=self.trim))
            else:
                ids = encode(body["prompt"])
                if self.bos and body.get("add_special_tokens", True):
                    ids = [BOS, *ids]
            return httpx.Response(200, json={"count": len(ids), "tokens": ids})
        if path == "/detokenize":
            return httpx.Response(200, json={"prompt": decode(body["tokens"])})
        if path == "/v1/completions":
            return self.complete(body)
        return error(404, "not found")

    def complete(self, body: dict[str, Any]) -> httpx.Response:
        if body["model"] != self.name:
            return error(404, f"The model `{body['model']}` does not exist.")
        prompts = body["prompt"]
        if prompts and isinstance(prompts[0], int):
            prompts = [prompts]
        if "prompt_logprobs" in body and not self.prompt_logprobs:
            return error(400, "prompt_logprobs is not supported")
        if body.get("echo") and not self.echo:
            return error(400, "echo is not supported")
        k = body.get("logprobs")
        if "logprob_token_ids" in body and not self.token_ids:
            body = {key: v for key, v in body.items() if key != "logprob_token_ids"}  # ignored
        elif "logprob_token_ids" in body:
            k = None  # like vLLM: the chosen tokens take the place of the top k
        if k is not None and k > self.max_logprobs:
            return error(
                400, f"Requested logprobs of {k}, greater than max allowed: {self.max_logprobs}"
            )
        for p in prompts:
            if len(p) + body.get("max_tokens", 16) > self.max_model_len:
                return error(400, "This model's maximum context length is exceeded")
        choices = [self.choice(i, p, body) for i, p in enumerate(prompts)]
        # json.dumps, unlike httpx, writes NaN and Infinity as Python's json reads them.
        content = json.dumps({"choices": choices[::-1]})  # ordered by "index" only
        return httpx.Response(200, content=content, headers={"Content-Type": "application/json"})

    def choice(self, index: int, ids: list[int], body: dict[str, Any]) -> dict[str, Any]:
        choice = self.true_choice(index, ids, body)
        corrupt = self.corrupt
        if corrupt is None or (self.spare_probe and ids[: len(PROBE)] == PROBE):
            return choice

        def spoil(node: Any) -> Any:
            if isinstance(node, float):
                return corrupt(node)
            if isinstance(node, list):
                return [spoil(v) for v in node]
            if isinstance(node, dict):
                return {k: spoil(v) for k, v in node.items()}
            return node

        spoilt: dict[str, Any] = spoil(choice)
        return spoilt

    def true_choice(self, index: int, ids: list[int], body: dict[str, Any]) -> dict[str, Any]:
        positions = [true_logprobs(ids[j - 1]) for j in range(1, len(ids))]
        choice: dict[str, Any] = {"index": index, "text": ""}
        if body.get("prompt_logprobs") is not None:
            choice["prompt_logprobs"] = [None] + [
                {str(ids[j]): {"logprob": float(positions[j - 1][ids[j]]), "rank": 1}}
                for j in range(1, len(ids))
            ]
        if body.get("echo"):
            choice["logprobs"] = {
                "tokens": [decode([t]) for t in ids],
                "token_logprobs": [None]
                + [float(positions[j - 1][ids[j]]) for j in range(1, len(ids))],
            }
        elif body.get("logprobs") is not None:
            lp = true_logprobs(ids[-1])
            top = np.argsort(-lp)[: body["logprobs"]]
            if "logprob_token_ids" in body:
                top = np.array([int(np.argmax(lp)), *body["logprob_token_ids"]])
            as_ids = body.get("return_tokens_as_token_ids")
            keys = [f"token_id:{t}" if as_ids else decode([int(t)]) for t in top]
            choice["logprobs"] = {
                "tokens": [keys[0]],
                "token_logprobs": [float(lp[top[0]])],
                "top_logprobs": [{key: float(lp[t]) for key, t in zip(keys, top, strict=True)}],
            }
        return choice


#: The prompt the backend probes a server's modes with.
PROBE = encode("The answer is")


def error(status: int, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": message, "code": status}})


@pytest.fixture
def make() -> Any:
    """Build backends on a fake server and close them after the test."""
    made: list[OpenAIBackend] = []

    def build(server: FakeServer | None = None, **kwargs: Any) -> tuple[OpenAIBackend, FakeServer]:
        server = server or FakeServer()
        kwargs.setdefault("backoff", 0.001)
        backend = OpenAIBackend(
            kwargs.pop("model", "openai:" + server.name),
            server=kwargs.pop("url", URL),
            transport=server.transport(),
            **kwargs,
        )
        made.append(backend)
        return backend, server

    yield build
    for backend in made:
        backend.close()


PROMPTS = ["Rate this: good", "Rate that: bad!", "Q? A:"]


def completions(server: FakeServer) -> list[dict[str, Any]]:
    return [body for path, body in server.requests if path == "/v1/completions"]


# -- exact modes ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["logprob_token_ids", "prompt_logprobs", "echo"])
def test_exact_modes_give_the_true_log_probabilities(make: Any, mode: str) -> None:
    backend, server = make(mode=mode)
    results = backend.option_logprobs(PROMPTS, OPTIONS)
    assert len(results) == len(PROMPTS)
    for prompt, result in zip(PROMPTS, results, strict=True):
        np.testing.assert_allclose(result.logprobs, expected(encode(prompt), OPTIONS), atol=1e-9)
        assert not result.missing.any()
        assert result.prompt_tokens == len(encode(prompt))
        assert not result.truncated
    ids = tuple(tuple(tuple(encode(v)) for v in opt) for opt in OPTIONS)
    assert results[0].token_ids == ids
    assert ids[2] == ((29,), (10, 29))  # " 3" is two tokens, scored teacher-forced
    # One request per prompt carries all of its options: a sequence per variant, or for
    # one-token reads a sequence per context ((), " ", "y", "ye").
    assert len(completions(server)) == len(PROMPTS)
    width = 4 if mode == "logprob_token_ids" else 5
    assert all(len(body["prompt"]) == width for body in completions(server))


def test_a_variant_that_prefixes_another_rides_on_its_sequence(make: Any) -> None:
    backend, server = make(mode="prompt_logprobs")
    options = [(" ",), (" 3",), ("4",)]
    (result,) = backend.option_logprobs(["x"], options)
    np.testing.assert_allclose(result.logprobs, expected(encode("x"), options), atol=1e-9)
    assert [len(body["prompt"]) for body in completions(server)] == [2]


def test_results_come_back_in_the_callers_order(make: Any) -> None:
    backend, _ = make(concurrency=8)
    prompts = [f"prompt number {i} " + "z" * (i % 7) for i in range(40)]
    results = backend.option_logprobs(prompts, OPTIONS)
    for prompt, result in zip(prompts, results, strict=True):
        np.testing.assert_allclose(result.logprobs, expected(encode(prompt), OPTIONS), atol=1e-9)


def test_requests_run_concurrently_within_the_bound(make: Any) -> None:
    # Requests are held until four are in flight (a serial client never gets there), so
    # the peak shows the bound itself whatever the machine's speed.
    server = FakeServer()
    server.release_at = 4
    backend, _ = make(server, concurrency=4, mode="prompt_logprobs")
    results = backend.option_logprobs([f"p{i}" for i in range(16)], OPTIONS)
    assert len(results) == 16
    assert server.max_in_flight == 4


def test_identity_names_the_served_model_and_its_origin(make: Any) -> None:
    backend, _ = make()
    identity = backend.identity
    assert identity.name == "openai:toy"
    assert identity.revision == "/models/toy"
    assert (identity.backend, identity.dtype, identity.device) == ("openai", "server", "server")
    assert "fake-server" not in identity.key()  # the URL is not part of the identity


def test_bos_is_prepended_once(make: Any) -> None:
    backend, server = make(FakeServer(bos=True), mode="prompt_logprobs")
    (result,) = backend.option_logprobs(["abc"], [("1",), ("2",)])
    np.testing.assert_allclose(result.logprobs, expected([BOS, *encode("abc")], [("1",), ("2",)]))
    assert result.prompt_tokens == 4
    assert completions(server)[0]["prompt"][0][:2] == [BOS, encode("a")[0]]


def test_a_long_prompt_is_cut_from_the_middle(make: Any) -> None:
    backend, server = make(FakeServer(max_model_len=40), mode="prompt_logprobs")
    prompt = "head " + "m" * 100 + " tail"
    (result,) = backend.option_logprobs([prompt], OPTIONS)
    assert result.truncated
    budget = backend.max_context - 3  # the longest variant, "yes", is three tokens
    assert result.prompt_tokens == budget
    ids = encode(prompt)
    kept = ids[: budget // 2] + ids[len(ids) - (budget - budget // 2) :]
    np.testing.assert_allclose(result.logprobs, expected(kept, OPTIONS), atol=1e-9)
    assert completions(server)[0]["prompt"][0][: len(kept)] == kept


# -- choosing the mode ---------------------------------------------------------------------


def test_auto_prefers_logprob_token_ids(make: Any) -> None:
    backend, _ = make()
    assert backend.mode == "auto"
    assert backend.probe() == "logprob_token_ids"


def test_auto_falls_back_to_prompt_logprobs_when_token_ids_are_ignored(make: Any) -> None:
    backend, _ = make(FakeServer(token_ids=False, max_logprobs=VOCAB))
    assert backend.probe() == "prompt_logprobs"


def test_auto_falls_back_to_echo(make: Any) -> None:
    backend, _ = make(FakeServer(token_ids=False, prompt_logprobs=False))
    results = backend.option_logprobs(PROMPTS, OPTIONS)
    assert backend.mode == "echo"
    np.testing.assert_allclose(
        results[0].logprobs, expected(encode(PROMPTS[0]), OPTIONS), atol=1e-9
    )


def test_auto_falls_back_to_topk_with_a_warning(
    make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    backend, _ = make(FakeServer(token_ids=False, prompt_logprobs=False, echo=False))
    with caplog.at_level(logging.WARNING, logger="scoring.backends.server.backend"):
        assert backend.probe() == "topk"
    assert "top-20" in caplog.text


def test_a_server_without_any_logprobs_is_a_clear_error(make: Any) -> None:
    server = FakeServer(token_ids=False, prompt_logprobs=False, echo=False, max_logprobs=0)
    backend, _ = make(server)
    with pytest.raises(ServerError, match="no usable log-probabilities"):
        backend.option_logprobs(["x"], OPTIONS)


def test_an_explicit_mode_the_server_rejects_says_so(make: Any) -> None:
    backend, _ = make(FakeServer(prompt_logprobs=False), mode="prompt_logprobs")
    with pytest.raises(
        ServerRejectedError, match=r"prompt_logprobs is not supported.*another mode"
    ):
        backend.option_logprobs(["x"], OPTIONS)


def test_mode_from_the_environment(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODECURVE_SERVER_MODE", "echo")
    backend, _ = make()
    assert backend.mode == "echo"
    with pytest.raises(ScoringError, match="unknown server mode"):
        make(mode="beam")


# -- top-k mode -----------------------------------------------------------------------------


def test_topk_reads_seen_options_exactly_and_bounds_the_rest(make: Any) -> None:
    backend, server = make(FakeServer(max_logprobs=5), mode="topk", topk=20)
    prompt = "Rate it: "
    ids = encode(prompt)
    lp = true_logprobs(ids[-1])
    order = [int(t) for t in np.argsort(-lp)]
    names = [decode([t]) for t in order if t != BOS]
    options = [(names[0],), (names[10],), (names[1],)]
    (result,) = backend.option_logprobs([prompt], options)
    truth = expected(ids, options)
    assert result.missing.tolist() == [False, True, False]
    np.testing.assert_allclose(result.logprobs[[0, 2]], truth[[0, 2]], atol=1e-9)
    kth = lp[order[4]]  # the server allows five; the backend learned that
    assert result.logprobs[1] == pytest.approx(kth)
    assert result.logprobs[1] >= truth[1]
    assert completions(server)[-1]["logprobs"] == 5


def test_topk_teacher_forces_multi_token_variants_through_contexts(make: Any) -> None:
    backend, server = make(FakeServer(max_logprobs=200), mode="topk", topk=200)
    (result,) = backend.option_logprobs(["abc"], OPTIONS)
    np.testing.assert_allclose(result.logprobs, expected(encode("abc"), OPTIONS), atol=1e-9)
    assert not result.missing.any()
    # One request per context: after the prompt, after " 3"'s space, after "y" and "ye".
    assert sorted(len(body["prompt"]) for body in completions(server)) == [3, 4, 4, 5]


def test_topk_never_treats_an_unseen_token_as_zero(make: Any) -> None:
    backend, _ = make(FakeServer(max_logprobs=3), mode="topk", topk=3)
    likeliest = decode([int(np.argmax(true_logprobs(encode("abc")[-1])))])
    options = [(decode([0]),), (likeliest,)]  # token 0 has probability ~e^-30
    (result,) = backend.option_logprobs(["abc"], options)
    assert result.missing.tolist() == [True, False]
    assert np.isfinite(result.logprobs[0])
    assert result.logprobs[0] > expected(encode("abc"), options)[0]


def test_topk_matches_tokens_by_text_when_the_server_gives_no_ids(make: Any) -> None:
    backend, server = make(FakeServer(owned_by="someone"), mode="topk")
    order = np.argsort(-true_logprobs(encode("abc")[-1]))
    options = [(decode([int(order[0])]),), (decode([int(order[3])]),), ("~",)]
    assert encode("~")[0] not in order[:20]  # outside the top 20 the server lists
    (result,) = backend.option_logprobs(["abc"], options)
    assert not any("return_tokens_as_token_ids" in b for b in completions(server))
    exact = expected(encode("abc"), options)
    assert result.missing.tolist() == [False, False, True]
    np.testing.assert_allclose(result.logprobs[:2], exact[:2], atol=1e-9)


# -- answers that are not log-probabilities ------------------------------------------------

#: What a broken or misconfigured server answers where log-probabilities belong, and the
#: words the refusal must contain.
NOT_LOGPROBS: dict[str, tuple[Callable[[float], Any], str]] = {
    "logits": (lambda v: v + 50.0, "look like logits or probabilities"),
    "probabilities": (math.exp, "look like logits or probabilities"),
    "+inf": (lambda v: math.inf, "inf where a log-probability belongs"),
    "nan": (lambda v: math.nan, "NaN where"),
    "-1e308": (lambda v: -1e308, "no softmax gives a finite value below"),
    "true": (lambda v: True, "'True' where a log-probability belongs"),
    "string": (lambda v: str(v), "where a log-probability belongs"),
    "zeros": (lambda v: 0.0, "add up to 5, more than 1"),
    "all -inf": (lambda v: -math.inf, "every option probability zero"),
}

#: How each mode is set up: the server and the mode asked for. ``auto`` probes first, and
#: the probe's own prompt is answered truthfully, as the broken servers did.
SETUPS: dict[str, tuple[dict[str, Any], str]] = {
    "auto": ({}, "auto"),
    "prompt_logprobs": ({}, "prompt_logprobs"),
    "echo": ({}, "echo"),
    "topk": ({"max_logprobs": VOCAB}, "topk"),
}


@pytest.mark.parametrize("setup", list(SETUPS))
@pytest.mark.parametrize("answer", list(NOT_LOGPROBS))
def test_values_that_are_not_log_probabilities_are_refused(
    make: Any, setup: str, answer: str
) -> None:
    server_kwargs, mode = SETUPS[setup]
    server = FakeServer(**server_kwargs)
    server.corrupt, words = NOT_LOGPROBS[answer]
    backend, _ = make(server, mode=mode, topk=VOCAB)
    with pytest.raises(ServerAnswerError, match="server at http://fake-server:8000") as info:
        backend.option_logprobs(PROMPTS, [("1",), ("2",), ("3",), (" 3",), ("yes",)])
    assert words in str(info.value)
    assert isinstance(info.value, ServerError)


def test_a_probe_answered_with_logits_says_so_for_every_mode(make: Any) -> None:
    server = FakeServer()
    server.corrupt, server.spare_probe = (lambda v: v + 50.0), False
    backend, _ = make(server)
    with pytest.raises(ServerError, match=r"no usable log-probabilities.*logits") as info:
        backend.probe()
    for mode in ("logprob_token_ids", "prompt_logprobs", "echo", "topk"):
        assert f"{mode}: " in str(info.value)


def test_a_top_k_reading_without_any_option_is_refused(make: Any) -> None:
    backend, _ = make(FakeServer(max_logprobs=3), mode="topk", topk=3)
    lp = true_logprobs(encode("abc")[-1])
    unlikely = [decode([int(t)]) for t in np.argsort(lp)[:5] if t != BOS][:3]
    with pytest.raises(ServerAnswerError, match=r"none of the options.*CODECURVE_SERVER_MODE"):
        backend.option_logprobs(["abc"], [(u,) for u in unlikely])


def test_one_option_at_probability_zero_is_kept(make: Any) -> None:
    # -inf is a zero probability; only a reading where every option has it is refused.
    server = FakeServer()
    server.corrupt = lambda v: -math.inf if v < -5 else v
    backend, _ = make(server, mode="prompt_logprobs")
    likeliest = decode([int(np.argmax(true_logprobs(encode("abc")[-1])))])
    options = [(decode([0]),), (likeliest,)]  # token 0 has probability ~e^-30
    (result,) = backend.option_logprobs(["abc"], options)
    assert result.logprobs[0] == -math.inf
    assert result.logprobs[1] == pytest.approx(expected(encode("abc"), options)[1])


def test_rounding_just_above_zero_is_read_as_zero_and_no_further() -> None:
    from scoring.backends.server.modes import LOGPROB_FLOOR, NotALogprob, logprob

    assert logprob(5e-7) == 0.0
    assert logprob(-3) == -3.0  # a JSON integer is a number too
    assert logprob(LOGPROB_FLOOR) == LOGPROB_FLOOR
    assert logprob(-9999.0) == -9999.0  # vLLM's stand-in for a zero probability
    assert logprob(-math.inf) == -math.inf
    for wrong in (2e-6, math.inf, math.nan, LOGPROB_FLOOR * 1.01, -1e308, True, False, None):
        with pytest.raises(NotALogprob):
            logprob(wrong)


@pytest.mark.parametrize("answer", ["logits", "probabilities", "+inf", "nan", "-1e308", "true"])
def test_a_study_scored_on_such_a_server_stores_no_score(
    make: Any, tmp_path: Any, answer: str
) -> None:
    from scoring import ScoringEngine
    from study import Study
    from study.score_run import score_study
    from tests.factories import four_responses, working_life

    server = FakeServer(max_model_len=4096)
    server.corrupt = NOT_LOGPROBS[answer][0]
    backend, _ = make(server, chat=False)
    study = Study.create(
        tmp_path / "s.codecurve", responses=four_responses(), codebook=working_life()
    )
    try:
        with pytest.raises(ServerAnswerError, match="server at http://fake-server:8000"):
            score_study(study, ScoringEngine(backend, study.codebook))
        config_id = study.scores.active_config_id()
        assert config_id is None or study.scores.scored_count(config_id) == 0
    finally:
        study.close()


def huge_answer(*, declare: bool) -> tuple[httpx.MockTransport, list[int]]:
    """A server whose completions answer is a gigabyte, made only as it is read."""
    server = FakeServer()
    produced = [0]

    async def gigabyte() -> AsyncIterator[bytes]:
        yield b'{"choices": ['
        chunk = b" " * 2**20
        for _ in range(1024):
            produced[0] += 1
            yield chunk
        yield b"]}"

    async def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/completions":
            headers = {"Content-Type": "application/json"}
            if declare:
                headers["Content-Length"] = str(2**30 + 15)
            return httpx.Response(200, content=gigabyte(), headers=headers)
        return await server.handle(request)

    return httpx.MockTransport(handle), produced


@pytest.mark.parametrize("declare", [False, True], ids=["streamed", "declared"])
def test_an_answer_larger_than_any_request_needs_is_refused_unread(declare: bool) -> None:
    transport, produced = huge_answer(declare=declare)
    backend = OpenAIBackend("toy", server=URL, mode="echo", transport=transport, retries=0)
    try:
        with pytest.raises(
            ServerAnswerError, match=r"server at http://fake-server:8000 answered .* more than"
        ):
            backend.option_logprobs(["abc"], OPTIONS)
    finally:
        backend.close()
    assert produced[0] <= (0 if declare else 32)  # stopped near the limit, 16 MiB and a bit


def test_the_answer_limit_grows_with_the_request() -> None:
    from scoring.backends.server.transport import MIN_ANSWER_BYTES, answer_limit

    assert answer_limit(0) == MIN_ANSWER_BYTES
    # The longest honest answer: prompt_logprobs of 20 sequences of 32k tokens, some 80
    # bytes per token answered for about 6 sent.
    sent = 20 * 32_000 * 6
    assert answer_limit(sent) > 20 * 32_000 * 80


# -- retries, timeouts, failures -----------------------------------------------------------


def test_retries_503_429_and_dropped_connections(make: Any) -> None:
    backend, server = make(mode="prompt_logprobs")
    server.failures = [503, 429, "reset"]
    (result,) = backend.option_logprobs(["abc"], OPTIONS)
    np.testing.assert_allclose(result.logprobs, expected(encode("abc"), OPTIONS), atol=1e-9)
    assert backend.stats["retries"] == 3


def test_gives_up_after_the_retry_budget(make: Any) -> None:
    backend, server = make(mode="prompt_logprobs", retries=2)
    server.failures = [503] * 5
    with pytest.raises(ServerError, match=r"kept failing.*3 tries.*HTTP 503") as info:
        backend.option_logprobs(["abc"], OPTIONS)
    assert info.value.status == 503


def test_backoff_grows(make: Any) -> None:
    backend, server = make(mode="prompt_logprobs", backoff=0.05, retries=3)
    server.failures = [502, 502, 502]
    started = time.monotonic()
    backend.option_logprobs(["abc"], OPTIONS)
    # 0.05 + 0.1 + 0.2 s, each times a jitter factor in [0.5, 1.5)
    assert time.monotonic() - started >= 0.5 * 0.35


def test_a_timeout_is_reported_and_not_retried(make: Any) -> None:
    backend, server = make(mode="prompt_logprobs", timeout=7)
    server.failures = ["timeout", "timeout"]
    with pytest.raises(ServerTimeoutError, match="longer than 7 s"):
        backend.option_logprobs(["abc"], OPTIONS)
    assert len(completions(server)) == 1
    assert isinstance(ServerTimeoutError("x"), TimeoutError)


def test_a_slow_server_runs_into_the_timeout(make: Any) -> None:
    """The fake answers after 20 s and the backend waits 0.2 s: the request is cut."""
    backend, server = make(mode="prompt_logprobs")
    server.delay, backend.timeout = 20.0, 0.2
    started = time.monotonic()
    with pytest.raises(ServerTimeoutError, match=r"longer than 0.2 s"):
        backend.option_logprobs(["abc"], OPTIONS)
    assert time.monotonic() - started < 10


def test_a_server_that_is_down_fails_fast_and_clearly() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(
        ServerUnreachableError, match=f"cannot reach the server at http://127.0.0.1:{port}"
    ):
        OpenAIBackend("openai:toy", server=f"127.0.0.1:{port}", backoff=0.01)
    assert time.monotonic() - started < 5
    assert issubclass(ServerUnreachableError, ConnectionError)


def test_a_wrong_model_name_lists_what_the_server_serves(make: Any) -> None:
    with pytest.raises(ModelNotFoundError, match=r"does not serve model 'tiny'.*serves: toy") as no:
        make(model="openai:tiny")
    assert error_line(no.value).endswith("(try --model openai:toy)")


def test_a_wrong_key_is_named(make: Any) -> None:
    server = FakeServer()

    async def guarded(request: httpx.Request) -> httpx.Response:
        if request.headers.get("authorization") != "Bearer right":
            return error(401, "invalid API key")
        return await server.handle(request)

    with pytest.raises(ServerRejectedError, match=r"refused the API key.*CODECURVE_API_KEY"):
        OpenAIBackend("toy", server=URL, api_key="wrong", transport=httpx.MockTransport(guarded))
    backend = OpenAIBackend(
        "toy", server=URL, api_key="right", transport=httpx.MockTransport(guarded)
    )
    backend.close()


def test_the_api_key_and_server_come_from_the_environment(
    make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-openai")
    monkeypatch.setenv("CODECURVE_API_KEY", "from-codecurve")
    monkeypatch.setenv("CODECURVE_SERVER", "fake-server:8000/v1/")
    server = FakeServer()
    backend = OpenAIBackend("toy", transport=server.transport())
    try:
        assert backend.url == "http://fake-server:8000"
        assert server.headers[0]["authorization"] == "Bearer from-codecurve"
    finally:
        backend.close()


def test_no_server_at_all_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODECURVE_SERVER", raising=False)
    with pytest.raises(ScoringError, match=r"needs a server: give its URL") as caught:
        resolve_server(None)
    assert error_line(caught.value).endswith("(try --server URL)")
    assert resolve_server("https://h:1/v1") == "https://h:1"


# -- chat templates ------------------------------------------------------------------------


MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "  Rate: ok \n"},
]


def test_chat_prompts_are_rendered_by_the_servers_template(make: Any) -> None:
    backend, server = make()
    assert backend.is_chat
    assert backend.render_chat(MESSAGES) == render(MESSAGES)
    before = len(server.requests)
    other = [{"role": "system", "content": "Other."}, {"role": "user", "content": "x"}]
    assert backend.render_chat(other) == render(other)
    assert len(server.requests) == before  # the learned layout renders without a round trip


def test_a_template_that_changes_contents_stays_on_the_server(make: Any) -> None:
    backend, server = make(FakeServer(trim=True))
    assert backend.render_chat(MESSAGES) == render(MESSAGES, trim=True)
    before = len(server.requests)
    assert backend.render_chat(MESSAGES) == render(MESSAGES, trim=True)
    assert len(server.requests) > before


def test_a_server_without_template_scores_plain_prompts(make: Any) -> None:
    backend, _ = make(FakeServer(chat=False))
    assert not backend.is_chat
    with pytest.raises(ScoringError, match=r"no chat template") as caught:
        make(FakeServer(chat=False), chat=True)
    assert error_line(caught.value).endswith("(try --no-chat)")
    no_chat, _ = make(chat=False)
    assert not no_chat.is_chat


# -- threads and loops ---------------------------------------------------------------------


def test_works_from_a_thread_whose_event_loop_is_running(make: Any) -> None:
    """Like a worker of a Textual app: the calling thread has its own running loop."""
    backend, _ = make()

    async def inside_a_loop() -> np.ndarray:
        return backend.option_logprobs(["abc"], OPTIONS)[0].logprobs

    values = asyncio.run(inside_a_loop())
    np.testing.assert_allclose(values, expected(encode("abc"), OPTIONS), atol=1e-9)

    found: list[Any] = []
    worker = threading.Thread(
        target=lambda: found.append(backend.option_logprobs(["abc"], OPTIONS))
    )
    worker.start()
    worker.join()
    np.testing.assert_allclose(found[0][0].logprobs, values)


def test_close_is_idempotent_and_final(make: Any) -> None:
    backend, _ = make()
    backend.close()
    backend.close()
    with pytest.raises(ScoringError, match="closed"):
        backend.option_logprobs(["abc"], OPTIONS)


def test_bad_arguments(make: Any) -> None:
    backend, _ = make()
    with pytest.raises(ScoringError, match="no options"):
        backend.option_logprobs(["abc"], [])
    assert backend.option_logprobs([], OPTIONS) == []
    with pytest.raises(ScoringError, match="tokenize identically"):
        backend.option_logprobs(["abc"], [("1", "1")])
    with pytest.raises(ScoringError, match="needs a name") as nameless:
        make(model="openai:")
    assert error_line(nameless.value).endswith("(try --model openai:NAME)")


def test_concurrency_and_timeout_from_the_environment(
    make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODECURVE_SERVER_CONCURRENCY", "3")
    monkeypatch.setenv("CODECURVE_SERVER_TIMEOUT", "9.5")
    backend, _ = make()
    assert (backend.concurrency, backend.timeout) == (3, 9.5)
    monkeypatch.setenv("CODECURVE_SERVER_TIMEOUT", "soon")
    with pytest.raises(ScoringError, match="CODECURVE_SERVER_TIMEOUT='soon' is not a number"):
        make()


def test_a_backend_dropped_without_close_stops_its_thread(make: Any) -> None:
    import gc

    server = FakeServer()
    before = set(threading.enumerate())
    backend = OpenAIBackend("toy", server=URL, transport=server.transport())
    (thread,) = set(threading.enumerate()) - before  # the backend's loop thread
    del backend
    gc.collect()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_the_engine_keeps_the_bound_busy_by_default(make: Any) -> None:
    # Requests are in flight only within one batch: a default batch twice the bound.
    backend, _ = make(concurrency=4)
    assert backend.batch_size == 16  # never below a local model's
    backend, _ = make(concurrency=40)
    assert backend.batch_size == 80
