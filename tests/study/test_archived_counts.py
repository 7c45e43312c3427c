"""Counts after a revision archives codes: they are of the study's codes now, wherever
they are shown (the screening panel's audit line, an export's ``codes_decided``, a
project's audit sample, read back)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from study.exchange.export import export_study, read_export
from study.refi import create_from_project, export_project
from study.store import Study
from tests.factories import build_study
from tui.plans import plan_for
from tui.session import ReviewSession


def archived_study(tmp_path: Path) -> Study:
    """30 responses x 3 codes, an audit of 10 per code, every audit pair decided by ana;
    then a revision archives Team support."""
    study = build_study(tmp_path / "s.codecurve", n=30)
    study.audit.draw(per_code=10, seed=3)
    sample = study.audit.sample()
    assert sample is not None
    items = [(r, c.id, 1) for c in study.codes for r in sample.pairs(c.id)]
    study.decisions.import_decisions(items, coder="ana")
    kept = tuple(c for c in study.codebook.codes if c.id != "team")
    study.versions.revise(dataclasses.replace(study.codebook, codes=kept))
    return study


def test_the_panel_counts_the_audit_pairs_of_the_codes_there_are(tmp_path: Path) -> None:
    with archived_study(tmp_path) as study:
        _plan, _note, audit = plan_for(study, "ana")
        status = ReviewSession(study, coder="ana").audit_status()
    assert audit == "20 of 20 audit pairs coded blind by you"
    assert status == "audit 20/20 blind"


def test_codes_decided_counts_the_codes_there_are(tmp_path: Path) -> None:
    with archived_study(tmp_path) as study:
        out = export_study(study, tmp_path / "wide.csv", layout="wide", coder="ana")
    wide = read_export(out)
    assert int(wide["codes_decided"].max()) == 2
    assert "Team support (archived)" in wide.columns  # the old decisions are kept


def test_a_projects_audit_sample_is_restored_after_a_revision(tmp_path: Path) -> None:
    with archived_study(tmp_path) as study:
        project = export_project(study, tmp_path / "p.qdpx", coder="ana")
        sizes = {c.id: study.audit.sample().size(c.id) for c in study.codes}  # type: ignore[union-attr]
    made, done = create_from_project(tmp_path / "again.codecurve", project)
    with made:
        sample = made.audit.sample()
        assert sample is not None, done.messages
        assert {c.id: sample.size(c.id) for c in made.codes} == sizes
    assert any("audit sample is restored" in m for m in done.messages)
