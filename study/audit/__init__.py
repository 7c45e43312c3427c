"""The blind random audit sample and blind double coding.

The front door for other rooms is ``__all__`` (loaded on first use). ``blind`` and
``sample`` are also read by other wings of ``study`` (the handle, the queries, the
exports); ``_code_columns`` is the wing's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from study.lazy import lazy_getattr

if TYPE_CHECKING:
    from study.audit._code_columns import code_columns
    from study.audit.blind import BlindSetting, blind_setting, set_blind_coding
    from study.audit.sample import AuditSample

#: Each exported name and the module that defines it, imported on first use.
_LAZY = {
    "code_columns": "study.audit._code_columns",
    "BlindSetting": "study.audit.blind",
    "blind_setting": "study.audit.blind",
    "set_blind_coding": "study.audit.blind",
    "AuditSample": "study.audit.sample",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "AuditSample",
    "BlindSetting",
    "blind_setting",
    "code_columns",
    "set_blind_coding",
]
