"""The coders' agreement, per code and pooled: a small read-only table.

The numbers are :func:`study.analysis.agreement.study_agreement`'s, the same as
``codecurve agreement`` prints for the same coders (seed 0, 1,000 resamples): units,
percent agreement, Cohen's kappa and Krippendorff's alpha with their 95% bootstrap
intervals. They are measured in a worker thread, which posts :class:`AgreementPanel.Measured`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from tui.text import one_line, printable

if TYPE_CHECKING:
    from study import Study
    from study.analysis import AgreementReport

COLUMNS = ("Code", "Units", "Agreement", "Cohen's κ", "Krippendorff's α")


def agreement_rows(report: AgreementReport) -> list[tuple[str, ...]]:
    """One row of cells per code, the pooled row first, as the table shows them."""
    from study.analysis import describe_estimate

    return [
        (
            row.code,
            str(row.result.n_units),
            describe_estimate(row.result.percent, percent=True),
            describe_estimate(row.result.kappa),
            describe_estimate(row.result.alpha),
        )
        for row in report.rows
    ]


class AgreementPanel(Vertical):
    """The agreement of the coders compared: a title line and one row per code."""

    class Measured(Message):
        """The agreement was measured (``report``), or could not be (``problem``)."""

        def __init__(self, report: AgreementReport | None, problem: str | None) -> None:
            super().__init__()
            self.report = report
            self.problem = problem

    def compose(self) -> ComposeResult:
        yield Static("Agreement: measuring…", id="agreement-title")
        table: DataTable[Text] = DataTable(
            id="agreement-table", cursor_type="none", show_cursor=False
        )
        table.can_focus = False
        yield table

    @property
    def title(self) -> Static:
        return self.query_one("#agreement-title", Static)

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#agreement-table", DataTable)

    def measure(self, study: Study, coders: Sequence[str] | None) -> None:
        """Measure the agreement of ``coders`` (None: every coder) off the event loop."""
        self.title.update("Agreement: measuring…")
        self._measure(study, None if coders is None else list(coders))

    @work(thread=True, exclusive=True, exit_on_error=False, group="agreement", name="agreement")
    def _measure(self, study: Study, coders: list[str] | None) -> None:
        from study.analysis import study_agreement
        from study.errors import StudyError

        try:
            report = study_agreement(study, coders=coders)
        except StudyError as exc:
            self.post_message(self.Measured(None, exc.message))
            return
        self.post_message(self.Measured(report, None))

    @on(Measured)
    def _show(self, message: Measured) -> None:
        message.stop()
        table = self.table
        table.clear(columns=True)
        if message.report is None:
            self.title.update(Text(printable(f"Agreement: {message.problem}", single_line=True)))
            return
        report = message.report
        coders = ", ".join(report.coders)
        self.title.update(
            Text(
                printable(
                    f"Agreement of {coders} (95% bootstrap intervals, "
                    f"{report.bootstrap.resamples:,} resamples)",
                    single_line=True,
                )
            )
        )
        table.add_columns(*COLUMNS)
        for cells in agreement_rows(report):
            table.add_row(*(Text(one_line(c)) for c in cells))
