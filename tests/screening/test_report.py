"""The VRS report: rows, renderers and the phase-B gate."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table

from screening import ScreeningWarning, Table2x2, VRSReport, screen_report, screen_table

GOLDEN = Table2x2(a=24, b=71, c=423, d=6)


def _items(t: Table2x2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    correct = np.repeat([True, False, True, False], [t.a, t.b, t.c, t.d])
    high = np.repeat([True, True, False, False], [t.a, t.b, t.c, t.d])
    return correct, np.where(high, rng.uniform(0.5, 1, t.n), rng.uniform(0, 0.5, t.n))


def test_golden_rows() -> None:
    report = VRSReport(
        screen_table(GOLDEN),
        source="DeepSeek-R1",
        dataset="paper battery",
        confidence_signal="KEEP/WITHDRAW",
        confidence_format="binary",
        binarisation_threshold="N/A",
    )
    rows = dict(report.rows())
    assert rows["Source (model)"] == "DeepSeek-R1"
    assert rows["N items"] == "524"
    assert rows["N correct / N incorrect"] == "447 / 77"
    assert rows["Accuracy"] == "0.853"
    assert rows["2x2 table"] == "a=24, b=71, c=423, d=6"
    assert rows["TRIN"] == "0.819 (fixed-low)"
    assert rows["L"] == "0.922 [0.840, 0.964]"
    assert rows["Fp"] == "0.946 [0.921, 0.964]"
    assert rows["RBS"] == "+0.868 [+0.805, +0.932]"
    assert rows["r(confidence, correct)"] == "-0.798, p < .001, 95% CI [-0.827, -0.765]"
    assert rows["Tier classification"] == "Invalid"
    assert rows["Flagging reason"].startswith("Fp = 0.946 exceeds .50")
    assert rows["Phase B"] == "not shown: the screen is Invalid"
    assert report.n_items == 524
    assert report.tier == "Invalid"


def test_to_dict_is_json_safe_with_nan_as_none() -> None:
    with pytest.warns(ScreeningWarning):
        report = VRSReport(screen_table(Table2x2(12, 0, 3, 0)))
    d = report.to_dict()
    text = json.dumps(d, allow_nan=False)  # raises on nan / inf
    assert json.loads(text) == d
    assert d["schema"] == "codecurve.vrs/1"
    assert d["tier"] == "Insufficient data"
    assert d["L"]["value"] is None
    assert d["r"]["value"] is None
    assert d["L"]["status"] == "not judged"
    assert d["distance_to_verdict"]["shortfalls"][0]["cell"] == "b"
    assert d["phase_b"] is None


def test_golden_dict_values() -> None:
    d = VRSReport(screen_table(GOLDEN)).to_dict()
    assert d["table"] == {"a": 24, "b": 71, "c": 423, "d": 6}
    assert round(d["Fp"]["ci_lower"], 3) == 0.921
    assert d["Fp"]["status"] == "invalid"
    assert d["trin"] == {
        "value": pytest.approx(0.8187, abs=1e-4),
        "direction": "fixed-low",
        "warning": False,
    }
    assert [f["index"] for f in d["flags"]] == ["Fp", "RBS"]


def test_markdown_has_every_row() -> None:
    report = VRSReport(screen_table(GOLDEN), code="A|B")
    md = report.to_markdown()
    lines = md.strip().splitlines()
    assert lines[0] == "| VRS row | Value |"
    assert len(lines) == 2 + len(report.rows())
    assert "| Code | A\\|B |" in md
    assert "| Tier classification | Invalid |" in md


def test_rich_table_renders() -> None:
    report = VRSReport(screen_table(GOLDEN), code="costs")
    table = report.to_rich()
    assert isinstance(table, Table)
    assert table.row_count == len(report.rows())
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(table)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "Invalid" in out
    assert "0.946 [0.921, 0.964]" in out
    assert "costs" in out


def test_phase_b_cannot_be_attached_to_an_invalid_screen() -> None:
    valid = screen_report(*_items(Table2x2(385, 29, 82, 28)), with_phase_b=True)
    assert valid.phase_b is not None
    with pytest.raises(ValueError, match="Invalid"):
        VRSReport(screen_table(GOLDEN), phase_b=valid.phase_b)


def test_screen_report_one_call() -> None:
    correct, conf = _items(Table2x2(385, 29, 82, 28))
    report = screen_report(
        correct, conf, source="m", dataset="d", with_phase_b=True, coverages=(0.5,)
    )
    assert report.tier == "Valid"
    assert report.binarisation_threshold == ">= 0.500 (fixed)"
    assert report.phase_b is not None
    assert len(report.phase_b.selective) == 1
    rows = dict(report.rows())
    assert "AUROC" in rows
    assert "Selective accuracy at 50%" in rows
    assert json.dumps(report.to_dict(), allow_nan=False)

    median = screen_report(correct, conf, threshold="median")
    assert "sample median" in median.binarisation_threshold


def test_screen_report_refuses_phase_b_when_invalid() -> None:
    report = screen_report(*_items(GOLDEN), with_phase_b=True)
    assert report.tier == "Invalid"
    assert report.phase_b is None


def test_indeterminate_report_carries_the_caveat() -> None:
    report = screen_report(*_items(Table2x2(222, 152, 94, 56)), with_phase_b=True)
    assert report.tier == "Indeterminate"
    assert "Phase B caveat" in dict(report.rows())
    assert report.to_dict()["phase_b"]["caveat"].startswith("Indeterminate")
