"""A project whose sources hold no text (ATLAS.ti's export without its files, a project of
pictures and audio) still gives its codebook: the refusal says what the project holds
and how to take the codebook, and ``--codebook PROJECT.qdpx`` takes it."""

from __future__ import annotations

import logging
import zipfile
from pathlib import Path

import pytest

from study import Study
from tests.cli.test_safety import one_error_line
from tui.cli import main

NS = "urn:QDA-XML:project:1.0"
QDE = f"""<Project xmlns="{NS}" name="atlas" origin="ATLAS.ti">
<CodeBook><Codes>
 <Code guid="10000000-0000-4000-8000-000000000001" name="Experience" isCodable="false">
  <Code guid="10000000-0000-4000-8000-000000000002" name="Timeliness" isCodable="true">
   <Description>Waiting and delays.</Description></Code>
  <Code guid="10000000-0000-4000-8000-000000000003" name="Staff" isCodable="true"/>
 </Code>
 <Code guid="10000000-0000-4000-8000-000000000004" name="Other" isCodable="true">
  <Code guid="10000000-0000-4000-8000-000000000005" name="Staff" isCodable="true"/>
 </Code>
</Codes></CodeBook>
<Sources>
 <TextSource guid="20000000-0000-4000-8000-000000000001" name="Interview 1"
   plainTextPath="internal://20000000-0000-4000-8000-000000000001.txt"/>
 <PictureSource guid="20000000-0000-4000-8000-000000000002" name="Ward photo"
   path="internal://photo.png"/>
 <AudioSource guid="20000000-0000-4000-8000-000000000003" name="Call"
   path="internal://call.m4a"/>
</Sources>
</Project>"""


@pytest.fixture
def place(tmp_path: Path) -> Path:
    with zipfile.ZipFile(tmp_path / "atlas.qdpx", "w") as archive:
        archive.writestr("project.qde", QDE)  # the text file named is not in the archive
    (tmp_path / "answers.csv").write_text(
        "id,text\n1,Waited for hours.\n2,Kind nurses.\n", encoding="utf-8"
    )
    return tmp_path


def test_a_project_without_text_is_refused_naming_what_it_holds(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", str(place / "s.codecurve"), "--project", str(place / "atlas.qdpx")]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert "no text to code: it holds 1 text source(s) without their text, 1 picture(s), " in line
    assert "1 audio source(s), 5 code(s)" in line
    assert "--codebook PROJECT" in line
    assert not (place / "s.codecurve").exists()


def test_its_codebook_is_taken_with_a_place_in_every_warning(
    place: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    study = place / "s.codecurve"
    with caplog.at_level(logging.WARNING):
        code = main(
            [
                "new",
                str(study),
                "--responses",
                str(place / "answers.csv"),
                "--codebook",
                str(place / "atlas.qdpx"),
            ]
        )
    assert code == 0
    err = capsys.readouterr().err
    assert "a second code named 'Staff' is called 'Staff (Other)'" in err
    assert not [r for r in caplog.records if r.getMessage().startswith("None:")]
    assert any("codebook 'atlas'" in r.getMessage() for r in caplog.records)
    with Study.open(study) as s:
        names = [c.name for c in s.codebook.codes]
        assert names == ["Experience", "Timeliness", "Staff", "Other", "Staff (Other)"]
        assert s.codebook.code("timeliness").definition == "Waiting and delays."
        assert not s.codebook.code("experience").codable
