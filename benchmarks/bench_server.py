"""Benchmark scoring through a vLLM server at concurrency 1, 4 and 16, next to the local
transformers backend on the same pairs.

Pairs are the ``work_survey`` sample (responses x codes) scored through the engine, as
``codecurve score`` does. Each concurrency level gets its own slice of responses, so that
vLLM's prefix cache cannot serve one run from another's prompts (the codes' shared
instructions stay cached, as they would in a real study); the local backend scores the
same slice. A warm-up pair per code comes first for both. Printed per run: pairs per
second for the server and for the local backend, and the largest difference between
their surprisals.

    .venv/bin/python -m benchmarks.bench_server                    # starts .venv-vllm's server
    .venv/bin/python -m benchmarks.bench_server --server http://127.0.0.1:8000 --name smollm2
    .venv/bin/python -m benchmarks.bench_server --mode prompt_logprobs --levels 1,4

Without ``--server`` the embedded model's converted folder is served from ``.venv-vllm``
(``scripts/setup-vllm.sh``) on a free port and stopped at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np

from codebooks import load_codebook
from codebooks.samples import sample_paths
from scoring.backend import Backend
from scoring.backends.server.backend import OpenAIBackend
from scoring.engine import ScoringEngine
from scoring.score import Pair, Score

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", help="a running server's URL (default: start one)")
    parser.add_argument("--name", default="smollm2", help="the served model name")
    parser.add_argument("--mode", default="auto", help="server mode (default: auto)")
    parser.add_argument("--levels", default="1,4,16", help="concurrency levels")
    parser.add_argument("--responses", type=int, default=10, help="responses per run")
    parser.add_argument("--sample", default="work_survey", help="sample study to score")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",")]

    from scoring.backends.transformers.backend import TransformersBackend
    from scoring.weights import embedded_gguf_path, ensure_converted

    model_dir = ensure_converted(embedded_gguf_path())
    responses_path, codebook_path = sample_paths(args.sample)
    codebook = load_codebook(codebook_path)
    codes = list(codebook.codable)
    with responses_path.open(encoding="utf-8", newline="") as fh:
        texts = [(row["id"], row["text"]) for row in csv.DictReader(fh)]
    need = args.responses * len(levels) + 1
    if len(texts) < need:
        parser.error(f"the sample has {len(texts)} responses, {need} are needed")
    warm = [Pair(texts[0][0], texts[0][1], code) for code in codes]
    runs = [
        [
            Pair(rid, text, code)
            for rid, text in texts[1 + i * args.responses : 1 + (i + 1) * args.responses]
            for code in codes
        ]
        for i in range(len(levels))
    ]

    local = TransformersBackend.from_pretrained(
        model_dir, name="local", revision="bench", device="cpu", local_files_only=True
    )
    with contextlib.ExitStack() as stack:
        url = args.server or stack.enter_context(_served(model_dir, args.name))
        print(f"server {url}, model {args.name}; {len(codes)} codes x {args.responses} responses")
        print(f"{'concurrency':>11}  {'pairs':>5}  {'server p/s':>10}  {'local p/s':>9}  max|diff|")
        for level, pairs in zip(levels, runs, strict=True):
            server = OpenAIBackend(
                f"openai:{args.name}", server=url, mode=args.mode, concurrency=level
            )
            try:
                theirs, server_rate = _timed(server, codebook, warm, pairs, batch=4 * level + 16)
                ours, local_rate = _timed(local, codebook, warm, pairs, batch=16)
                mode = server.mode
            finally:
                server.close()
            diff = max(
                float(np.max(np.abs(a.curve.surprisal - b.curve.surprisal)))
                for a, b in zip(theirs, ours, strict=True)
            )
            print(
                f"{level:>11}  {len(pairs):>5}  {server_rate:>10.2f}  {local_rate:>9.2f}  "
                f"{diff:.1e}  ({mode})"
            )
    local.close()
    return 0


def _timed(
    backend: Backend, codebook: object, warm: list[Pair], pairs: list[Pair], *, batch: int
) -> tuple[list[Score], float]:
    engine = ScoringEngine(backend, codebook, batch_size=batch)  # type: ignore[arg-type]
    engine.score(warm)  # probe, templates, the codes' prefixes
    started = time.perf_counter()
    scores = engine.score(pairs)
    return scores, len(pairs) / (time.perf_counter() - started)


@contextlib.contextmanager
def _served(model_dir: Path, name: str) -> Iterator[str]:
    """vLLM from .venv-vllm on a free port, stopped by its process group afterwards."""
    if not VLLM_PYTHON.is_file():
        sys.exit("no .venv-vllm: run scripts/setup-vllm.sh, or pass --server URL")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", HF_HUB_OFFLINE="1")
    env["VLLM_NO_USAGE_STATS"] = "1"
    log = Path(tempfile.mkstemp(prefix="vllm-bench-", suffix=".log")[1])
    command = [
        str(VLLM_PYTHON),
        "-m",
        "vllm.entrypoints.openai.api_server",
        *("--model", str(model_dir), "--served-model-name", name),
        *("--host", "127.0.0.1", "--port", str(port)),
        *("--dtype", "float32", "--max-model-len", "2048", "--enforce-eager"),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        while time.monotonic() - started < 300:
            if process.poll() is not None:
                sys.exit(f"the vLLM server exited while starting; see {log}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                    break
            time.sleep(0.5)
        else:
            sys.exit(f"the vLLM server did not start within 300 s; see {log}")
        print(f"started vLLM in {time.monotonic() - started:.0f} s (log: {log})")
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


if __name__ == "__main__":
    raise SystemExit(main())
