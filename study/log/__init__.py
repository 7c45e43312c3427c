"""What is written to the event log (:mod:`study.file.events`): coders' decisions, notes,
memos and certified delegations.

The front door for other rooms is ``__all__`` (loaded on first use); the modules are
also read by the handle, the read face and the analysis wing of ``study``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from study.lazy import lazy_getattr

if TYPE_CHECKING:
    from study.log.delegations import CodePlan, DelegationPlan

#: Each exported name and the module that defines it, imported on first use.
_LAZY = {
    "CodePlan": "study.log.delegations",
    "DelegationPlan": "study.log.delegations",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "CodePlan",
    "DelegationPlan",
]
