"""What this machine has for a model: physical CPU cores and memory available now.

Read from the operating system without extra dependencies: ``/proc`` on Linux,
``sysctl`` values through :func:`os.sysconf` elsewhere. Each answer falls back to a safe
guess (the logical core count; unknown memory) rather than failing.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from codebooks.errors import Remedy
from scoring.errors import ScoringError

log = logging.getLogger(__name__)

_GIB = 1 << 30


class ModelTooLargeError(ScoringError, MemoryError):
    """A model would not fit in the memory this machine has free."""


def physical_cores() -> int:
    """Physical CPU cores (threads beyond them slow llama.cpp down), at least 1."""
    logical = os.cpu_count() or 1
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return max(1, logical // 2) if logical > 1 else 1
    cores: set[tuple[str, str]] = set()
    physical = core = ""
    for line in [*text.splitlines(), ""]:
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "physical id":
            physical = value.strip()
        elif key == "core id":
            core = value.strip()
        elif not key and core:
            cores.add((physical, core))
            physical = core = ""
    return len(cores) if cores else logical


def available_memory() -> int | None:
    """Bytes of memory a new process can use without swapping, or None when unknown."""
    try:
        for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(
    need: int, what: str, *, hint: str, remedy: Remedy | tuple[Remedy, ...] | None = None
) -> None:
    """Refuse to load a model that needs more memory than is available.

    Args:
        need: Bytes the model will hold (weights and working memory).
        what: The model, as the message names it.
        hint: What to do instead, appended to the message, in plain words.
        remedy: The same as data, for the command line and the app to word.

    Raises:
        ModelTooLargeError: ``need`` exceeds the available memory.
    """
    free = available_memory()
    if free is None:
        return
    if need > free:
        raise ModelTooLargeError(
            f"{what} needs about {need / _GIB:.1f} GB of memory and this machine has "
            f"{free / _GIB:.1f} GB available: loading it would swap the machine to a halt; "
            f"{hint}",
            remedy=remedy,
        )
    if need > 0.8 * free:
        log.warning(
            "%s needs about %.1f GB of the %.1f GB available", what, need / _GIB, free / _GIB
        )
