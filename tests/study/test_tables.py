"""Reading table files: only an empty cell is empty, empty rows, early refusal of binary files."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pandas as pd
import pytest
from openpyxl import Workbook
from openpyxl.styles import Font

from study import ResponsesError, read_responses
from study.intake.tables import SNIFF_BYTES, read_table

#: Texts that pandas takes for missing values by default, and two spreadsheet error texts.
NA_TEXTS = [
    "None",
    "N/A",
    "NA",
    "null",
    "nan",
    "#N/A",
    "#VALUE!",
    "NULL",
    "NaN",
    "n/a",
    "<NA>",
    "#NA",
    "-nan",
    "1.#QNAN",
    "#N/A N/A",
    "-1.#IND",
]
FORMATS = [".csv", ".tsv", ".xlsx", ".jsonl", ".json", ".parquet"]


def write_rows(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    """Write rows in the format of ``path``'s suffix, each cell exactly as given."""
    suffix = path.suffix
    if suffix in (".csv", ".tsv"):
        sep = "," if suffix == ".csv" else "\t"
        lines = [sep.join(header)] + [
            sep.join("" if v is None else str(v) for v in r) for r in rows
        ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif suffix == ".xlsx":
        book = Workbook()
        sheet = book.active
        assert sheet is not None
        sheet.append(header)
        for row in rows:
            sheet.append(row)
        book.save(path)
    elif suffix == ".jsonl":
        records = [dict(zip(header, r, strict=True)) for r in rows]
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    elif suffix == ".json":
        records = [dict(zip(header, r, strict=True)) for r in rows]
        path.write_text(json.dumps(records), encoding="utf-8")
    else:
        pd.DataFrame(rows, columns=header, dtype=object).to_parquet(path)
    return path


# --- only an empty cell is empty ------------------------------------------------------------


@pytest.mark.parametrize("suffix", FORMATS)
def test_na_like_texts_are_texts_in_every_format(tmp_path: Path, suffix: str) -> None:
    rows: list[list[object]] = [[f"r{i}", text, "NA"] for i, text in enumerate(NA_TEXTS)]
    path = write_rows(tmp_path / f"na{suffix}", ["id", "text", "region"], rows)
    table = read_responses(path)
    assert len(table) == len(NA_TEXTS)
    assert table.texts == NA_TEXTS
    assert table.skipped_empty == 0
    assert [r.attrs["region"] for r in table] == ["NA"] * len(NA_TEXTS)


def test_na_like_texts_in_a_text_file(tmp_path: Path) -> None:
    path = tmp_path / "na.txt"
    path.write_text("\n".join(NA_TEXTS) + "\n", encoding="utf-8")
    assert read_responses(path).texts == NA_TEXTS


def test_xlsx_error_cells_and_na_ids_are_kept(tmp_path: Path) -> None:
    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["id", "text", "score"])
    sheet.append(["NA", "#N/A", 3])  # openpyxl stores "#N/A" as an error cell
    sheet.append(["None", "fine", None])
    sheet.append([12.0, "a float id", 2.5])
    book.save(tmp_path / "e.xlsx")
    assert sheet["B2"].data_type == "e"
    table = read_responses(tmp_path / "e.xlsx")
    assert table.ids == ["NA", "None", "12"]
    assert table.texts == ["#N/A", "fine", "a float id"]
    assert [r.attrs["score"] for r in table] == [3, None, 2.5]


def test_only_a_truly_empty_cell_is_empty(tmp_path: Path) -> None:
    path = write_rows(
        tmp_path / "e.xlsx", ["id", "text", "x"], [["a", "hello", None], ["b", None, "NA"]]
    )
    table = read_responses(path)
    assert table.ids == ["a"]
    assert table.skipped_empty == 1
    assert table.responses[0].attrs == {"x": None}


# --- empty rows --------------------------------------------------------------------------------


def test_empty_csv_rows_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_text("id,text\na,x\n,\n\nb,y\n   ,  \nc,z\n\n\n", encoding="utf-8")
    table = read_responses(path)
    assert table.ids == ["a", "b", "c"]
    assert table.skipped_empty_rows == 3  # the two after the last row are no rows
    assert table.skipped_empty == 0
    assert "skipped 3 empty row(s) (rows 3, 4, 6)" in table.messages


def test_row_numbers_count_empty_and_leading_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,text\n\na,1\na,2\n", encoding="utf-8")
    with pytest.raises(ResponsesError, match=r"'a' at rows 3, 4"):
        read_responses(path)
    path.write_text("\n  \nid,text\na,1\n,2\n", encoding="utf-8")
    with pytest.raises(ResponsesError, match=r"\(row 5\).*blank id"):
        read_responses(path)


def test_a_row_with_text_but_no_id_is_still_an_error(tmp_path: Path) -> None:
    path = tmp_path / "b.csv"
    path.write_text("id,text\na,1\n,\n,hello\n", encoding="utf-8")
    with pytest.raises(ResponsesError, match=r"\(row 4\).*blank id"):
        read_responses(path)


def test_empty_xlsx_rows_are_skipped_and_counted(tmp_path: Path) -> None:
    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["id", "text"])
    sheet.append(["a", "x"])
    sheet.append([None, None])
    sheet.append(["  ", ""])
    sheet.append(["b", "y"])
    sheet.cell(row=40, column=3).font = Font(bold=True)  # formatted, empty: no row
    book.save(tmp_path / "e.xlsx")
    table = read_responses(tmp_path / "e.xlsx")
    assert table.ids == ["a", "b"]
    assert table.skipped_empty_rows == 2
    assert "skipped 2 empty row(s) (rows 3, 4)" in table.messages


def test_empty_records_are_empty_rows(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text(
        '{"id": "a", "text": "x"}\n{}\n{"id": null, "text": " "}\n{"id": "b", "text": "y"}\n'
    )
    table = read_responses(path)
    assert table.ids == ["a", "b"]
    assert "skipped 2 empty row(s) (lines 2, 3)" in table.messages


def test_only_empty_rows_is_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_text("id,text\n,\n\n", encoding="utf-8")
    with pytest.raises(ResponsesError, match="no rows"):
        read_responses(path)


def test_read_table_keeps_the_numbers_of_the_rows_left(tmp_path: Path) -> None:
    path = tmp_path / "e.tsv"
    path.write_text("id\ttext\n\t\na\tx\n\t\nb\ty\n", encoding="utf-8")
    table = read_table(path)
    assert table.numbers == (3, 5)
    assert table.empty_rows == (2, 4)
    assert table.place == "row"


# --- binary files are refused from their first bytes ----------------------------------------------

GIB = 1 << 30


def _sparse(path: Path, head: bytes = b"", size: int = GIB) -> Path:
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(size)  # a hole: NUL bytes that take no disk
    return path


@pytest.mark.parametrize(
    ("name", "head", "message"),
    [
        ("nul.csv", b"", "NUL characters"),
        ("nul.txt", b"", "NUL characters"),
        ("nul.jsonl", b"", "NUL characters"),
        ("nul.json", b"", "NUL characters"),
        ("nul.xlsx", b"", "not an XLSX workbook"),
        ("nul.parquet", b"", "not a Parquet file"),
        ("tail.csv", b"id,text\na,hello\n", "NUL characters"),  # text first, NULs after
        ("jpeg.csv", b"\xff\xd8\xff\xe0 JFIF", r"not UTF-8 text \(byte 0, line 1\)"),
    ],
)
def test_a_large_binary_file_is_refused_without_reading_it(
    tmp_path: Path, name: str, head: bytes, message: str
) -> None:
    path = _sparse(tmp_path / name, head)
    assert path.stat().st_size == GIB
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ResponsesError, match=message) as info:
            read_responses(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.perf_counter() - started
    assert str(info.value).startswith(str(path))
    assert peak < 8 * SNIFF_BYTES, f"{peak:,} bytes allocated"
    assert elapsed < 5, f"{elapsed:.1f} s"


def test_utf16_with_a_bom_is_not_taken_for_binary(tmp_path: Path) -> None:
    # UTF-16 text is half NUL bytes, at both ends of the file.
    text = "id,text\n" + "".join(f"r{i},response number {i}\n" for i in range(20_000))
    path = tmp_path / "u16.csv"
    path.write_bytes(text.encode("utf-16"))
    assert path.stat().st_size > 2 * SNIFF_BYTES
    assert len(read_responses(path)) == 20_000
    path.write_bytes(text.encode("utf-16-le"))
    assert len(read_responses(path, encoding="utf-16-le")) == 20_000
    with pytest.raises(ResponsesError, match="NUL"):
        read_responses(path)


def test_a_multibyte_character_across_the_sniffed_bytes_is_fine(tmp_path: Path) -> None:
    filler = "x" * (SNIFF_BYTES - len("id,text\na,") - 1)
    path = tmp_path / "m.csv"
    path.write_text(f"id,text\na,{filler}é and more\n", encoding="utf-8")
    assert read_responses(path).texts == [f"{filler}é and more"]


@pytest.mark.parametrize("encoding", ["hex", "rot13", "base64", "zlib", "uu", "klingon"])
def test_a_codec_that_is_no_text_encoding_is_unknown(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "e.csv"
    path.write_text("id,text\na,b\n", encoding="utf-8")
    with pytest.raises(ResponsesError, match=f"unknown encoding '{encoding}'"):
        read_responses(path, encoding=encoding)


def test_a_decoder_failing_in_its_own_way_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_text("id,text\na,b\n", encoding="utf-8")
    with pytest.raises(ResponsesError, match="not punycode text"):
        read_responses(path, encoding="punycode")


def test_empty_rows_above_the_header_are_no_rows(tmp_path: Path) -> None:
    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append([None, None])
    sheet.append(["  ", None])
    sheet.append(["id", "text"])
    sheet.append(["a", "x"])
    sheet.append([None, "no id"])
    book.save(tmp_path / "h.xlsx")
    with pytest.raises(ResponsesError, match=r"\(row 5\).*blank id"):
        read_responses(tmp_path / "h.xlsx")
    sheet.delete_rows(5)
    book.save(tmp_path / "h.xlsx")
    table = read_table(tmp_path / "h.xlsx")
    assert (table.numbers, table.empty_rows) == ((4,), ())
    sheet.delete_rows(3, 2)
    book.save(tmp_path / "h.xlsx")
    with pytest.raises(ResponsesError, match="the sheet is empty"):
        read_responses(tmp_path / "h.xlsx")


def test_a_header_below_blank_lines_is_named_by_its_row(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("\n\nid,id,text\n1,2,a\n", encoding="utf-8")
    with pytest.raises(ResponsesError, match=r"\(row 3\).*'id' twice"):
        read_responses(path)
