"""Projects shaped as two real QDA programs write them, whose text is not where the
standard's plain-text file says.

(a) ATLAS.ti: each text source carries its text inline in ``PlainTextContent`` and also
names a ``plainTextPath`` to an ``internal://`` file that is not in the archive.
(b) NVivo 15: the ``.txt`` renditions hold a single newline, while the text is in the
``.docx`` that ``richTextPath`` names.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
import pytest

from study.refi._reader import read_project
from tui.cli import main

CODE = "00000000-0000-4000-8000-0000000000c1"
USER = "00000000-0000-4000-8000-0000000000aa"
TEXTS = {
    "00000000-0000-4000-8000-0000000000d1": "The nurses were kind and explained everything.",
    "00000000-0000-4000-8000-0000000000d2": "Parking cost a fortune and the wait was long.",
}


def project_xml(sources: str, origin: str) -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>'
        f'<Project xmlns="urn:QDA-XML:project:1.0" name="Feedback" origin="{origin}">'
        f'<Users><User guid="{USER}" name="Ana"/></Users>'
        f'<CodeBook><Codes><Code guid="{CODE}" name="Staff" isCodable="true"/></Codes>'
        f"</CodeBook><Sources>{sources}</Sources></Project>"
    )


def coding(guid: str, n: int) -> str:
    return (
        f'<PlainTextSelection guid="00000000-0000-4000-8000-0000000000e{n}" startPosition="0" '
        f'endPosition="10"><Coding guid="00000000-0000-4000-8000-0000000000f{n}" '
        f'creatingUser="{USER}"><CodeRef targetGUID="{CODE}"/></Coding></PlainTextSelection>'
    )


def zipped(path: Path, files: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data.encode("utf-8") if isinstance(data, str) else data)
    return path


def atlas_project(path: Path) -> Path:
    sources = "".join(
        f'<TextSource guid="{guid}" name="R{n}" plainTextPath="internal://{guid}.txt">'
        f"<PlainTextContent>{text}</PlainTextContent>{coding(guid, n)}</TextSource>"
        for n, (guid, text) in enumerate(TEXTS.items(), 1)
    )
    return zipped(path, {"project.qde": project_xml(sources, "ATLAS.ti 24")})


def docx_bytes(text: str) -> bytes:
    document = docx.Document()
    for line in text.split(". "):
        document.add_paragraph(line)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def nvivo_project(path: Path) -> Path:
    sources = "".join(
        f'<TextSource guid="{guid}" name="R{n}" richTextPath="internal://{guid}.docx" '
        f'plainTextPath="internal://{guid}.txt">{coding(guid, n)}</TextSource>'
        for n, guid in enumerate(TEXTS, 1)
    )
    files: dict[str, bytes | str] = {"project.qde": project_xml(sources, "NVivo 15")}
    for guid, text in TEXTS.items():
        files[f"sources/{guid}.txt"] = "\n"
        files[f"sources/{guid}.docx"] = docx_bytes(text)
    return zipped(path, files)


def test_atlas_inline_text_is_read_when_its_file_is_missing(tmp_path: Path) -> None:
    project, report = read_project(atlas_project(tmp_path / "atlas.qdpx"))
    assert [s.text for s in project.sources] == list(TEXTS.values())
    assert not report.skipped
    lines = report.summary().splitlines()
    assert len(lines) == 2
    assert all("inline PlainTextContent" in line and "not in the archive" in line for line in lines)


def test_nvivo_docx_text_is_read_when_the_plain_text_is_empty(tmp_path: Path) -> None:
    project, report = read_project(nvivo_project(tmp_path / "nvivo.qdpx"))
    assert [s.text for s in project.sources] == [t.replace(". ", "\n") for t in TEXTS.values()]
    assert not report.skipped
    assert all(
        ".docx" in line and "holds no text" in line for line in report.summary().splitlines()
    )


@pytest.mark.parametrize("make", [atlas_project, nvivo_project])
def test_a_study_is_made_from_each_project(tmp_path: Path, make, capsys) -> None:
    project = make(tmp_path / "p.qdpx")
    study = tmp_path / "s.codecurve"
    assert main(["new", str(study), "--project", str(project)]) == 0
    err = capsys.readouterr().err
    assert "read from" in err
    from study import Study

    with Study.open(study, read_only=True) as s:
        assert s.response_count() == 2
        assert "nurses" in " ".join(r.text for r in s.responses())


def test_a_damaged_docx_is_skipped_with_its_reason(tmp_path: Path) -> None:
    guid = next(iter(TEXTS))
    sources = (
        f'<TextSource guid="{guid}" name="R1" richTextPath="internal://{guid}.docx" '
        f'plainTextPath="internal://{guid}.txt"/>'
    )
    path = zipped(
        tmp_path / "bad.qdpx",
        {
            "project.qde": project_xml(sources, "NVivo 15"),
            f"sources/{guid}.txt": "\n",
            f"sources/{guid}.docx": b"PK\x03\x04 not a zip",
        },
    )
    project, report = read_project(path)
    assert project.sources == ()
    assert "cannot be read" in report.summary()
