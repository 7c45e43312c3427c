"""Findings on demand (``P``): each code's prevalence with its interval.

The figures are :func:`study.analysis.findings.study_findings`, the same as
``codecurve findings``, computed in a thread worker on a read-only handle of its own
(the coder's handle stays free), each time the screen opens, so they follow the
decisions made so far.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.keymap import bindings, key
from tui.remedies import said
from tui.session import ReviewSession
from tui.text import printable

if TYPE_CHECKING:
    from screening.prevalence import Estimate
    from study.analysis import Findings


def _pct(e: Estimate) -> str:
    if not e.ok or math.isnan(e.estimate):
        return "n/a"
    return f"{100 * e.estimate:.1f}% [{100 * e.lower:.1f}, {100 * e.upper:.1f}]"


def findings_table(result: Findings) -> Table:
    """One row per code: the estimate to quote (PPI++ where it has an interval, else the
    audit alone), the audit alone, the audit's size and the descriptive count."""
    table = Table(show_edge=False, expand=True)
    table.add_column("code", ratio=1, no_wrap=True, overflow="ellipsis")
    table.add_column("estimate [95% CI]", no_wrap=True)
    table.add_column("method", no_wrap=True)
    table.add_column("audit alone", no_wrap=True)
    table.add_column("audit n", justify="right", no_wrap=True)
    table.add_column("count (descriptive)", justify="right", no_wrap=True)
    for f in result.codes:
        best = f.best
        count = f.count
        table.add_row(
            Text(printable(f.code_name, single_line=True)),
            _pct(best),
            "exact count"
            if f.exact
            else (f"{best.method} ({best.interval})" if best.ok else "n/a"),
            _pct(f.audit),
            str(f.labelled),
            "n/a" if not count.valued else f"{100 * count.share:.1f}%",
        )
    return table


class FindingsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings("findings.close")

    def __init__(self, session: ReviewSession) -> None:
        super().__init__()
        self.session = session

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog", id="findings-dialog") as box:
            box.border_title = "Findings: how often each code applies"
            box.border_subtitle = f"{key('findings.close')} closes"
            yield Static("computing...", id="findings-body")
            yield Static("", id="findings-notes")

    def on_mount(self) -> None:
        self.compute()

    @work(thread=True, exclusive=True, exit_on_error=False, group="findings")
    def compute(self) -> None:
        from codebooks.errors import CodecurveError
        from study import Study
        from study.analysis import study_findings

        try:
            with Study.open(self.session.study.path, read_only=True) as study:
                try:
                    result = study_findings(study, coder=self.session.coder)
                except CodecurveError:  # the coder has no audit decisions: anyone's
                    result = study_findings(study)
        except CodecurveError as exc:
            self.app.call_from_thread(self._show_error, said(exc))
            return
        self.app.call_from_thread(self._show, result)

    def _show(self, result: Findings) -> None:
        self.query_one("#findings-body", Static).update(findings_table(result))
        lines = [f"Configuration {result.config or '(not scored)'}; audit coder "]
        lines[0] += f"{result.coder or '(none)'}; {result.population:,} responses."
        lines += [f"Note: {n}." for n in result.notes]
        lines.append("The full report, by group too: codecurve findings STUDY --by COLUMN")
        self.query_one("#findings-notes", Static).update(Text(printable("\n".join(lines))))

    def _show_error(self, message: str) -> None:
        self.query_one("#findings-body", Static).update(Text(printable(message)))

    def action_close(self) -> None:
        self.dismiss(None)
