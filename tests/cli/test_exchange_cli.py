"""The exchange exports from the command line: an SPSS or Stata file (wide by default),
a codebook for Taguette, a project of the reconciled decisions."""

from __future__ import annotations

import io
from pathlib import Path

import pyreadstat
import pytest
from taguette.import_codebook import list_tags

from study import Study
from study.refi import read_project
from tests.cli.test_safety import one_error_line
from tui.cli import main

CODEBOOK = """\
name: NHS
scale: binary
codes:
  - name: Staff manner & personal attributes
    definition: Kind or rude staff.
  - name: Overall
    definition: The overall rating.
    scale: 1-5
"""


@pytest.fixture
def study(tmp_path: Path) -> Path:
    (tmp_path / "answers.csv").write_text(
        "id,text,fft_score_1to5\n1,- more staff,4\n2,Kind nurses,5\n", encoding="utf-8"
    )
    (tmp_path / "codes.yaml").write_text(CODEBOOK, encoding="utf-8")
    path = tmp_path / "s.codecurve"
    args = ["new", str(path), "--responses", str(tmp_path / "answers.csv")]
    assert main([*args, "--codebook", str(tmp_path / "codes.yaml")]) == 0
    with Study.open(path) as s:
        s.decisions.record("1", "overall", 3, coder="ana")
        s.decisions.record("1", "overall", 4, coder="ben")
        s.decisions.record("2", "overall", 5, coder="ana")
        s.decisions.record("2", "overall", 2, coder="ben")
        s.decisions.record("1", "overall", 4, coder="consensus")
    return path


@pytest.mark.parametrize("suffix", [".sav", ".dta"])
def test_a_statistics_file_is_wide_by_default(
    study: Path, suffix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = study.with_name(f"coded{suffix}")
    assert main(["export", str(study), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "wide layout" in err
    assert f"coded{suffix}-metadata.json" in err
    reader = pyreadstat.read_sav if suffix == ".sav" else pyreadstat.read_dta
    frame, meta = reader(str(out))
    by_label = {label: name for name, label in meta.column_names_to_labels.items()}
    assert frame[by_label["Overall"]].tolist()[0] == 4  # settled by the consensus
    assert frame[by_label["fft_score_1to5"]].tolist() == [4, 5]


def test_a_codebook_for_taguette(study: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = study.with_name("codes.csv")
    assert main(["export", str(study), "--codebook", str(out), "--for", "taguette"]) == 0
    capsys.readouterr()
    tags = list_tags(io.BytesIO(out.read_bytes()))
    assert [(t["path"], t["description"]) for t in tags] == [
        ("Staff manner & personal attributes", "Kind or rude staff."),
        ("Overall", "The overall rating."),
    ]
    other = study.with_name("w.csv")
    assert main(["export", str(study), "-o", str(other), "--for", "taguette"]) == 2
    assert "--for chooses the codebook's layout" in one_error_line(capsys.readouterr().err)
    assert not other.exists()


def test_a_project_of_the_reconciled_decisions(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = study.with_name("c.qdpx")
    assert main(["export", str(study), "--project", str(out), "--coder", "consensus"]) == 0
    assert "the reconciled decisions" in capsys.readouterr().err
    project, _ = read_project(out)
    assert [u.name for u in project.users] == ["consensus"]
    # Response 1 settled (4: applies); response 2 unresolved (ana 5, ben 2): no coding.
    codings = {s.name: len(s.codings) for s in project.sources}
    assert codings == {"1": 1, "2": 0}
