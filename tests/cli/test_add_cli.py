"""``codecurve add STUDY --responses FILE [--update]``."""

from __future__ import annotations

from pathlib import Path

import pytest

from study import Study
from tests.cli.test_codebook_cli import content
from tui.cli import main


@pytest.fixture
def study(tmp_path: Path) -> Path:
    responses = tmp_path / "answers.csv"
    responses.write_text("respondent,answer,age\nr1,Too many hours.,31\nr2,Pay ok.,40\n", "utf-8")
    codebook = tmp_path / "codes.yaml"
    codebook.write_text("name: W\ncodes:\n  - name: Pay\n  - name: Hours\n", encoding="utf-8")
    path = tmp_path / "s.codecurve"
    assert main(["new", str(path), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    return path


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_wave_is_added_with_its_other_columns(
    study: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wave = write(tmp_path, "w2.csv", "respondent,answer,age\nr3,New answer.,52\n")
    assert main(["add", str(study), "--responses", str(wave)]) == 0
    assert "wave 2: added 1 response" in capsys.readouterr().err
    with Study.open(study, read_only=True) as s:
        assert s.response("r3").attrs["age"] in (52, "52")
        assert [(w.wave, w.count) for w in s.versions.waves()] == [(1, 2), (2, 1)]


def test_ids_already_in_the_study_are_refused_unless_update(
    study: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Study.open(study) as s:
        s.decisions.record("r1", "pay", 2, coder="ana")
    wave = write(tmp_path, "w2.csv", "respondent,answer\nr1,Fewer hours now.\nr4,Hi.\n")
    before = content(study)
    capsys.readouterr()
    assert main(["add", str(study), "--responses", str(wave)]) == 1
    err = capsys.readouterr().err
    assert "already in the study: 'r1'" in err
    assert "--update" in err
    assert content(study) == before
    assert main(["add", str(study), "--responses", str(wave), "--update"]) == 0
    assert "1 decision cleared for re-review" in capsys.readouterr().err
    with Study.open(study, read_only=True) as s:
        assert s.response("r1").text == "Fewer hours now."
        assert s.decisions.decision("r1", "pay", coder="ana") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("respondent,answer\nr5,a\nr5,b\n", "r5"),
        ("person,answer\nr5,a\n", "respondent"),
    ],
)
def test_bad_files_are_refused_with_the_study_unchanged(
    study: Path, tmp_path: Path, text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    wave = write(tmp_path, "bad.csv", text)
    before = content(study)
    capsys.readouterr()
    assert main(["add", str(study), "--responses", str(wave)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("codecurve: error:")
    assert message in err
    assert content(study) == before
