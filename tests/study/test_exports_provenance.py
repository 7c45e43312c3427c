"""What an export says beyond the values: blind decisions, archived codes, memos and the
delegation guarantee, in the data files, their provenance and the REFI-QDA project."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from openpyxl import load_workbook

from codebooks.model import Codebook
from scoring.score import ScoreConfig
from study import Study
from study.analysis.delegation_plan import plan_delegation
from study.errors import StudyError
from study.exchange.export import export_study, long_frame, read_export, wide_frame
from study.log.delegations import guarantee_sentences
from study.refi import project_from_study, read_project, study_inputs_from_project, write_qdpx
from study.refi._exchange import create_from_project
from tests.factories import synthetic_score
from tests.study.test_audit import code_audit_blind, simulated_study


@pytest.fixture
def coded(study: Study, config: ScoreConfig) -> Study:
    config_id = study.scores.ensure_config(config)
    study.scores.store(
        config_id,
        [synthetic_score(p, config) for p in study.scores.pending_pairs(config_id)],
    )
    study.decisions.record("r1", "pay", 5, coder="ann", blind=True)
    study.decisions.record("r2", "pay", 2, coder="ann")
    study.decisions.record("r2", "team", 1, coder="ann")
    study.decisions.set_memo("r2", "talks about the team =1+1", coder="ann")
    study.decisions.set_memo("r3", "bob's view", coder="bob")
    return study


def without_team(codebook: Codebook) -> Codebook:
    return replace(codebook, codes=tuple(c for c in codebook.codes if c.id != "team"))


def row(frame: pd.DataFrame, response_id: str, code_id: str) -> pd.Series:
    return frame[(frame.response_id == response_id) & (frame.code_id == code_id)].iloc[0]


def test_long_layout_says_which_decisions_were_blind(coded: Study) -> None:
    frame = long_frame(coded)
    assert bool(row(frame, "r1", "pay")["blind"]) is True
    assert bool(row(frame, "r2", "pay")["blind"]) is False
    assert pd.isna(row(frame, "r3", "pay")["blind"])  # nobody decided


def test_memos_are_exported_per_response(coded: Study, tmp_path: Path) -> None:
    frame = long_frame(coded)
    assert set(frame[frame.response_id == "r2"]["memo"]) == {"talks about the team =1+1"}
    assert set(frame[frame.response_id == "r3"]["memo"]) == {"bob's view"}
    assert frame[frame.response_id == "r1"]["memo"].isna().all()
    assert long_frame(coded, coder="ann")[lambda f: f.response_id == "r3"]["memo"].isna().all()
    wide = wide_frame(coded)
    memos = dict(zip(wide.response_id, wide.memo, strict=True))
    assert memos["r2"] == "talks about the team =1+1"
    assert memos["r3"] == "bob's view"
    back = read_export(export_study(coded, tmp_path / "w.csv", layout="wide"))
    assert back.set_index("response_id").loc["r2", "memo"] == "talks about the team =1+1"


def test_archived_codes_decisions_are_exported_and_marked(
    coded: Study, codebook: Codebook, tmp_path: Path
) -> None:
    coded.versions.revise(without_team(codebook))
    frame = long_frame(coded)
    team = frame[frame.code_id == "team"]
    assert len(team) == coded.response_count()  # one row per response, like any code
    assert team["archived"].all()
    assert not frame[frame.code_id != "team"]["archived"].any()
    decided = row(frame, "r2", "team")
    assert (decided["decision"], decided["final"], decided["final_from"]) == (1, 1, "human")
    # The model's old pick is never an archived code's value.
    undecided = row(frame, "r3", "team")
    assert bool(undecided["scored"])
    assert pd.isna(undecided["final"])
    assert pd.isna(undecided["final_from"])
    wide = wide_frame(coded, fill="model")
    assert "Team" not in wide.columns
    cells = dict(zip(wide.response_id, wide["Team (archived)"], strict=True))
    assert cells["r2"] == 1
    assert pd.isna(cells["r3"])
    assert "Team (archived) (source)" not in wide.columns
    path = export_study(coded, tmp_path / "a.xlsx", layout="wide")
    info = {r[0]: r[1] for r in load_workbook(path)["provenance"].iter_rows(values_only=True)}
    assert info["archived codes"].startswith("Team (removed by a codebook revision")
    # A coder with no decision of it exports no archived column.
    assert "Team (archived)" not in wide_frame(coded, coder="bob").columns


@pytest.fixture(scope="module")
def delegated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, truth = simulated_study(tmp_path_factory.mktemp("d") / "d.codecurve", n=2000, seed=11)
    with Study.open(path) as study:
        study.audit.draw(per_code=400, seed=5)
        code_audit_blind(study, truth)
        study.decisions.set_memo("r7", "a memo on r7", coder="ana")
        study.delegations.apply(plan_delegation(study, max_error=0.05, level=0.95), coder="ana")
    return path


def test_provenance_quotes_each_codes_guarantee(delegated: Path, tmp_path: Path) -> None:
    with Study.open(delegated, read_only=True) as study:
        sentences = guarantee_sentences(study)
        assert set(sentences) == {"workload", "pay"}
        xlsx = export_study(study, tmp_path / "d.xlsx", layout="wide")
        parquet = export_study(study, tmp_path / "d.parquet")
        project = project_from_study(study)
    info = {r[0]: r[1] for r in load_workbook(xlsx)["provenance"].iter_rows(values_only=True)}
    assert info["delegation guarantee (Pay)"] == sentences["pay"]
    assert info["delegation guarantee (Workload)"] == sentences["workload"]
    assert sentences["pay"].startswith("With 95% confidence")
    meta = pq.read_schema(parquet).metadata[b"codecurve.provenance"]
    assert json.loads(meta)["delegation guarantee (Pay)"] == sentences["pay"]
    note = next(n for n in project.notes if n.name == "codecurve provenance")
    assert sentences["pay"] in note.text
    assert sentences["workload"] in note.text


def test_csv_and_jsonl_carry_their_provenance_in_a_file_beside_them(
    delegated: Path, tmp_path: Path
) -> None:
    with Study.open(delegated, read_only=True) as study:
        sentences = guarantee_sentences(study)
        csv_path = export_study(study, tmp_path / "d.csv", layout="wide")
        jsonl_path = export_study(study, tmp_path / "d.jsonl")
        export_study(study, tmp_path / "d.xlsx")
    described = json.loads((tmp_path / "d.csv-metadata.json").read_text(encoding="utf-8"))
    # A CSV on the Web table description: its table and its columns, in order.
    assert described["@context"] == "http://www.w3.org/ns/csvw"
    assert described["url"] == "d.csv"
    header = list(pd.read_csv(csv_path, nrows=0, encoding="utf-8-sig").columns)
    assert [c["titles"] for c in described["tableSchema"]["columns"]] == header
    info = described["dc:provenance"]
    assert info["delegation guarantee (Pay)"] == sentences["pay"]
    assert info["layout"] == "wide"
    assert "ana" in info["coders"]
    assert described["dc:created"] == info["exported at"]
    lines = json.loads((tmp_path / "d.jsonl-metadata.json").read_text(encoding="utf-8"))
    assert lines["url"] == jsonl_path.name
    assert "@context" not in lines
    assert lines["dc:provenance"]["layout"] == "long"
    assert not (tmp_path / "d.xlsx-metadata.json").exists()  # the workbook has a sheet


def test_an_export_whose_metadata_cannot_be_written_writes_nothing(
    coded: Study, tmp_path: Path
) -> None:
    (tmp_path / "d.csv-metadata.json").mkdir()
    with pytest.raises(StudyError, match=r"d\.csv-metadata\.json: is a directory"):
        export_study(coded, tmp_path / "d.csv")
    assert not (tmp_path / "d.csv").exists()
    # Into a device there is no file beside to write: none is tried.
    export_study(coded, "/dev/null", format="csv")
    assert not Path("/dev/null-metadata.json").exists()


def test_memos_travel_through_a_project_as_notes_on_their_source(
    coded: Study, tmp_path: Path
) -> None:
    project = project_from_study(coded, all_coders=True)
    sources = {s.name: s.guid for s in project.sources}
    memo_notes = [n for n in project.notes if n.text == "talks about the team =1+1"]
    assert len(memo_notes) == 1
    assert memo_notes[0].targets == (sources["r2"],)
    path = write_qdpx(project, tmp_path / "m.qdpx")
    inputs = study_inputs_from_project(read_project(path)[0])
    assert ("r2", None, "ann", "talks about the team =1+1") in {
        (n.response_id, n.code_id, n.coder, n.text) for n in inputs.notes
    }
    made, report = create_from_project(tmp_path / "made.codecurve", path)
    with made:
        assert made.decisions.memo("r2", coder="ann") == "talks about the team =1+1"
        assert made.decisions.memo("r3", coder="bob") == "bob's view"
        assert made.decisions.memo("r1") is None
    assert report.notes == 2
    assert not any("left out" in m for m in report.messages)


def test_a_project_export_skips_archived_codes(
    coded: Study, codebook: Codebook, tmp_path: Path
) -> None:
    coded.versions.revise(without_team(codebook))
    project = project_from_study(coded, all_coders=True)
    names = {c.name for c, _ in project.all_codes()}
    assert "Team" not in names
    note = next(n for n in project.notes if n.name == "codecurve provenance")
    assert "archived codes: Team" in note.text
    write_qdpx(project, tmp_path / "p.qdpx")
