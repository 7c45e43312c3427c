from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pandas as pd
import pytest

from codebooks import (
    BINARY,
    LIKERT_9,
    SAMPLES,
    Code,
    Codebook,
    CodebookError,
    load_codebook,
    sample_paths,
    save_codebook,
)
from codebooks.tabular import csv_bytes

SPREADSHEET = (
    "Code;Description;Inclusion criteria;Exclude;Example;Parent code;Colour;Codable\r\n"
    "Conditions;Terms of the job;;;;;;no\r\n"
    'Workload;How much work;"overtime; ""deadlines""";stress alone;'
    '"Too much work; Two people short";conditions;#D95F02;\r\n'
    ";;;;;;;\r\n"
    'Pay;Salary and benefits;;;"Paid late\nNo rise; not since 2019";Conditions;;yes\r\n'
)


def write(tmp_path: Path, text: str | bytes, name: str = "codes.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8-sig") if isinstance(text, str) else text)
    return path


def test_a_spreadsheet_export_reads(tmp_path: Path) -> None:
    codebook = load_codebook(write(tmp_path, SPREADSHEET, "Working life.csv"))
    assert codebook.name == "Working life"
    conditions, workload, pay = codebook.codes
    assert not conditions.codable
    assert workload.inclusion == 'overtime; "deadlines"'
    assert workload.examples == ("Too much work", "Two people short")
    assert workload.parent == "conditions"
    assert workload.color == "#D95F02"
    assert pay.parent == "conditions"  # by name, any case
    assert pay.examples == ("Paid late", "No rise; not since 2019")  # line breaks win
    assert pay.codable


def test_plain_comma_csv_with_ids_and_scales(tmp_path: Path) -> None:
    text = (
        "id,name,definition,inclusion,exclusion,examples,parent,scale\n"
        "c1,Alpha,First,,,,,binary\n"
        "c2,Beta,Second,,,,c1,1-9\n"
    )
    codebook = load_codebook(write(tmp_path, text))
    assert [c.id for c in codebook.codes] == ["c1", "c2"]
    assert codebook.code("c2").parent == "c1"
    assert codebook.scale_for(codebook.code("c1")) is BINARY
    assert codebook.scale_for(codebook.code("c2")) is LIKERT_9


def test_one_scale_for_every_code_is_the_codebooks(tmp_path: Path) -> None:
    codebook = load_codebook(write(tmp_path, "name,scale\nA,binary\nB,binary\n"))
    assert codebook.scale is BINARY
    assert all(c.scale is None for c in codebook.codes)


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("name,defintion\nA,x\n", "row 1, column 2", "unknown column 'defintion'"),
        ("definition\nx\n", "row 1", "needs a 'name' column"),
        ("name,Name\nA,B\n", "row 1, column 2", "appears twice"),
        ("name\nA\n\nB,extra\n", "row 4", "2 cells but the header names 1"),
        ("name,codable\nA,perhaps\n", "row 2", "true or false, not 'perhaps'"),
        ("name,color\nA,red\n", "row 2", "colour 'red'"),
        ("name,parent\nA,\nB,Gamma\n", "row 3", "unknown parent 'Gamma'"),
        ("name\nA\na\n", "row 3", "used twice"),
        ("name,scale\nA,1-7\n", "row 2.scale", "unknown scale '1-7'"),
        ("name,definition\n,only a definition\n", "row 2", "needs a 'name'"),
        ('name\n"A\n', "line 2", "malformed CSV"),
    ],
)
def test_csv_errors_name_the_row(tmp_path: Path, text: str, where: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(CodebookError) as info:
        load_codebook(path)
    assert info.value.where == where
    assert message in info.value.message
    assert str(path) in str(info.value)


@pytest.mark.parametrize("text", ["", "\n\n", "name,definition\n", "name\n,\n"])
def test_empty_tables(tmp_path: Path, text: str) -> None:
    with pytest.raises(CodebookError, match=r"empty|no codes"):
        load_codebook(write(tmp_path, text))


def test_unnamed_empty_columns_are_ignored(tmp_path: Path) -> None:
    codebook = load_codebook(write(tmp_path, "name,,definition,\nA,,d,\n"))
    assert codebook.codes[0].definition == "d"


@pytest.mark.parametrize("name", sorted(set(SAMPLES) - {"causal_scaled"}))
def test_csv_round_trip_keeps_the_codes(tmp_path: Path, name: str) -> None:
    original = load_codebook(sample_paths(name)[1])
    path = save_codebook(original, tmp_path / f"{name}.csv")
    again = load_codebook(path)
    assert again.codes == original.codes
    assert again.scale == original.scale
    assert again.name == name  # a table has no place for the codebook's own name


def test_csv_round_trip_with_ids_mixed_scales_and_awkward_text(tmp_path: Path) -> None:
    original = Codebook(
        name="awkward",
        codes=(
            Code("p", "Pay", codable=False),
            Code("x", "=SUM(A1)", definition="+1 is good", parent="p", scale=BINARY),
            Code(
                "pay",  # a name elsewhere... and an id here: parents must go by id
                "-dash",
                definition="'=quoted'",
                examples=("a; b", "@c"),
                parent="x",
                color="#abc",
            ),
        ),
    )
    again = load_codebook(save_codebook(original, tmp_path / "awkward.csv"))
    assert [c.id for c in again.codes] == ["p", "x", "pay"]
    for before, after in zip(original.codes, again.codes, strict=True):
        assert (after.name, after.definition, after.examples, after.parent, after.color) == (
            before.name,
            before.definition,
            before.examples,
            before.parent,
            before.color,
        )
        assert again.scale_for(after) == original.scale_for(before)


def test_written_csv_is_safe_for_spreadsheets_and_readable_by_pandas() -> None:
    codebook = Codebook(
        name="f",
        codes=(Code("hyperlink-x", "=HYPERLINK(x)", definition="@SUM", examples=("-1",)),),
    )
    data = csv_bytes(codebook)
    assert data.startswith(b"\xef\xbb\xbf")  # spreadsheets need the mark to see UTF-8
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))
    assert rows[0]["name"] == "'=HYPERLINK(x)"
    assert rows[0]["definition"] == "'@SUM"
    assert rows[0]["examples"] == "'-1"
    frame = pd.read_csv(io.BytesIO(data), encoding="utf-8-sig")
    assert list(frame.columns) == [
        "name",
        "definition",
        "inclusion",
        "exclusion",
        "examples",
        "parent",
    ]


def test_custom_scales_cannot_be_written_as_csv() -> None:
    scaled = load_codebook(sample_paths("causal_scaled")[1])
    with pytest.raises(CodebookError, match="save it as YAML or JSON"):
        csv_bytes(scaled)


def test_group_column_and_extra_columns_read_a_spreadsheet_codebook(tmp_path: Path) -> None:
    """The NHS framework's codebook: category, major group, and a count column."""
    from codebooks.readers import load_codebook

    path = tmp_path / "framework.csv"
    path.write_text(
        "category,major_category_v7,count_in_full_v6_file\n"
        "Not assigned,(not in v7),360\n"
        "Organisation & efficiency,General,64\n"
        "Funding,General,31\n"
        "Staff manner,Staff,1418\n",
        encoding="utf-8",
    )
    codebook = load_codebook(path)
    names = [c.name for c in codebook.codable]
    assert names == ["Not assigned", "Organisation & efficiency", "Funding", "Staff manner"]
    groups = {c.name for c in codebook.codes if not c.codable}
    assert groups == {"(not in v7)", "General", "Staff"}
    funding = codebook.code("Funding")
    assert funding.parent is not None
    assert codebook.code(funding.parent).name == "General"


def test_the_shared_nhs_codebook_reads() -> None:
    from codebooks.readers import load_codebook

    path = Path(os.environ["CODECURVE_SHARED_DATA"]) / "nhs_patient_feedback_codebook.csv"
    if not path.exists():
        pytest.skip("the shared data folder is not beside this checkout")
    codebook = load_codebook(path)
    assert len(codebook.codable) == 50
