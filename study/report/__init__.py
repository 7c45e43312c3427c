"""A study's report: one self-contained HTML file, and its figures and tables as files.

The front door is ``__all__`` (loaded on first use, so that matplotlib and the analysis
wing load only when a report is made); every module is the wing's own. ``_data``
gathers the sections from the analysis wing, ``_content`` says what each shows,
``_draw`` draws the figures with matplotlib (imported only when drawing), ``_html``
writes the document, ``_methods`` the methods paragraph, ``_parallel`` draws the
figures in worker processes and ``_files`` writes it all without leaving anything
half-written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from study.lazy import lazy_getattr

if TYPE_CHECKING:
    from study.report._data import ReportOptions, report_data
    from study.report._files import write_report
    from study.report._methods import cited, methods_paragraph
    from study.report._parallel import warm

#: Each exported name and the module that defines it, imported on first use.
_LAZY = {
    "ReportOptions": "study.report._data",
    "report_data": "study.report._data",
    "write_report": "study.report._files",
    "cited": "study.report._methods",
    "methods_paragraph": "study.report._methods",
    "warm": "study.report._parallel",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "ReportOptions",
    "cited",
    "methods_paragraph",
    "report_data",
    "warm",
    "write_report",
]
