"""How fast the review app is on a big study, measured inside the app.

Builds (once, cached) a study of 10,000 responses x 10 codes = 100,000 pairs with
synthetic scores, drives the app headless and reports:

* time to first paint: from ``make_app(path)`` (which opens the study) to the first
  screen update that shows the queue;
* key to refreshed screen, per kind of key (decision, move, undo, sort, filter: a
  change in the filter bar, bar: opening or closing it): from
  the moment the key event reaches the app (``App.on_event``) to the end of the last
  screen update it causes (``App._display``, called after the compositor has rendered
  the changed regions), median and p99.

Keys reach the app as a terminal's driver hands them over (an event posted to the app),
not through ``Pilot.press``: after each key Pilot waits for every widget to answer a
callback, about 25 messages processed while the key's own work and its paint run, which
a coder's terminal does not do.

    .venv/bin/python -m benchmarks.bench_app [--responses 10000] [--codes 10] [--samples 100]

``--against TREE`` measures another checkout of codecurve (an older commit, say) against
this one in the same run: the two take turns (``--rounds`` each, the order swapped every
round) on the same study, each in a process of its own, driven by this file; the report
pools each one's keys and gives the ratios old / new (above 1: this checkout is faster).

    .venv/bin/python -m benchmarks.bench_app --against /tmp/codecurve-main --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import RenderableType
from textual import events
from textual.screen import Screen

from codebooks.model import LIKERT_5, Code, Codebook
from study.intake.responses import ResponseTable
from study.store import Study
from tests.factories import iter_synthetic_scores, synthetic_config, texts
from tui.app import CodecurveApp
from tui.screens.review import ReviewScreen


def build(path: Path, responses: int, codes: int) -> None:
    """A study with synthetic scores for every pair (deterministic): the app tests' own
    generator, with longer responses."""
    codebook = Codebook(
        name="Benchmark",
        codes=tuple(Code(f"c{i}", f"Code {i}", f"Definition of code {i}.") for i in range(codes)),
        scale=LIKERT_5,
    )
    table = ResponseTable.from_texts(texts(responses, seed=1, words=(8, 60)))
    with Study.create(path, responses=table, codebook=codebook) as study:
        config = synthetic_config(codebook)
        config_id = study.scores.ensure_config(config)
        scores = iter_synthetic_scores(study, config)
        while batch := list(itertools.islice(scores, 5000)):
            study.scores.store(config_id, batch)


class TimedApp(CodecurveApp):
    """Records when keys arrive and when the screen is updated."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.key_times: list[float] = []
        self.paint_times: list[float] = []
        # Main-thread CPU time at the same moments: wall time on a loaded machine also
        # counts waiting for a core, CPU time only the app's own work.
        self.key_cpu: list[float] = []
        self.paint_cpu: list[float] = []
        self.first_paint: float | None = None

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            self.key_times.append(time.perf_counter())
            self.key_cpu.append(time.thread_time())
        await super().on_event(event)

    def _display(self, screen: Screen[Any], renderable: RenderableType | None) -> None:
        super()._display(screen, renderable)
        if renderable is None:
            return
        now = time.perf_counter()
        self.paint_times.append(now)
        self.paint_cpu.append(time.thread_time())
        if self.first_paint is None and isinstance(screen, ReviewScreen):
            queue = screen.pair_queue
            if queue.total and queue.size.height:
                self.first_paint = now


def latency(app: TimedApp, since: int) -> tuple[float, float]:
    """Key (the one at ``since``) to the last paint before the next key, in ms: wall
    time and the main thread's CPU time."""
    start = app.key_times[since]
    end = app.key_times[since + 1] if since + 1 < len(app.key_times) else math.inf
    paints = [i for i, t in enumerate(app.paint_times) if start < t < end]
    if not paints:
        return math.nan, math.nan
    last = paints[-1]
    wall = (app.paint_times[last] - start) * 1000
    cpu = (app.paint_cpu[last] - app.key_cpu[since]) * 1000
    return wall, cpu


def percentiles(values: list[float]) -> tuple[float, float]:
    values = sorted(v for v in values if not math.isnan(v))
    if not values:
        return math.nan, math.nan
    p99 = values[min(len(values) - 1, math.ceil(0.99 * len(values)) - 1)]
    return statistics.median(values), p99


def summary(name: str, samples: list[tuple[float, float]]) -> str:
    wall_median, wall_p99 = percentiles([w for w, _ in samples])
    cpu_median, cpu_p99 = percentiles([c for _, c in samples])
    unpainted = sum(1 for w, _ in samples if math.isnan(w))
    return (
        f"{name:<10} n={len(samples):<4} wall median {wall_median:6.1f} ms  p99 {wall_p99:6.1f} ms"
        f"   | CPU median {cpu_median:5.1f} ms  p99 {cpu_p99:5.1f} ms"
        + (f"   ({unpainted} keys changed nothing on screen)" if unpainted else "")
    )


async def wait_painted(app: TimedApp, timeout: float = 60) -> float:
    """Wait for the app's first paint of the queue; its time (``perf_counter``)."""
    deadline = time.perf_counter() + timeout
    while app.first_paint is None:
        if time.perf_counter() > deadline or not app.is_running:
            raise SystemExit(f"the app did not paint the queue within {timeout:.0f} s")
        await asyncio.sleep(0.005)
    return app.first_paint


def send_key(app: TimedApp, key: str) -> None:
    """Hand the app one key as a terminal's driver does (its thread posts the event)."""
    char = key if len(key) == 1 else {"enter": "\r", "tab": "\t"}.get(key)
    event = events.Key(key, char)
    event.set_sender(app)
    app.post_message(event)


async def press_timed(app: TimedApp, keys: Iterable[str], gap: float) -> list[tuple[float, float]]:
    """Press ``keys`` one by one, ``gap`` seconds apart: each one's :func:`latency`."""
    samples = []
    for key in keys:
        index = len(app.key_times)
        send_key(app, key)
        await asyncio.sleep(gap)
        samples.append(latency(app, index))
    return samples


async def drive(path: Path, samples: int, gap: float) -> dict[str, list[Any]]:
    t0 = time.perf_counter()
    study = Study.open(path)
    app = TimedApp(study, coder="bench", close_study=True)
    results: dict[str, list[Any]] = {
        "first paint": [],
        "move": [],
        "decision": [],
        "undo": [],
        "sort": [],
        "filter": [],
        "bar": [],
    }
    async with app.run_test(size=(140, 40)) as pilot:
        results["first paint"].append((await wait_painted(app) - t0) * 1000)
        await pilot.pause(0.5)

        async def timed(kind: str, *keys: str) -> None:
            results[kind].extend(await press_timed(app, keys, gap))

        for _ in range(samples):
            await timed("move", "j")
        for _ in range(samples // 2):
            await timed("move", "k")
        for i in range(samples):
            await timed("decision", str(1 + i % 5))
        # The keys reached the app and did their work (each decision moves on to the next pair).
        await pilot.pause(0.2)
        decided = study.queries.count(None, status="decided")
        if decided != samples:
            raise SystemExit(f"{samples} decision keys recorded {decided} decisions")
        for _ in range(samples):
            await timed("undo", "u")
        for _ in range(max(8, samples // 5)):
            await timed("sort", "o")
        # Filters: ``f`` opens the bar, ``←``/``→`` change the code or status and apply
        # it at once (the timed "filter" key), ``enter`` closes the bar ("bar" keys).
        for i in range(max(8, samples // 5)):
            await timed("bar", "f")
            await timed("filter", "right")
            send_key(app, "down")
            await asyncio.sleep(gap)
            await timed("filter", "right" if i % 2 else "left")
            send_key(app, "up")
            await asyncio.sleep(gap)
            await timed("bar", "enter")
    return results


KINDS = ("move", "decision", "undo", "sort", "filter", "bar")


def run_tree(tree: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """One measurement of the checkout at ``tree``, in a process of its own, by this file."""
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        *("--responses", str(args.responses), "--codes", str(args.codes)),
        *("--samples", str(args.samples), "--gap", str(args.gap)),
        *("--study", str(args.study), "--json", str(out)),
    ]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run(argv, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


def compare(args: argparse.Namespace) -> None:
    """``--against``: the other checkout and this one in turns, then the ratios."""
    here = Path(__file__).resolve().parents[1]
    trees = {"old": args.against.resolve(), "new": here}
    pooled: dict[str, dict[str, list[Any]]] = {name: {} for name in trees}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            order = ("old", "new") if round_ % 2 == 0 else ("new", "old")
            for name in order:
                result = run_tree(trees[name], args, Path(tmp) / f"{name}-{round_}.json")
                for kind, values in result.items():
                    pooled[name].setdefault(kind, []).extend(values)
                print(f"round {round_ + 1}/{args.rounds}: {name} done", flush=True)
    pairs = args.responses * args.codes
    print(f"\nold: {trees['old']}\nnew: {trees['new']}")
    print(f"study: {pairs:,} pairs, {args.rounds} rounds each, keys pooled per checkout")
    paint = {name: statistics.median(pooled[name]["first paint"]) for name in trees}
    print(
        f"first paint  old {paint['old']:6.0f} ms  new {paint['new']:6.0f} ms  "
        f"ratio {paint['old'] / paint['new']:.2f}"
    )
    print(
        f"{'key':<10} {'old median/p99 ms':>19} {'new median/p99 ms':>19} "
        f"{'ratio median':>13} {'ratio p99':>10}   (wall; CPU below)"
    )
    for clock, column in (("wall", 0), ("CPU", 1)):
        for kind in KINDS:
            old = percentiles([v[column] for v in pooled["old"][kind]])
            new = percentiles([v[column] for v in pooled["new"][kind]])
            print(
                f"{kind:<8} {clock:<4} {old[0]:6.1f} /{old[1]:7.1f}   {new[0]:8.1f} /{new[1]:7.1f}"
                f"   {old[0] / new[0]:12.2f} {old[1] / new[1]:10.2f}"
            )
    print(f"load average at start: {load:.1f} on {os.cpu_count()} CPUs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=10_000)
    parser.add_argument("--codes", type=int, default=10)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--gap", type=float, default=0.12, help="seconds between keys")
    parser.add_argument(
        "--study",
        type=Path,
        default=Path(tempfile.gettempdir()) / "codecurve-bench",
        help="folder that caches the built study",
    )
    parser.add_argument("--against", type=Path, help="another checkout to measure against this one")
    parser.add_argument("--rounds", type=int, default=3, help="turns of each with --against")
    parser.add_argument("--json", type=Path, help=argparse.SUPPRESS)  # a turn's samples
    args = parser.parse_args()
    args.study.mkdir(parents=True, exist_ok=True)
    path = args.study / f"bench-v2-{args.responses}x{args.codes}.codecurve"
    if not path.exists():
        t = time.perf_counter()
        build(path, args.responses, args.codes)
        print(f"built {path} in {time.perf_counter() - t:.1f} s")
    else:
        # Start from a study without decisions, whatever an earlier run left.
        with Study.open(path) as study:
            while study.decisions.undo(coder="bench") is not None:
                pass
    if args.against is not None:
        compare(args)
        return
    pairs = args.responses * args.codes
    load = os.getloadavg()[0]
    results = asyncio.run(drive(path, args.samples, args.gap))
    if args.json is not None:
        args.json.write_text(json.dumps(results), encoding="utf-8")
        return
    print(f"study: {args.responses:,} responses x {args.codes} codes = {pairs:,} pairs, 140x40")
    for name, values in results.items():
        if name == "first paint":
            print(f"{name:<10} {values[0]:.0f} ms (target < 2000 ms)")
        else:
            print(summary(name, values))
    print("target: key to refreshed screen < 20 ms p99")
    print(f"load average at start: {load:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
