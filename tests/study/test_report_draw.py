"""The report's figures: laid out without asking matplotlib to lay out the ticks twice,
and their text kept as text in the SVG."""

from __future__ import annotations

import numpy as np
import pytest

from study import Study
from study.report import content, draw
from study.report.data import ReportOptions, report_data
from study.report.figure import Figure
from tests.study.test_audit import code_audit_blind, simulated_study


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> tuple[Figure, ...]:
    """Every figure of a report on two codes, audited blind by ana, part of it by bo."""
    path, truth = simulated_study(tmp_path_factory.mktemp("d") / "d.codecurve", n=600, seed=4)
    rng = np.random.default_rng(1)
    with Study.open(path) as study:
        study.audit.draw(per_code=200, seed=2)
        code_audit_blind(study, truth)
        sample = study.audit.sample()
        assert sample is not None
        for code in study.codes:
            for rid in sample.pairs(code.id)[:80]:
                value = truth[(rid, code.id)]
                other = 6 - value if rng.random() < 0.2 else value
                study.decisions.record(rid, code.id, other, coder="bo")
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
