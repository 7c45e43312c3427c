"""A GGUF file's header, read before any model is loaded: what it is and whether it is whole.

llama.cpp answers a damaged or foreign file with a bare "failed to load model"; reading
the header first (a few milliseconds, no tensor data touched) turns each case into one
clear message: not a GGUF file, cut short, not a language model, no weights. The header
also says what the model needs in memory and names its quantization, which both
backends put in the model's identity.

Format (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): magic ``GGUF``,
version, tensor and key/value counts, the key/value pairs, the tensor infos (name,
shape, type, offset), then the tensor data, aligned to ``general.alignment``.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from scoring.errors import ScoringError

#: ``general.architecture`` values llama.cpp knows that are not causal language models:
#: encoders (embeddings, rerankers), multimodal projectors, audio decoders.
NOT_CAUSAL = frozenset(
    {
        "bert",
        "modern-bert",
        "nomic-bert",
        "nomic-bert-moe",
        "neo-bert",
        "jina-bert-v2",
        "jina-bert-v3",
        "eurobert",
        "t5encoder",
        "clip",
        "wavtokenizer-dec",
    }
)

_SCALARS: dict[int, str] = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9
_DEFAULT_ALIGNMENT = 32


class GGUFError(ScoringError, ValueError):
    """A file given as a GGUF model that is not one a backend can read."""


@dataclass(frozen=True)
class GGUFInfo:
    """What a GGUF file's header says.

    Attributes:
        path: The file.
        size: Its size in bytes.
        architecture: ``general.architecture`` (``llama``, ``qwen2``, ``gemma3``...).
        quantization: The file type's name (``Q4_1``, ``Q4_K_M``, ``F16``), or
            ``unknown``.
        parameters: Elements over all tensors.
        metadata: Every scalar and string key/value (arrays are left out).
    """

    path: Path
    size: int
    architecture: str
    quantization: str
    parameters: int
    metadata: dict[str, Any] = field(repr=False)

    def get(self, key: str, default: Any = None) -> Any:
        """A metadata value; ``{arch}`` in the key stands for the architecture."""
        return self.metadata.get(key.replace("{arch}", self.architecture), default)


def read_gguf(path: Path) -> GGUFInfo:
    """Read and check a GGUF file's header.

    Raises:
        GGUFError: not a GGUF file, cut short, or not a causal language model.
    """
    size = path.stat().st_size
    try:
        with path.open("rb") as fh:
            info = _parse(fh, path, size)
    except (struct.error, EOFError, UnicodeDecodeError) as exc:
        raise GGUFError(
            f"{path} is not a readable GGUF file: its header is cut short or damaged ({exc})"
        ) from exc
    return info


def _parse(fh: BinaryIO, path: Path, size: int) -> GGUFInfo:
    if fh.read(4) != b"GGUF":
        raise GGUFError(f"{path} is not a GGUF file (it does not start with 'GGUF')")
    (version,) = _unpack(fh, "<I")
    if version not in (2, 3):
        raise GGUFError(f"{path} is GGUF version {version}; versions 2 and 3 are read")
    n_tensors, n_kv = _unpack(fh, "<QQ")
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = _string(fh)
        (kind,) = _unpack(fh, "<I")
        value = _value(fh, kind)
        if value is not _SKIPPED:
            metadata[key] = value
    tensors: list[tuple[int, int, int]] = []  # elements, type, offset
    for _ in range(n_tensors):
        _string(fh)
        (n_dims,) = _unpack(fh, "<I")
        dims = _unpack(fh, "<" + "Q" * n_dims)
        kind, offset = _unpack(fh, "<IQ")
        tensors.append((math.prod(dims), kind, offset))
    alignment = int(metadata.get("general.alignment", _DEFAULT_ALIGNMENT)) or _DEFAULT_ALIGNMENT
    data_start = -(-fh.tell() // alignment) * alignment
    arch = str(metadata.get("general.architecture", ""))
    info = GGUFInfo(
        path=path,
        size=size,
        architecture=arch,
        quantization=_quantization(metadata.get("general.file_type")),
        parameters=sum(n for n, _, _ in tensors),
        metadata=metadata,
    )
    kind_of_file = str(metadata.get("general.type", "model"))
    if kind_of_file != "model":
        raise GGUFError(f"{path} is a GGUF {kind_of_file} file, not a model")
    if not arch:
        raise GGUFError(f"{path} names no architecture (general.architecture)")
    if arch in NOT_CAUSAL:
        raise GGUFError(
            f"{path} is a {arch} model, not a causal language model: it cannot score the next token"
        )
    if not tensors:
        raise GGUFError(f"{path} holds no weights (a vocabulary-only GGUF file?)")
    end = data_start + max(offset + _nbytes(n, kind) for n, kind, offset in tensors)
    if size < end:
        raise GGUFError(
            f"{path} is cut short: {size:,} bytes of the {end:,} its header describes "
            "(an interrupted download? fetch it again)"
        )
    return info


_SKIPPED = object()


def _value(fh: BinaryIO, kind: int) -> Any:
    if kind in _SCALARS:
        return _unpack(fh, _SCALARS[kind])[0]
    if kind == _STRING:
        return _string(fh)
    if kind == _ARRAY:
        item, count = _unpack(fh, "<IQ")
        if item in _SCALARS:
            fh.seek(struct.calcsize(_SCALARS[item]) * count, 1)
        elif item == _STRING:
            for _ in range(count):
                (n,) = _unpack(fh, "<Q")
                fh.seek(n, 1)
        else:
            for _ in range(count):
                _value(fh, item)
        return _SKIPPED
    raise GGUFError(f"unknown GGUF value type {kind}")


def _unpack(fh: BinaryIO, fmt: str) -> tuple[Any, ...]:
    n = struct.calcsize(fmt)
    data = fh.read(n)
    if len(data) != n:
        raise EOFError("end of file inside the header")
    return struct.unpack(fmt, data)


def _string(fh: BinaryIO) -> str:
    (n,) = _unpack(fh, "<Q")
    if n > 1 << 28:
        raise EOFError(f"a string of {n} bytes")
    data = fh.read(n)
    if len(data) != n:
        raise EOFError("end of file inside the header")
    return data.decode("utf-8")


def _nbytes(elements: int, kind: int) -> int:
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    try:
        block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
    except (ValueError, KeyError):
        raise GGUFError(f"unknown tensor type {kind}") from None
    return elements // block * type_size


def _quantization(file_type: Any) -> str:
    from gguf.constants import LlamaFileType

    try:
        name = LlamaFileType(int(file_type)).name
    except (TypeError, ValueError):
        return "unknown"
    return name.removeprefix("MOSTLY_").removeprefix("ALL_")
