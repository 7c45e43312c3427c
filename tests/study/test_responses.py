"""Reading responses: formats, detection, documented behaviours, and only ResponsesError."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codebooks.errors import InputError, Remedy, remedies_of
from study import ResponsesError, read_responses
from study.intake.columns import NAME_TEXT
from study.intake.responses import LONG_TEXT_CHARS

NHS = Path(os.environ["CODECURVE_SHARED_DATA"]) / "nhs_patient_feedback.csv"


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


FRAME = pd.DataFrame(
    {
        "respondent": ["007", "12", "3"],
        "age": [31, 45, 22],
        "comment": ["The staff were kind.", "Long wait, cold food.", "Fine"],
    }
)


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".xlsx", ".jsonl", ".json", ".parquet"])
def test_every_format_reads_the_same(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"r{suffix}"
    frame = FRAME.copy()
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".tsv":
        frame.to_csv(path, index=False, sep="\t")
    elif suffix == ".xlsx":
        frame.to_excel(path, index=False)
    elif suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    elif suffix == ".json":
        frame.to_json(path, orient="records")
    else:
        frame.to_parquet(path)
    table = read_responses(path)
    assert table.id_column == "respondent"
    assert table.text_column == "comment"
    assert table.attribute_columns == ("age",)
    assert table.ids == ["007", "12", "3"]
    assert table.texts[1] == "Long wait, cold food."
    assert str(table.responses[0].attrs["age"]) == "31"


def test_nhs_sample_detects_columns() -> None:
    table = read_responses(NHS)
    assert len(table) == 500
    assert (table.id_column, table.text_column) == ("id", "text")
    assert "label" in table.attribute_columns
    assert all(isinstance(i, str) for i in table.ids)


def test_txt_one_response_per_line(tmp_path: Path) -> None:
    table = read_responses(write(tmp_path, "r.txt", "first\n\nthird line\n"))
    assert table.ids == ["1", "3"]
    assert table.skipped_empty == 1
    assert table.id_column is None


def test_columns_by_flag_and_case(tmp_path: Path) -> None:
    path = write(tmp_path, "r.csv", "Key,Body,Other\nk1,hello there,x\nk2,general kenobi,y\n")
    table = read_responses(path, id_column="key", text_column="Body")
    assert table.ids == ["k1", "k2"]
    with pytest.raises(ResponsesError, match=r"no text column 'Bodyy'.*did you mean 'Body'"):
        read_responses(path, text_column="Bodyy")


def test_longest_column_is_the_text_and_ids_generated(tmp_path: Path) -> None:
    path = write(
        tmp_path, "r.csv", "n,blurb,tag\n1,a much longer free text,x\n2,another long one,y\n"
    )
    table = read_responses(path)
    assert table.text_column == "blurb"
    assert table.ids == ["2", "3"]  # no id column: spreadsheet row numbers
    assert any("row numbers" in m for m in table.messages)
    guessed = next(m for m in table.messages if "longest texts" in m)
    assert remedies_of(guessed) == (NAME_TEXT,)


def test_empty_texts_skipped_and_counted(tmp_path: Path) -> None:
    path = write(tmp_path, "r.csv", "id,text\na,hello\nb,\nc,   \nd,bye\n")
    table = read_responses(path)
    assert table.ids == ["a", "d"]
    assert table.skipped_empty == 2
    assert "skipped 2 response(s) with an empty text (rows 3, 4)" in table.messages


def test_duplicate_ids_name_rows(tmp_path: Path) -> None:
    path = write(tmp_path, "r.csv", "id,text\na,1\nb,2\na,3\nb,4\na,5\n")
    with pytest.raises(
        ResponsesError, match=r"duplicate ids.*'a' at rows 2, 4, 6; 'b' at rows 3, 5"
    ):
        read_responses(path)


def test_blank_id_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "r.csv", "id,text\na,1\n,2\n")
    with pytest.raises(ResponsesError, match=r"\(row 3\).*blank id"):
        read_responses(path)


def test_long_texts_kept_with_a_message(tmp_path: Path) -> None:
    long = "word " * (LONG_TEXT_CHARS // 4)
    table = read_responses(write(tmp_path, "r.csv", f"id,text\na,{long}\nb,short\n"))
    assert table.texts[0] == long
    assert any("truncated" in m for m in table.messages)


def test_encodings(tmp_path: Path) -> None:
    text = "id,text\n1,café au lait\n"
    assert read_responses(write(tmp_path, "bom.csv", b"\xef\xbb\xbf" + text.encode())).ids == ["1"]
    utf16 = write(tmp_path, "u16.csv", text.encode("utf-16"))
    assert read_responses(utf16).texts == ["café au lait"]
    cp = write(tmp_path, "cp.csv", text.encode("cp1252"))
    with pytest.raises(
        ResponsesError, match=r"not UTF-8 text \(byte 13, line 2\).*encoding"
    ) as bad:
        read_responses(cp)
    assert bad.value.remedies == (
        Remedy("retry", "read it in another encoding", {"encoding": "cp1252"}),
    )
    assert read_responses(cp, encoding="cp1252").texts == ["café au lait"]
    with pytest.raises(ResponsesError, match="unknown encoding"):
        read_responses(cp, encoding="klingon")


def test_ids_stay_strings_in_typed_formats(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    pd.DataFrame({"id": [1, 2, 3], "text": ["a", "b", "c"]}).to_parquet(path)
    assert read_responses(path).ids == ["1", "2", "3"]
    path = write(tmp_path, "r.jsonl", '{"id": 1.0, "text": "x"}\n{"id": 2, "text": "y"}\n')
    assert read_responses(path).ids == ["1", "2"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("r.csv", "", "empty"),
        ("r.csv", "id,text\n", "no responses"),
        ("r.csv", 'id,text\n1,"unclosed\n', "malformed CSV"),
        ("r.csv", "id,text\n1,a,extra,more\n2,b\n", "malformed CSV"),
        ("r.csv", "id,id,text\n1,2,a\n", "twice"),
        ("r.csv", ",text\n1,a\n", "no name"),
        ("r.jsonl", '{"id": 1, "text": "a"}\n[1, 2]\n', r"line 2\).*JSON object"),
        ("r.jsonl", '{"id": 1, "text": "a"\n', "malformed JSON"),
        ("r.json", '{"a": 1}', "array of objects"),
        ("r.xlsx", b"PK\x03\x04 not really", "XLSX"),
        ("r.xlsx", b"plain text", "not an XLSX"),
        ("r.parquet", b"PAR1 garbage", "Parquet"),
        ("r.doc", "x", "unknown file format"),
        ("r.csv", "id,text\n1,\n", "every text"),
        ("r.csv", "id,text\n1,a\x00b\n", "NUL"),
    ],
)
def test_bad_files_are_responses_errors(
    tmp_path: Path, name: str, content: str | bytes, message: str
) -> None:
    path = write(tmp_path, name, content)
    with pytest.raises(ResponsesError, match=message) as info:
        read_responses(path)
    assert str(path) in str(info.value)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ResponsesError, match="no such file"):
        read_responses(tmp_path / "nope.csv")
    folder = tmp_path / "d.csv"
    folder.mkdir()
    with pytest.raises(ResponsesError, match="directory"):
        read_responses(folder)


def test_xlsx_sheet_choice(tmp_path: Path) -> None:
    path = tmp_path / "r.xlsx"
    with pd.ExcelWriter(path) as writer:
        pd.DataFrame({"x": [1]}).to_excel(writer, sheet_name="notes", index=False)
        FRAME.to_excel(writer, sheet_name="data", index=False)
    assert read_responses(path, sheet="data").ids == ["007", "12", "3"]
    assert len(read_responses(path, sheet=1)) == 3
    with pytest.raises(ResponsesError, match="no sheet named 'nope'; sheets: notes, data"):
        read_responses(path, sheet="nope")


# --- property tests: nothing but ResponsesError escapes ----------------------------------------

# tmp_path is shared by the examples of one test; each example overwrites its file.
FIXTURE_CHECK = HealthCheck.function_scoped_fixture
SUFFIXES = [".csv", ".tsv", ".jsonl", ".json", ".txt", ".xlsx", ".parquet"]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=400), suffix=st.sampled_from(SUFFIXES))
def test_arbitrary_bytes_never_raise_anything_else(
    tmp_path: Path, data: bytes, suffix: str
) -> None:
    path = tmp_path / f"fuzz{suffix}"
    path.write_bytes(data)
    try:
        table = read_responses(path)
    except InputError as exc:
        error: InputError | None = exc
    else:
        error = None
    if error is not None:
        assert isinstance(error, ResponsesError)
        assert str(error).startswith(str(path))
    else:
        assert len(table) > 0
        assert all(isinstance(i, str) and i for i in table.ids)
        assert len(set(table.ids)) == len(table.ids)


cells = st.one_of(
    st.none(),
    st.text(max_size=12),
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
)
records = st.lists(
    st.dictionaries(st.sampled_from(["id", "text", "ID", "x", "", "comment"]), cells, max_size=4),
    max_size=6,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=records, fmt=st.sampled_from(["jsonl", "json", "csv"]))
def test_malformed_structures_give_responses_errors(
    tmp_path: Path, rows: list[dict[str, object]], fmt: str
) -> None:
    path = tmp_path / f"s.{fmt}"
    if fmt == "jsonl":
        path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    elif fmt == "json":
        path.write_text(json.dumps(rows), encoding="utf-8")
    else:
        buffer = io.StringIO()
        pd.DataFrame(rows).to_csv(buffer, index=False)
        path.write_text(buffer.getvalue(), encoding="utf-8")
    try:
        table = read_responses(path)
    except ResponsesError as exc:
        message: str | None = str(exc)
    else:
        message = None
    if message is not None:
        assert message.startswith(str(path))
    else:
        assert len(set(table.ids)) == len(table.ids)
        assert all(t.strip() for t in table.texts)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    texts=st.lists(
        # NUL is refused on purpose (a sign of UTF-16 without a BOM), see test_bad_files
        st.text(
            st.characters(exclude_characters="\x00", exclude_categories=["Cs"]),
            min_size=1,
            max_size=40,
        ),
        min_size=1,
        max_size=8,
    )
)
def test_csv_round_trip_of_any_text(tmp_path: Path, texts: list[str]) -> None:
    path = tmp_path / "rt.csv"
    frame = pd.DataFrame({"id": [f"r{i}" for i in range(len(texts))], "text": texts})
    frame.to_csv(path, index=False, quoting=csv.QUOTE_ALL)  # pandas leaves a lone CR unquoted
    try:
        table = read_responses(path)
    except ResponsesError:
        assert all(not t.strip() for t in texts)
        return
    kept = {f"r{i}": t for i, t in enumerate(texts) if t.strip()}
    # the CSV writer normalises line endings inside quoted cells; compare without them
    assert {r.id: r.text.replace("\r", "") for r in table} == {
        k: v.replace("\r", "") for k, v in kept.items()
    }


def test_names_others_import_stay_importable_from_responses() -> None:
    from study.intake import responses

    for name in (
        "ID_NAMES",
        "LONG_TEXT_CHARS",
        "SUFFIXES",
        "TEXT_NAMES",
        "Response",
        "ResponseTable",
        "decode_text",
        "read_frame",
        "read_responses",
    ):
        assert hasattr(responses, name), name
    assert set(responses.__all__) <= set(dir(responses))


def test_read_frame_keeps_its_shape(tmp_path: Path) -> None:
    from study.intake.responses import read_frame

    frame, numbers, place = read_frame(write(tmp_path, "f.csv", "id,text\na,x\n,\nb,y\n"))
    assert list(frame.columns) == ["id", "text"]
    assert (numbers, place) == ([2, 4], "row")
