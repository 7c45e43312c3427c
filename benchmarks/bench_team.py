"""Benchmark a team on one study: 8 coder sessions at once against one session alone,
measured in the same run (the ratios are the figures).

* **Commit latency.** Each session is its own process (``Study.open(coder=...)``)
  recording decisions on random pairs paced like a fast coder (``--gap``, seconds between
  decisions; 0: as fast as it can); each decision's time is from the call to its return,
  committed (WAL, ``normal`` durability, as the app writes).
* **Decision key to screen.** The app (headless, 140x40) as coder ``ana`` presses
  ``--keys`` decision keys, ``--key-gap`` apart, measured as :mod:`benchmarks.bench_app`
  measures them (key event to the last screen update it causes; wall and main-thread
  CPU time): once alone, once while ``--coders`` - 1 other coder processes decide on the
  same study (``--team-gap`` apart each). Turns alternate (``--rounds``), pooled.
* **Live refresh.** While the others commit, the app's timer finds their commits twice a
  second and reloads the queue (:mod:`tui.live`, ``CodecurveApp.follow_team``): the time
  of each such refresh on the main thread, where it competes with keys, on its own and up
  to the screen update that follows it (when no key came between).

On a machine with fewer cores than sessions the wall-clock p99 is the CPU's queue as much
as the study's; the CPU times are the app's own work.

    .venv/bin/python -m benchmarks.bench_team [--coders 8] [--decisions 400] [--keys 40]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_app import TimedApp, build, percentiles, press_timed, wait_painted
from study import Study
from tui.live import Change, Live

ROOT = Path(__file__).resolve().parents[1]
#: The app's coder; the other sessions are ``coder1``, ``coder2``...
APP_CODER = "ana"


def worker(
    path: Path, coder: str, seed: int, decisions: int, gap: float, out: Path, stop: Path | None
) -> None:
    """One coder's session: ``decisions`` records (fewer once ``stop`` exists), each
    one's commit time to ``out``; ``out`` with suffix ``.ready`` once the study is open."""
    rng = random.Random(seed)
    times: list[float] = []
    with Study.open(path, coder=coder) as study:
        ids, codes = study.response_ids(), [c.id for c in study.codes]
        out.with_suffix(".ready").touch()
        while len(times) < decisions and not (stop is not None and stop.exists()):
            rid, code = rng.choice(ids), rng.choice(codes)
            started = time.perf_counter()
            study.decisions.record(rid, code, rng.randint(1, 5), coder=coder)
            times.append(time.perf_counter() - started)
            if gap:
                time.sleep(gap * rng.uniform(0.5, 1.5))
    out.write_text("\n".join(f"{t:.9f}" for t in times), encoding="utf-8")


class Sessions:
    """Coder processes ``coder{first}``... deciding on one study (:func:`worker`)."""

    def __init__(
        self,
        path: Path,
        names: range,
        decisions: int,
        gap: float,
        folder: Path,
        stop: Path | None = None,
    ) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        tag = f"{names.start}-{names.stop}"
        self.outs = [folder / f"times-{tag}-{k}.txt" for k in names]
        for out in self.outs:
            out.with_suffix(".ready").unlink(missing_ok=True)
        self.procs = [
            subprocess.Popen(
                [
                    *(sys.executable, "-m", "benchmarks.bench_team", "--worker", str(path)),
                    *(f"coder{k}", str(k), str(decisions), str(gap), str(out), str(stop or "-")),
                ],
                env=env,
                cwd=ROOT,
            )
            for k, out in zip(names, self.outs, strict=True)
        ]

    def wait_ready(self, timeout: float = 120) -> None:
        """Until every session has the study open."""
        deadline = time.monotonic() + timeout
        while not all(out.with_suffix(".ready").exists() for out in self.outs):
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                raise SystemExit("a coder session did not start")
            time.sleep(0.02)

    def times(self) -> list[float]:
        """Wait for the sessions to end: every decision's commit time, in ms."""
        for proc in self.procs:
            if proc.wait() != 0:
                raise SystemExit(f"a coder session failed ({proc.returncode})")
        texts = [out.read_text(encoding="utf-8") for out in self.outs]
        return [float(t) * 1000 for text in texts for t in text.split()]


def run(path: Path, coders: int, decisions: int, gap: float, folder: Path) -> list[float]:
    """``coders`` sessions at once, each ``decisions`` records: their commit times (ms)."""
    return Sessions(path, range(coders), decisions, gap, folder).times()


class FoundLive(Live):
    """:class:`tui.live.Live` that remembers whether its last look found others' commits."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.found = False

    def poll(self) -> Change | None:
        change = super().poll()
        self.found = change is not None
        return change


class TeamApp(TimedApp):
    """:class:`benchmarks.bench_app.TimedApp` that also times its live refreshes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.found_live = FoundLive(self.study, self.session)
        self.live = self.found_live
        #: Each refresh that found others' commits: start and end, wall and CPU time.
        self.refreshes: list[tuple[float, float, float, float]] = []

    def follow_team(self) -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        super().follow_team()
        if self.found_live.found:
            self.refreshes.append((wall, cpu, time.perf_counter(), time.thread_time()))

    def refresh_costs(self) -> list[tuple[float, float, float, float]]:
        """Per refresh, in ms: its own wall and CPU time, then wall and CPU time up to the
        screen update that follows it (NaN when a key came first or nothing was drawn)."""
        costs = []
        for wall, cpu, end, end_cpu in self.refreshes:
            paint = next((i for i, t in enumerate(self.paint_times) if t > end), None)
            keyed = paint is not None and any(
                wall < k < self.paint_times[paint] for k in self.key_times
            )
            if paint is None or keyed:
                to_wall = to_cpu = math.nan
            else:
                to_wall = (self.paint_times[paint] - wall) * 1000
                to_cpu = (self.paint_cpu[paint] - cpu) * 1000
            costs.append(((end - wall) * 1000, (end_cpu - cpu) * 1000, to_wall, to_cpu))
        return costs


async def drive_app(
    path: Path, keys: int, gap: float
) -> tuple[list[tuple[float, float]], list[tuple[float, float, float, float]]]:
    """The app as :data:`APP_CODER`: ``keys`` decision keys' latencies, and its refreshes."""
    app = TeamApp(Study.open(path, coder=APP_CODER), coder=APP_CODER, close_study=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_painted(app)
        await pilot.pause(0.5)
        decided = await press_timed(app, [str(1 + i % 5) for i in range(keys)], gap)
    with Study.open(path, coder=APP_CODER) as study:  # the next turn starts afresh
        while study.decisions.undo(coder=APP_CODER) is not None:
            pass
    return decided, app.refresh_costs()


def app_turns(args: argparse.Namespace, path: Path, folder: Path) -> dict[str, list[Any]]:
    """The app alone and with the others deciding, in alternate turns."""
    pooled: dict[str, list[Any]] = {"alone": [], "team": [], "refresh": [], "commit": []}
    stop = folder / "stop"
    for round_ in range(args.rounds):
        for team in (False, True) if round_ % 2 == 0 else (True, False):
            if not team:
                pooled["alone"].extend(asyncio.run(drive_app(path, args.keys, args.key_gap))[0])
                continue
            stop.unlink(missing_ok=True)
            others = Sessions(path, range(1, args.coders), 10**9, args.team_gap, folder, stop)
            try:
                others.wait_ready()
                decided, refreshes = asyncio.run(drive_app(path, args.keys, args.key_gap))
            finally:
                stop.touch()
            pooled["commit"].extend(others.times())
            pooled["team"].extend(decided)
            pooled["refresh"].extend(refreshes)
    return pooled


def ms(values: list[float]) -> str:
    p50, p99 = percentiles(values)
    return f"p50 {p50:6.2f} ms  p99 {p99:6.2f} ms"


def report(args: argparse.Namespace, alone: list[float], team: list[float]) -> None:
    """The commit latencies: one session, all of them, their ratio."""
    a50, a99 = percentiles(alone)
    t50, t99 = percentiles(team)
    print(f"commit, {args.decisions} decisions per session, {args.gap * 1000:.0f} ms apart")
    print(f"  1 session:   {ms(alone)}")
    print(f"  {args.coders} sessions:  {ms(team)}")
    print(f"  ratio {args.coders} : 1   p50 {t50 / a50:.1f}x  p99 {t99 / a99:.1f}x")


def report_app(args: argparse.Namespace, pooled: dict[str, list[Any]]) -> None:
    """The app's decision keys alone and with the others, their ratio, its refreshes."""
    others = args.coders - 1
    print(
        f"decision key to screen, app as {APP_CODER} (140x40), {args.keys} keys "
        f"{args.key_gap * 1000:.0f} ms apart x {args.rounds} turns each; "
        f"{others} others {args.team_gap * 1000:.0f} ms apart"
    )
    for clock, column in (("wall", 0), ("CPU", 1)):
        alone = [v[column] for v in pooled["alone"]]
        team = [v[column] for v in pooled["team"]]
        a50, a99 = percentiles(alone)
        t50, t99 = percentiles(team)
        print(f"  {clock:<4} alone:          {ms(alone)}")
        print(f"  {clock:<4} with {others} others:  {ms(team)}")
        print(
            f"  {clock:<4} ratio {args.coders} : 1      p50 {t50 / a50:.1f}x  p99 {t99 / a99:.1f}x"
        )
    refreshes = pooled["refresh"]
    shown = sum(not math.isnan(r[2]) for r in refreshes)
    print(f"live refresh on the main thread (n={len(refreshes)}, others committing)")
    print(
        f"  its own      wall {ms([r[0] for r in refreshes])}  CPU {ms([r[1] for r in refreshes])}"
    )
    print(
        f"  to screen    wall {ms([r[2] for r in refreshes])}  CPU {ms([r[3] for r in refreshes])}"
        f"  (n={shown})"
    )
    print(f"others' commits meanwhile: {ms(pooled['commit'])} (n={len(pooled['commit'])})")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        where, coder, seed, decisions, gap, out, stop = sys.argv[2:9]
        worker(
            *(Path(where), coder, int(seed), int(decisions), float(gap), Path(out)),
            None if stop == "-" else Path(stop),
        )
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coders", type=int, default=8, help="sessions at once, the app's too")
    parser.add_argument("--decisions", type=int, default=400, help="per session (commit)")
    parser.add_argument("--responses", type=int, default=2000)
    parser.add_argument("--codes", type=int, default=5)
    parser.add_argument("--gap", type=float, default=0.005, help="seconds between decisions")
    parser.add_argument("--keys", type=int, default=40, help="the app's decision keys per turn")
    parser.add_argument("--key-gap", type=float, default=0.12, help="seconds between keys")
    parser.add_argument(
        "--team-gap", type=float, default=0.05, help="seconds between others' decisions"
    )
    parser.add_argument("--rounds", type=int, default=2, help="app turns alone and with others")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        folder = Path(tmp)
        path = folder / "team.codecurve"
        build(path, args.responses, args.codes)
        alone = run(path, 1, args.decisions, args.gap, folder)
        team = run(path, args.coders, args.decisions, args.gap, folder)
        pooled = app_turns(args, path, folder)
        with Study.open(path, read_only=True) as study:
            problems = study.check()
    print(f"study: {args.responses:,} responses x {args.codes} codes, synthetic scores")
    report(args, alone, team)
    report_app(args, pooled)
    print(f"integrity: {problems or 'ok'}")
    print(f"load average at start: {load:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
