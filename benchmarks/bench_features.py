"""What features cost: the same pairs scored with and without spans, both local backends.

Renders about a hundred (response, code) pairs of the ``work_survey`` sample (the first
``--responses`` responses under every codable code, the engine's prompts), finds each
response in its prompt (``prompt.find(text)``) and scores them through each local
backend's :meth:`~scoring.backend.Backend.option_logprobs` directly, in calls of one code
and at most 16 prompts (the engine's batches), twice per round: without spans (no
features) and with them (features from the same pass). llama.cpp is also timed with its
eval callback left out (``features=False``), the cost of having it installed and idle.

The machine may be shared: modes and backends take turns within each round, the order
swapped every round, and each figure is the mode's fastest round. Prints, per backend,
the seconds, the ratio with/without spans, and the features' bytes per pair.

    .venv/bin/python -m benchmarks.bench_features [--responses 15] [--rounds 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "codebooks" / "samples"
BATCH = 16


def pairs(backend: Any, responses: int) -> list[tuple[list[str], list[tuple[int, int] | None]]]:
    """Per code, its prompts and the responses' spans in them."""
    from codebooks import load_codebook
    from scoring import Pair, ScoringEngine
    from study.intake.responses import read_responses

    codebook = load_codebook(SAMPLES / "work_survey.yaml")
    rows = list(read_responses(SAMPLES / "work_survey.csv"))[:responses]
    engine = ScoringEngine(backend, codebook, context="definition")
    out = []
    for code in codebook.codable:
        prompts = [engine.prompt_for(Pair(r.id, r.text, code)) for r in rows]
        spans: list[tuple[int, int] | None] = []
        for prompt, row in zip(prompts, rows, strict=True):
            start = prompt.find(row.text)
            spans.append(None if start < 0 else (start, start + len(row.text)))
        out.append((prompts, spans))
    return out


def score_all(backend: Any, work: Any, options: Any, *, spans: bool) -> tuple[float, int, int]:
    """Seconds to score every pair; pairs and feature bytes returned."""
    count = nbytes = 0
    started = time.perf_counter()
    for prompts, code_spans in work:
        for lo in range(0, len(prompts), BATCH):
            got = backend.option_logprobs(
                prompts[lo : lo + BATCH],
                options,
                spans=code_spans[lo : lo + BATCH] if spans else None,
            )
            count += len(got)
            nbytes += sum(0 if r.features is None else r.features.nbytes for r in got)
    return time.perf_counter() - started, count, nbytes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=15, help="responses per code")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import torch

    from scoring import load_backend
    from scoring.backends.llama.backend import LlamaCppBackend

    torch.set_num_threads(args.threads)
    transformers = load_backend(None, device="cpu")
    llama = load_backend(None, backend="llama.cpp", threads=args.threads)
    assert isinstance(llama, LlamaCppBackend)
    idle = LlamaCppBackend(llama.info, name="t", revision="t", threads=args.threads, features=False)
    work = pairs(transformers, args.responses)
    options = [(str(i), f" {i}") for i in range(1, 6)]
    runs: dict[str, tuple[Any, bool]] = {
        "transformers": (transformers, False),
        "transformers+spans": (transformers, True),
        "llama.cpp": (llama, False),
        "llama.cpp+spans": (llama, True),
        "llama.cpp no callback": (idle, False),
    }
    for backend, _ in runs.values():  # warm up: first calls, prefix caches
        backend.option_logprobs(work[0][0][:2], options, spans=work[0][1][:2])
    best: dict[str, float] = {}
    sizes: dict[str, tuple[int, int]] = {}
    names = list(runs)
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            backend, spans = runs[name]
            seconds, count, nbytes = score_all(backend, work, options, spans=spans)
            best[name] = min(best.get(name, seconds), seconds)
            sizes[name] = (count, nbytes)
            print(f"round {r + 1}: {name:22s} {seconds:7.2f} s", flush=True)
    count = sizes["transformers"][0]
    print(f"\n{count} pairs, {args.threads} thread(s), best of {args.rounds} rounds:")
    for base in ("transformers", "llama.cpp"):
        with_spans = f"{base}+spans"
        pair_bytes = sizes[with_spans][1] / sizes[with_spans][0]
        print(
            f"{base:13s} without spans {best[base]:7.2f} s, with {best[with_spans]:7.2f} s: "
            f"ratio {best[with_spans] / best[base]:.3f}, {pair_bytes:.0f} bytes per pair"
        )
    ratio = best["llama.cpp"] / best["llama.cpp no callback"]
    print(f"llama.cpp's idle eval callback: ratio {ratio:.3f} against no callback")


if __name__ == "__main__":
    main()
