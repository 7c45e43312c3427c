"""Hostile projects that would exhaust memory fail fast with one clear message.

Each runs ``codecurve new --project`` in a subprocess under an address-space limit
(``resource.setrlimit``), so that a regression shows as a refusal of memory, not as a
machine swapping to death.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Address space allowed to the child: far below what the quadratic walk needed (24 GB
#: at 100,000 levels), well above what the refusal needs.
LIMIT = 3 * 1024**3


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run_new(tmp_path: Path, project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tui",
            "new",
            str(tmp_path / "s.codecurve"),
            "--project",
            str(project),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        preexec_fn=limited,
        timeout=300,
        check=False,
    )


def project(path: Path, codes: str) -> Path:
    xml = (
        '<Project xmlns="urn:QDA-XML:project:1.0" name="P"><CodeBook><Codes>'
        f'{codes}</Codes></CodeBook><Sources><TextSource name="R1">'
        "<PlainTextContent>a text</PlainTextContent></TextSource></Sources></Project>"
    )
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("project.qde", xml)
    return path


def test_codes_nested_100000_deep_are_refused(tmp_path: Path) -> None:
    depth = 100_000
    deep = project(tmp_path / "deep.qdpx", "<Code>" * depth + "</Code>" * depth)
    assert deep.stat().st_size < 1.5 * 1024 * 1024
    done = run_new(tmp_path, deep)
    assert done.returncode == 1, done.stderr
    assert "nest more than 100 levels deep" in done.stderr
    assert "Traceback" not in done.stderr
    assert "out of memory" not in done.stderr
    assert not (tmp_path / "s.codecurve").exists()


def test_too_many_codes_are_refused(tmp_path: Path) -> None:
    wide = project(tmp_path / "wide.qdpx", '<Code name="c"/>' * 60_000)
    done = run_new(tmp_path, wide)
    assert done.returncode == 1, done.stderr
    assert "more than 50000 codes" in done.stderr
    assert not (tmp_path / "s.codecurve").exists()


def test_codes_nested_as_deep_as_allowed_are_read(tmp_path: Path) -> None:
    depth = 100
    ok = project(tmp_path / "ok.qdpx", '<Code name="c">' * depth + "</Code>" * depth)
    done = run_new(tmp_path, ok)
    assert done.returncode == 0, done.stderr
