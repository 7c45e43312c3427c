"""The app's exit status: 0 when the coder quits, 1 when it stopped on an error."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from textual.app import App

from study.store import Study
from tests.factories import build_study
from tui.launch import run_app


def args() -> argparse.Namespace:
    return argparse.Namespace(
        context=None, no_model=True, model=None, allow_download=False, coder="tester",
        batch_size=None,
    )  # fmt: skip


def headless(app_class: type[App[Any]]) -> Any:
    """``make_app`` for an app of ``app_class`` that runs without a terminal."""

    class Headless(app_class):  # type: ignore[valid-type, misc]
        def run(self, **kwargs: Any) -> Any:
            return super().run(headless=True, size=(80, 24))

    return lambda *a, **k: Headless()


class Crashing(App[None]):
    def on_mount(self) -> None:
        raise RuntimeError("a bug")


class Quitting(App[None]):
    def on_mount(self) -> None:
        self.exit()


@pytest.fixture
def study(tmp_path: Path) -> Path:
    build_study(tmp_path / "s.codecurve", n=3).close()
    return tmp_path / "s.codecurve"


def test_a_crash_exits_non_zero_with_one_line_after_it(
    study: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("tui.app.make_app", headless(Crashing))
    assert run_app(study, args(), keys={}, score_on_open=False) == 1
    err = capsys.readouterr().err
    assert err.rstrip().splitlines()[-1].startswith("codecurve: error: the app stopped")
    with Study.open(study, read_only=True) as opened:  # the study is intact
        assert opened.response_count() == 3


def test_quitting_exits_zero(
    study: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("tui.app.make_app", headless(Quitting))
    assert run_app(study, args(), keys={}, score_on_open=False) == 0
    assert "error" not in capsys.readouterr().err
