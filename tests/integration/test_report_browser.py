"""A real browser opens the report: Debian's chromium, headless, renders it to a PNG
screenshot and prints it to PDF, offline (no network, a fresh profile).

``make browser`` installs chromium; without it the test is skipped, except in CI
(``CI=true``), where a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from study import Study
from tests.study.test_audit import code_audit_blind, simulated_study
from tui.cli import main

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@pytest.fixture
def browser() -> str:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is missing: run 'make browser'")
        pytest.skip("chromium is missing: run 'make browser'")
    return CHROMIUM


@pytest.fixture
def report(tmp_path: Path) -> Path:
    path, truth = simulated_study(tmp_path / "shown.codecurve", n=400, seed=11)
    with Study.open(path) as study:
        study.audit.draw(per_code=200, seed=5)
        code_audit_blind(study, truth)
        rng = np.random.default_rng(0)
        sample = study.audit.sample()
        assert sample is not None
        for code in study.codes:
            for rid in sample.pairs(code.id)[:80]:
                value = truth[(rid, code.id)]
                study.decisions.record(
                    rid, code.id, 6 - value if rng.random() < 0.1 else value, coder="bo"
                )
    out = tmp_path / "report.html"
    assert main(["report", str(path), "-o", str(out), "--coder", "ana"]) == 0
    return out


def _chromium(browser: str, profile: Path, *args: str) -> None:
    subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={profile}", *args],
        check=True,
        capture_output=True,
        timeout=300,
    )


def test_chromium_renders_and_prints_the_report(browser: str, report: Path, tmp_path: Path) -> None:
    from PIL import Image

    shot = tmp_path / "report.png"
    pdf = tmp_path / "report.pdf"
    url = report.as_uri()
    _chromium(
        browser, tmp_path / "profile-shot", "--window-size=1200,1800", f"--screenshot={shot}", url
    )
    _chromium(
        browser, tmp_path / "profile-pdf", "--no-pdf-header-footer", f"--print-to-pdf={pdf}", url
    )
    assert shot.stat().st_size > 0
    with Image.open(shot) as image:
        pixels = np.asarray(image.convert("L"), dtype=float)
    assert pixels.shape == (1800, 1200)
    # Not blank: text, tables and rules make the page far from one flat colour.
    assert pixels.std() > 10
    assert (pixels < 128).mean() > 0.005
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF")
    assert data.count(b"/Type /Page") - data.count(b"/Type /Pages") >= 3
    keep = os.environ.get("CODECURVE_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)
