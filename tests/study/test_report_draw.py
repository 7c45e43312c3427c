"""The report's figures: laid out without asking matplotlib to lay out the ticks twice,
and their text kept as text in the SVG."""

from __future__ import annotations

import pytest

import study.report._content as content
import study.report._draw as draw
from study import Study
from study.report._data import ReportOptions, report_data
from study.report._figure import Figure
from tests.study.test_audit import code_audit_blind, code_second_coder, simulated_study


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> tuple[Figure, ...]:
    """Every figure of a report on two codes, audited blind by ana, part of it by bo."""
    path, truth = simulated_study(tmp_path_factory.mktemp("d") / "d.codecurve", n=600, seed=4)
    with Study.open(path) as study:
        study.audit.draw(per_code=200, seed=2)
        code_audit_blind(study, truth)
        code_second_coder(study, truth, per_code=80, flip=0.2, seed=1)
        found = content.figures(report_data(study, ReportOptions(coder="ana")))
    assert {f.kind for f in found} == set(draw.DRAWERS)
    return found


def test_the_margin_reads_the_tick_labels_the_axes_show(figures: tuple[Figure, ...]) -> None:
    for figure in figures:
        fig = draw.draw(figure)
        ax = fig.axes[0]
        assert draw.ytick_labels(ax) == [t.get_text() for t in ax.get_yticklabels()], figure.name


def test_text_is_svg_text_not_glyph_outlines(figures: tuple[Figure, ...]) -> None:
    for figure in figures:
        svg = draw.svg_text(figure)
        assert f">{figure.title}</text>" in svg.replace("&#39;", "'"), figure.name
        assert 'id="DejaVuSans-' not in svg  # no glyph paths defined
        assert svg.startswith("<svg")


def test_the_forest_plots_legend_lies_outside_its_rows(figures: tuple[Figure, ...]) -> None:
    """Among the rows, the legend's markers read as one more estimate (below zero): it
    lies below the axis and its label, and nothing of the figure is cut off."""
    forest = next(f for f in figures if f.kind == "forest")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = draw.draw(forest)
    ax = fig.axes[0]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # places the axis label
    renderer = canvas.get_renderer()
    legend = ax.get_legend()
    assert legend is not None
    box = legend.get_window_extent(renderer)
    axis = ax.get_window_extent(renderer)
    label = ax.xaxis.label.get_window_extent(renderer)
    assert box.y1 <= label.y0 < axis.y0
    assert box.y0 >= 0
