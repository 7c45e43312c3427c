"""Reading REFI-QDA projects shaped like those real programs write, and refusing unsafe ones.

The sample files are written here from the standard and the known quirks of each program
(namespaces, folder case, paths), not copied from any program's output.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from study import ResponseTable, Study
from study.refi import ProjectFileError, decisions_from_project, read_project
from study.refi._archive import Limits
from study.refi._importing import study_inputs_from_project

ALICE = "{A1B2C3D4-0000-4000-8000-00000000A11C}"


def qdpx(path: Path, files: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data.encode("utf-8") if isinstance(data, str) else data)
    return path


# NVivo-like: .qde named after the project at the root, "Sources/" capitalised, braces
# around upper-case GUIDs, a case with variables, CRLF line ends.
NVIVO = (
    '<?xml version="1.0" encoding="utf-8"?>\r\n'
    '<Project xmlns="urn:QDA-XML:project:1.0" name="Interviews" origin="NVivo">\r\n'
    f' <Users><User guid="{ALICE}" name="Alice"/></Users>\r\n'
    " <CodeBook><Codes>\r\n"
    '  <Code guid="{C0000000-0000-4000-8000-000000000001}" name="Work" isCodable="true"'
    ' color="#FF0000">\r\n'
    '   <Code guid="{C0000000-0000-4000-8000-000000000002}" name="Hours" isCodable="true">'
    "<Description>Long hours.\r\n\r\nInclude: overtime</Description></Code>\r\n"
    "  </Code>\r\n"
    '  <Code guid="{C0000000-0000-4000-8000-000000000003}" name="Pay" isCodable="true"/>\r\n'
    " </Codes></CodeBook>\r\n"
    ' <Variables><Variable guid="{V0000000-0000-4000-8000-000000000001}" name="Age"'
    ' typeOfVariable="Integer"/></Variables>\r\n'
    ' <Cases><Case guid="{E0000000-0000-4000-8000-000000000001}" name="P1">'
    '<VariableValue><VariableRef targetGUID="{V0000000-0000-4000-8000-000000000001}"/>'
    "<IntegerValue>42</IntegerValue></VariableValue>"
    '<SourceRef targetGUID="{50000000-0000-4000-8000-000000000001}"/></Case></Cases>\r\n'
    " <Sources>\r\n"
    '  <TextSource guid="{50000000-0000-4000-8000-000000000001}" name="P1 interview"'
    ' plainTextPath="internal://{50000000-0000-4000-8000-000000000001}.txt">\r\n'
    '   <PlainTextSelection guid="{5E000000-0000-4000-8000-000000000001}" startPosition="0"'
    f' endPosition="5" creatingUser="{ALICE}">'
    '<Coding guid="{C1000000-0000-4000-8000-000000000001}">'
    '<CodeRef targetGUID="{C0000000-0000-4000-8000-000000000002}"/></Coding>'
    "</PlainTextSelection>\r\n"
    "  </TextSource>\r\n"
    '  <PictureSource guid="{50000000-0000-4000-8000-000000000002}" name="photo"'
    ' path="internal://photo.jpg"/>\r\n'
    " </Sources>\r\n"
    "</Project>\r\n"
)


def test_nvivo_shaped_project(tmp_path: Path) -> None:
    path = qdpx(
        tmp_path / "nvivo.qdpx",
        {
            "Interviews.qde": NVIVO,
            "Sources/{50000000-0000-4000-8000-000000000001}.txt": "Hours are long. Pay is ok.",
            "Sources/photo.jpg": b"\xff\xd8\xff",
        },
    )
    project, report = read_project(path)
    assert [s.name for s in project.sources] == ["P1 interview"]
    assert "photo" in report.summary()
    assert "not text" in report.summary()
    inputs = study_inputs_from_project(project)
    assert [c.name for c in inputs.codebook.codes] == ["Work", "Hours", "Pay"]
    hours = inputs.codebook.code("Hours")
    assert hours.parent == "work"
    assert hours.inclusion == "overtime"
    assert inputs.codebook.code("Work").color == "#FF0000"
    assert inputs.responses.responses[0].attrs == {"Age": 42}
    # Alice coded "Hours" in P1; the other codable codes of P1 are taken as not applying.
    assert {(d.code_id, d.value) for d in inputs.decisions["Alice"]} == {
        ("hours", 1),
        ("work", 0),
        ("pay", 0),
    }


def test_atlas_shaped_project(tmp_path: Path) -> None:
    # ATLAS.ti-like: the 0:4 namespace under a prefix-less default, a schemaLocation naming
    # another namespace, single quotes, no declaration, ids that are not GUIDs, lower-case
    # colours, an empty Sets, a PDF with a plain-text rendition, relative:// paths.
    qde = (
        "<Project xmlns='urn:QDA-XML:project:0:4' "
        "xmlns:xsi='http://www.w3.org/2001/XMLSchema-instance' "
        "xsi:schemaLocation='urn:QDA-XML:project:1.0 http://example.invalid/Project.xsd' "
        "name='Atlas' basePath='C:\\Users\\x\\Documents'>"
        "<Users><User guid='u-1' name='Bea'/></Users>"
        "<CodeBook><Codes><Code guid='code-1' name='Trust' isCodable='true' color='#00ff00'/>"
        "</Codes></CodeBook>"
        "<Sources><PDFSource guid='pdf-1' name='Report' path='relative://docs/report.pdf'>"
        "<Representation guid='rep-1' plainTextPath='relative://docs/report.txt'>"
        "<PlainTextSelection guid='sel-1' startPosition='0' endPosition='3' creatingUser='u-1'>"
        "<Coding guid='cod-1'><CodeRef targetGUID='code-1'/></Coding></PlainTextSelection>"
        "</Representation></PDFSource></Sources><Sets/></Project>"
    )
    path = qdpx(
        tmp_path / "atlas.qdpx", {"project.qde": qde, "docs/report.txt": "\ufeffWe trust them."}
    )
    project, report = read_project(path)
    assert not report, report.summary()
    inputs = study_inputs_from_project(project)
    assert inputs.responses.responses[0].text == "We trust them."
    assert inputs.codebook.code("Trust").color == "#00ff00"
    assert {(d.response_id, d.value) for d in inputs.decisions["Bea"]} == {("Report", 1)}


def test_maxqda_shaped_project(tmp_path: Path) -> None:
    # MAXQDA-like: everything on one line, "sources/" lower case, a .docx with a plain-text
    # rendition, document variables on the source, a source with only rich text, a memo.
    qde = (
        '<?xml version="1.0" encoding="UTF-8"?><Project xmlns="urn:QDA-XML:project:1.0" '
        'name="MX" origin="MAXQDA 24"><Users><User guid="00000000-0000-4000-8000-0000000000aa"'
        ' name="Cem"/></Users><CodeBook><Codes><Code guid="00000000-0000-4000-8000-0000000000c1"'
        ' name="Parent" isCodable="true"><Code guid="00000000-0000-4000-8000-0000000000c2" '
        'name="Child" isCodable="true"/></Code></Codes></CodeBook><Variables><Variable '
        'guid="00000000-0000-4000-8000-0000000000f1" name="Wave" typeOfVariable="Text"/>'
        '</Variables><Sources><TextSource guid="00000000-0000-4000-8000-0000000000d1" name="Doc"'
        ' richTextPath="internal://d1.docx" plainTextPath="internal://d1.txt">'
        '<PlainTextSelection guid="00000000-0000-4000-8000-0000000000e1" startPosition="2" '
        'endPosition="4"><Coding guid="00000000-0000-4000-8000-0000000000e2" creatingUser='
        '"00000000-0000-4000-8000-0000000000aa"><CodeRef targetGUID='
        '"00000000-0000-4000-8000-0000000000c1"/></Coding></PlainTextSelection><NoteRef '
        'targetGUID="00000000-0000-4000-8000-0000000000b1"/><VariableValue><VariableRef '
        'targetGUID="00000000-0000-4000-8000-0000000000f1"/><TextValue>2</TextValue>'
        '</VariableValue></TextSource><TextSource guid="00000000-0000-4000-8000-0000000000d2" '
        'name="Rich only" richTextPath="internal://d2.docx"/></Sources><Notes><Note '
        'guid="00000000-0000-4000-8000-0000000000b1" name="Memo" creatingUser='
        '"00000000-0000-4000-8000-0000000000aa"><PlainTextContent>A memo</PlainTextContent>'
        "</Note></Notes></Project>"
    )
    path = qdpx(
        tmp_path / "mx.qdpx",
        {"project.qde": qde, "sources/d1.txt": "A long text", "sources/d1.docx": b"PK"},
    )
    project, report = read_project(path)
    assert "Rich only" in report.summary()
    assert "its rich text internal://d2.docx is not in the archive" in report.summary()
    inputs = study_inputs_from_project(project)
    assert inputs.responses.responses[0].attrs == {"Wave": "2"}
    assert inputs.notes[0].text == "A memo"
    assert inputs.notes[0].coder == "Cem"
    assert {(d.code_id, d.value) for d in inputs.decisions["Cem"]} == {
        ("parent", 1),
        ("child", 0),
    }


def test_qualcoder_shaped_lone_qde(tmp_path: Path) -> None:
    # QualCoder-like: a .qde beside a sources folder, inline and relative texts, codings
    # without a creating user, no colour, codes seven levels deep.
    deep = (
        "".join(
            f'<Code guid="00000000-0000-4000-8000-00000000010{i}" name="L{i}" isCodable="true">'
            for i in range(7)
        )
        + "</Code>" * 7
    )
    (tmp_path / "b.txt").write_text("Second text", encoding="utf-8")
    qde = (
        '<Project xmlns="urn:QDA-XML:project:1.0" name="QC"><CodeBook><Codes>'
        + deep
        + "</Codes></CodeBook><Sources>"
        '<TextSource guid="00000000-0000-4000-8000-000000000201" name="a">'
        "<PlainTextContent>First text</PlainTextContent>"
        '<PlainTextSelection guid="00000000-0000-4000-8000-000000000301" startPosition="0"'
        ' endPosition="5"><Coding guid="00000000-0000-4000-8000-000000000302">'
        '<CodeRef targetGUID="00000000-0000-4000-8000-000000000106"/></Coding>'
        "</PlainTextSelection></TextSource>"
        '<TextSource guid="00000000-0000-4000-8000-000000000202" name="b"'
        ' plainTextPath="relative://b.txt"/>'
        '<TextSource guid="00000000-0000-4000-8000-000000000203" name="c"'
        ' plainTextPath="relative://../outside.txt"/>'
        "</Sources></Project>"
    )
    (tmp_path / "outside.txt").write_text("secret", encoding="utf-8")
    path = tmp_path / "qc.qde"
    path.write_text(qde, encoding="utf-8")
    project, report = read_project(path)
    assert [s.text for s in project.sources] == ["First text", "Second text"]
    assert "climbs out" in report.summary()
    inputs = study_inputs_from_project(project)
    assert inputs.codebook.path_of(inputs.codebook.code("L6")) == tuple(f"L{i}" for i in range(7))
    assert ("a", "l6", 1) in {
        (d.response_id, d.code_id, d.value) for d in inputs.decisions["imported"]
    }


def test_import_codes_into_an_existing_study(tmp_path: Path) -> None:
    path = qdpx(
        tmp_path / "nvivo.qdpx",
        {
            "Interviews.qde": NVIVO,
            "Sources/{50000000-0000-4000-8000-000000000001}.txt": "Hours are long. Pay is ok.",
        },
    )
    project, _ = read_project(path)
    inputs = study_inputs_from_project(project)
    texts = {"P1 interview": "Hours are long. Pay is ok.", "other": "x"}
    responses = ResponseTable.from_texts(texts)
    with Study.create(tmp_path / "s.codecurve", responses=responses, codebook=inputs.codebook) as s:
        decisions, _notes, messages = decisions_from_project(project, s, coder="gold")
        assert set(decisions) == {"gold"}
        s.decisions.import_decisions(
            [(d.response_id, d.code_id, d.value) for d in decisions["gold"]], coder="gold"
        )
        decision = s.decisions.decision("P1 interview", "hours", coder="gold")
        assert decision is not None
        assert decision.value == 1
    # Nothing left out; the negatives taken from the codes left out are counted.
    assert len(messages) == 1
    assert messages[0].startswith("2 decision(s) that a code does not apply taken from codes")


# --- refused inputs -----------------------------------------------------------------------


def test_zip_slip_is_refused(tmp_path: Path) -> None:
    for bad in ("../evil.txt", "/etc/passwd", "sources/../../x.txt", "C:/x.txt", "..\\x.txt"):
        path = qdpx(tmp_path / "slip.qdpx", {"project.qde": NVIVO, bad: "x"})
        with pytest.raises(ProjectFileError, match="zip slip") as info:
            read_project(path)
        assert str(path) in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slip.qdpx"]


def test_bomb_by_ratio_is_refused(tmp_path: Path) -> None:
    path = qdpx(tmp_path / "bomb.qdpx", {"project.qde": NVIVO, "sources/z.txt": b"\0" * 20_000_000})
    with pytest.raises(ProjectFileError, match=r"expands .* times"):
        read_project(path)


def test_bomb_by_size_is_refused(tmp_path: Path) -> None:
    path = qdpx(tmp_path / "big.qdpx", {"project.qde": NVIVO, "sources/z.txt": "y" * 5000})
    with pytest.raises(ProjectFileError, match="expands to 5000 bytes"):
        read_project(path, limits=Limits(entry_bytes=4000))
    with pytest.raises(ProjectFileError, match="more than the 3000 allowed"):
        read_project(path, limits=Limits(total_bytes=3000))


def test_a_lying_zip_directory_is_caught_while_reading(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("project.qde", NVIVO)
    data = bytearray(buffer.getvalue())
    size = len(NVIVO.encode()).to_bytes(4, "little")
    # Shrink the declared size in the central directory only: reading must still stop.
    central = data.rfind(b"PK\x01\x02")
    data[central + 24 : central + 28] = (10).to_bytes(4, "little")
    assert size  # the local header keeps the real size
    path = tmp_path / "lying.qdpx"
    path.write_bytes(bytes(data))
    with pytest.raises(ProjectFileError):
        read_project(path, limits=Limits(entry_bytes=100))


@pytest.mark.parametrize(
    "payload",
    [
        '<?xml version="1.0"?><!DOCTYPE p [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        '<Project name="&x;"/>',
        '<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;">]><Project name="&c;"/>',
    ],
    ids=["xxe", "billion-laughs"],
)
def test_entities_are_refused(tmp_path: Path, payload: str) -> None:
    path = tmp_path / "evil.qde"
    path.write_text(payload, encoding="utf-8")
    with pytest.raises(ProjectFileError, match="DTD or entities"):
        read_project(path)
    with pytest.raises(ProjectFileError, match="DTD or entities"):
        read_project(qdpx(tmp_path / "evil.qdpx", {"project.qde": payload}))


def test_a_qde_that_is_not_xml(tmp_path: Path) -> None:
    path = tmp_path / "broken.qde"
    path.write_text("<Project name='x'><Sources>", encoding="utf-8")
    with pytest.raises(ProjectFileError, match=r"broken.qde \(broken.qde, line 1, column"):
        read_project(path)
    path.write_bytes(b"\x00\x01 not xml at all")
    with pytest.raises(ProjectFileError, match="malformed XML"):
        read_project(path)


def test_other_refusals(tmp_path: Path) -> None:
    with pytest.raises(ProjectFileError, match="no such file"):
        read_project(tmp_path / "missing.qdpx")
    with pytest.raises(ProjectFileError, match=r"no \.qde"):
        read_project(qdpx(tmp_path / "empty.qdpx", {"readme.txt": "hi"}))
    codebook = tmp_path / "c.qde"
    codebook.write_text('<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes/></CodeBook>')
    with pytest.raises(ProjectFileError, match="codebook"):
        read_project(codebook)
    truncated = tmp_path / "t.qdpx"
    truncated.write_bytes(b"PK\x03\x04garbage")
    with pytest.raises(ProjectFileError, match="not a readable zip"):
        read_project(truncated)


def test_several_users_need_choosing_for_one_coder(tmp_path: Path) -> None:
    two_users = NVIVO.replace(
        f'<User guid="{ALICE}" name="Alice"/>',
        f'<User guid="{ALICE}" name="Alice"/><User guid="{{B0B00000-0000-4000-8000-000000000000}}"'
        ' name="Bob"/>',
    ).replace(
        "</PlainTextSelection>",
        '<Coding guid="{C1000000-0000-4000-8000-000000000002}" '
        'creatingUser="{B0B00000-0000-4000-8000-000000000000}">'
        '<CodeRef targetGUID="{C0000000-0000-4000-8000-000000000003}"/></Coding>'
        "</PlainTextSelection>",
    )
    path = qdpx(
        tmp_path / "two.qdpx",
        {"p.qde": two_users, "sources/{50000000-0000-4000-8000-000000000001}.txt": "Hours."},
    )
    project, _ = read_project(path)
    inputs = study_inputs_from_project(project, infer_negatives=False)
    assert {c: {(d.code_id, d.value) for d in v} for c, v in inputs.decisions.items()} == {
        "Alice": {("hours", 1)},
        "Bob": {("pay", 1)},
    }
    with Study.create(
        tmp_path / "s.codecurve",
        responses=ResponseTable.from_texts({"P1 interview": "Hours."}),
        codebook=inputs.codebook,
    ) as s:
        with pytest.raises(ProjectFileError, match="2 users"):
            decisions_from_project(project, s, coder="gold")
        decisions, _, _ = decisions_from_project(project, s, coder="gold", user="Bob")
        assert {(d.code_id, d.value) for d in decisions["gold"]} == {
            ("pay", 1),
            ("work", 0),
            ("hours", 0),
        }
        with pytest.raises(ProjectFileError, match="no codings by user 'Eve'"):
            decisions_from_project(project, s, user="Eve")


def test_a_user_with_a_blank_name_becomes_a_coder_with_a_name(tmp_path: Path) -> None:
    blank = NVIVO.replace('name="Alice"', 'name="   "')
    path = qdpx(
        tmp_path / "blank.qdpx",
        {"p.qde": blank, "sources/{50000000-0000-4000-8000-000000000001}.txt": "Hours."},
    )
    project, _ = read_project(path)
    inputs = study_inputs_from_project(project)
    assert set(inputs.decisions) == {"user 1"}


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        # two codes under one GUID
        ('{C0000000-0000-4000-8000-000000000003}" name="Pay"',
         '{C0000000-0000-4000-8000-000000000002}" name="Pay"',
         "is both code 'Hours' and code 'Pay'"),
        # a selection under its source's GUID
        ('<PlainTextSelection guid="{5E000000-0000-4000-8000-000000000001}"',
         '<PlainTextSelection guid="{50000000-0000-4000-8000-000000000001}"',
         "is both source 'P1 interview' and a selection of 'P1 interview'"),
        # two users under one GUID
        (f'<User guid="{ALICE}" name="Alice"/>',
         f'<User guid="{ALICE}" name="Alice"/><User guid="{ALICE}" name="Mallory"/>',
         "is both user 'Alice' and user 'Mallory'"),
    ],
    ids=["two-codes", "selection-and-source", "two-users"],
)  # fmt: skip
def test_one_guid_for_two_things_is_refused(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in NVIVO
    path = qdpx(
        tmp_path / "dup.qdpx",
        {
            "Interviews.qde": NVIVO.replace(old, new, 1),
            "Sources/{50000000-0000-4000-8000-000000000001}.txt": "Hours are long. Pay is ok.",
        },
    )
    with pytest.raises(ProjectFileError, match="gives one GUID to two things") as refused:
        read_project(path)
    assert words in str(refused.value)
