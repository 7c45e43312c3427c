"""Every coder's columns in the wide export, the ``disagreement`` status of the queue and
the disagreements a reconciliation lists."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from study.analysis.reconcile import compared_coders, disagreements, resolved_count
from study.errors import StudyError
from study.exchange.export import export_study
from study.exchange.frames import wide_frame
from study.store import Study
from tests.factories import build_study


@pytest.fixture
def study(tmp_path: Path) -> Iterator[Study]:
    s = build_study(tmp_path / "w.codecurve", n=6)
    # team is on a 5-point scale (applies from 4); workload is yes/no.
    s.decisions.import_decisions(
        [("r1", "team", 5), ("r2", "team", 2), ("r1", "workload", 1)], coder="ana"
    )
    s.decisions.import_decisions(
        [("r1", "team", 3), ("r2", "team", 2), ("r1", "workload", 0)], coder="ben"
    )
    s.decisions.record("r1", "team", 4, coder="consensus", note="supportive, not glowing")
    yield s
    s.close()


def test_wide_all_coders_columns(study: Study) -> None:
    frame = wide_frame(study, all_coders=True).set_index("response_id")
    assert frame.loc["r1", "Team support [ana]"] == 1
    assert frame.loc["r1", "Team support [ben]"] == 0  # 3 < applies_from 4
    assert frame.loc["r1", "Team support [consensus]"] == 1
    assert frame.loc["r2", "Team support [ana]"] == 0
    assert frame.loc[["r2"], "Team support [consensus]"].isna().all()
    assert frame.loc[["r3"], "Workload [ana]"].isna().all()
    assert frame.loc["r1", "Workload [ben]"] == 0
    assert "Pay [ana]" in frame.columns  # every code, decided or not
    assert "Team support [ana]" not in wide_frame(study).columns


def test_all_coders_is_refused_in_the_long_layout(study: Study, tmp_path: Path) -> None:
    with pytest.raises(StudyError, match="wide layout"):
        export_study(study, tmp_path / "x.csv", all_coders=True)
    assert not (tmp_path / "x.csv").exists()


def test_disagreement_status_counts_and_lists_the_same_pairs(study: Study) -> None:
    cfg = study.scores.active_config_id()
    rows = study.queries.page(cfg, status="disagreement", limit=100)
    keys = {(r.response_id, r.code_id) for r in rows}
    assert keys == {("r1", "team"), ("r1", "workload")}
    assert study.queries.count(cfg, status="disagreement") == 2
    assert study.queries.count(cfg, status="disagreement", code_id="team") == 1
    assert study.queries.position(cfg, "r2", "team", status="disagreement") is None
    assert study.queries.position(cfg, "r1", "team", status="disagreement", order="id") is not None
    # The consensus coder's decision does not make a disagreement of its own.
    study.decisions.record("r2", "team", 5, coder="consensus")
    assert study.queries.count(cfg, status="disagreement") == 2


def test_disagreements_list_each_coder_and_the_consensus(study: Study) -> None:
    items = disagreements(study)
    assert [(d.response_id, d.code_id) for d in items] == [("r1", "workload"), ("r1", "team")]
    team = items[1]
    assert [(v.coder, v.value) for v in team.views] == [("ana", 5), ("ben", 3)]
    assert team.consensus == 4
    assert team.consensus_note == "supportive, not glowing"
    assert resolved_count(items) == 1


def test_bad_coder_choices_are_one_clear_message(study: Study) -> None:
    with pytest.raises(StudyError, match="no decisions by coder 'zed'"):
        disagreements(study, coders=["ana", "zed"])
    with pytest.raises(StudyError, match="two coders"):
        disagreements(study, coders=["ana"])
    with pytest.raises(StudyError, match="consensus coder"):
        compared_coders(study, coders=["ana", "consensus"])
    assert compared_coders(study) == ("ana", "ben")
