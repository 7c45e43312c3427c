"""Importing existing codes: both layouts, flags, unknowns, all-or-nothing, the NHS labels."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebooks.model import BINARY, Code, Codebook
from study import ResponsesError, ResponseTable, Study, StudyError, read_responses
from study.exchange._code_import import import_codes, read_codes
from study.exchange.export import FORMULA_STARTS as EXPORT_FORMULA_STARTS
from study.exchange.export import export_study, neutralise, wide_frame
from study.intake.cells import FORMULA_STARTS, unguard_formula
from tests.factories import NHS_RESPONSES, nhs_codebook


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_matrix_layout_values_labels_blanks(study: Study, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "m.csv",
        "id,Pay,team,comment\nr1,5,Yes,x\nr2,,no,y\nr10,3,,z\n",
    )
    report = import_codes(study, path, coder="ann")
    assert report.codes_file.layout == "matrix"
    assert report.added == 4
    assert any("'comment'" in m for m in report.codes_file.messages)
    assert study.decisions.decision("r1", "pay").value == 5  # type: ignore[union-attr]
    assert study.decisions.decision("r1", "team").value == 1  # type: ignore[union-attr]
    assert study.decisions.decision("r2", "team").value == 0  # type: ignore[union-attr]
    assert study.decisions.decision("r2", "pay") is None  # blank = not coded
    assert study.decisions.decision("r1", "pay").source == "human"  # type: ignore[union-attr]


def test_matrix_of_flags_on_a_likert_scale(study: Study, tmp_path: Path) -> None:
    path = write(tmp_path, "f.csv", "id,Pay,Workload\nr1,1,0\nr2,0,0\n")
    report = import_codes(study, path, coder="ann")
    assert any("0 or 1" in m for m in report.codes_file.messages)
    assert study.decisions.decision("r1", "pay").value == 5  # type: ignore[union-attr]
    assert study.decisions.decision("r1", "workload").value == 1  # type: ignore[union-attr]


def test_list_layout(study: Study, tmp_path: Path) -> None:
    path = write(tmp_path, "l.csv", "respondent,codes\nr1,Pay; team\nr2,\nr3,workload\n")
    report = import_codes(study, path, coder="ann")
    assert report.codes_file.layout == "list"
    assert report.codes_file.responses == 2
    assert any("left uncoded" in m for m in report.codes_file.messages)
    pay, team = study.decisions.decision("r1", "pay"), study.decisions.decision("r1", "team")
    assert (pay and pay.value, team and team.value) == (5, 1)
    assert study.decisions.decision("r1", "workload").value == 1  # type: ignore[union-attr]
    assert study.decisions.decision("r3", "team").value == 0  # type: ignore[union-attr]
    assert study.decisions.decision("r2", "pay") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,codes\nr1,Pay;Salary\nr2,Bonus\n", r"2 unknown code name\(s\): 'Salary' \(row 2\)"),
        ("id,codes\nr1,Pressures\n", "category"),
        ("id,Pay\nr1,7\n", r"\(row 2, column 'Pay'\): '7' is not a value of scale 1-5"),
        ("id,Pay\nr1,3\nr1,4\n", "appears twice"),
        ("id,Pay\nr1,3\nghost,4\n", r"1 response id\(s\) not in the study: 'ghost' \(row 3\)"),
        ("x,y\n1,2\n", "no response id column"),
        ("id,notes\nr1,hello\n", "no code columns"),
    ],
)
def test_bad_codes_files_store_nothing(
    study: Study, tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(ResponsesError, match=message):
        import_codes(study, path, coder="ann")
    assert study.decisions.count() == 0


def test_skip_unknown_imports_the_rest(study: Study, tmp_path: Path) -> None:
    path = write(tmp_path, "s.csv", "id,codes\nr1,Pay;Salary\nghost,Pay\n")
    report = import_codes(study, path, coder="ann", skip_unknown=True)
    assert len(report.codes_file.messages) >= 2
    assert study.decisions.decision("r1", "pay").value == 5  # type: ignore[union-attr]


def test_conflicts_refused_unless_replace(study: Study, tmp_path: Path) -> None:
    study.decisions.record("r1", "pay", 2, coder="ann")
    path = write(tmp_path, "c.csv", "id,Pay\nr1,4\nr2,3\n")
    with pytest.raises(StudyError, match="already decided differently"):
        import_codes(study, path, coder="ann")
    assert study.decisions.count() == 1
    assert import_codes(study, path, coder="bob").added == 2  # another coder: no conflict
    report = import_codes(study, path, coder="ann", replace=True)
    assert (report.added, report.changed) == (1, 1)


def test_nhs_labels_reproduced_in_the_wide_export(tmp_path: Path) -> None:
    codebook = nhs_codebook()
    responses = read_responses(NHS_RESPONSES)
    with Study.create(tmp_path / "nhs.codecurve", responses=responses, codebook=codebook) as study:
        report = import_codes(study, NHS_RESPONSES, coder="nhs-labeller")
        assert report.codes_file.layout == "list"
        assert report.added == 500 * 50
        wide = wide_frame(study)
    source = pd.read_csv(NHS_RESPONSES, dtype=str, keep_default_na=False)
    assert list(wide["response_id"]) == list(source["id"])
    for category in (c.name for c in codebook.codable):
        expected = source["label"].map(lambda cell, c=category: int(c in cell.split(";")))
        assert wide[category].tolist() == expected.tolist(), category
    assert (wide["codes_decided"] == 50).all()


def test_read_codes_without_a_study(codebook: Codebook, tmp_path: Path) -> None:
    path = write(tmp_path, "n.jsonl", '{"id": "a", "Pay": 4}\n{"id": "b", "Pay": null}\n')
    codes = read_codes(path, codebook)
    assert codes.items == (("a", "pay", 4),)


def test_response_table_validation() -> None:
    with pytest.raises(ResponsesError, match="used twice"):
        ResponseTable.from_texts([("a", "x"), ("a", "y")])


# --- the exporter's formula guard, empty rows, the separator, unknown columns -----------------

GUARDED_IDS = ("@alice", "=1+2", "-x", "+y", "plain", "-3", "'quoted")


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[Study]:
    codebook = Codebook(
        name="Guarded",
        codes=(Code("sum", "=Sum"), Code("minus", "-Minus"), Code("team", "Team")),
        scale=BINARY,
    )
    responses = ResponseTable.from_texts({rid: f"text of {rid}" for rid in GUARDED_IDS})
    s = Study.create(tmp_path / "g.codecurve", responses=responses, codebook=codebook)
    yield s
    s.close()


def _decide_all(study: Study) -> dict[tuple[str, str], int]:
    expected = {}
    for i, rid in enumerate(GUARDED_IDS):
        for j, code in enumerate(("sum", "minus", "team")):
            value = (i + j) % 2
            study.decisions.record(rid, code, value, coder="ann")
            expected[(rid, code)] = value
    return expected


@pytest.mark.parametrize("suffix", [".csv", ".xlsx"])
def test_an_exported_sheet_imports_back(guarded: Study, tmp_path: Path, suffix: str) -> None:
    expected = _decide_all(guarded)
    path = export_study(guarded, tmp_path / f"wide{suffix}", layout="wide", coder="ann")
    raw = pd.read_csv(path, dtype=str) if suffix == ".csv" else pd.read_excel(path, dtype=str)
    # The guard is in a CSV; an XLSX cell is typed text and holds the id as it is.
    guarded_id, name = ("'@alice", "'=Sum") if suffix == ".csv" else ("@alice", "=Sum")
    assert guarded_id in set(raw["response_id"])
    assert name in raw.columns
    report = import_codes(guarded, path, coder="bob")
    assert report.added == len(expected)
    got = {
        (rid, code): guarded.decisions.decision(rid, code, coder="bob").value  # type: ignore[union-attr]
        for rid, code in expected
    }
    assert got == expected


def test_guarded_names_in_a_codes_list(guarded: Study, tmp_path: Path) -> None:
    path = write(tmp_path, "l.csv", "id,codes\n'@alice,'-Minus; Team\n'=1+2,'=Sum\n")
    codes = read_codes(path, guarded.codebook, known_ids=set(guarded.response_ids()))
    assert {(r, c) for r, c, v in codes.items if v == 1} == {
        ("@alice", "minus"),
        ("@alice", "team"),
        ("=1+2", "sum"),
    }


def test_a_guard_is_only_taken_back_when_it_is_one(guarded: Study, tmp_path: Path) -> None:
    # "'quoted" is a real id, "'-3" guards nothing (numbers are never guarded), and
    # "'@bob" is unknown either way: it is named as written.
    path = write(tmp_path, "q.csv", "id,Team\n'quoted,1\n")
    assert read_codes(path, guarded.codebook, known_ids={"'quoted", "quoted"}).items == (
        ("'quoted", "team", 1),
    )
    path = write(tmp_path, "n.csv", "id,Team\n'-3,1\n")
    with pytest.raises(ResponsesError, match=r"not in the study: \"'-3\""):
        read_codes(path, guarded.codebook, known_ids=set(guarded.response_ids()))
    path = write(tmp_path, "b.csv", "id,Team\n'@bob,1\n")
    with pytest.raises(ResponsesError, match=r"not in the study: \"'@bob\""):
        read_codes(path, guarded.codebook, known_ids=set(guarded.response_ids()))
    # Without a study to ask, the exporter's guard is taken back by its rule.
    path = write(tmp_path, "a.csv", "id,Team\n'@alice,1\n'-3,0\n")
    assert [rid for rid, _, _ in read_codes(path, guarded.codebook).items] == ["@alice", "'-3"]


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=8))
def test_unguard_undoes_the_exporters_guard(text: str) -> None:
    assert unguard_formula(neutralise(text)) == text


def test_the_guards_first_characters_match_the_exporters() -> None:
    assert FORMULA_STARTS == EXPORT_FORMULA_STARTS


def test_empty_rows_in_a_codes_file_are_skipped_and_counted(study: Study, tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", "id,Pay\nr1,5\n,\n\nr2,3\n")
    report = import_codes(study, path, coder="ann")
    assert report.added == 2
    assert report.codes_file.skipped_empty_rows == 2
    assert "skipped 2 empty row(s) (rows 3, 4)" in report.codes_file.messages


def test_an_empty_separator_is_an_input_error(study: Study, tmp_path: Path) -> None:
    path = write(tmp_path, "l.csv", "id,codes\nr1,Pay\n")
    with pytest.raises(ResponsesError, match="separator"):
        import_codes(study, path, coder="ann", separator="")
    assert study.decisions.count() == 0


def test_an_unknown_column_is_listed_with_the_code_it_may_mean(
    study: Study, tmp_path: Path
) -> None:
    path = write(tmp_path, "m.csv", "id,Pay,Workloa,notes\nr1,5,2,x\n")
    report = import_codes(study, path, coder="ann")
    assert report.added == 1  # the unknown columns are ignored, not imported
    (message,) = [m for m in report.codes_file.messages if "name no code" in m]
    assert "'Workloa', 'notes'" in message
    assert "did you mean 'Workload' for 'Workloa'?" in message


def test_a_misspelt_code_is_named_with_the_code_it_may_mean_and_never_a_no(
    study: Study, tmp_path: Path
) -> None:
    """A second coder's 'Workloda' is not 'does not apply' for Workload (a disagreement
    nobody had): the import says which code it may mean, and --skip-unknown leaves that
    code undecided in the row."""
    path = write(tmp_path, "m.csv", "id,codes\nr1,Pay;Workloda\nr2,Pay\n")
    with pytest.raises(ResponsesError, match=r"'Workloda' \(row 2; did you mean 'Workload'\?\)"):
        import_codes(study, path, coder="ann")
    assert study.decisions.count() == 0
    import_codes(study, path, coder="ann", skip_unknown=True)
    assert study.decisions.decision("r1", "pay").value == 5  # type: ignore[union-attr]
    assert study.decisions.decision("r1", "workload") is None  # what 'Workloda' meant
    assert study.decisions.decision("r1", "team").value == 0  # type: ignore[union-attr]
    assert study.decisions.decision("r2", "workload").value == 1  # type: ignore[union-attr]
