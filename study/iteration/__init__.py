"""Codebook versions and waves of responses.

The front door for other rooms is ``__all__`` (loaded on first use). ``revisions`` and
``versions`` are also read by other wings of ``study``; ``_waves`` is the wing's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from study.lazy import lazy_getattr

if TYPE_CHECKING:
    from study.iteration.revisions import stale_pairs

#: Each exported name and the module that defines it, imported on first use.
_LAZY = {
    "stale_pairs": "study.iteration.revisions",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "stale_pairs",
]
