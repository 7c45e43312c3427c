"""Which device a local model runs on: the names accepted, and the choice made.

:func:`check_device` needs no torch, so a mistyped ``--device`` is refused before a
model is read.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from scoring.errors import ScoringError

if TYPE_CHECKING:
    import torch

#: Device names accepted by ``--device`` (``cuda:N`` picks one GPU).
DEVICES = ("cpu", "cuda", "cuda:N", "mps")

_DEVICE = re.compile(r"cpu|cuda(?::\d+)?|mps")


def check_device(device: str | None) -> str | None:
    """The device name, normalised (``CUDA`` -> ``cuda``); None means: choose.

    Raises:
        ScoringError: not a device codecurve can run a model on; the message lists them.
    """
    if device is None:
        return None
    name = device.strip().lower()
    if not _DEVICE.fullmatch(name):
        raise ScoringError(
            f"unknown device {device!r}; use one of {', '.join(DEVICES)} "
            "(or leave it out: CUDA, else an Apple GPU, else the CPU)"
        )
    return name


def pick_device(
    device: str | None, *, model_dtype: str | None = None
) -> tuple[torch.device, torch.dtype]:
    """The device a model runs on and the dtype it is loaded in.

    Chosen when ``device`` is None: CUDA, else Apple's GPU (MPS), else the CPU. Dtypes:
    bfloat16 on CUDA; on MPS float16 for a model stored in float16, float32 otherwise
    (a bfloat16-trained model overflows in float16); float32 on the CPU.

    Args:
        device: ``cpu``, ``cuda``, ``cuda:N``, ``mps``; None = choose.
        model_dtype: The dtype the model's weights are stored in (its config's), if known.

    Raises:
        ScoringError: an unknown device, or one this machine does not have.
    """
    import torch

    name = check_device(device)
    if name is None:
        if torch.cuda.is_available():
            name = "cuda"
        elif torch.backends.mps.is_available():
            name = "mps"
        else:
            name = "cpu"
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ScoringError("CUDA was asked for, and torch sees no CUDA device")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ScoringError(
            f"there is no {name}: torch sees {torch.cuda.device_count()} CUDA device(s)"
        )
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ScoringError("MPS was asked for, and torch sees no Apple GPU")
    if dev.type == "cuda":
        return dev, torch.bfloat16
    if dev.type == "mps" and model_dtype == "float16":
        return dev, torch.float16
    return dev, torch.float32
