"""Scoring configurations and the scores stored under them.

The front door for other rooms is ``__all__`` (loaded on first use); the modules are
also read by the handle, the read face and the analysis wing of ``study``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from study.scores.learned import is_learned

#: Each exported name and the module that defines it, imported on first use.
_LAZY = {
    "is_learned": "study.scores.learned",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "is_learned",
]
