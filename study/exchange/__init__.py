"""A study's data out and in: exports, their tables and writers, codes imported from files.

The front door for other rooms is ``__all__`` (loaded on first use; pandas comes with
the exports, not with the wing). ``export``, ``coders``, ``frames`` and ``writers`` are
also read by other wings of ``study`` (the package's lazy names, the findings, the
REFI-QDA mapping); ``_code_import``, ``_score_rows`` and ``_stats_files`` are the wing's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from study.lazy import lazy_getattr

if TYPE_CHECKING:
    from study.exchange._code_import import import_codes
    from study.exchange._score_rows import row_format, score_row, write_score_rows
    from study.exchange.coders import decision_coders
    from study.exchange.export import (
        codebook_version,
        export_codebook,
        export_format,
        export_study,
        metadata_target,
    )
    from study.exchange.writers import FORMATS

#: Each exported name and the module that defines it, imported on first use.
_LAZY = {
    "import_codes": "study.exchange._code_import",
    "row_format": "study.exchange._score_rows",
    "score_row": "study.exchange._score_rows",
    "write_score_rows": "study.exchange._score_rows",
    "decision_coders": "study.exchange.coders",
    "codebook_version": "study.exchange.export",
    "export_codebook": "study.exchange.export",
    "export_format": "study.exchange.export",
    "export_study": "study.exchange.export",
    "metadata_target": "study.exchange.export",
    "FORMATS": "study.exchange.writers",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "FORMATS",
    "codebook_version",
    "decision_coders",
    "export_codebook",
    "export_format",
    "export_study",
    "import_codes",
    "metadata_target",
    "row_format",
    "score_row",
    "write_score_rows",
]
