"""Taguette's own codebook import reads the CSV written for it, with descriptions and
the hierarchy as paths; it refuses a .qdc and the codecurve CSV's definitions it ignores
(which docs/codebooks.md says)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from taguette.import_codebook import InvalidCodebook, list_tags

from codebooks import Code, Codebook, CodebookError, save_codebook
from codebooks.tabular import csv_bytes
from codebooks.taguette import taguette_csv_bytes

BOOK = Codebook(
    name="NHS",
    codes=(
        Code("experience", "Experience", codable=False),
        Code(
            "timeliness",
            "Timeliness",
            definition="Waiting, delays.",
            inclusion="queues",
            examples=("waited 3 hours", "=seen at once"),
            parent="experience",
        ),
        Code("staff", "Staff manner & personal attributes", definition="Kind, rude, caring."),
    ),
)


def test_taguette_reads_our_csv_with_descriptions_and_paths() -> None:
    tags = list_tags(io.BytesIO(taguette_csv_bytes(BOOK)))
    assert [t["path"] for t in tags] == [
        "Experience",
        "Experience.Timeliness",
        "Staff manner & personal attributes",
    ]
    timeliness = tags[1]["description"]
    assert timeliness.startswith("Waiting, delays.")
    assert "Include: queues" in timeliness
    assert "Example: =seen at once" in timeliness  # no spreadsheet guard for Taguette


def test_what_taguette_makes_of_the_other_files(tmp_path: Path) -> None:
    # codecurve's own CSV: names, but its "definition" column is not Taguette's.
    tags = list_tags(io.BytesIO(csv_bytes(BOOK)))
    assert [t["description"] for t in tags] == ["", "", ""]
    with pytest.raises(InvalidCodebook):
        list_tags(io.BytesIO(Path(save_codebook(BOOK, tmp_path / "c.qdc")).read_bytes()))


def test_the_flavour_by_name_and_its_refusals(tmp_path: Path) -> None:
    path = save_codebook(BOOK, tmp_path / "t.csv", flavour="taguette")
    assert path.read_bytes() == taguette_csv_bytes(BOOK)
    with pytest.raises(CodebookError, match=r"no 'taguette' layout of \.qdc"):
        save_codebook(BOOK, tmp_path / "t.qdc", flavour="taguette")
    assert not (tmp_path / "t.qdc").exists()
    deep = Codebook(name="d", codes=(Code("a", "x" * 120), Code("b", "y" * 90, parent="a")))
    with pytest.raises(CodebookError, match="longer than the 200 characters"):
        taguette_csv_bytes(deep)
