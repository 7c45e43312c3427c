"""Benchmark ``codecurve serve`` under a flood of bad sign-ins from one address.

A real server on 127.0.0.1 (a small study, one coder's link) gets ``--requests`` requests
with wrong tokens, ``--concurrency`` at a time, each abandoned by its client after
``--patience`` seconds (as a script that gives up does). Meanwhile a valid coder signs
in with their link now and then. Printed: the server's resident memory before, at its
highest and after; how long the valid sign-ins took; how many bad requests were answered
and how many the client abandoned; how long after the flood the server was still busy
answering; and how long SIGTERM took to stop it.

    .venv/bin/python -m benchmarks.bench_refusals
    .venv/bin/python -m benchmarks.bench_refusals --requests 2000 --concurrency 200
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
READY = re.compile(r"serving \S+ on (https?://\S+) ")


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MB (0 when it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else 0.0


def make_study(folder: Path) -> tuple[Path, str]:
    """A study of 20 responses and a link for ``ana``."""
    sys.path.insert(0, str(ROOT))
    from tests.factories import build_study
    from tui.serve.access import AccessList

    path = folder / "flood.codecurve"
    build_study(path, n=20).close()
    return path, AccessList(path).add("ana")


class Server:
    """``codecurve serve STUDY --port 0 --no-model`` in a subprocess."""

    def __init__(self, study: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tui.cli", "serve", str(study), "--port", "0", "--no-model"],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=study.parent,
            start_new_session=True,
        )
        self.url = ""
        found = threading.Event()

        def read() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                if not self.url and (m := READY.search(line)):
                    self.url = m.group(1)
                    found.set()
            found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(120) or not self.url:
            raise SystemExit("the server did not start")

    def stop(self) -> float:
        """SIGTERM; the seconds until the process is gone."""
        started = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=180)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        return time.monotonic() - started


async def flood(
    url: str, token: str, *, requests: int, concurrency: int, patience: float, pid: int
) -> dict[str, float]:
    answered = abandoned = 0
    peak = rss_mb(pid)
    sign_ins: list[float] = []
    done = asyncio.Event()
    timeout = aiohttp.ClientTimeout(total=patience)
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=True)

    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as bad:
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(requests):
            queue.put_nowait(i)

        async def worker() -> None:
            nonlocal answered, abandoned
            while True:
                try:
                    i = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                try:
                    async with bad.get(f"{url}/?token=guess-{i}") as response:
                        await response.read()
                        answered += 1
                except (TimeoutError, aiohttp.ClientError):
                    abandoned += 1

        async def watch() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, rss_mb(pid))
                await asyncio.sleep(0.2)

        async def coder() -> None:
            # A valid coder signs in every two seconds, from the same address.
            while not done.is_set():
                started = time.monotonic()
                try:
                    async with (
                        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as mine,
                        mine.get(f"{url}/?token={token}") as response,
                    ):
                        await response.read()
                        ok = response.status == 200
                except (TimeoutError, aiohttp.ClientError):
                    ok = False
                sign_ins.append(time.monotonic() - started if ok else float("inf"))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(done.wait(), 2.0)

        watcher = asyncio.create_task(watch())
        signer = asyncio.create_task(coder())
        started = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        flood_s = time.monotonic() - started
        done.set()
        await asyncio.gather(watcher, signer)
    finite = sorted(s for s in sign_ins if s != float("inf"))
    return {
        "flood_s": flood_s,
        "answered": answered,
        "abandoned": abandoned,
        "peak_mb": peak,
        "sign_ins": len(sign_ins),
        "sign_ins_failed": len(sign_ins) - len(finite),
        "sign_in_median_s": finite[len(finite) // 2] if finite else float("nan"),
        "sign_in_max_s": finite[-1] if finite else float("nan"),
    }


async def busy_after(url: str, *, limit: float) -> float:
    """Seconds until a refused request is answered at once again (the server is no longer
    working through the flood), at most ``limit``."""
    started = time.monotonic()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
        while time.monotonic() - started < limit:
            try:
                async with session.get(f"{url}/static/none") as response:
                    await response.read()
                    return time.monotonic() - started
            except (TimeoutError, aiohttp.ClientError):
                await asyncio.sleep(0.5)
    return float("inf")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=500)
    parser.add_argument("--patience", type=float, default=5.0, help="client gives up after")
    parser.add_argument("--busy-limit", type=float, default=120.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="codecurve-flood-") as folder:
        study, token = make_study(Path(folder))
        server = Server(study)
        pid = server.process.pid
        time.sleep(1.0)
        before = rss_mb(pid)
        result = asyncio.run(
            flood(
                server.url,
                token,
                requests=args.requests,
                concurrency=args.concurrency,
                patience=args.patience,
                pid=pid,
            )
        )
        busy = asyncio.run(busy_after(server.url, limit=args.busy_limit))
        after = rss_mb(pid)
        stop_s = server.stop()
    print(
        f"bad requests: {args.requests:,} ({args.concurrency} at a time, abandoned after "
        f"{args.patience:g} s)"
    )
    print(
        f"  flood took {result['flood_s']:.1f} s: {int(result['answered']):,} answered, "
        f"{int(result['abandoned']):,} abandoned by the client"
    )
    print(
        f"server memory: {before:.0f} MB before, {result['peak_mb']:.0f} MB at most, "
        f"{after:.0f} MB after"
    )
    print(
        f"valid sign-ins during the flood: {int(result['sign_ins'])}, "
        f"{int(result['sign_ins_failed'])} failed or over 60 s; median "
        f"{result['sign_in_median_s']:.3f} s, slowest {result['sign_in_max_s']:.3f} s"
    )
    print(f"a refused request answered again {busy:.1f} s after the flood")
    print(f"SIGTERM stopped the server in {stop_s:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
