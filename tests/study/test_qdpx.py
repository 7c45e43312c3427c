"""REFI-QDA projects: writing (valid against Project.xsd), and study round trips."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import xmlschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codebooks.model import BINARY, LIKERT_5, Code, Codebook
from scoring.score import ScoreConfig
from study import Response, ResponseTable, Study
from study.refi import (
    Case,
    Coding,
    Note,
    Project,
    ProjectCode,
    ProjectFileError,
    TextSource,
    User,
    Variable,
    project_bytes,
    project_from_study,
    read_project,
    study_inputs_from_project,
    write_qde,
    write_qdpx,
)
from tests.factories import synthetic_score

SCHEMA = xmlschema.XMLSchema(str(Path(__file__).parent / "data" / "Project.xsd"))

UNICODE = "Emoji 😀👍🏽, RTL שלום עולם مرحبا, combining é and n\u0303, CJK 漢字"


def valid(qde: bytes) -> None:
    SCHEMA.validate(qde.decode("utf-8"))


def qde_of(path: Path) -> bytes:
    with zipfile.ZipFile(path) as archive:
        return archive.read("project.qde")


@pytest.fixture
def rich_study(tmp_path: Path, codebook: Codebook) -> Iterator[Study]:
    responses = ResponseTable(
        responses=(
            Response("r1", UNICODE, {"age": 34, "dept": "Sales", "score": 2.5, "remote": True}),
            Response("r2", "word " * 20_000, {"age": 51, "dept": "ليس", "score": 1e-05}),
            Response("r3", "Too many hours and no overtime pay.", {"dept": None, "age": 3}),
            Response("r10", "Great colleagues.\r\nReally.", {"remote": False}),
            Response("שלום-5", "RTL id", {"dept": "R&D <x>"}),
        )
    )
    s = Study.create(tmp_path / "rich.codecurve", responses=responses, codebook=codebook)
    s.decisions.record("r1", "workload", 4, coder="alice", note="long shifts 😀")
    s.decisions.record("r1", "pay", 2, coder="alice")
    s.decisions.record("r1", "team", 1, coder="alice")
    s.decisions.record("r2", "workload", 5, coder="alice")
    s.decisions.record("r3", "pay", 5, coder="bob", note="overtime")
    s.decisions.record("r3", "workload", 1, coder="bob")
    s.decisions.record("r1", "workload", 2, coder="bob")
    s.decisions.record("r10", "team", 1, coder="bob", source="model")
    s.decisions.set_memo("r3", "a memo on the whole response 😀", coder="bob")
    yield s
    s.close()


def decisions_of(study: Study) -> dict[str, set[tuple[str, str, int]]]:
    out: dict[str, set[tuple[str, str, int]]] = {}
    for coder in study.decisions.coders():
        frame = study.queries.annotated_pairs(None, coder=coder)
        out[coder] = {
            (rid, cid, int(value))
            for rid, cid, value in zip(
                frame["response_id"], frame["code_id"], frame["value"], strict=True
            )
        }
    return out


def test_round_trip_all_coders(rich_study: Study, tmp_path: Path) -> None:
    path = write_qdpx(project_from_study(rich_study, all_coders=True), tmp_path / "out.qdpx")
    valid(qde_of(path))
    project, report = read_project(path)
    assert not report, report.summary()
    inputs = study_inputs_from_project(project)
    assert inputs.codebook == rich_study.codebook
    original = list(rich_study.responses())
    assert [(r.id, r.text) for r in inputs.responses.responses] == [
        (r.id, r.text) for r in original
    ]
    assert [dict(r.attrs) for r in inputs.responses.responses] == [
        {k: v for k, v in r.attrs.items() if v is not None} for r in original
    ]
    got = {
        coder: {(d.response_id, d.code_id, d.value) for d in items}
        for coder, items in inputs.decisions.items()
    }
    assert got == decisions_of(rich_study)
    sources = {d.source for d in inputs.decisions["bob"] if d.response_id == "r10"}
    assert sources == {"model"}
    assert {(n.response_id, n.code_id, n.coder, n.text) for n in inputs.notes} == {
        ("r1", "workload", "alice", "long shifts 😀"),
        ("r3", "pay", "bob", "overtime"),
        ("r3", None, "bob", "a memo on the whole response 😀"),  # a memo: no code
    }
    # ...and a study made of it holds the same.
    made = Study.create(
        tmp_path / "made.codecurve", responses=inputs.responses, codebook=inputs.codebook
    )
    with made:
        for coder, items in inputs.decisions.items():
            made.decisions.import_decisions(
                [(d.response_id, d.code_id, d.value) for d in items], coder=coder
            )
        assert decisions_of(made) == decisions_of(rich_study)


def test_guids_are_stable_across_exports(rich_study: Study, tmp_path: Path) -> None:
    one = project_from_study(rich_study, all_coders=True)
    two = project_from_study(rich_study, all_coders=True)
    assert [c.guid for c, _ in one.all_codes()] == [c.guid for c, _ in two.all_codes()]
    assert [s.guid for s in one.sources] == [s.guid for s in two.sources]
    assert [u.guid for u in one.users] == [u.guid for u in two.users]


def test_codings_span_the_whole_text_and_texts_are_files(rich_study: Study, tmp_path: Path) -> None:
    path = write_qdpx(project_from_study(rich_study, coder="alice"), tmp_path / "a.qdpx")
    qde = qde_of(path).decode()
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    project, _ = read_project(path)
    r1 = next(s for s in project.sources if s.name == "r1")
    assert f"internal://{r1.guid}.txt" in qde
    assert f"sources/{r1.guid}.txt" in names
    assert {(c.start, c.end) for c in r1.codings} == {(0, len(UNICODE))}
    # workload (4 of 5) and team (Yes on binary) apply; pay (2 of 5) does not: a coding
    # of its "does not apply" twin, with the value.
    codes = {c.guid: c.name for c, _ in project.all_codes()}
    assert sorted((codes[c.code_guid], c.description) for c in r1.codings) == [
        ("Pay (does not apply)", "value 2 on scale 1-5 (barely applies)"),
        ("Team", ""),
        ("Workload", "value 4 on scale 1-5 (mostly applies)"),
    ]
    assert {u.name for u in project.users} == {"alice"}
    variables = {v.name: v.type for v in project.variables}
    assert variables == {"age": "Integer", "dept": "Text", "score": "Float", "remote": "Boolean"}
    assert len(project.cases) == 5


def test_final_decisions_credit_the_model(
    rich_study: Study, tmp_path: Path, config: ScoreConfig
) -> None:
    config_id = rich_study.scores.ensure_config(config)
    pairs = rich_study.scores.pending_pairs(config_id)
    rich_study.scores.store(config_id, [synthetic_score(p, config) for p in pairs])
    # Two coders are never mixed pair by pair: each is a user of their own by default.
    apart = project_from_study(rich_study)
    assert sorted(u.name for u in apart.users) == ["alice", "bob"]
    for response_id, code_id in [
        ("r1", "workload"),
        ("r1", "pay"),
        ("r1", "team"),
        ("r2", "workload"),
    ]:
        rich_study.decisions.clear(response_id, code_id, coder="alice")
    project = project_from_study(rich_study)
    valid(project_bytes(project))
    users = {u.guid: u.name for u in project.users}
    model = [name for name in users.values() if name.startswith("model ")]
    assert model == ["model fake:test (fake; test-v1, context definition)"]
    r10 = next(s for s in project.sources if s.name == "r10")
    team = [c for c in r10.codings if "accepted by bob" in c.description]
    assert team
    assert users[team[0].user_guid or ""] == model[0]
    provenance = next(n for n in project.notes if n.name == "codecurve provenance")
    assert provenance.guid in project.project_notes
    assert "fake:test" in provenance.text


def test_coder_and_all_coders_are_exclusive(rich_study: Study) -> None:
    with pytest.raises(ProjectFileError, match="not both"):
        project_from_study(rich_study, coder="alice", all_coders=True)
    with pytest.raises(ProjectFileError, match="no decisions by coder"):
        project_from_study(rich_study, coder="carol")


def test_lone_qde_holds_texts_inline(rich_study: Study, tmp_path: Path) -> None:
    path = write_qde(project_from_study(rich_study, all_coders=True), tmp_path / "p.qde")
    valid(path.read_bytes())
    project, report = read_project(path)
    assert not report
    assert next(s.text for s in project.sources) == UNICODE


def test_a_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    project = Project(name="p", sources=(TextSource("s", "name", "text"),))
    target = tmp_path / "out.qdpx"
    calls: list[int] = []

    def full(fd: int) -> None:  # the disk fills as the temporary is flushed
        calls.append(fd)
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr("codebooks.files.os.fsync", full)
        with pytest.raises(ProjectFileError, match="No space left"):
            write_qdpx(project, target)
    assert calls
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ProjectFileError, match="does not exist"):
        write_qdpx(Project(name="p"), tmp_path / "missing" / "out.qdpx")


def test_ids_that_are_not_guids_become_guids() -> None:
    project = Project(
        name="p",
        users=(User("u1", "Ann"),),
        codes=(ProjectCode("c1", "Code", color="#ABC"),),
        sources=(
            TextSource(
                "s1",
                "one",
                "text",
                codings=(Coding("k1", "sel1", "c1", 0, 4, user_guid="u1"),),
            ),
        ),
        notes=(Note("n1", "memo", "hello", user_guid="u1", targets=("s1",)),),
        project_notes=("n1",),
    )
    valid(project_bytes(project))
    valid(project_bytes(project, inline_text=True))


# --- generated projects --------------------------------------------------------------------

_text = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\r"), max_size=40
).filter(lambda t: not any(ord(c) < 32 and c not in "\t\n" for c in t))
_name = _text.map(str.strip).filter(bool)


@st.composite
def studies(draw: st.DrawFn) -> tuple[ResponseTable, Codebook, list[tuple[str, str, int, str]]]:
    names = draw(st.lists(_name, min_size=1, max_size=4, unique_by=str.casefold))
    scale = draw(st.sampled_from([BINARY, LIKERT_5]))
    codes = tuple(
        Code(f"c{i}", name, definition=draw(_text), color=draw(st.sampled_from([None, "#aBc123"])))
        for i, name in enumerate(names)
    )
    texts = draw(st.lists(_name, min_size=1, max_size=4))
    attrs = st.dictionaries(
        st.sampled_from(["age", "group"]),
        st.one_of(st.integers(-(10**6), 10**6), _name),
        max_size=2,
    )
    rows = tuple(Response(f"r{i}", text, draw(attrs)) for i, text in enumerate(texts))
    decisions = draw(
        st.lists(
            st.tuples(
                st.sampled_from([r.id for r in rows]),
                st.sampled_from([c.id for c in codes]),
                st.sampled_from(list(scale.values)),
                st.sampled_from(["alice", "bob ✓"]),
            ),
            max_size=8,
            unique_by=lambda d: (d[0], d[1], d[3]),
        )
    )
    return ResponseTable(responses=rows), Codebook("gen", codes, scale=scale), decisions


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(studies())
def test_generated_studies_validate_and_round_trip(
    tmp_path_factory: pytest.TempPathFactory,
    generated: tuple[ResponseTable, Codebook, list[tuple[str, str, int, str]]],
) -> None:
    responses, codebook, decisions = generated
    folder = tmp_path_factory.mktemp("gen")
    with Study.create(folder / "g.codecurve", responses=responses, codebook=codebook) as s:
        for response_id, code_id, value, coder in decisions:
            s.decisions.record(response_id, code_id, value, coder=coder)
        expected = decisions_of(s)
        path = write_qdpx(project_from_study(s, all_coders=True), folder / "g.qdpx")
    valid(qde_of(path))
    project, _ = read_project(path)
    inputs = study_inputs_from_project(project)
    assert inputs.codebook == codebook
    got = {
        coder: {(d.response_id, d.code_id, d.value) for d in items}
        for coder, items in inputs.decisions.items()
    }
    assert got == {k: v for k, v in expected.items() if v}


# --- generated projects: the writer's output is valid and reads back the same ---------------

_guid = st.uuids().map(str)
_any_text = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=30
).filter(lambda t: not any(ord(c) < 32 and c not in "\t\n\r" for c in t))


@st.composite
def code_trees(draw: st.DrawFn, depth: int = 0) -> ProjectCode:
    children = draw(st.lists(code_trees(depth + 1), max_size=2)) if depth < 7 else []
    return ProjectCode(
        guid=draw(_guid),
        name=draw(_name),
        color=draw(st.sampled_from([None, "#A1b2C3", "#abc"])),
        description=draw(_any_text),
        codable=draw(st.booleans()),
        children=tuple(children),
    )


@st.composite
def projects(draw: st.DrawFn) -> Project:
    users = tuple(User(draw(_guid), draw(_name)) for _ in range(draw(st.integers(0, 2))))
    codes = tuple(draw(st.lists(code_trees(), min_size=1, max_size=2)))
    code_guids = [c.guid for c, _ in Project("x", codes=codes).all_codes()]
    kinds: dict[str, st.SearchStrategy[str | bool | int | float | None]] = {
        "Text": _any_text,
        "Integer": st.integers(-(10**12), 10**12),
        "Float": st.floats(allow_nan=False, allow_infinity=False, width=64),
        "Boolean": st.booleans(),
    }
    variables = tuple(
        Variable(draw(_guid), f"v{i}", kind)
        for i, kind in enumerate(draw(st.lists(st.sampled_from(sorted(kinds)), max_size=3)))
    )
    sources = []
    for i in range(draw(st.integers(1, 3))):
        text = draw(_any_text)
        codings = tuple(
            Coding(
                draw(_guid),
                draw(_guid),
                draw(st.sampled_from(code_guids)),
                0,
                len(text),
                user_guid=draw(st.sampled_from([None, *[u.guid for u in users]])),
                description=draw(_any_text),
            )
            for _ in range(draw(st.integers(0, 2)))
        )
        values = tuple((v.guid, draw(kinds[v.type])) for v in variables)
        sources.append(TextSource(draw(_guid), f"s{i} {draw(_name)}", text, codings, values))
    notes = tuple(
        Note(
            draw(_guid),
            draw(_name),
            draw(_any_text),
            user_guid=None if not users else users[0].guid,
            targets=(draw(st.sampled_from([s.guid for s in sources])),),
        )
        for _ in range(draw(st.integers(0, 2)))
    )
    return Project(
        name=draw(_name),
        users=users,
        codes=codes,
        variables=variables,
        cases=tuple(
            Case(draw(_guid), s.name, (s.guid,), s.values) for s in sources[:1] if variables
        ),
        sources=tuple(sources),
        notes=notes,
        description=draw(_any_text),
        origin="test",
    )


@settings(max_examples=30, deadline=None)
@given(projects(), st.booleans())
def test_generated_projects_are_valid_and_read_back(project: Project, zipped: bool) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("p.qdpx" if zipped else "p.qde")
        (write_qdpx if zipped else write_qde)(project, path)
        valid(qde_of(path) if zipped else path.read_bytes())
        back, report = read_project(path)
    assert not report, report.summary()
    assert back == project


def test_provenance_note_names_the_screen_tier_per_coder(tmp_path: Path) -> None:
    from tests.factories import build_study

    study = build_study(tmp_path / "scored.codecurve", n=30)
    with study:
        for i, response_id in enumerate(study.response_ids()[:20]):
            study.decisions.record(response_id, "pay", i % 2, coder="ann")
            study.decisions.record(response_id, "workload", 1, coder="bob")
        both = project_from_study(study, all_coders=True)
        one = project_from_study(study, coder="ann")
    text = next(n.text for n in both.notes if n.name == "codecurve provenance")
    assert "screen tier against ann: " in text
    assert "screen tier against bob: " in text
    assert "; Pay: response pattern: " in text
    text = next(n.text for n in one.notes if n.name == "codecurve provenance")
    assert "screen tier against ann: " in text
    assert "screen tier against bob" not in text
    valid(project_bytes(both))


def flags(study: Study) -> dict[tuple[str, str, str], tuple[bool, str]]:
    """(response, code, coder) -> (blind, source) of every decision."""
    with study.snapshot() as conn:
        rows = conn.execute("SELECT rid, cid, coder, blind, source FROM annotations").fetchall()
    return {
        (study.index.response_id(r), study.index.code_at(c).id, w): (bool(b), s)
        for r, c, w, b, s in rows
    }


def test_round_trip_keeps_blind_flags_sources_and_the_audit_sample(
    rich_study: Study, tmp_path: Path, config: ScoreConfig
) -> None:
    from study.refi import create_from_project, export_project

    config_id = rich_study.scores.ensure_config(config)
    pairs = rich_study.scores.pending_pairs(config_id)
    rich_study.scores.store(config_id, [synthetic_score(p, config) for p in pairs])
    sample = rich_study.audit.draw(per_code=3, seed=11)
    first = sample.pairs("pay")[0]
    rich_study.decisions.record(first, "pay", 4, coder="alice", blind=True)
    # alice's others were decided seeing the model; bob's accepted pick stays a pick.
    before = flags(rich_study)
    assert {b for b, _s in before.values()} == {True, False}
    project = export_project(rich_study, tmp_path / "p.qdpx", all_coders=True)
    made, report = create_from_project(tmp_path / "back.codecurve", project)
    with made:
        assert flags(made) == before
        back = made.audit.sample()
        assert back is not None
        assert back.seed == sample.seed
        assert back.permutation == sample.permutation
        assert dict(back.sizes) == dict(sample.sizes)
        assert made.audit.blind_pairs(coder="alice") == {(first, "pay", "alice")}
    assert any("audit sample is restored" in m for m in report.messages)
