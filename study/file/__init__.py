"""The study file: its schema and migrations, its life (create, open, upgrade, check),
locking, WAL checkpoints and the event log's one writer (``events``).

Other rooms reach the file through :class:`study.Study`; the one name they take from
here is in ``__all__`` (loaded on first use). The modules are the handle's and the
lower wings' of ``study``, which is why none carries a leading ``_``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from study.lazy import lazy_getattr

if TYPE_CHECKING:
    from study.file.locking import network_file_system

#: Each exported name and the module that defines it, imported on first use.
_LAZY = {
    "network_file_system": "study.file.locking",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "network_file_system",
]
