"""SPSS and Stata files read back by pyreadstat, and wide files that keep what they hold:
a 1-5 code's value, every coder's memo, numbers as numbers, texts exactly."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pyreadstat
import pytest
from openpyxl import load_workbook

from codebooks.model import BINARY, LIKERT_5, Code, Codebook
from study import Response, ResponseTable, Study
from study.exchange._stats_files import variable_names
from study.exchange.export import export_study, read_export

LONG_NAME = "Staff manner & personal attributes of the nursing team"


@pytest.fixture
def study(tmp_path: Path) -> Iterator[Study]:
    book = Codebook(
        name="NHS",
        codes=(
            Code("staff", LONG_NAME, scale=BINARY),
            Code("time", "Timeliness", scale=BINARY),
            Code("overall", "Overall", scale=LIKERT_5),
        ),
        scale=BINARY,
    )
    responses = ResponseTable(
        (
            Response("1", "- more staff", {"fft_score_1to5": "4", "trust": "NHFT"}),
            Response("2", "+1 for the nurses", {"fft_score_1to5": "5", "trust": "007"}),
            Response("3", "=SUM(A1)", {"fft_score_1to5": "", "trust": "X"}),
        )
    )
    s = Study.create(tmp_path / "s.codecurve", responses=responses, codebook=book)
    for rid, who, code, value in [
        ("1", "ana", "overall", 3),
        ("1", "ben", "overall", 4),
        ("1", "consensus", "overall", 4),
        ("2", "ana", "overall", 5),
        ("2", "ben", "overall", 5),
        ("1", "ana", "staff", 1),
        ("1", "ben", "staff", 1),
        ("2", "ana", "time", 0),
        ("2", "ben", "time", 0),
    ]:
        s.decisions.record(rid, code, value, coder=who)
    s.decisions.set_memo("1", "ana's memo", coder="ana")
    s.decisions.set_memo("1", "ben's memo", coder="ben")
    s.decisions.set_memo("2", "- only ben", coder="ben")
    yield s
    s.close()


NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_spss_and_stata_files_read_back_with_names_labels_and_types(
    study: Study, tmp_path: Path, fmt: str
) -> None:
    path = export_study(study, tmp_path / f"coded.{fmt}", layout="wide", all_coders=True)
    reader = pyreadstat.read_sav if fmt == "sav" else pyreadstat.read_dta
    frame, meta = reader(str(path))
    names = meta.column_names
    assert len({n.casefold() for n in names}) == len(names)
    limit = 64 if fmt == "sav" else 32
    assert all(NAME.fullmatch(n) and len(n) <= limit for n in names), names
    labels = meta.column_names_to_labels
    by_label = {label: name for name, label in labels.items()}
    # The full code name and coder are the variable label; the name keeps the coder.
    assert f"{LONG_NAME} [ana]" in by_label
    assert by_label[f"{LONG_NAME} [ana]"].endswith("_ana")
    assert by_label[f"{LONG_NAME} [consensus]"].endswith("_consensus")
    overall = by_label["Overall"]
    assert meta.variable_value_labels[overall][1] == "1: does not apply at all"
    assert meta.variable_value_labels[overall][5] == "5: fully applies"
    assert meta.variable_value_labels[by_label["Timeliness"]] == {
        0: "No: the code does not apply",
        1: "Yes: the code applies",
    }
    # Numbers are numbers (the 1-5 values kept), texts are texts, exactly.
    values = frame.set_index(by_label["response_id"])
    assert pd.api.types.is_numeric_dtype(frame[by_label["fft_score_1to5"]])
    assert values.loc["1", by_label["fft_score_1to5"]] == 4
    assert values.loc["1", overall] == 4  # the consensus settled ana 3 / ben 4
    assert values.loc["1", by_label["Overall [ana]"]] == 3
    assert values.loc["1", by_label["Overall (applies)"]] == 1
    assert values.loc["2", by_label["trust"]] == "007"
    assert values.loc["3", by_label["text"]] == "=SUM(A1)"
    assert values.loc["2", by_label["text"]] == "+1 for the nurses"
    # The variables' codebook beside the file.
    metadata = json.loads(Path(f"{path}-metadata.json").read_text(encoding="utf-8"))
    listed = {v["name"]: v for v in metadata["variables"]}
    assert listed[overall]["label"] == "Overall"
    assert listed[overall]["values"]["5"] == "5: fully applies"
    assert metadata["dc:provenance"]["study"] == "s.codecurve"


def test_variable_names_are_valid_unique_and_keep_their_qualifiers() -> None:
    columns = [
        "text",
        "Text",
        "2nd wave",
        "with",
        "_all",
        "Ünïcôdé name",
        "Staff manner & personal attributes [ana]",
        "Staff manner & personal attributes [ben]",
        "Staff manner & personal attributes (confidence)",
        "Staff manner & personal attributes (applies)",
        "x [a coder with a very long name indeed, longer than the limit]",
        "",
    ]
    for fmt, limit in (("dta", 30), ("sav", 64)):
        names = variable_names(columns, fmt=fmt)
        got = list(names.values())
        assert len({n.casefold() for n in got}) == len(got)
        assert all(len(n) <= limit and NAME.fullmatch(n) for n in got), got
        assert names["2nd wave"] == "v2nd_wave"
        assert names["Ünïcôdé name"] == "unicode_name"
        assert names["Staff manner & personal attributes [ana]"].endswith("_ana")
        assert names["Staff manner & personal attributes (confidence)"].endswith("_confidence")
    assert variable_names(["with"], fmt="sav")["with"] != "with"
    assert variable_names(["_all"], fmt="dta")["_all"] != "_all"
    assert variable_names(["all"], fmt="sav")["all"] != "all"


@pytest.mark.parametrize("suffix", [".csv", ".xlsx", ".parquet", ".sav", ".dta"])
def test_every_wide_format_keeps_a_1_5_value_and_every_memo(
    study: Study, tmp_path: Path, suffix: str
) -> None:
    path = export_study(study, tmp_path / f"w{suffix}", layout="wide", coder="consensus")
    back = read_export(path).set_index("response_id")
    back.index = back.index.astype(str)
    assert back.loc["1", "Overall"] == 4
    assert back.loc["2", "Overall"] == 5
    assert back.loc["1", "Overall (applies)"] == 1
    # Both coders' memos on a response, and one coder's alone as it is.
    assert back.loc["1", "memo"] == "[ana] ana's memo\n\n[ben] ben's memo"
    expected = "'- only ben" if suffix == ".csv" else "- only ben"
    assert back.loc["2", "memo"] == expected


def test_xlsx_and_parquet_keep_numbers_numeric_and_texts_exact(
    study: Study, tmp_path: Path
) -> None:
    xlsx = export_study(study, tmp_path / "w.xlsx", layout="wide", coder="consensus")
    sheet = load_workbook(xlsx)["data"]
    header = [c.value for c in next(sheet.iter_rows(max_row=1))]
    rows = list(sheet.iter_rows(min_row=2))
    score = header.index("fft_score_1to5")
    assert [r[score].data_type for r in rows[:2]] == ["n", "n"]
    text = header.index("text")
    assert [r[text].value for r in rows] == ["- more staff", "+1 for the nurses", "=SUM(A1)"]
    assert all(r[text].data_type == "s" for r in rows)
    parquet = export_study(study, tmp_path / "w.parquet", layout="wide", coder="consensus")
    table = pq.read_table(parquet)
    assert str(table.schema.field("fft_score_1to5").type) == "int64"
    assert "string" in str(table.schema.field("trust").type)  # "007" is a code, not 7
    assert table.column("text").to_pylist()[1] == "+1 for the nurses"
    # The CSV guards what Excel would run, and nothing in the other formats.
    csv = export_study(study, tmp_path / "w.csv", layout="wide", coder="consensus")
    assert "'+1 for the nurses" in csv.read_text(encoding="utf-8-sig")


def test_an_unwritable_stats_file_is_one_message_and_no_file(study: Study, tmp_path: Path) -> None:
    from study.errors import StudyError

    with pytest.raises(StudyError, match="does not exist"):
        export_study(study, tmp_path / "missing" / "x.sav", coder="consensus")
    assert not list(tmp_path.glob("**/*.sav"))
