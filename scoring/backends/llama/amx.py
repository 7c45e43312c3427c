"""Whether llama.cpp's AMX kernels work with the installed binding, checked once.

On an Intel Xeon with AMX (Sapphire Rapids and later) llama.cpp repacks quantized weights
for its AMX kernels, which are about three times as fast as its plain CPU kernels there.
Built with GCC 12, those kernels crash in their first matrix product: GCC 12's
``_tile_loadconfig`` tells the compiler that ``ldtilecfg`` reads 8 bytes of its 64-byte
tile configuration, so the stores of the rest are dropped as dead, the processor gets a
configuration with garbage rows and columns, and every ``llama_decode`` ends in a
segmentation fault (ggml-org/llama.cpp#20824). ``make llama`` builds the binding with
dead-store elimination off, which writes the configuration whole; a binding built
elsewhere may not have been.

A crash cannot be caught in-process, so :func:`repacking_works` evaluates a few tokens
with repacked weights in a child process, once per installed binding (its libraries'
names, sizes and times), and keeps the answer in the user cache. Where the child dies,
the backend loads its weights in plain CPU buffers instead: slower, never a crash.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

from codebooks.files import write_atomic
from scoring.errors import ScoringError
from scoring.paths import cache_dir

log = logging.getLogger(__name__)

#: The answers kept, per installed binding.
CACHE_FILE = "llama-amx.json"

#: Seconds the child may take (it loads a model and evaluates a few tokens).
PROBE_TIMEOUT = 300

#: The child: load ``argv[1]`` with its weights repacked, evaluate a batch of several
#: tokens (the AMX tile kernels; a single token takes another path) and exit 0.
PROBE = """
import sys
import llama_cpp
llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=64, n_batch=32, n_ubatch=32,
                      n_threads=1, n_threads_batch=1, n_gpu_layers=0, verbose=False)
tokens = llm.tokenize(b"one two three four five six seven eight nine ten", add_bos=True)
llm.eval(tokens[:16])
print("ok")
"""


def binding_key(binding: Any) -> str:
    """What identifies the installed binding's build: its folder and its libraries'
    names, sizes and modification times (a rebuild changes them)."""
    folder = Path(binding.__file__).resolve().parent
    parts = [str(folder), str(getattr(binding, "__version__", ""))]
    lib = folder / "lib"
    if lib.is_dir():
        for path in sorted(lib.iterdir()):
            stat = path.stat()
            parts.append(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return "|".join(parts)


def _probe_model(model: Path) -> Path:
    """The embedded model's small file when it is installed (quick to load), else the
    model about to be loaded."""
    from scoring.errors import ModelNotFoundError
    from scoring.weights import embedded_gguf_path  # (not at import: it is not needed then)

    try:
        return embedded_gguf_path()
    except ModelNotFoundError:
        return model


def probe(model: Path) -> bool:
    """Evaluate a few tokens of ``model`` with repacked weights in a child process:
    whether it lived."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(model)],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("llama.cpp's AMX check did not finish (%s); using plain CPU buffers", exc)
        return False
    if done.returncode == 0 and done.stdout.strip().endswith("ok"):
        return True
    log.warning(
        "llama.cpp's AMX kernels fail on this machine (the check exited with %s); its "
        "weights are loaded in plain CPU buffers (slower). Rebuilding llama-cpp-python "
        "as `make llama` does fixes it (docs/models.md, 'On a Xeon with AMX').",
        done.returncode,
    )
    return False


def _read_cache(path: Path) -> dict[str, bool]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, bool)}


def repacking_works(binding: Any, model: Path) -> bool:
    """Whether the binding's AMX kernels survive an evaluation on this machine: asked
    of the cache, else of :func:`probe` (once per build), whose answer is kept."""
    path = cache_dir() / CACHE_FILE
    key = binding_key(binding)
    known = _read_cache(path)
    if key in known:
        return known[key]
    log.info("checking llama.cpp's AMX kernels on this machine (once per build)")
    works = probe(_probe_model(model))
    known[key] = works
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(known, indent=1).encode("utf-8"), error=ScoringError)
    except (OSError, ScoringError) as exc:  # a read-only cache: checked again next time
        log.warning("could not keep llama.cpp's AMX check in %s: %s", path, exc)
    return works
