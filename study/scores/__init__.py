"""Scoring configurations and the scores stored under them.

The front door for other rooms is ``__all__`` (loaded on first use); the modules are
also read by the handle, the read face and the analysis wing of ``study``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from study.lazy import lazy_getattr

if TYPE_CHECKING:
    from study.scores.learned import is_learned

#: Each exported name and the module that defines it, imported on first use.
_LAZY = {
    "is_learned": "study.scores.learned",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "is_learned",
]
