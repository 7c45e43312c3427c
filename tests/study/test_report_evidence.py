"""The report quotes a few pairs per code with the sentence that moved the model marked,
escaped like every text from the study, and says nothing of it where none was measured."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebooks.model import BINARY, Code, Codebook
from scoring import FakeBackend, ScoringEngine
from study import ResponseTable, Study
from study.analysis._evidence import explain_study, plan_explain
from study.report._data import report_data
from study.report._figure import Figure
from study.report._files import render_html
from study.score_run import score_study

#: Every sentence carries markup a browser would run or draw.
TEXTS = {
    f"r{i}": (
        f"<b>Ward {i}</b> was clean & tidy. <script>alert({i})</script> staff shouted. "
        f"We waited {i} hours <img src=x onerror=alert(1)>. Parking was fine."
    )
    for i in range(1, 9)
}

CODEBOOK = Codebook(
    name="NHS",
    codes=(
        Code("staff", "Staff <attitude>", definition="How staff behave."),
        Code("wait", "Waiting", definition="Waiting times.", scale=BINARY),
    ),
)


@pytest.fixture
def scored(tmp_path: Path) -> Iterator[Study]:
    table = ResponseTable.from_texts(TEXTS)
    study = Study.create(tmp_path / "s.codecurve", responses=table, codebook=CODEBOOK)
    score_study(study, ScoringEngine(FakeBackend(), study.codebook))
    yield study
    study.close()


def no_figures(figure: Figure) -> str:
    return "<svg></svg>"


def quotes(page: str) -> list[str]:
    return re.findall(r"<blockquote>(.*?)</blockquote>", page, flags=re.S)


def test_without_evidence_the_report_says_nothing_of_it(scored: Study) -> None:
    data = report_data(scored)
    assert data.section("evidence") is None
    assert "evidence" not in data.missing
    page = render_html(data, svg=no_figures)
    assert "The sentence that moved the model" not in page
    assert quotes(page) == []


def test_each_code_quotes_its_likeliest_pairs_with_the_sentence_marked(scored: Study) -> None:
    plan = plan_explain(scored)
    explain_study(scored, ScoringEngine(FakeBackend(), scored.codebook), plan)
    data = report_data(scored)
    found = data.section("evidence")
    assert found is not None
    page = render_html(data, svg=no_figures)
    assert '<section id="evidence">' in page
    # Every text from the study is escaped: no markup of a response reaches the page.
    assert "<script" not in page
    assert "<img" not in page
    assert "<b>" not in page
    shown = quotes(page)
    assert shown
    for name, examples in found["codes"].items():
        kept = [
            e
            for e in scored.evidence.for_config(plan.config.id, code_id=scored.code(name).id)
            if e.top is not None and e.top.applies_effect > 0
        ]
        likeliest = sorted(kept, key=lambda e: -e.applies)[:3]
        assert [e["response_id"] for e in examples] == [e.response_id for e in likeliest]
        for example, evidence in zip(examples, likeliest, strict=True):
            top = evidence.top
            assert top is not None
            text = TEXTS[evidence.response_id]
            marked = f"<mark>{html.escape(top.text(text), quote=True)}</mark>"
            quoted = [q for q in shown if marked in q and f"response {evidence.response_id}:" in q]
            assert quoted, f"no quotation of {evidence.response_id} marks its top sentence"
            assert f"(−{top.applies_effect:.2f})" in quoted[0]
            assert html.escape(name, quote=True) in quoted[0]
            assert example["effect"] == pytest.approx(top.applies_effect)
    assert len(shown) == sum(len(v) for v in found["codes"].values())
    assert all(len(v) <= 3 for v in found["codes"].values())
