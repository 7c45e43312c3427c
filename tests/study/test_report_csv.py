"""The report's tables as CSV: signed figures read plainly, formulas stay guarded."""

from __future__ import annotations

import csv
import io

import study.report._content as content
from study.report._files import table_csv


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_a_signed_figure_has_no_stray_apostrophe_and_a_formula_stays_guarded() -> None:
    table = content.Table(
        name="vrs-all",
        title="Validity report (VRS): all",
        columns=("Row", "Value"),
        rows=(
            ("r(confidence, correct)", "+0.129, p = 0.002, 95% CI [+0.050, +0.206]"),
            ("RBS", "-0.120 [-0.200, -0.040]"),
            ("Source (model)", '=HYPERLINK("http://x")'),
            ("Coder", "+ana"),
            ("Note", "@mention"),
        ),
    )
    rows = _cells(table_csv(table))
    assert rows[1][1] == "0.129, p = 0.002, 95% CI [+0.050, +0.206]"
    assert rows[2][1] == "-0.120 [-0.200, -0.040]"
    assert rows[3][1].startswith("'=")
    assert rows[4][1] == "'+ana"
    assert rows[5][1] == "'@mention"
