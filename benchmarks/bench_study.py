"""Benchmark a study of 10,000 responses x 20 codes (200,000 scored pairs).

Prints: open time, first page of the queue ordered by entropy (and a few other pages),
the time to record one decision (median and p99 of 1,000, each committed with fsync),
and export times (long and wide CSV). Targets: open and first page < 0.5 s, decision
p99 < 10 ms.

    .venv/bin/python -m benchmarks.bench_study [--responses 10000] [--codes 20] [--dir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from codebooks.model import LIKERT_5, Code, Codebook
from scoring.backend import ModelIdentity
from scoring.curves import Curve
from scoring.score import Score, ScoreConfig
from study import ResponseTable, Study
from study.exchange.export import export_study

WORDS = [
    "the",
    "staff",
    "were",
    "kind",
    "but",
    "the",
    "wait",
    "was",
    "long",
    "and",
    "nobody",
    "explained",
    "what",
    "would",
    "happen",
    "next",
    "pay",
    "is",
    "low",
    "workload",
    "high",
    "team",
    "supportive",
    "manager",
    "absent",
    "parking",
    "impossible",
    "food",
    "cold",
]


def build(path: Path, n_responses: int, n_codes: int, *, seed: int = 0) -> tuple[float, int]:
    rng = np.random.default_rng(seed)
    texts = {
        f"R{i:05d}": " ".join(rng.choice(WORDS, size=int(rng.integers(8, 60))))
        for i in range(n_responses)
    }
    codes = tuple(
        Code(f"c{j:02d}", f"Code {j}", definition=f"Definition of code {j}.")
        for j in range(n_codes)
    )
    codebook = Codebook(name="bench", codes=codes, scale=LIKERT_5)
    config = ScoreConfig(
        model=ModelIdentity("fake:bench", "r1", "float32", "cpu", "fake"),
        template_id="bench-v1",
        template_hash="h",
        context="definition",
        scale=LIKERT_5,
    )
    start = time.perf_counter()
    with Study.create(path, responses=ResponseTable.from_texts(texts), codebook=codebook) as s:
        config_id = s.scores.ensure_config(config)
        pending = s.scores.pending_pairs(config_id)
        # The curve math of scoring.curves, vectorised over all pairs (the benchmark is about
        # the study, not about building 200,000 curves one by one).
        logits = rng.normal(size=(len(pending), 5)) * 2.0
        logprobs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True)) - 0.02
        mass = np.exp(logprobs).sum(axis=1)
        probs = np.exp(logprobs) / mass[:, None]
        entropy = -(probs * np.log(probs)).sum(axis=1)
        values = np.arange(1, 6, dtype=float)
        expected = probs @ values
        spread = np.sqrt((probs * (values - expected[:, None]) ** 2).sum(axis=1))
        key = config.key()
        token_ids = tuple(((i + 10,), (i + 100,)) for i in range(5))
        batch = []
        for i, pair in enumerate(pending):
            digest = hashlib.sha256(f"{pair.response_id}{pair.code.id}".encode()).hexdigest()[:16]
            curve = Curve(
                surprisal=-logprobs[i],
                probs=probs[i],
                on_scale_mass=float(mass[i]),
                entropy=float(entropy[i]),
                norm_entropy=float(entropy[i] / np.log(5)),
                mode=int(np.argmax(probs[i])),
                expected=float(expected[i]),
                spread=float(spread[i]),
                confidence=float(probs[i].max()),
                off_scale=False,
            )
            batch.append(
                Score(
                    response_id=pair.response_id,
                    code_id=pair.code.id,
                    config_key=key,
                    scale=LIKERT_5,
                    curve=curve,
                    token_ids=token_ids,
                    missing=(False,) * 5,
                    prompt="",
                    prompt_hash=digest,
                    text_hash=digest,
                    code_hash=digest,
                )
            )
            if len(batch) == 2000:
                s.scores.store(config_id, batch)
                batch = []
        s.scores.store(config_id, batch)
    return time.perf_counter() - start, config_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=10_000)
    parser.add_argument("--codes", type=int, default=20)
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to build (default: a temp dir)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "bench.codecurve"
        built, config_id = build(path, args.responses, args.codes)
        pairs = args.responses * args.codes
        size = path.stat().st_size / 2**20
        print(f"study: {args.responses:,} responses x {args.codes} codes = {pairs:,} scored pairs")
        print(f"build (synthetic scores): {built:.1f} s, file {size:.1f} MiB")

        start = time.perf_counter()
        s = Study.open(path)
        print(f"open: {1000 * (time.perf_counter() - start):.1f} ms")

        def timed(label: str, **kwargs: object) -> None:
            start = time.perf_counter()
            rows = s.queries.page(config_id, limit=100, **kwargs)  # type: ignore[arg-type]
            ms = 1000 * (time.perf_counter() - start)
            print(f"{label}: {ms:.1f} ms ({len(rows)} rows)")

        timed("first page, order entropy")
        timed("first page, order entropy, status undecided", status="undecided")
        timed("first page, order entropy, one code", code_id="c07")
        timed("first page, order confidence", order="confidence")
        timed("first page, order pick", order="pick")
        timed("first page, order id", order="id")
        timed("page at offset 150,000, order entropy", offset=150_000)
        timed("first page, search 'parking'", search="parking")
        timed("first page, search 'parking', order id", search="parking", order="id")
        start = time.perf_counter()
        rows = s.queries.of_response(config_id, "R04242")
        ms = 1000 * (time.perf_counter() - start)
        print(f"one response's pairs: {ms:.1f} ms ({len(rows)} rows)")

        rng = np.random.default_rng(1)
        ids = s.response_ids()

        def decisions(study: Study, label: str) -> None:
            times = []
            for _ in range(1000):
                rid = ids[int(rng.integers(len(ids)))]
                code = f"c{int(rng.integers(args.codes)):02d}"
                start = time.perf_counter()
                study.decisions.record(rid, code, int(rng.integers(1, 6)), coder="bench")
                times.append(time.perf_counter() - start)
            times_ms = sorted(1000 * t for t in times)
            p99 = times_ms[int(0.99 * len(times_ms)) - 1]
            print(
                f"record one decision, {label}: median {statistics.median(times_ms):.2f} ms, "
                f"p99 {p99:.2f} ms, max {times_ms[-1]:.2f} ms (1,000 decisions)"
            )

        decisions(s, "durability=normal (default: survives a kill; a power cut after ~1 s)")
        s.close()
        s = Study.open(path, durability="full")
        decisions(s, "durability=full (an fsync per commit: survives a power cut)")
        s.close()
        start = time.perf_counter()
        fd = os.open(Path(tmp) / "fsync-probe", os.O_CREAT | os.O_WRONLY)
        probe = []
        for _ in range(200):
            start = time.perf_counter()
            os.write(fd, b"x" * 4096)
            os.fsync(fd)
            probe.append(1000 * (time.perf_counter() - start))
        os.close(fd)
        probe.sort()
        print(
            f"(this disk's raw fsync: median {statistics.median(probe):.2f} ms, "
            f"p99 {probe[197]:.2f} ms)"
        )
        s = Study.open(path)
        start = time.perf_counter()
        s.decisions.undo(coder="bench")
        print(f"undo: {1000 * (time.perf_counter() - start):.2f} ms")
        start = time.perf_counter()
        s.queries.count(config_id, status="undecided")
        print(f"count undecided: {1000 * (time.perf_counter() - start):.1f} ms")
        start = time.perf_counter()
        s.queries.progress(config_id)
        print(f"progress: {1000 * (time.perf_counter() - start):.1f} ms")
        start = time.perf_counter()
        frame = s.queries.annotated_pairs(config_id)
        print(f"annotated pairs ({len(frame)}): {1000 * (time.perf_counter() - start):.1f} ms")
        for layout in ("long", "wide"):
            out = Path(tmp) / f"export-{layout}.csv"
            start = time.perf_counter()
            export_study(s, out, layout=layout)
            print(f"export {layout} CSV: {time.perf_counter() - start:.2f} s")
        out = Path(tmp) / "export-long.parquet"
        start = time.perf_counter()
        export_study(s, out, layout="long")
        print(f"export long Parquet: {time.perf_counter() - start:.2f} s")
        s.close()


if __name__ == "__main__":
    main()
