"""The server backend against a real vLLM server (CPU build), next to the local backend.

Both read the embedded model's converted folder in float32, so on the same prompts and
options their surprisals must agree to float noise (measured: ~3e-5 nats) on every path
the server backend has: logprob_token_ids, prompt_logprobs, echo and top-k, multi-token
options included. The error paths run against the same server or a closed port.

prompt_logprobs and echo make vLLM compute one full sequence per option variant, which
on two CPU cores takes about a second each; they get fewer prompts and options than
the other paths so that the whole file stays near a minute once the server is up.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from scoring.backends.server.backend import (
    OpenAIBackend,
    ServerTimeoutError,
    ServerUnreachableError,
)
from scoring.errors import ModelNotFoundError
from tests.factories import VllmServer

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

#: Agreement asked of the two backends (the measured difference is ~30 times smaller).
TOLERANCE = 1e-3

#: A pooled 1-5 scale; " 3" is two tokens for SmolLM2 (space, digit): teacher-forced.
LIKERT: list[tuple[str, ...]] = [(str(v), f" {v}") for v in range(1, 6)]
#: Words; "Somewhat" is two tokens.
WORDS: list[tuple[str, ...]] = [("No",), ("Yes",), ("Somewhat",)]
#: A smaller mix for the paths that compute a sequence per variant.
MIXED = [("1", " 1"), ("3", " 3"), ("No",), ("Somewhat",)]

RESPONSES = [
    "The price was far too high for what we got, and nobody explained the fees.",
    "Staff were kind and the rooms were clean.",
    "I had to wait three weeks for an appointment, then it was cancelled twice. "
    "When I finally saw someone they had not read my file. " * 3,
]


def chat_messages(response: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You code survey responses. Answer with one number."},
        {
            "role": "user",
            "content": "Code: Cost (complaints about price or fees).\n"
            f"Response: {response}\nHow well does the code apply, from 1 to 5?",
        },
    ]


PLAIN = ["Rate from 1 to 5 how positive this is: great service.\nRating:", "Question: Yes or No?"]


@pytest.fixture(scope="module", autouse=True)
def _server_first(vllm_server: VllmServer) -> None:
    """Start (or skip for want of) the server before the local model is loaded."""


@pytest.fixture(scope="module")
def local(embedded_dir: Any) -> Iterator[Any]:
    from scoring.backends.transformers.backend import TransformersBackend

    backend = TransformersBackend.from_pretrained(
        embedded_dir, name="local", revision="test", device="cpu", local_files_only=True
    )
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def reference(local: Any) -> Callable[[list[str], list[tuple[str, ...]]], list[Any]]:
    """The local backend's answers, computed once per (prompts, options)."""
    memo: dict[tuple[tuple[str, ...], tuple[tuple[str, ...], ...]], list[Any]] = {}

    def answer(prompts: list[str], options: list[tuple[str, ...]]) -> list[Any]:
        key = (tuple(prompts), tuple(options))
        if key not in memo:
            memo[key] = local.option_logprobs(prompts, options)
        return memo[key]

    return answer


@pytest.fixture(scope="module")
def servers(vllm_server: VllmServer) -> Iterator[dict[str, OpenAIBackend]]:
    """One backend per mode, on the session's server."""
    made = {
        mode: OpenAIBackend(f"openai:{vllm_server.name}", server=vllm_server.url, mode=mode)
        for mode in ("auto", "logprob_token_ids", "prompt_logprobs", "echo", "topk")
    }
    yield made
    for backend in made.values():
        backend.close()


@pytest.fixture(scope="module")
def prompts(local: Any) -> list[str]:
    """Three chat prompts (one of ~140 tokens) and two plain ones."""
    return [local.render_chat(chat_messages(r)) for r in RESPONSES] + PLAIN


def assert_same(theirs: list[Any], ours: list[Any]) -> None:
    for server_result, local_result in zip(theirs, ours, strict=True):
        assert server_result.token_ids == local_result.token_ids
        assert server_result.prompt_tokens == local_result.prompt_tokens
        assert not server_result.missing.any()
        np.testing.assert_allclose(
            server_result.logprobs, local_result.logprobs, atol=TOLERANCE, rtol=0
        )


def test_the_server_renders_the_same_chat_prompts(
    local: Any, servers: dict[str, OpenAIBackend]
) -> None:
    backend = servers["auto"]
    assert backend.is_chat
    for response in RESPONSES:
        messages = chat_messages(response)
        assert backend.render_chat(messages) == local.render_chat(messages)


def test_identity_names_the_served_model_and_its_weights(
    servers: dict[str, OpenAIBackend], vllm_server: VllmServer
) -> None:
    identity = servers["auto"].identity
    assert identity.name == "openai:smollm2"
    assert identity.revision == str(vllm_server.model_dir)
    assert identity.backend == "openai"


def test_auto_chooses_the_fastest_exact_path_on_vllm(servers: dict[str, OpenAIBackend]) -> None:
    assert servers["auto"].probe() == "logprob_token_ids"


def test_logprob_token_ids_path_equals_the_local_backend(
    reference: Any, servers: dict[str, OpenAIBackend], prompts: list[str]
) -> None:
    theirs = servers["logprob_token_ids"].option_logprobs(prompts, LIKERT + WORDS)
    assert_same(theirs, reference(prompts, LIKERT + WORDS))


@pytest.mark.parametrize("mode", ["prompt_logprobs", "echo"])
def test_sequence_paths_equal_the_local_backend(
    mode: str, reference: Any, servers: dict[str, OpenAIBackend], prompts: list[str]
) -> None:
    few = [prompts[0], prompts[3]]  # a chat prompt and a plain one
    theirs = servers[mode].option_logprobs(few, MIXED)
    assert_same(theirs, reference(few, MIXED))


def test_topk_path_equals_the_local_backend_where_it_sees(
    reference: Any, servers: dict[str, OpenAIBackend], prompts: list[str]
) -> None:
    options = [("1",), ("2",), ("3",), ("4",), ("5",), (" 3",), ("Somewhat",), (" zebra",)]
    theirs = servers["topk"].option_logprobs(prompts, options)
    ours = reference(prompts, options)
    seen = seen_multi = 0
    for server_result, local_result in zip(theirs, ours, strict=True):
        assert server_result.token_ids == local_result.token_ids
        for k in range(len(options)):
            if server_result.missing[k]:
                # An upper bound, never a value: at least the true log-probability.
                assert local_result.logprobs[k] - TOLERANCE <= server_result.logprobs[k] < 0
            else:
                assert server_result.logprobs[k] == pytest.approx(
                    local_result.logprobs[k], abs=TOLERANCE
                )
                seen += 1
                seen_multi += options[k] in ((" 3",), ("Somewhat",))
        # " zebra" is far outside any top 20: reported missing, not as zero mass.
        assert local_result.logprobs[-1] < -15
        assert server_result.missing[-1]
    assert seen >= 10
    assert seen_multi >= 1  # a two-token option read through two top-k requests


def test_many_prompts_come_back_in_order(reference: Any, servers: dict[str, OpenAIBackend]) -> None:
    many = [f"{PLAIN[i % 2]} ({i})" if i % 3 else PLAIN[i % 2] for i in range(10)]
    theirs = servers["logprob_token_ids"].option_logprobs(many, WORDS)
    assert_same(theirs, reference(many, WORDS))


# -- error paths ----------------------------------------------------------------------------


def test_a_wrong_model_name_is_a_clear_error(vllm_server: VllmServer) -> None:
    with pytest.raises(ModelNotFoundError, match=r"does not serve model 'smollm3'.*smollm2"):
        OpenAIBackend("openai:smollm3", server=vllm_server.url)


def test_a_server_that_is_down_is_a_clear_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(ServerUnreachableError, match=r"cannot reach the server.*is it running"):
        OpenAIBackend("openai:smollm2", server=f"http://127.0.0.1:{port}", backoff=0.05)
    assert time.monotonic() - started < 10


def test_a_request_past_its_timeout_is_a_clear_error(
    vllm_server: VllmServer, prompts: list[str]
) -> None:
    with OpenAIBackend(
        f"openai:{vllm_server.name}", server=vllm_server.url, mode="echo"
    ) as backend:
        backend.timeout = 0.05  # a 400-token prompt times five sequences takes longer
        with pytest.raises(ServerTimeoutError, match=r"longer than 0\.05 s"):
            backend.option_logprobs([prompts[2]], LIKERT)
