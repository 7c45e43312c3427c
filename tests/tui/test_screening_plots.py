"""The screening panel draws the reliability diagram and the risk-coverage curve in the
terminal, from the screen's own numbers, and R writes the study's report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from screening.calibration import calibration_bins, threshold_curve
from study import Study
from tests.study.test_audit import simulated_study
from tests.tui.waiting import settle
from tui.app import CodecurveApp, make_app
from tui.widgets.plots import reliability_plot, risk_coverage_plot

SnapCompare = Callable[..., bool]


def coded_study(path: Path) -> Path:
    """A calibrated model and 400 decisions of tester per code: a Valid screen."""
    path, truth = simulated_study(path, n=420, seed=4)
    with Study.open(path) as study:
        for code in study.codes:
            for i in range(400):
                rid = f"r{i}"
                study.decisions.record(rid, code.id, truth[(rid, code.id)], coder="tester")
    return path


def plots_app(tmp_path: Path) -> CodecurveApp:
    return make_app(coded_study(tmp_path / "plots.codecurve"), coder="tester", close_study=True)


def test_the_plots_mark_every_bin_and_the_certified_threshold() -> None:
    correct = [True] * 40 + [False] * 10 + [True] * 5 + [False] * 5
    conf = [0.95] * 40 + [0.85] * 10 + [0.35] * 5 + [0.15] * 5
    bins = calibration_bins(correct, conf)
    text = reliability_plot(bins).plain
    assert text.count("●") - 1 == len(bins) == 4  # one mark per bin, one in the legend
    assert "pairs per bin: 5 5 10 40" in text
    curve = threshold_curve(correct, conf)
    plain = risk_coverage_plot(curve, certified=(40 / 60, 0.0, 0.95), max_error=0.05).plain
    assert plain.count("◆") == 2  # the mark and its legend
    assert "certified ≥ 0.950: 67% kept" in plain
    assert "┄" in plain
    assert "◆" not in risk_coverage_plot(curve).plain


async def test_the_panel_draws_the_screens_bins_and_r_writes_the_report(tmp_path: Path) -> None:
    app = plots_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        panel = app.review.screening
        summary = panel.summary
        assert summary is not None
        group = summary.groups[0]
        assert group.report is not None
        phase_b = group.report.phase_b
        assert phase_b is not None
        assert group.tier in ("Valid", "Indeterminate")
        text = panel.plots_text
        counts = " ".join(str(b.n) for b in phase_b.calibration)
        assert f"pairs per bin: {counts}" in text
        assert sum(b.n for b in phase_b.calibration) == group.report.n_items
        assert "Risk-coverage" in text
        panel.focus()
        await pilot.press("R")
        await app.workers.wait_for_complete()
        await pilot.pause()
        written = tmp_path / "plots-report.html"
        assert written.is_file()
        assert "<svg" in written.read_text(encoding="utf-8")
        messages = [n.message for n in app._notifications]
        assert f"Report written to {written}" in messages


async def test_a_report_that_cannot_be_written_is_a_notification(tmp_path: Path) -> None:
    app = plots_app(tmp_path)
    blocker = tmp_path / "plots-report.html"
    blocker.mkdir()  # a folder where the report would go
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        app.review.screening.focus()
        await pilot.press("R")
        await app.workers.wait_for_complete()
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert any(m.startswith("Report failed:") and "is a folder" in m for m in messages)
        assert blocker.is_dir()
        assert not list(blocker.iterdir())


def _to_plots(size: tuple[int, int]) -> Callable[[Pilot[None]], Any]:
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        app = pilot.app
        assert isinstance(app, CodecurveApp)
        panel = app.review.screening
        panel.focus()
        await pilot.pause()
        panel.scroll_to_widget(panel.query_one("#screening-plots"), animate=False, top=True)
        await pilot.pause()

    return run_before


def test_screening_plots_80x24(snap_compare: SnapCompare, tmp_path: Path) -> None:
    assert snap_compare(plots_app(tmp_path), terminal_size=(80, 24), run_before=_to_plots((80, 24)))


def test_screening_plots_140x40(snap_compare: SnapCompare, tmp_path: Path) -> None:
    assert snap_compare(
        plots_app(tmp_path), terminal_size=(140, 40), run_before=_to_plots((140, 40))
    )
