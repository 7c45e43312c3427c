"""How a study stores values that SQLite has no type for: float curves and sortable ids."""

from __future__ import annotations

import re
import struct
from typing import Any

import numpy as np


def floats_to_blob(values: Any) -> bytes:
    """A sequence of floats as little-endian float64 bytes (a curve in the ``scores`` table)."""
    return np.asarray(values, dtype="<f8").tobytes()


def blob_to_floats(blob: bytes) -> tuple[float, ...]:
    """The floats :func:`floats_to_blob` stored."""
    # struct, not numpy: a queue page decodes two curves a row, and this is 10x faster.
    return struct.unpack(f"<{len(blob) // 8}d", blob)


def natural_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """Sort key putting ``r2`` before ``r10``: digit runs compare as numbers."""
    parts = re.split(r"(\d+)", text)
    key = []
    for i, part in enumerate(parts):
        if i % 2:
            key.append((0, int(part), part))
        elif part:
            key.append((1, 0, part))
    return tuple(key)
