"""Fixtures for the app's tests: real SQLite studies with synthetic, deterministic scores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from study.store import Study
from tests.factories import build_study


@pytest.fixture
def study(tmp_path: Path) -> Iterator[Study]:
    s = build_study(tmp_path / "work.codecurve")
    yield s
    if not s.closed:
        s.close()


@pytest.fixture(autouse=True)
def _data_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODECURVE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("USER", "tester")
