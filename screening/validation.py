"""Input checks shared by the screening modules (shapes, dtypes, value sets)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import numpy.typing as npt

from screening.errors import ScreeningWarning

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def warn(message: str) -> None:
    """Emit a :class:`ScreeningWarning` attributed to the public caller."""
    warnings.warn(message, ScreeningWarning, stacklevel=3)


def as_1d(values: npt.ArrayLike, name: str) -> npt.NDArray[Any]:
    """Return ``values`` as a 1-D array or raise ValueError naming its shape."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D of shape (n_items,), got shape {array.shape}")
    return array


def as_bool_1d(values: npt.ArrayLike, name: str) -> BoolArray:
    """Return a 1-D boolean array; accepts bool or exactly 0/1 numbers."""
    array = as_1d(values, name)
    if array.dtype == np.bool_:
        return array
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be boolean or 0/1, got dtype {array.dtype}")
    finite = np.isfinite(array) if array.dtype.kind == "f" else np.ones(array.shape, bool)
    if not bool(np.all(finite & ((array == 0) | (array == 1)))):
        raise ValueError(f"{name} must hold only 0/1 (or True/False) values")
    return array.astype(bool)


def as_float_1d(values: npt.ArrayLike, name: str, *, allow_nan: bool = False) -> FloatArray:
    """Return a 1-D float64 array; rejects non-numeric values, and nan unless allowed."""
    array = as_1d(values, name)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {array.dtype}")
    out = array.astype(np.float64)
    if np.any(np.isinf(out)) or (not allow_nan and np.any(np.isnan(out))):
        raise ValueError(f"{name} must be finite" + ("" if allow_nan else " (no nan)"))
    return out


def same_length(**arrays: npt.NDArray[Any]) -> int:
    """Check that all arrays have the same length and return it."""
    shapes = {name: a.shape for name, a in arrays.items()}
    lengths = {a.shape[0] for a in arrays.values()}
    if len(lengths) > 1:
        described = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"arrays must have the same length, got {described}")
    return lengths.pop() if lengths else 0


def check_confidence_level(confidence_level: float) -> None:
    """Reject a confidence level outside (0, 1)."""
    if not 0.0 < confidence_level < 1.0:
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
