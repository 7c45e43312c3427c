"""Importing existing codes: both layouts, flags, unknowns, all-or-nothing, the NHS labels."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from codebooks.model import Codebook
from study import ResponsesError, ResponseTable, Study, StudyError, read_responses
from study.code_import import import_codes, read_codes
from study.export import wide_frame

from .conftest import NHS_RESPONSES, nhs_codebook


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
    assert study.decision("r1", "pay").value == 5  # type: ignore[union-attr]
    assert study.decision("r1", "team").value == 1  # type: ignore[union-attr]
    assert study.decision("r2", "team").value == 0  # type: ignore[union-attr]
    assert study.decision("r2", "pay") is None  # blank = not coded
    assert study.decision("r1", "pay").source == "human"  # type: ignore[union-attr]


def test_matrix_of_flags_on_a_likert_scale(study: Study, tmp_path: Path) -> None:
    path = write(tmp_path, "f.csv", "id,Pay,Workload\nr1,1,0\nr2,0,0\n")
    report = import_codes(study, path, coder="ann")
    assert any("0 or 1" in m for m in report.codes_file.messages)
    assert study.decision("r1", "pay").value == 5  # type: ignore[union-attr]
    assert study.decision("r1", "workload").value == 1  # type: ignore[union-attr]


def test_list_layout(study: Study, tmp_path: Path) -> None:
    path = write(tmp_path, "l.csv", "respondent,codes\nr1,Pay; team\nr2,\nr3,workload\n")
    report = import_codes(study, path, coder="ann")
    assert report.codes_file.layout == "list"
    assert report.codes_file.responses == 2
    assert any("left uncoded" in m for m in report.codes_file.messages)
    assert (study.decision("r1", "pay").value, study.decision("r1", "team").value) == (5, 1)  # type: ignore[union-attr]
    assert study.decision("r1", "workload").value == 1  # type: ignore[union-attr]
    assert study.decision("r3", "team").value == 0  # type: ignore[union-attr]
    assert study.decision("r2", "pay") is None


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
    assert study.decision_count() == 0


def test_skip_unknown_imports_the_rest(study: Study, tmp_path: Path) -> None:
    path = write(tmp_path, "s.csv", "id,codes\nr1,Pay;Salary\nghost,Pay\n")
    report = import_codes(study, path, coder="ann", skip_unknown=True)
    assert len(report.codes_file.messages) >= 2
    assert study.decision("r1", "pay").value == 5  # type: ignore[union-attr]


def test_conflicts_refused_unless_replace(study: Study, tmp_path: Path) -> None:
    study.record("r1", "pay", 2, coder="ann")
    path = write(tmp_path, "c.csv", "id,Pay\nr1,4\nr2,3\n")
    with pytest.raises(StudyError, match="already decided differently"):
        import_codes(study, path, coder="ann")
    assert study.decision_count() == 1
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
