"""Benchmark the study report on 10,000 responses x 10 codes (100,000 scored pairs).

The study has a calibrated synthetic model, a blind audit of 200 pairs per code coded by
one coder and half of it by a second. Prints, measured in this run, each in seconds and
as a multiple of the screen alone (what ``codecurve screen --phase-b`` computes): the
analyses the report gathers (screen with phase B, delegation, agreement, entropies,
curves); the HTML with its inline figures as ``codecurve report -o`` writes it (its
forkserver is started before the analyses, as the command does, so the analyses share
the cores with its imports), then again by one process and by the default processes; the
figures folder (SVG, 300 dpi PNG, CSV) by one process and by the default processes.

    .venv/bin/python -m benchmarks.bench_report [--responses 10000] [--codes 10] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from codebooks.model import LIKERT_5, Code, Codebook
from scoring.backend import ModelIdentity
from scoring.curves import curve_from_logprobs
from scoring.score import Score, ScoreConfig
from study import ResponseTable, Study
from study.analysis.screen import screen_study
from study.report._data import ReportOptions, report_data
from study.report._files import ReportWritten, write_report
from study.report._parallel import FIGURES_PER_CODE, cores, default_processes, warm

MODEL = ModelIdentity(
    name="bench:calibrated", revision="r1", dtype="float32", device="cpu", backend="fake"
)


def build(path: Path, *, n: int, codes: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    codebook = Codebook(
        name="Bench",
        codes=tuple(Code(f"c{j}", f"Code {j}", definition=f"Theme {j}.") for j in range(codes)),
        scale=LIKERT_5,
    )
    texts = {f"r{i}": f"response {i} about theme {i % codes}" for i in range(n)}
    config = ScoreConfig(
        model=MODEL, template_id="bench-v1", template_hash="b", context="definition", scale=LIKERT_5
    )
    truth: dict[tuple[str, str], int] = {}
    with Study.create(path, responses=ResponseTable.from_texts(texts), codebook=codebook) as study:
        config_id = study.scores.ensure_config(config)
        for code in codebook.codes:
            conf = np.where(
                rng.random(n) < 0.7, rng.uniform(0.9, 1.0, n), rng.uniform(0.25, 0.6, n)
            )
            picks = rng.choice([1, 5], n)
            correct = rng.random(n) < conf
            batch = []
            for i in range(n):
                c = float(min(conf[i], 0.999))
                probs = [(1 - c) / 4] * 5
                probs[int(picks[i]) - 1] = c
                rid = f"r{i}"
                truth[(rid, code.id)] = int(picks[i]) if correct[i] else 6 - int(picks[i])
                batch.append(
                    Score(
                        response_id=rid,
                        code_id=code.id,
                        config_key=config.key(),
                        scale=LIKERT_5,
                        curve=curve_from_logprobs(np.log(probs), LIKERT_5.values),
                        token_ids=tuple(((k,),) for k in range(5)),
                        missing=(False,) * 5,
                        prompt="p",
                        prompt_hash="h",
                        text_hash="t",
                        code_hash=code.content_hash(),
                    )
                )
            study.scores.store(config_id, batch)
        sample = study.audit.draw(per_code=200, seed=1)
        for code in codebook.codes:
            for k, rid in enumerate(sample.pairs(code.id)):
                value = truth[(rid, code.id)]
                study.decisions.record(rid, code.id, value, coder="ana", blind=True)
                if k % 2 == 0:
                    other = 6 - value if rng.random() < 0.1 else value
                    study.decisions.record(rid, code.id, other, coder="bo")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--responses", type=int, default=10_000)
    parser.add_argument("--codes", type=int, default=10)
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="bench-report-"))
    path = folder / "bench.codecurve"
    if not path.exists():
        started = time.perf_counter()
        build(path, n=args.responses, codes=args.codes)
        print(f"built {args.responses} x {args.codes} in {time.perf_counter() - started:.1f} s")
    processes = default_processes(FIGURES_PER_CODE * args.codes + 2)
    with Study.open(path, read_only=True) as study:
        started = time.perf_counter()
        screen_study(study, coder="ana", phase_b=True)
        screen = time.perf_counter() - started
        started = time.perf_counter()
        warm(len(study.codes))  # as the command does: its imports overlap the analyses
        data = report_data(study, ReportOptions(coder="ana"))
        analyses = time.perf_counter() - started
    timed: dict[str, float] = {}

    def timing(name: str, **kwargs: Any) -> ReportWritten:
        started = time.perf_counter()
        written = write_report(data, folder / f"{name}.html", **kwargs)
        timed[name] = time.perf_counter() - started
        return written

    timing("html-first")
    timing("html-1", processes=1)
    timing("html-n", processes=processes)
    timing("figures-1", figures=folder / "figures-1", processes=1)
    written = timing("figures-n", figures=folder / "figures-n", processes=processes)
    size = (folder / "html-first.html").stat().st_size

    def line(label: str, seconds: float, extra: str = "") -> None:
        print(f"{label:40s} {seconds:6.2f} s  {seconds / screen:5.1f}x  {extra}")

    print(f"{cores()} cores, {processes} processes draw; load average {os.getloadavg()[0]:.2f}")
    line("screen alone (the unit)", screen)
    line("report's analyses", analyses)
    line("HTML as report -o writes it", timed["html-first"], f"({size / 1e6:.1f} MB)")
    line("HTML, one process", timed["html-1"])
    line(
        f"HTML, {processes} processes",
        timed["html-n"],
        f"({timed['html-1'] / timed['html-n']:.1f}x faster than one)",
    )
    line(f"HTML and --figures ({len(written.files)} files), one process", timed["figures-1"])
    line(
        f"HTML and --figures, {processes} processes",
        timed["figures-n"],
        f"({timed['figures-1'] / timed['figures-n']:.1f}x faster than one)",
    )
    line("report -o total (analyses + HTML)", analyses + timed["html-first"])
    print(f"in {folder}")


if __name__ == "__main__":
    main()
