"""A real vLLM server on the CPU, started once per test session.

vLLM runs from its own virtual environment, ``.venv-vllm`` (``scripts/setup-vllm.sh``
creates it; it pins its own torch and transformers). The server serves the embedded
model's converted folder, the same weights the local transformers backend reads, so the
two backends can be compared number for number.

Without ``.venv-vllm`` the tests are skipped with the command that creates it, except in
CI (``CI=true``), where a missing server is a failure: CI must prove the integration.
The server is stopped by its process group at the end of the session, also when a test
fails or the session is interrupted.

``CODECURVE_TEST_VLLM_URL`` points the tests at a server that is already running (it must
serve the embedded model's converted folder as ``smollm2``); it is then neither started
nor stopped. Handy while working on the tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.factories import VllmServer

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-vllm"
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".codecurve-vllm-stamp"

#: The name the server serves the embedded model under.
SERVED_NAME = "smollm2"

#: Seconds to wait for /v1/models (measured: 40-50 s on two idle cores, 100 s on busy ones).
START_TIMEOUT = 300.0


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_vllm() -> None:
    """Skip (locally) or fail (in CI) when the vLLM virtual environment is missing."""
    if STAMP.is_file() and PYTHON.is_file():
        return
    reason = f"vLLM is not installed in {VENV}; create it with scripts/setup-vllm.sh"
    if in_ci():
        pytest.fail(reason + " (CI must run the vLLM integration test)", pytrace=False)
    pytest.skip(reason)


def check_vllm_can_read(model_dir: Path) -> None:
    """Fail early, with the reason, on a folder vLLM would load with blank embeddings.

    For a model with tied embeddings vLLM skips ``lm_head.weight`` and reads the table
    from ``model.embed_tokens.weight`` only; a folder that stores the tied tensor under
    the first name alone loads without complaint and serves uniform log-probabilities.
    """
    from safetensors import safe_open

    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    if not config.get("tie_word_embeddings"):
        return
    with safe_open(str(model_dir / "model.safetensors"), framework="np") as weights:
        names = set(weights.keys())
    if "model.embed_tokens.weight" not in names:
        pytest.fail(
            f"{model_dir} stores its tied embedding only as lm_head.weight: vLLM ignores "
            "that name for tied models and would serve uniform log-probabilities. The "
            "conversion (scoring.weights) must save model.embed_tokens.weight instead.",
            pytrace=False,
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def embedded_dir() -> Path:
    """The embedded model's converted folder (converted once into the user cache)."""
    from scoring.errors import ModelNotFoundError
    from scoring.weights import embedded_gguf_path, ensure_converted

    try:
        return ensure_converted(embedded_gguf_path())
    except ModelNotFoundError as exc:
        if in_ci():
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def vllm_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VllmServer]:
    reuse = os.environ.get("CODECURVE_TEST_VLLM_URL")
    if not reuse:
        require_vllm()  # before the model is converted: a skip should cost nothing
    embedded_dir: Path = request.getfixturevalue("embedded_dir")
    if reuse:
        yield VllmServer(reuse.rstrip("/"), SERVED_NAME, embedded_dir, Path(os.devnull), 0, 0.0)
        return
    check_vllm_can_read(embedded_dir)
    port = free_port()
    workdir = tmp_path_factory.mktemp("vllm")
    log_path = workdir / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(
        VLLM_CPU_KVCACHE_SPACE="1",  # GiB of KV cache: plenty for a 135M model
        HF_HUB_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        PATH=f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    command = [
        str(PYTHON),
        "-m",
        "vllm.entrypoints.openai.api_server",  # `vllm serve` crashes in vllm-cpu 0.32.0
        "--model",
        str(embedded_dir),
        "--served-model-name",
        SERVED_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "float32",
        "--max-model-len",
        "2048",
        "--enforce-eager",  # without it start-up compiles for minutes
    ]
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the engine core dies with it
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_until_ready(process, url, log_path)
        yield VllmServer(
            url=url,
            name=SERVED_NAME,
            model_dir=embedded_dir,
            log=log_path,
            pid=process.pid,
            started_in=time.monotonic() - started,
        )
    finally:
        _stop(process)


def _wait_until_ready(process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"the vLLM server exited with {process.returncode} while starting:\n"
                + _tail(log_path),
                pytrace=False,
            )
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/v1/models", timeout=2.0).status_code == 200:
                return
        time.sleep(0.5)
    pytest.fail(
        f"the vLLM server did not answer within {START_TIMEOUT:.0f} s:\n" + _tail(log_path),
        pytrace=False,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's process group, SIGKILL if it lingers; always reaped."""
    for sig, grace in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
        # The engine core lives in the same group and may outlast the API server briefly.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        return


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])
