"""Codebook versions and waves of responses.

The front door for other rooms is ``__all__`` (loaded on first use). ``revisions`` and
``versions`` are also read by other wings of ``study``; ``_waves`` is the wing's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from study.iteration.revisions import stale_pairs

#: Each exported name and the module that defines it, imported on first use.
_LAZY = {
    "stale_pairs": "study.iteration.revisions",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "stale_pairs",
]
