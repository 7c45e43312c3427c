"""Exchange without loss: a study through a REFI-QDA project and back keeps every coder's
decisions (applies and does not apply), the consensus, the unresolved pairs and the
notes; a project QDA programs import whole; no value invented on the way back."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import xmlschema
from hypothesis import given
from hypothesis import strategies as st

from codebooks.model import Codebook
from study import Response, ResponseTable, Study
from study.errors import ProjectFileError
from study.exchange.coders import chosen_decisions
from study.refi import (
    Coding,
    Project,
    ProjectCode,
    TextSource,
    User,
    create_from_project,
    export_project,
    import_project_codes,
    read_project,
    write_qdpx,
)
from study.refi._notes import join_note, split_note

SCHEMA = xmlschema.XMLSchema(str(Path(__file__).parent / "data" / "Project.xsd"))
NS = "{urn:QDA-XML:project:1.0}"

TEXTS = {
    "c1": "Waited three hours, staff rude.",
    "c2": "Seen on time by a kind nurse.",
    "c3": "- more staff please",
    "c4": "Parking was impossible.",
}


@pytest.fixture
def coded(tmp_path: Path, codebook: Codebook) -> Iterator[Study]:
    """Two coders, yes and no on a yes/no code, every point of a 1-5 code, a consensus
    that settles one disagreement and leaves another, notes and memos."""
    responses = ResponseTable(tuple(Response(k, v, {"score": i}) for i, (k, v) in
                                    enumerate(TEXTS.items(), 1)))  # fmt: skip
    s = Study.create(tmp_path / "s.codecurve", responses=responses, codebook=codebook)
    for rid, team, pay in [("c1", 0, 1), ("c2", 1, 2), ("c3", 0, 3), ("c4", 1, 5)]:
        s.decisions.record(rid, "team", team, coder="ana")
        s.decisions.record(rid, "pay", pay, coder="ana")
    for rid, team, pay in [("c1", 1, 1), ("c2", 1, 4), ("c3", 0, 3), ("c4", 0, 5)]:
        s.decisions.record(rid, "team", team, coder="ben")
        s.decisions.record(rid, "pay", pay, coder="ben")
    s.decisions.record("c1", "team", 0, coder="consensus", note="agreed: rudeness, not team")
    s.decisions.record("c2", "workload", 4, coder="ana", note="nurse time")
    s.decisions.set_note("c2", "pay", "no money\n\nmentioned", coder="ana")
    s.decisions.set_memo("c2", "a memo\nover two lines", coder="ana")
    s.decisions.set_memo("c3", "starts with a dash", coder="ben")
    yield s
    s.close()


def decisions_of(study: Study) -> dict[str, set[tuple[str, str, int]]]:
    out: dict[str, set[tuple[str, str, int]]] = {}
    for coder in study.decisions.coders():
        frame = study.queries.annotated_pairs(None, coder=coder)
        out[coder] = set(zip(frame["response_id"], frame["code_id"], frame["value"], strict=True))
    return out


def reconciled(study: Study) -> tuple[set[tuple[str, str, int]], set[tuple[str, str]]]:
    index = study.index
    with study.snapshot() as conn:
        chosen = chosen_decisions(conn, coder="consensus")
    rows = {
        (index.response_id(int(r[0])), index.code_at(int(r[1])).id, int(r[2])) for r in chosen.rows
    }
    unresolved = {
        (index.response_id(int(r)), index.code_at(int(c)).id) for r, c in chosen.unresolved
    }
    return rows, unresolved


def notes_of(study: Study) -> set[tuple[str, str | None, str, str]]:
    with study.snapshot() as conn:
        pairs = conn.execute("SELECT rid, cid, coder, note FROM notes").fetchall()
        memos = conn.execute("SELECT rid, coder, note FROM memos").fetchall()
    index = study.index
    out = {(index.response_id(r), index.code_at(c).id, w, t) for r, c, w, t in pairs}
    return out | {(index.response_id(r), None, w, t) for r, w, t in memos}


def as_a_qda_program_writes_it(path: Path, out: Path) -> Path:
    """The project without codecurve's record, as a QDA program exports it again."""
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            if name != "codecurve.json":
                dst.writestr(name, src.read(name))
    return out


@pytest.mark.parametrize("record", [True, False], ids=["with record", "xml alone"])
def test_round_trip_keeps_every_coder_consensus_unresolved_and_notes(
    coded: Study, tmp_path: Path, record: bool
) -> None:
    path = export_project(coded, tmp_path / "out.qdpx")
    if not record:
        path = as_a_qda_program_writes_it(path, tmp_path / "back.qdpx")
    made, done = create_from_project(tmp_path / "back.codecurve", path)
    with made:
        assert decisions_of(made) == decisions_of(coded)
        rows, unresolved = reconciled(made)
        assert (rows, unresolved) == reconciled(coded)
        assert unresolved == {("c2", "pay"), ("c4", "team")}
        assert notes_of(made) == notes_of(coded)
    assert not any("invent" in m or "left out" in m for m in done.messages), done.messages


def test_a_study_without_any_no_still_infers_nothing(coded: Study, tmp_path: Path) -> None:
    # The twin category says the project states its negatives: a code no one coded in a
    # source stays undecided (Workload was decided on c2 alone).
    path = as_a_qda_program_writes_it(
        export_project(coded, tmp_path / "out.qdpx"), tmp_path / "b.qdpx"
    )
    made, _ = create_from_project(tmp_path / "back.codecurve", path)
    with made:
        workload = {(r, v) for r, c, v in decisions_of(made)["ana"] if c == "workload"}
    assert workload == {("c2", 4)}


def test_consensus_export_is_the_reconciled_set(coded: Study, tmp_path: Path) -> None:
    path = export_project(coded, tmp_path / "c.qdpx", coder="consensus")
    project, _ = read_project(path)
    assert [u.name for u in project.users] == ["consensus"]
    made, _ = create_from_project(tmp_path / "back.codecurve", path)
    with made:
        got = decisions_of(made)
    rows, unresolved = reconciled(coded)
    assert got == {"consensus": rows}
    assert not {(r, c) for r, c, _ in rows} & unresolved
    assert len(rows) == 8 - len(unresolved) + 1  # team and pay on 4 responses, workload


def test_qualcoder_reads_every_note(coded: Study, tmp_path: Path) -> None:
    """What QualCoder's project import needs, checked on the XML: every note dated and
    credited; a note on a source holds the selection it is about, one per owner and
    selection; the provenance is a journal (a named note with a text file)."""
    path = export_project(coded, tmp_path / "out.qdpx")
    with zipfile.ZipFile(path) as archive:
        qde = archive.read("project.qde")
        names = set(archive.namelist())
    SCHEMA.validate(qde.decode())
    root = xmlschema.XMLResource(io.BytesIO(qde)).root
    users = {u.get("guid"): u.get("name") for u in root.iter(f"{NS}User")}
    on_sources = {
        ref.get("targetGUID"): source.get("guid")
        for source in root.iter(f"{NS}TextSource")
        for ref in source.findall(f"{NS}NoteRef")
    }
    annotations = []
    journals = []
    for note in root.iter(f"{NS}Note"):
        assert note.get("creationDateTime")
        assert note.get("modifiedDateTime")
        if note.get("guid") in on_sources:
            selection = note.find(f"{NS}PlainTextSelection")
            assert selection is not None
            owner = users[note.get("modifyingUser") or note.get("creatingUser")]
            key = (on_sources[note.get("guid")], selection.get("startPosition"),
                   selection.get("endPosition"), owner)  # fmt: skip
            annotations.append(key)
            assert note.findtext(f"{NS}PlainTextContent")
        else:
            journals.append(note)
    # ana on c2 (memo, two pair notes), ben on c3 (memo), the consensus on c1.
    assert len(annotations) == len(set(annotations)) == 3
    assert [n.get("name") for n in journals] == ["codecurve provenance"]
    text_file = journals[0].get("plainTextPath", "").removeprefix("internal://")
    assert f"sources/{text_file}" in names


def test_notes_join_and_split_back() -> None:
    codes = {"timeliness": "t", "staff manner": "s"}
    text = join_note("memo\n", [("Timeliness", "late\n\nvery"), ("Staff manner", "rude")])
    assert split_note(text, codes) == [(None, "memo\n"), ("t", "late\n\nvery"), ("s", "rude")]
    # A heading of no known code is text; a note without headings is a memo.
    assert split_note("── Other ──\nx", codes) == [(None, "── Other ──\nx")]


@given(
    memo=st.one_of(st.none(), st.text(min_size=1).filter(str.strip)),
    notes=st.lists(st.text(min_size=1).filter(str.strip), max_size=3),
)
def test_notes_split_back_exactly(memo: str | None, notes: list[str]) -> None:
    names = ["Alpha", "Beta", "Gamma"][: len(notes)]
    codes = {n.casefold(): n.lower() for n in names}
    text = join_note(memo, list(zip(names, notes, strict=True)))
    expected = ([(None, memo)] if memo else []) + [
        (n.lower(), t) for n, t in zip(names, notes, strict=True)
    ]
    parts = split_note(text, codes)
    if any("── " in t for t in [memo or "", *notes]):
        return  # a text that holds a heading line of its own may split differently
    assert parts == expected


def foreign_project(tmp_path: Path) -> Path:
    """A QDA program's project: one user, codings of a 1-5 code and a yes/no code."""
    user = User("u1", "ana")
    codes = (ProjectCode("k-pay", "Pay"), ProjectCode("k-team", "Team"))
    sources = tuple(
        TextSource(
            f"s-{rid}",
            rid,
            text,
            codings=(
                Coding(f"g-{rid}-1", f"sel-{rid}-1", "k-pay", 0, 5, "u1"),
                Coding(f"g-{rid}-2", f"sel-{rid}-2", "k-team", 0, 5, "u1"),
            ),
        )
        for rid, text in TEXTS.items()
    )
    project = Project("qc", users=(user,), codes=codes, sources=sources)
    return write_qdpx(project, tmp_path / "qc.qdpx")


def test_a_qda_coding_never_becomes_a_point_of_an_ordinal_scale(
    coded: Study, tmp_path: Path
) -> None:
    before = decisions_of(coded)["ana"]
    done = import_project_codes(
        coded, foreign_project(tmp_path), coder="ana_qc", user="ana", replace=False
    )
    got = decisions_of(coded)["ana_qc"]
    assert {c for _r, c, _v in got} == {"team"}  # Yes on a yes/no code is a scale point
    assert any("Pay (4)" in m and "ordinal" in m for m in done.messages), done.messages
    # Into the coder's own decisions with --replace: the 1-5 values stay as they were.
    import_project_codes(coded, foreign_project(tmp_path), coder="ana", replace=True)
    pay = {(r, v) for r, c, v in decisions_of(coded)["ana"] if c == "pay"}
    assert pay == {(r, v) for r, c, v in before if c == "pay"}


def test_a_project_of_ordinal_codings_only_is_refused_with_the_reason(
    tmp_path: Path, coded: Study
) -> None:
    user = User("u1", "ana")
    source = TextSource("s1", "c1", TEXTS["c1"], codings=(Coding("g", "s", "k", 0, 3, "u1"),))
    path = write_qdpx(
        Project("p", users=(user,), codes=(ProjectCode("k", "Pay"),), sources=(source,)),
        tmp_path / "p.qdpx",
    )
    with pytest.raises(ProjectFileError, match=r"no codings to import.*Pay \(1\)"):
        import_project_codes(coded, path, coder="x")


def segmented_project(tmp_path: Path) -> Path:
    """A QDA program's project: ana coded Pay in two segments of one source and Team in
    one; ben coded Team over the whole text."""
    users = (User("u1", "ana"), User("u2", "ben"))
    codes = (ProjectCode("k-pay", "Pay"), ProjectCode("k-team", "Team"))
    text = TEXTS["c1"]
    codings = (
        Coding("g1", "s1", "k-pay", 0, 6, "u1"),
        Coding("g2", "s2", "k-pay", 13, 24, "u1"),
        Coding("g3", "s3", "k-team", 20, 30, "u1"),
        Coding("g4", "s4", "k-team", 0, len(text), "u2"),
    )
    sources = (TextSource("src-1", "c1", text, codings=codings),)
    project = Project("qda", users=users, codes=codes, sources=sources)
    return write_qdpx(project, tmp_path / "s.qdpx")


def test_segments_survive_a_round_trip(tmp_path: Path) -> None:
    made, _ = create_from_project(tmp_path / "seg.codecurve", segmented_project(tmp_path))
    with made:
        assert made.decisions.segments("c1", "pay", coder="ana") == [(0, 6), (13, 24)]
        assert made.decisions.segments("c1", "team", coder="ana") == [(20, 30)]
        assert made.decisions.segments("c1", "team", coder="ben") == []  # the whole text
        path = export_project(made, tmp_path / "back.qdpx")
        # A decision made again in codecurve leaves its segments behind; undo brings them back.
        made.decisions.record("c1", "team", 0, coder="ana")
        assert made.decisions.segments("c1", "team", coder="ana") == []
        made.decisions.undo(coder="ana")
        assert made.decisions.segments("c1", "team", coder="ana") == [(20, 30)]
    project, _ = read_project(path)
    names = {c.guid: c.name for c, _ in project.all_codes()}
    users = {u.guid: u.name for u in project.users}
    spans = sorted(
        (users[c.user_guid or ""], names[c.code_guid], c.start, c.end)
        for s in project.sources
        for c in s.codings
    )
    assert spans == [
        ("ana", "Pay", 0, 6),
        ("ana", "Pay", 13, 24),
        ("ana", "Team", 20, 30),
        ("ben", "Pay (does not apply)", 0, len(TEXTS["c1"])),
        ("ben", "Team", 0, len(TEXTS["c1"])),
    ]
    # ...and back again: the same segments.
    again, _ = create_from_project(tmp_path / "again.codecurve", path)
    with again:
        assert again.decisions.segments("c1", "pay", coder="ana") == [(0, 6), (13, 24)]
