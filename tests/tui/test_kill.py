"""Decisions survive a killed app: the real command in a pseudo-terminal, then SIGKILL."""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from study.store import Study
from tests.factories import build_study

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


def decisions(path: Path) -> dict[tuple[str, str], int]:
    with Study.open(path, read_only=True) as study:
        rows = study.queries.page(
            study.scores.active_config_id(), order="id", status="decided", limit=1000
        )
        return {(r.response_id, r.code_id): r.decision for r in rows}  # type: ignore[misc]


def wait(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_decisions_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "kill.codecurve"
    build_study(path, n=12).close()
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "CODECURVE_DATA_DIR": str(tmp_path / "data"),
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "review", str(path), "--no-model", "--coder", "tester"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
    )
    os.close(slave)
    output = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            output.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        wait(lambda: b"decided" in output, 60, "the app to paint")
        keys = ["1", "1", "x", "j", "1", "u", "1", "1", " ", "1"]
        expected_count = 0
        for key in keys:
            os.write(master, key.encode())
            time.sleep(0.25)
            if key in "1x":
                expected_count += 1
            elif key == "u":
                expected_count -= 1
            wait(
                lambda n=expected_count: len(decisions(path)) == n,
                20,
                f"{expected_count} decisions after {key!r}; have {decisions(path)}",
            )
        before = decisions(path)
        assert len(before) == 6
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        os.close(master)
    # The killed writer's lock went with it: the study opens for writing again.
    with Study.open(path) as study:
        rows = study.queries.page(
            study.scores.active_config_id(), order="id", status="decided", limit=100
        )
        after = {(r.response_id, r.code_id): r.decision for r in rows}
        assert after == before
        assert study.check() == []
