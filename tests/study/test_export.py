"""Exports: layouts, final decisions, formula neutralisation, atomic writes, round trips."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from openpyxl import load_workbook

from scoring.score import ScoreConfig
from study import Study, StudyError
from study.exchange import export as export_module
from study.exchange.export import (
    LONG_COLUMNS,
    export_study,
    long_frame,
    neutralise,
    read_export,
    wide_frame,
)
from tests.factories import synthetic_score


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """A folder of its own for exports (the study lives in tmp_path)."""
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


@pytest.fixture
def coded(study: Study, config: ScoreConfig) -> Study:
    config_id = study.scores.ensure_config(config)
    pending = study.scores.pending_pairs(config_id)
    study.scores.store(config_id, [synthetic_score(p, config) for p in pending[:-2]])
    study.decisions.record("r1", "pay", 5, coder="ann", note="=SUM(A1:A9)")
    study.decisions.record("r2", "team", 0, coder="ann", source="model")
    study.decisions.record("r2", "pay", 2, coder="ann")
    study.decisions.record("r2", "pay", 4, coder="ann")  # changed: the current one counts
    return study


def test_long_layout_final_decisions(coded: Study) -> None:
    frame = long_frame(coded)
    assert list(frame.columns) == list(LONG_COLUMNS)
    assert len(frame) == coded.pair_count()
    assert list(frame["response_id"][:3]) == ["r10", "r10", "r10"]  # file order
    row = frame[(frame.response_id == "r1") & (frame.code_id == "pay")].iloc[0]
    assert (row["decision"], row["final"], row["final_from"], row["note"]) == (
        5,
        5,
        "human",
        "=SUM(A1:A9)",
    )
    assert bool(row["final_applies"])
    accepted = frame[(frame.response_id == "r2") & (frame.code_id == "team")].iloc[0]
    assert accepted["final_from"] == "accepted"
    assert accepted["final_label"] == "No"
    latest = frame[(frame.response_id == "r2") & (frame.code_id == "pay")].iloc[0]
    assert (latest["decision"], latest["coder"]) == (4, "ann")
    model_only = frame[frame.final_from == "model"].iloc[0]
    assert model_only["final"] == model_only["model_pick"]
    assert pd.isna(model_only["decision"])
    assert math.isclose(sum(model_only["probs"]), 1.0)
    unscored = frame[~frame.scored]
    assert len(unscored) == 2
    assert unscored["final"].isna().all()
    assert unscored["final_from"].isna().all()
    nothing = long_frame(coded, config_id=None)
    assert not nothing["scored"].any()


def test_wide_layout(coded: Study) -> None:
    frame = wide_frame(coded)
    assert list(frame["response_id"]) == ["r10", "r2", "r1", "r3"]
    assert frame.columns[:3].tolist() == ["response_id", "text", "codes_decided"]
    assert {"Workload", "Pay", "Team", "Pay (confidence)"} <= set(frame.columns)
    assert "Pressures" not in frame.columns  # a category, not codable
    # A 1-5 code keeps its value, with an applies column beside it; a yes/no code is 0/1.
    assert "Team (applies)" not in frame.columns
    r1 = frame[frame.response_id == "r1"].iloc[0]
    assert (r1["Pay"], r1["Pay (applies)"]) == (5, 1)
    assert r1["codes_decided"] == 1
    r2 = frame[frame.response_id == "r2"].iloc[0]
    assert (r2["Team"], r2["Pay"], r2["Pay (applies)"]) == (0, 4, 1)
    assert 0 < r2["Pay (confidence)"] <= 1


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "parquet", "jsonl"])
@pytest.mark.parametrize("layout", ["long", "wide"])
def test_round_trip(coded: Study, out: Path, fmt: str, layout: str) -> None:
    path = export_study(coded, out / f"out.{fmt}", layout=layout)
    back = read_export(path)
    expected = long_frame(coded) if layout == "long" else wide_frame(coded)
    assert len(back) == len(expected)
    assert [str(c) for c in back.columns] == [str(c) for c in expected.columns]
    assert list(back["response_id"].astype(str)) == list(expected["response_id"])
    if layout == "long":
        finals = back["final"].astype("Float64").fillna(-1).tolist()
        assert finals == expected["final"].astype("Float64").fillna(-1).tolist()
        probs = back["probs"].iloc[0]
        if isinstance(probs, str):
            probs = json.loads(probs)
        assert list(probs) == pytest.approx(expected["probs"].iloc[0], rel=1e-6)
    else:
        assert back["Pay"].astype("Float64").tolist() == expected["Pay"].astype("Float64").tolist()
        assert 5 in back["Pay"].tolist()  # the 1-5 value, not 0/1
    # No temporary file left; CSV and JSONL have their provenance beside them.
    beside = [f"out.{fmt}-metadata.json"] if fmt in ("csv", "jsonl") else []
    assert sorted(p.name for p in out.iterdir()) == sorted([f"out.{fmt}", *beside])


def test_formulas_neutralised_in_csv_only(coded: Study, out: Path) -> None:
    assert neutralise("=1+1") == "'=1+1"
    assert neutralise("+x") == "'+x"
    assert neutralise("@cmd") == "'@cmd"
    assert neutralise("\tx") == "'\tx"
    assert neutralise("-2") == "-2"  # a number is not a formula
    assert neutralise("-2+3") == "'-2+3"
    assert neutralise("plain") == "plain"
    csv_path = export_study(coded, out / "w.csv", layout="wide")
    text = csv_path.read_text(encoding="utf-8-sig")
    assert "'=HYPERLINK" in text
    assert '"=HYPERLINK' not in text
    long_csv = export_study(coded, out / "l.csv").read_text(encoding="utf-8-sig")
    assert "'=SUM(A1:A9)" in long_csv
    xlsx = export_study(coded, out / "w.xlsx", layout="wide")
    book = load_workbook(xlsx)
    sheet = book["data"]
    texts = [row[1] for row in sheet.iter_rows(values_only=True)]
    # An XLSX cell has a type: the text is stored as it is, as text, never as a formula.
    assert '=HYPERLINK("http://x") the pay is bad' in texts
    for row in sheet.iter_rows():
        for cell in row:
            assert cell.data_type != "f"  # no formula anywhere
    # JSONL and Parquet keep the text as it is
    back = read_export(export_study(coded, out / "w.jsonl", layout="wide"))
    assert back.loc[back.response_id == "r1", "text"].iloc[0].startswith("=HYPERLINK")


def test_xlsx_provenance_sheet(coded: Study, out: Path, config: ScoreConfig) -> None:
    path = export_study(coded, out / "p.xlsx")
    book = load_workbook(path)
    assert book.sheetnames == ["data", "provenance"]
    info = {row[0]: row[1] for row in book["provenance"].iter_rows(min_row=2, values_only=True)}
    assert info["model"] == config.model.name
    assert info["template"] == config.template_id
    assert info["context"] == config.context
    assert info["codebook"] == coded.codebook.name
    assert info["software"].startswith("codecurve ")
    assert info["scale"].startswith("1-5")
    assert "exported at" in info
    metadata = pq.read_schema(export_study(coded, out / "p.parquet")).metadata
    assert json.loads(metadata[b"codecurve.provenance"])["template"] == config.template_id


def test_failed_export_leaves_no_file(
    coded: Study, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = out / "out.csv"
    target.write_text("previous export")

    def broken(frame: pd.DataFrame, path: Path) -> None:
        path.write_text("half a fi")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export_module, "write_csv", broken)
    with pytest.raises(StudyError, match="No space left"):
        export_study(coded, target)
    assert target.read_text() == "previous export"
    assert [p.name for p in out.iterdir()] == ["out.csv"]
    with pytest.raises(StudyError, match="does not exist"):
        export_study(coded, out / "missing" / "x.csv")


def test_bad_format_and_layout(coded: Study, out: Path) -> None:
    with pytest.raises(StudyError, match="cannot tell the format"):
        export_study(coded, out / "x.txt")
    with pytest.raises(StudyError, match="unknown export format"):
        export_study(coded, out / "x.csv", format="docx")
    with pytest.raises(StudyError, match="unknown layout"):
        export_study(coded, out / "x.csv", layout="tall")
    assert list(out.iterdir()) == []


def test_export_from_a_read_only_handle_while_writer_open(coded: Study, out: Path) -> None:
    with Study.open(coded.path, read_only=True) as reader:
        frame = read_export(export_study(reader, out / "r.parquet"))
    assert (frame["decision"].notna()).sum() == 3


def test_export_codebook_names_the_real_file(coded: Study, out: Path) -> None:
    from codebooks.errors import CodebookError
    from codebooks.readers import load_codebook
    from study.exchange.export import export_codebook

    for suffix in (".yaml", ".json"):
        written = export_codebook(coded, out / f"book{suffix}")
        assert written == out / f"book{suffix}"
        assert [c.id for c in load_codebook(written).codes] == [c.id for c in coded.codebook.codes]
    with pytest.raises(CodebookError, match="unknown codebook format") as bad:
        export_codebook(coded, out / "book.txt")
    assert bad.value.path == out / "book.txt"
    with pytest.raises(CodebookError, match="cannot write") as missing:
        export_codebook(coded, out / "no-such-folder" / "book.yaml")
    assert missing.value.path == out / "no-such-folder" / "book.yaml"
    assert sorted(p.name for p in out.iterdir()) == ["book.json", "book.yaml"]


def test_wide_cells_nobody_decided_are_empty_unless_filled(coded: Study) -> None:
    plain = wide_frame(coded)
    r3 = plain[plain.response_id == "r3"].iloc[0]
    assert r3["codes_decided"] == 0
    assert pd.isna(r3["Pay"])  # the model scored it; nobody decided: empty, not 0/1
    assert not pd.isna(r3["Pay (confidence)"])
    assert "Pay (source)" not in plain.columns
    filled = wide_frame(coded, fill="model")
    r3 = filled[filled.response_id == "r3"].iloc[0]
    assert r3["Pay"] in range(1, 6)  # the model's pick, a point of the scale
    assert r3["Pay (applies)"] == int(r3["Pay"] >= 4)
    assert r3["Pay (source)"] == "model"
    r2 = filled[filled.response_id == "r2"].iloc[0]
    assert (r2["Pay (source)"], r2["Team (source)"]) == ("human", "accepted")
    # A decided cell is the same either way.
    assert plain[plain.response_id == "r2"].iloc[0]["Pay"] == r2["Pay"]
    with pytest.raises(StudyError, match="fill must be one of none, model"):
        wide_frame(coded, fill="zero")


def test_delegated_decisions_say_so(coded: Study, out: Path) -> None:
    import sqlite3

    from study.exchange.frames import source_counts

    before = source_counts(coded)
    with coded.snapshot() as conn:
        rid, cid = conn.execute(
            "SELECT s.rid, s.cid FROM scores s LEFT JOIN annotations a "
            "ON a.rid = s.rid AND a.cid = s.cid WHERE a.rid IS NULL LIMIT 1"
        ).fetchone()
        event = conn.execute("SELECT MAX(id) FROM events").fetchone()[0]
    # What a certified delegation writes (schema 2): a decision of source 'delegated'.
    conn = sqlite3.connect(coded.path)
    conn.execute(
        "INSERT INTO annotations (rid, cid, coder, value, source, config_id, event_id, "
        "decided_at) VALUES (?, ?, 'ann', 5, 'delegated', NULL, ?, '2099-01-01')",
        (rid, cid, event),
    )
    conn.commit()
    conn.close()
    with Study.open(coded.path, read_only=True) as reader:
        frame = long_frame(reader)
        row = frame[frame.decision_source == "delegated"].iloc[0]
        assert row["final_from"] == "delegated"
        counts = source_counts(reader)
        path = export_study(reader, out / "d.xlsx", layout="wide")
    assert counts["delegated"] == before["delegated"] + 1
    assert counts["model"] == before["model"] - 1
    assert sum(counts.values()) == coded.pair_count()
    book = load_workbook(path)
    info = {r[0]: r[1] for r in book["provenance"].iter_rows(min_row=2, values_only=True)}
    assert "delegated 1" in info["values by source"]
    assert info["values by source"].startswith("coder 2, accepted 1, delegated 1, model ")
