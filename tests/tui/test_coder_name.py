"""The coder's name: asked once at the terminal, remembered per user, never the login name."""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import Any

import pytest

from codebooks.errors import InputError
from tests.factories import build_study
from tui import launch
from tui.coder_name import CoderNameError, coder_path, remembered_coder, resolve_coder


@pytest.fixture(autouse=True)
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "config"
    monkeypatch.setenv("CODECURVE_CONFIG_DIR", str(folder))
    return folder


def never(prompt: str) -> str:
    raise AssertionError(f"asked {prompt!r} when the name was known")


def test_the_first_use_asks_and_remembers(config: Path) -> None:
    said = io.StringIO()
    assert resolve_coder(None, ["gold"], ask=lambda _: "  Ana López ", stream=said) == "Ana López"
    assert "Who is coding?" in said.getvalue()
    assert "This study's coders so far: gold" in said.getvalue()
    assert coder_path() == config / "coder.toml"
    assert remembered_coder() == "Ana López"
    # Next time: no question.
    assert resolve_coder(None, [], ask=never) == "Ana López"


def test_coder_wins_for_one_session_and_is_not_remembered() -> None:
    assert resolve_coder("ben", [], ask=never) == "ben"
    assert remembered_coder() is None


@pytest.mark.parametrize("answer", ["", "   ", "a\x1b]0;x\x07"])
def test_an_unusable_answer_is_refused_and_nothing_remembered(answer: str) -> None:
    with pytest.raises(InputError, match="coder's name"):
        resolve_coder(None, [], ask=lambda _: answer, stream=io.StringIO())
    assert not coder_path().exists()


def test_a_name_with_quotes_and_backslashes_comes_back_as_written() -> None:
    name = 'O"Brien \\ lab'
    resolve_coder(None, [], ask=lambda _: name, stream=io.StringIO())
    assert remembered_coder() == name


def test_an_unreadable_file_is_one_clear_error(config: Path) -> None:
    config.mkdir()
    (config / "coder.toml").write_text("name = [1, 2", encoding="utf-8")
    with pytest.raises(CoderNameError, match=r"coder\.toml: cannot read the coder name"):
        resolve_coder(None, [], ask=never)


def test_the_app_opens_as_the_asked_coder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.codecurve"
    study = build_study(path, n=3)
    study.decisions.record(study.response_ids()[0], "pay", 1, coder="gold")
    study.close()
    opened: dict[str, Any] = {}

    class FakeApp:
        return_code = 0

        def run(self) -> None:
            pass

    def fake_make_app(target: Path, **options: Any) -> FakeApp:
        opened.update(options)
        return FakeApp()

    monkeypatch.setattr("tui.app.make_app", fake_make_app)
    monkeypatch.setattr("builtins.input", lambda _: "ana")
    args = argparse.Namespace(
        context=None, model=None, no_model=True, allow_download=False, batch_size=None, coder=None
    )
    assert launch.run_app(path, args, keys={}, score_on_open=False) == 0
    assert opened["coder"] == "ana"
    assert remembered_coder() == "ana"
