"""Control characters and NUL in and out of REFI-QDA projects.

Out: one control character in a code's or a coder's name, a note, or NUL in a text,
never stops an export; XML (and a source's text file, for NUL) holds its visible
stand-in, one character for one (the codings' offsets stay right), and the project is
valid. In: a source text file holding NUL is
refused as a responses file with NUL bytes is (not text, or UTF-16), the rest read.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import xmlschema

from study import ResponseTable, Study
from study.refi import create_from_project, export_project, read_project
from tests.factories import CODEBOOK, rename_coders
from tests.study.test_qdpx_import import NVIVO, qdpx

SCHEMA = xmlschema.XMLSchema(str(Path(__file__).parent / "data" / "Project.xsd"))


def test_a_control_character_in_names_or_texts_never_stops_a_project_export(
    tmp_path: Path,
) -> None:
    codes = tuple(
        replace(c, name=f"{c.name} \x1b[31m") if c.id == "pay" else c for c in CODEBOOK.codes
    )
    codebook = replace(CODEBOOK, codes=codes)
    texts = {"r1": "pay \x1b]0;x\x07 is low", "r2": "nul\x00 here", "r3": "plain"}
    study = Study.create(
        tmp_path / "s.codecurve", responses=ResponseTable.from_texts(texts), codebook=codebook
    )
    with study:
        items = [(r, "pay", 1) for r in texts]
        study.decisions.import_decisions(items, coder="annplain")
        study.decisions.set_note("r1", "pay", "note \x0c\x1b", coder="annplain")
    # Deciding refuses such a coder's name; a hand-edited or older file holds one anyway.
    rename_coders(tmp_path / "s.codecurve", {"annplain": "ann\x1b]52;c;aGk=\x07"})
    with Study.open(tmp_path / "s.codecurve") as study:
        written = export_project(study, tmp_path / "p.qdpx", all_coders=True)
    SCHEMA.validate(_qde(written))
    project, _ = read_project(written)
    assert {u.name for u in project.users} == {"ann\u241b]52;c;aGk=\u2407"}
    assert "Pay \u241b[31m" in {c.name for c, _ in project.all_codes()}
    by_name = {s.name: s for s in project.sources}
    assert by_name["r1"].text == texts["r1"]  # a text file holds an escape as it is
    assert by_name["r2"].text == "nul\u2400 here"
    for source in project.sources:  # one stand-in for one character: offsets still fit
        assert len(source.text) == len(texts[source.name])
        assert all(c.end <= len(source.text) for c in source.codings)


def _qde(path: Path) -> str:
    import zipfile

    with zipfile.ZipFile(path) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".qde"))
        return archive.read(name).decode("utf-8")


def test_a_source_text_with_nul_is_skipped_as_a_responses_file_with_nul_is_refused(
    tmp_path: Path,
) -> None:
    two = NVIVO.replace(
        "  </TextSource>\r\n",
        "  </TextSource>\r\n"
        '  <TextSource guid="{50000000-0000-4000-8000-000000000003}" name="P2"'
        ' plainTextPath="internal://{50000000-0000-4000-8000-000000000003}.txt"/>\r\n',
        1,
    )
    path = qdpx(
        tmp_path / "nul.qdpx",
        {
            "Interviews.qde": two,
            "Sources/{50000000-0000-4000-8000-000000000001}.txt": "Hours are long.",
            "Sources/{50000000-0000-4000-8000-000000000003}.txt": "H\x00o\x00u\x00r\x00",
        },
    )
    project, report = read_project(path)
    assert [s.name for s in project.sources] == ["P1 interview"]
    assert "holds NUL characters" in report.summary()
    study, _ = create_from_project(tmp_path / "s.codecurve", path)
    with study:
        assert all("\x00" not in r.text for r in study.responses())
