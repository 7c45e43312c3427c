"""A scoped study's exchange files keep its questions (issue 35, 9): a ``.qdpx`` groups
each question's codes and answers in a REFI-QDA set, a ``.qdc`` keeps the scoping in
marked sets, and a table that cannot hold it says so instead of losing it silently."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import xmlschema
from defusedxml import ElementTree as SafeET

from codebooks import load_codebook
from codebooks.model import BINARY, Code, Codebook
from codebooks.qdc import parse_qdc, qdc_bytes
from codebooks.writers import save_codebook, unkept
from study import Study
from study.refi import create_from_project, export_project
from tests.study.test_question_scope import QUESTIONS, scoped_book, survey
from tui.cli import main

DATA = Path(__file__).parent / "data"
PROJECT_SCHEMA = xmlschema.XMLSchema(str(DATA / "Project.xsd"))
CODEBOOK_SCHEMA = xmlschema.XMLSchema(
    str(Path(__file__).parents[1] / "codebooks" / "data" / "Codebook.xsd")
)
NS = {"p": "urn:QDA-XML:project:1.0", "c": "urn:QDA-XML:codebook:1.0"}


@pytest.fixture
def scoped(tmp_path: Path) -> Iterator[Study]:
    study = Study.create(tmp_path / "q.codecurve", responses=survey(), codebook=scoped_book())
    study.decisions.import_decisions(
        [("r1", "privacy", 1), ("r7", "tech", 1), ("r13", "alternatives", 0)], coder="ana"
    )
    yield study
    study.close()


def qde_of(path: Path) -> bytes:
    with zipfile.ZipFile(path) as archive:
        return archive.read("project.qde")


def scopes(book: Codebook) -> dict[str, tuple[str, ...]]:
    return {c.id: c.questions for c in book.codes}


def test_a_scoped_project_has_a_set_per_question(scoped: Study, tmp_path: Path) -> None:
    target = export_project(scoped, tmp_path / "q.qdpx")
    qde = qde_of(target)
    PROJECT_SCHEMA.validate(qde.decode("utf-8"))
    root = SafeET.fromstring(qde)
    # Sets come after Notes and before the project's NoteRef, as ProjectType orders them.
    order = [child.tag.split("}")[1] for child in root]
    assert order.index("Notes") < order.index("Sets") < order.index("NoteRef")
    sets = root.findall("p:Sets/p:Set", NS)
    assert [s.get("name") for s in sets] == [f"question_id: {q}" for q in QUESTIONS]
    code_name = {
        c.get("guid"): str(c.get("name")) for c in root.iter("{urn:QDA-XML:project:1.0}Code")
    }
    source_name = {
        s.get("guid"): str(s.get("name")) for s in root.findall("p:Sources/p:TextSource", NS)
    }
    members = {
        s.get("name"): (
            sorted(code_name[m.get("targetGUID")] for m in s.findall("p:MemberCode", NS)),
            sorted(source_name[m.get("targetGUID")] for m in s.findall("p:MemberSource", NS)),
        )
        for s in sets
    }
    answers = {q: sorted(f"r{i * 6 + n + 1}" for n in range(6)) for i, q in enumerate(QUESTIONS)}
    assert members == {
        "question_id: q1": (["Privacy", "Stress"], answers["q1"]),
        "question_id: q2": (["Stress", "Technical problems"], answers["q2"]),
        "question_id: q3": (["Alternatives"], answers["q3"]),
    }


def test_an_unscoped_project_has_no_sets(tmp_path: Path) -> None:
    book = Codebook(name="S", codes=(Code("a", "A"), Code("b", "B")), scale=BINARY)
    with Study.create(tmp_path / "u.codecurve", responses=survey(), codebook=book) as study:
        target = export_project(study, tmp_path / "u.qdpx")
    qde = qde_of(target)
    PROJECT_SCHEMA.validate(qde.decode("utf-8"))
    assert b"Sets" not in qde
    assert b"<Set " not in qde


def test_reading_the_project_back_keeps_the_questions(scoped: Study, tmp_path: Path) -> None:
    target = export_project(scoped, tmp_path / "q.qdpx")
    again, done = create_from_project(tmp_path / "again.codecurve", target)
    with again:
        assert again.codebook.question_column == "question_id"
        assert scopes(again.codebook) == scopes(scoped.codebook)
        assert again.pair_count() == scoped.pair_count() == 48
    assert not any("set" in m for m in done.messages), done.messages
    assert done.decisions == {"ana": 3}


def test_a_project_changed_elsewhere_keeps_its_questions_from_the_sets(
    scoped: Study, tmp_path: Path
) -> None:
    # A QDA program drops codecurve's record: the sets alone still scope the codes.
    target = export_project(scoped, tmp_path / "q.qdpx")
    stripped = tmp_path / "elsewhere.qdpx"
    buffer = io.BytesIO()
    with zipfile.ZipFile(target) as old, zipfile.ZipFile(buffer, "w") as new:
        for item in old.infolist():
            if item.filename != "codecurve.json":
                new.writestr(item, old.read(item))
    stripped.write_bytes(buffer.getvalue())
    again, _done = create_from_project(tmp_path / "again.codecurve", stripped)
    with again:
        assert again.codebook.question_column == "question_id"
        by_name = {c.name: c.questions for c in again.codebook.codes if c.codable}
        assert by_name["Privacy"] == ("q1",)
        assert by_name["Stress"] == ("q1", "q2")
        assert by_name["Negative tone"] == ()
        assert again.pair_count() == 48


def test_another_programs_set_is_named_not_imported(tmp_path: Path) -> None:
    book = Codebook(name="S", codes=(Code("a", "A"),), scale=BINARY)
    with Study.create(tmp_path / "u.codecurve", responses=survey(), codebook=book) as study:
        target = export_project(study, tmp_path / "u.qde")
    text = target.read_text(encoding="utf-8")
    guid = text.split('<Code guid="', 1)[1].split('"', 1)[0]
    root_note = "\n <NoteRef"  # the project's own note, the root's last child
    assert root_note in text
    text = text.replace(
        root_note,
        '<Sets><Set guid="00000000-0000-4000-8000-000000000001" name="Favourites">'
        f'<MemberCode targetGUID="{guid}"/></Set></Sets>' + root_note,
        1,
    )
    PROJECT_SCHEMA.validate(text)
    target.write_text(text, encoding="utf-8")
    again, done = create_from_project(tmp_path / "again.codecurve", target)
    again.close()
    assert any("set 'Favourites': not imported" in m for m in done.messages)


def test_a_qdc_codebook_keeps_the_scoping_in_marked_sets() -> None:
    book = Codebook(
        name="Survey",
        codes=scoped_book().codes,
        scale=BINARY,
        question_column="question_id",
        sets=(("Mine", ("tone", "privacy")),),
    )
    data = qdc_bytes(book)
    CODEBOOK_SCHEMA.validate(data.decode("utf-8"))
    back = parse_qdc(data, name="Survey")
    assert back.question_column == "question_id"
    by_name = {c.name: c.questions for c in back.codes}
    assert by_name == {c.name: c.questions for c in book.codes}
    # The codebook's own set stays one; the question sets are not listed as sets.
    assert [name for name, _members in back.sets] == ["Mine"]
    # An unscoped codebook's file is as before: no sets at all.
    assert b"Sets" not in qdc_bytes(Codebook(name="S", codes=(Code("a", "A"),)))


def test_a_table_says_it_leaves_the_scoping_out(tmp_path: Path) -> None:
    book = scoped_book()
    assert unkept(book, tmp_path / "c.yaml") == ()
    assert unkept(book, tmp_path / "c.qdc") == ()
    (line,) = unkept(book, tmp_path / "c.csv")
    assert "cannot hold the scoping to questions" in line
    assert "4 scoped code(s)" in line
    assert unkept(book, tmp_path / "c.csv", flavour="taguette")
    assert unkept(Codebook(name="S", codes=(Code("a", "A"),)), tmp_path / "c.csv") == ()
    save_codebook(book, tmp_path / "c.yaml")
    assert scopes(load_codebook(tmp_path / "c.yaml")) == scopes(book)


def test_export_warns_on_a_table_codebook_of_a_scoped_study(
    scoped: Study, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scoped.path
    scoped.close()
    assert main(["export", str(path), "--codebook", str(tmp_path / "c.csv")]) == 0
    err = capsys.readouterr().err
    assert "warning: c.csv: a .csv codebook cannot hold the scoping to questions" in err
    assert (tmp_path / "c.csv").exists()
    assert main(["export", str(path), "--codebook", str(tmp_path / "c.qdc")]) == 0
    assert "warning" not in capsys.readouterr().err
    assert load_codebook(tmp_path / "c.qdc").question_column == "question_id"
