"""Every coder's columns in the wide export, the ``disagreement`` status of the queue and
the disagreements a reconciliation lists."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from study.analysis._reconcile import compared_coders, disagreements, resolved_count
from study.errors import StudyError
from study.exchange.coders import CoderChoiceError
from study.exchange.export import export_study, read_export
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
    # Each coder's own value: a point of the 1-5 scale, 0/1 on a yes/no code.
    assert frame.loc["r1", "Team support [ana]"] == 5
    assert frame.loc["r1", "Team support [ben]"] == 3
    assert frame.loc["r1", "Team support [consensus]"] == 4
    assert frame.loc["r2", "Team support [ana]"] == 2
    assert frame.loc[["r2"], "Team support [consensus]"].isna().all()
    assert frame.loc[["r3"], "Workload [ana]"].isna().all()
    assert frame.loc["r1", "Workload [ben]"] == 0
    assert "Pay [ana]" in frame.columns  # every code, decided or not
    assert "Team support [ana]" not in wide_frame(study).columns


def test_the_long_layout_keeps_every_coder_apart(study: Study, tmp_path: Path) -> None:
    back = read_export(export_study(study, tmp_path / "x.csv", all_coders=True))
    decided = {
        (r, c, who)
        for who in ("ana", "ben")
        for r, c in [("r1", "team"), ("r2", "team"), ("r1", "workload")]
    } | {("r1", "team", "consensus")}
    # A row per pair and coder who decided it, one row for each pair nobody decided.
    rows = back[back["coder"].notna()]
    found = list(zip(rows["response_id"], rows["code_id"], rows["coder"], strict=True))
    assert sorted(found) == sorted(decided)
    assert len(back) - len(rows) == study.pair_count() - 3
    # The rows of one pair come together, in the responses' order.
    order = [study.index.response_key(r) for r in back["response_id"]]
    assert order == sorted(order, key=lambda k: order.index(k))


def test_several_coders_export_their_reconciled_decisions(study: Study, tmp_path: Path) -> None:
    # With consensus decisions, the default is the reconciled decisions, never "the
    # latest of any coder" (ben's 3 on r1/team was the latest coder's but one).
    frame = read_export(export_study(study, tmp_path / "x.csv"))

    def pair(response_id: str, code_id: str) -> pd.Series:
        return frame[(frame.response_id == response_id) & (frame.code_id == code_id)].iloc[0]

    settled = pair("r1", "team")
    assert (settled["decision"], settled["coder"]) == (4, "consensus")
    assert pair("r2", "team")["decision"] == 2  # ana and ben agree
    assert pair("r2", "team")["coder"] in ("ana", "ben")
    # ana 1 and ben 0 and no consensus: no decision, and no model pick standing in.
    unsettled = pair("r1", "workload")
    assert pd.isna(unsettled["decision"])
    assert pd.isna(unsettled["final"])
    assert unsettled["final_from"] == "unresolved"
    info = json.loads((tmp_path / "x.csv-metadata.json").read_text(encoding="utf-8"))
    said = json.dumps(info)
    assert "reconciled decisions of ana, ben" in said
    assert "1 unresolved disagreement" in said


def test_several_coders_without_consensus_are_never_mixed(study: Study, tmp_path: Path) -> None:
    study.decisions.clear("r1", "team", coder="consensus")
    with pytest.raises(CoderChoiceError, match=r"2 coders \('ana', 'ben'\)"):
        export_study(study, tmp_path / "x.csv")
    assert list(tmp_path.glob("x.csv*")) == []
    with pytest.raises(CoderChoiceError):
        wide_frame(study)
    ana = read_export(export_study(study, tmp_path / "ana.csv", coder="ana"))
    assert set(ana["coder"].dropna()) == {"ana"}
    apart = read_export(export_study(study, tmp_path / "w.csv", layout="wide", all_coders=True))
    assert {"Team support [ana]", "Team support [ben]"} <= set(apart.columns)


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
