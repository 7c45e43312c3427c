"""Reading a GGUF file's header: the embedded model, and files no backend should load.

The damaged files are written with the ``gguf`` package's own writer (a dependency), so
each test builds exactly the defect it names.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scoring import ScoringError, load_backend
from scoring.backends.gguf_file import GGUFError, read_gguf
from scoring.machine import ModelTooLargeError, check_fits, physical_cores
from tui.commands.remedies import error_line


def write_gguf(path: Path, arch: str = "llama", *, tensors: int = 1, kind: str = "model") -> Path:
    import gguf

    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_type(kind)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_context_length(64)
    for i in range(tensors):
        writer.add_tensor(f"blk.{i}.weight", np.ones((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_the_embedded_model_reads_as_a_q4_1_llama() -> None:
    from scoring.weights import embedded_gguf_path

    info = read_gguf(embedded_gguf_path())
    assert (info.architecture, info.quantization) == ("llama", "Q4_1")
    assert 130e6 < info.parameters < 140e6
    assert info.get("{arch}.context_length") == 8192
    assert "<|im_start|>" in info.get("tokenizer.chat_template")


def test_a_whole_small_file_reads(tmp_path: Path) -> None:
    info = read_gguf(write_gguf(tmp_path / "ok.gguf"))
    assert (info.architecture, info.quantization, info.parameters) == ("llama", "F32", 32)


def test_a_truncated_file_says_so(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "cut.gguf", tensors=3)
    data = path.read_bytes()
    path.write_bytes(data[:-40])
    with pytest.raises(GGUFError, match="cut short"):
        read_gguf(path)
    path.write_bytes(data[:100])  # inside the header
    with pytest.raises(GGUFError, match="cut short or damaged"):
        read_gguf(path)


def test_not_a_gguf_file(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"PK\x03\x04 a zip file")
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_gguf(path)


@pytest.mark.parametrize("arch", ["bert", "clip", "nomic-bert"])
def test_encoders_and_projectors_are_not_causal_language_models(tmp_path: Path, arch: str) -> None:
    with pytest.raises(GGUFError, match="not a causal language model"):
        read_gguf(write_gguf(tmp_path / f"{arch}.gguf", arch))


def test_adapters_and_vocabulary_only_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(GGUFError, match="adapter file, not a model"):
        read_gguf(write_gguf(tmp_path / "lora.gguf", kind="adapter"))
    with pytest.raises(GGUFError, match="holds no weights"):
        read_gguf(write_gguf(tmp_path / "vocab.gguf", tensors=0))


def test_a_bad_gguf_fails_before_any_backend_loads(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "cut.gguf", tensors=2)
    path.write_bytes(path.read_bytes()[:-8])
    for backend in (None, "transformers"):
        with pytest.raises(GGUFError, match="cut short"):
            load_backend(str(path), backend=backend)


def test_a_model_larger_than_free_memory_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import scoring.machine

    monkeypatch.setattr(scoring.machine, "available_memory", lambda: 2 << 30)
    with pytest.raises(ModelTooLargeError, match=r"needs about 3\.0 GB .* 2\.0 GB available"):
        check_fits(3 << 30, "big.gguf", hint="choose a smaller one")
    check_fits(1 << 30, "small.gguf", hint="")  # fits: no error
    # The transformers path de-quantises to float32: the embedded model needs ~1.1 GB.
    monkeypatch.setattr(scoring.machine, "available_memory", lambda: 600 << 20)
    with pytest.raises(ModelTooLargeError, match=r"in float32 .*llama extra") as big:
        load_backend(None, backend="transformers")
    assert error_line(big.value).endswith(
        """(run "pip install 'codecurve[llama]'", or try --backend llama.cpp)"""
    )


def test_physical_cores_is_a_positive_count() -> None:
    assert 1 <= physical_cores() <= (__import__("os").cpu_count() or 1)


def test_unknown_backend_and_llama_for_a_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ScoringError, match="unknown backend 'vllm'"):
        load_backend(None, backend="vllm")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ScoringError, match=r"llama\.cpp backend runs \.gguf files"):
        load_backend(str(tmp_path), backend="llama.cpp")


def test_llama_asked_for_without_the_binding_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import scoring.backends.llama.backend

    monkeypatch.setattr(scoring.backends.llama.backend, "llama_cpp", None)
    for model in (None, str(write_gguf(tmp_path / "m.gguf"))):
        with pytest.raises(ScoringError) as caught:
            load_backend(model, backend="llama.cpp")
        message = error_line(caught.value)
        assert "pip install 'codecurve[llama]'" in message
        assert "--backend transformers" in message
        assert "--" not in str(caught.value)


def test_a_gguf_path_without_the_binding_falls_back_to_transformers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import scoring.backends.llama.backend
    from scoring.loading import _runtime

    monkeypatch.setattr(scoring.backends.llama.backend, "llama_cpp", None)
    assert _runtime(None, default="llama.cpp") == "transformers"
    assert _runtime("transformers", default="llama.cpp") == "transformers"


def test_the_cli_says_one_line_for_a_bad_gguf_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli import main

    model = write_gguf(tmp_path / "cut.gguf", tensors=2)
    model.write_bytes(model.read_bytes()[:-8])
    responses = tmp_path / "r.csv"
    responses.write_text("id,text\na,The pay is low.\n", encoding="utf-8")
    codebook = tmp_path / "c.yaml"
    codebook.write_text("name: T\nscale: 1-5\ncodes:\n  - name: Pay\n", encoding="utf-8")
    out = tmp_path / "scores.csv"
    args = ["score", "--responses", responses, "--codebook", codebook, "--model", model]
    assert main([str(a) for a in [*args, "-o", out]]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("codecurve: error:")]
    assert len(errors) == 1, err
    assert "cut short" in errors[0]
    assert "Traceback" not in "\n".join(err)
    assert not out.exists()
