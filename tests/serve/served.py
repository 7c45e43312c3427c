"""A real ``codecurve serve`` in a subprocess, for the command's and the browser's tests."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r"serving \S+ on (https?://\S+) ")


@dataclass
class Served:
    """A running server: its address and everything it wrote to stderr so far."""

    url: str
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    @property
    def log(self) -> str:
        return "".join(self.lines)


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tui.cli", *args]


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@contextlib.contextmanager
def serving(study: Path, *args: str, timeout: float = 180.0) -> Iterator[Served]:
    """``codecurve -v serve STUDY --port 0 ARGS`` until the block ends (then SIGTERM)."""
    process = subprocess.Popen(
        command("-v", "serve", str(study), "--port", "0", *args),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
        env=environment(),
        cwd=study.parent,
        start_new_session=True,
    )
    assert process.stderr is not None
    lines: list[str] = []
    found = threading.Event()
    url: list[str] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if not url and (match := READY.search(line)):
                url.append(match.group(1))
                found.set()
        found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + timeout
        while not url:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the server did not start:\n{''.join(lines)}")
            found.wait(0.2)
        yield Served(url[0], process, lines)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        reader.join(10)
        process.stderr.close()


def wait_until(
    condition: Callable[[], object], timeout: float = 120.0, what: str = "a condition"
) -> None:
    """Poll ``condition()`` until it holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
