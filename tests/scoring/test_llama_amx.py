"""The check of llama.cpp's AMX kernels: a child process, once per installed build."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from scoring.backends.llama import amx as llama_amx

pytestmark = pytest.mark.model

llama_cpp = pytest.importorskip(
    "llama_cpp", reason="llama-cpp-python is not installed (pip install 'codecurve[llama]')"
)

#: A child that dies as a crashing kernel does.
CRASH = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODECURVE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / llama_amx.CACHE_FILE


@pytest.fixture
def embedded() -> Path:
    from scoring.weights import embedded_gguf_path

    return embedded_gguf_path()


def spawned(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The command line of every child started from now on."""
    calls: list[list[str]] = []
    real = subprocess.run

    def spy(args: list[str], **kwargs: Any) -> Any:
        calls.append(args)
        return real(args, **kwargs)

    monkeypatch.setattr(subprocess, "run", spy)
    return calls


def test_the_installed_build_passes_its_check(embedded: Path) -> None:
    """``make llama`` builds the binding so that its AMX kernels work (where the machine
    has AMX, the check runs them; elsewhere it runs the plain kernels)."""
    assert llama_amx.probe(embedded)


def test_a_crashing_child_fails_the_check(
    embedded: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(llama_amx, "PROBE", CRASH)
    assert not llama_amx.probe(embedded)
    assert "plain CPU buffers" in caplog.text


def test_the_answer_is_kept_per_build(
    cache: Path, embedded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_probe = llama_amx.PROBE
    monkeypatch.setattr(llama_amx, "PROBE", CRASH)
    calls = spawned(monkeypatch)
    assert not llama_amx.repacking_works(llama_cpp, embedded)
    assert not llama_amx.repacking_works(llama_cpp, embedded)
    assert len(calls) == 1  # asked once
    key = llama_amx.binding_key(llama_cpp)
    assert json.loads(cache.read_text(encoding="utf-8")) == {key: False}
    # Another build (a rebuild changes its libraries) is checked afresh.
    monkeypatch.setattr(llama_amx, "PROBE", real_probe)
    monkeypatch.setattr(llama_amx, "binding_key", lambda binding: key + "|rebuilt")
    assert llama_amx.repacking_works(llama_cpp, embedded)
    assert len(calls) == 2
    assert json.loads(cache.read_text(encoding="utf-8")) == {key: False, key + "|rebuilt": True}


def test_the_key_changes_with_the_build(tmp_path: Path) -> None:
    class Binding:
        __file__ = str(tmp_path / "llama_cpp" / "__init__.py")
        __version__ = "0.3.36"

    lib = tmp_path / "llama_cpp" / "lib"
    lib.mkdir(parents=True)
    (lib / "libggml-cpu.so").write_bytes(b"one build")
    before = llama_amx.binding_key(Binding)
    (lib / "libggml-cpu.so").write_bytes(b"another build")
    assert llama_amx.binding_key(Binding) != before


def test_an_unwritable_cache_still_answers(
    cache: Path, embedded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.parent.write_text("a file where the folder would be", encoding="utf-8")
    monkeypatch.setattr(llama_amx, "PROBE", CRASH)
    assert not llama_amx.repacking_works(llama_cpp, embedded)


def test_a_damaged_cache_is_checked_again(
    cache: Path, embedded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.parent.mkdir(parents=True)
    cache.write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(llama_amx, "PROBE", CRASH)
    calls = spawned(monkeypatch)
    assert not llama_amx.repacking_works(llama_cpp, embedded)
    assert len(calls) == 1
