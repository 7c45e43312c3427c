"""``codecurve report --methods``, and the report's methods section: the paragraph a
methods section needs, every number the study's own, with its references."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from study import Study
from tests.study.test_audit import code_audit_blind, simulated_study
from tui.cli import main


@pytest.fixture
def study(tmp_path: Path) -> Path:
    """1,200 responses x 2 codes, an audit of 400 per code coded blind by ana, a second
    coder on 60 audit responses, and a delegation applied."""
    path, truth = simulated_study(tmp_path / "m.codecurve", n=1200, seed=11)
    with Study.open(path) as opened:
        opened.audit.draw(per_code=400, seed=5)
        code_audit_blind(opened, truth)
        sample = opened.audit.sample()
        assert sample is not None
        second = [
            (r, c.id, truth[(r, c.id)] if i % 7 else 3)
            for c in opened.codes
            for i, r in enumerate(sample.pairs(c.id)[:60])
        ]
        opened.decisions.import_decisions(second, coder="ben")
    assert main(["delegate", str(path), "--coder", "ana", "--apply"]) == 0
    return path


def test_the_methods_paragraph_gives_the_studys_numbers_and_references(
    study: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    capsys.readouterr()
    assert main(["report", str(study), "--coder", "ana", "--methods"]) == 0
    out = capsys.readouterr().out
    paragraph, references = out.split("\nReferences:\n")
    flat = " ".join(paragraph.split())
    # The model and its configuration.
    assert "The 1,200 responses were coded deductively with the 2 codes" in flat
    assert "fake" in flat
    assert "context level" in flat
    # The audit: its size, how drawn, blind, by whom.
    assert "A simple random audit sample of 400 responses per code" in flat
    assert "seed 5" in flat
    assert "800 of its 800 pairs were coded blind by ana" in flat
    # Reliability, as the agreement command gives it.
    assert main(["agreement", str(study), "--format", "json", "--resamples", "1000"]) == 0
    agreement = json.loads(capsys.readouterr().out)
    kappa = agreement["pooled"]["kappa"]["value"]
    assert re.search(rf"Cohen's kappa( \([a-z-]+\))? {kappa:.2f} \[", flat), flat
    assert "ana, ben" in flat
    # The screen in plain words, and the delegation's guarantee as applied.
    assert "(Cacioli 2026)" in flat
    with Study.open(study, read_only=True) as opened:
        from study.log.delegations import guarantee_sentences

        sentences = list(guarantee_sentences(opened).values())
    assert sentences
    assert " ".join(sentences[0].split()) in flat
    # Prevalence, by PPI, with its estimates.
    assert "prediction-powered inference" in flat
    assert re.search(r"\d+\.\d% \[\d+\.\d, \d+\.\d\]", flat)
    for cited in ("Katz (2026)", "Cacioli (2026)", "Bauer, P. (1991)", "Prediction-powered"):
        assert cited in references
    # The report carries the same paragraph.
    report = tmp_path / "r.html"
    assert main(["report", str(study), "--coder", "ana", "-o", str(report)]) == 0
    page = report.read_text(encoding="utf-8")
    assert "For the methods section" in page
    assert "A simple random audit sample of 400 responses per code" in page


def test_a_study_without_an_audit_says_what_it_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _truth = simulated_study(tmp_path / "n.codecurve", n=50, seed=1)
    assert main(["report", str(path), "--methods"]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert "No random audit sample was drawn" in flat
    assert "Reliability between coders was not measured" in flat
    assert "No pair was delegated" in flat
    assert "Prevalence was not estimated" in flat
