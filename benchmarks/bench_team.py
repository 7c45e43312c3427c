"""Benchmark a team on one study: decision commit latency of 8 coder sessions at once
against one session alone, measured in the same run (the ratio is the figure).

Each session is its own process (``Study.open(coder=...)``) recording decisions on random
pairs paced like a fast coder (``--gap``, seconds between decisions; 0: as fast as it
can); each decision's time is from the call to its return, committed (WAL, ``normal``
durability, as the app writes). Prints p50/p99 for one session, for eight, and their
ratios. On a machine with fewer cores than sessions the p99 is the CPU's queue as much as
the study's.

    .venv/bin/python -m benchmarks.bench_team [--coders 8] [--decisions 400] [--gap 0.005]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codebooks.model import LIKERT_5, Code, Codebook
from study import ResponseTable, Study

ROOT = Path(__file__).resolve().parents[1]


def build(path: Path, responses: int) -> None:
    codebook = Codebook(
        name="Team",
        codes=tuple(Code(f"c{i}", f"Code {i}", definition=f"Theme {i}.") for i in range(4)),
        scale=LIKERT_5,
    )
    texts = {f"r{i}": f"response number {i}" for i in range(responses)}
    Study.create(path, responses=ResponseTable.from_texts(texts), codebook=codebook).close()


def worker(path: Path, coder: str, seed: int, decisions: int, gap: float, out: Path) -> None:
    """One coder's session: ``decisions`` records, each one's commit time to ``out``."""
    rng = random.Random(seed)
    times = []
    with Study.open(path, coder=coder) as study:
        ids, codes = study.response_ids(), [c.id for c in study.codes]
        for _ in range(decisions):
            rid, code = rng.choice(ids), rng.choice(codes)
            started = time.perf_counter()
            study.decisions.record(rid, code, rng.randint(1, 5), coder=coder)
            times.append(time.perf_counter() - started)
            if gap:
                time.sleep(gap * rng.uniform(0.5, 1.5))
    out.write_text("\n".join(f"{t:.9f}" for t in times), encoding="utf-8")


def run(path: Path, coders: int, decisions: int, gap: float, folder: Path) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outs = [folder / f"times-{coders}-{k}.txt" for k in range(coders)]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.bench_team",
                "--worker",
                str(path),
                f"coder{k}",
                str(k),
                str(decisions),
                str(gap),
                str(outs[k]),
            ],
            env=env,
            cwd=ROOT,
        )
        for k in range(coders)
    ]
    for proc in procs:
        if proc.wait() != 0:
            raise SystemExit(f"a coder session failed ({proc.returncode})")
    return [float(t) for out in outs for t in out.read_text(encoding="utf-8").split()]


def percentiles(values: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return statistics.median(values), cuts[98]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        where, coder, seed, decisions, gap, out = sys.argv[2:8]
        worker(Path(where), coder, int(seed), int(decisions), float(gap), Path(out))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coders", type=int, default=8)
    parser.add_argument("--decisions", type=int, default=400, help="per session")
    parser.add_argument("--responses", type=int, default=2000)
    parser.add_argument("--gap", type=float, default=0.005, help="seconds between decisions")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        folder = Path(tmp)
        path = folder / "team.codecurve"
        build(path, args.responses)
        alone = run(path, 1, args.decisions, args.gap, folder)
        team = run(path, args.coders, args.decisions, args.gap, folder)
        with Study.open(path, read_only=True) as study:
            problems = study.check()
    a50, a99 = percentiles(alone)
    t50, t99 = percentiles(team)
    print(
        f"study: {args.responses:,} responses x 4 codes; {args.decisions} decisions per "
        f"session, {args.gap * 1000:.0f} ms apart"
    )
    print(f"1 session:  p50 {a50 * 1000:.2f} ms  p99 {a99 * 1000:.2f} ms")
    print(f"{args.coders} sessions: p50 {t50 * 1000:.2f} ms  p99 {t99 * 1000:.2f} ms")
    print(f"ratio {args.coders} : 1   p50 {t50 / a50:.1f}x  p99 {t99 / a99:.1f}x")
    print(f"integrity: {problems or 'ok'}")
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
