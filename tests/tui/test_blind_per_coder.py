"""Blind double coding is each coder's own, also while two coders' sessions are open:
one coder's ``B`` never turns another coder's open session blind or open."""

from __future__ import annotations

import dataclasses
import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from study.audit.blind import blind_setting
from study.store import Study
from tests.factories import build_study
from tests.tui.waiting import settle, wait_for
from tui.app import CodecurveApp, make_app
from tui.live import Change

ROOT = Path(__file__).resolve().parents[2]
CONTROL = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


async def test_another_coders_blind_setting_stays_theirs(tmp_path: Path) -> None:
    path = tmp_path / "s.codecurve"
    build_study(path, n=12).close()
    ana = make_app(path, coder="ana")
    ben = make_app(path, coder="ben")
    async with ana.run_test(size=(140, 40)) as pa, ben.run_test(size=(140, 40)) as pb:
        await settle(pa)
        await settle(pb)
        ana_polls = count_changes(ana)
        ben_polls = count_changes(ben)
        await pb.press("B")
        await settle(pb)
        assert ben.session.blind_coding
        await wait_for(pa, lambda: ana_polls)  # ana's session has looked at ben's change
        await settle(pa)
        assert not ana.session.blind_coding
        assert "blind coding" not in ana.review.status_line.render_line(0).text
        assert not [n for n in ana._notifications if "was turned" in n.message]
        # ana turns hers on, then off: ben's session stays blind all along.
        for on in (True, False):
            before = len(ben_polls)
            await pa.press("B")
            await settle(pa)
            assert ana.session.blind_coding is on
            await wait_for(pb, lambda n=before: len(ben_polls) > n)  # type: ignore[misc]
            await settle(pb)
            assert ben.session.blind_coding
            assert "blind coding" in ben.review.status_line.render_line(0).text
            assert not [n for n in ben._notifications if "was turned" in n.message]


def count_changes(app: CodecurveApp) -> list[object]:
    """The changes ``app``'s live look finds from now on (filled as it finds them)."""
    found: list[object] = []
    poll = app.live.poll

    def counting() -> Change | None:
        change = poll()
        if change is not None:
            found.append(change)
        return change

    app.live.poll = counting  # type: ignore[method-assign]
    return found


# -- two real app processes ----------------------------------------------------------------


class Terminal:
    """A real ``codecurve review`` in a pseudo-terminal, its output kept as it comes."""

    def __init__(self, path: Path, coder: str, home: Path) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
        env = {
            **os.environ,
            "TERM": "xterm-256color",
            "CODECURVE_DATA_DIR": str(home / "data"),
            "PYTHONPATH": str(ROOT),
        }
        self.master = master
        self.output = bytearray()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tui", "review", str(path), "--no-model", "--coder", coder],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=home,
            start_new_session=True,
        )
        os.close(slave)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output.extend(chunk)

    @property
    def text(self) -> bytes:
        """What it printed, without the terminal's control sequences."""
        return CONTROL.sub(b"", bytes(self.output))

    def press(self, key: str) -> None:
        os.write(self.master, key.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        os.close(self.master)


def wait(condition: Callable[[], object], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def ben_blind(path: Path) -> bool:
    with Study.open(path, read_only=True) as study:
        return blind_setting(study, coder="ben").enabled


def ana_blind_decisions(path: Path) -> list[int]:
    """Whether each of ana's decisions was made blind (1) or seeing the model (0)."""
    with Study.open(path, read_only=True) as study, study.query() as conn:
        return [
            int(r[0]) for r in conn.execute("SELECT blind FROM annotations WHERE coder = 'ana'")
        ]


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_two_app_processes_keep_their_own_blind_setting(tmp_path: Path) -> None:
    path = tmp_path / "s.codecurve"
    build_study(path, n=12).close()
    ana = Terminal(path, "ana", tmp_path)
    ben = Terminal(path, "ben", tmp_path)
    try:
        wait(lambda: b" decided (" in ana.text and b" decided (" in ben.text, "both apps")
        ben.press("B")
        wait(lambda: ben_blind(path), "ben's setting")
        # Then a revision: ana's app says so once its session has looked at the study
        # after ben's setting too.
        with Study.open(path, coder="lead") as lead:
            kept = tuple(c for c in lead.codebook.codes if c.id != "pay")
            lead.versions.revise(dataclasses.replace(lead.codebook, codes=kept))
        wait(lambda: b"Another session changed" in ana.text, "ana's session to see the revision")
        # ana decides the pair at the top of her queue: she saw the model's answer (her
        # session is not blind), so the decision is not blind.
        ana.press("1")
        wait(lambda: ana_blind_decisions(path), "ana's decision")
        assert ana_blind_decisions(path) == [0]
        assert b"was turned" not in ana.text
    finally:
        ana.close()
        ben.close()
