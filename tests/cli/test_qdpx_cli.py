"""REFI-QDA projects from the command line: export --project, new --project, import-codes.

Every refusal is one line, exit status 1 (2 for a wrong command line), and leaves the
folder exactly as it was: no half-made study, no temporary file, no partial project.
"""

from __future__ import annotations

import sqlite3
import zipfile
from pathlib import Path

import pytest
import xmlschema

from study import Study, StudyError
from study.log.decisions import Decisions
from study.refi import read_project
from tests.cli.test_safety import needs_mounts, one_error_line, run_mounted
from tests.study.test_qdpx_import import NVIVO, qdpx
from tui.cli import main

SCHEMA = xmlschema.XMLSchema(str(Path(__file__).parents[1] / "study" / "data" / "Project.xsd"))

CODEBOOK = """\
name: Working life
scale: 1-5
codes:
  - name: Pay
    definition: Money matters.
  - name: Team
    definition: Colleagues.
  - name: Hours
    definition: Time at work.
    scale: binary
"""

LONG = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 120


def folder_state(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder``: bytes and modification time."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def place(tmp_path: Path) -> Path:
    (tmp_path / "answers.csv").write_text(
        "id,text,site,age\n"
        'r1,"Too many hours, 😀 שלום",North,34\n'
        "r2,The pay is fine.,South,51\n"
        f'r3,"{LONG}",North,\n'
        "r10,Great colleagues.,East,29\n",
        encoding="utf-8",
    )
    (tmp_path / "codes.yaml").write_text(CODEBOOK, encoding="utf-8")
    (tmp_path / "alice.csv").write_text("id,Pay,Team,Hours\nr1,4,1,1\nr2,2,5,0\n", "utf-8")
    (tmp_path / "bob.csv").write_text("id,Pay,Team,Hours\nr1,5,2,1\nr3,1,5,0\n", "utf-8")
    return tmp_path


@pytest.fixture
def coded(place: Path) -> Path:
    """A study with two coders' decisions and notes."""
    study = place / "s.codecurve"
    new = ["new", str(study), "--responses", str(place / "answers.csv")]
    assert main([*new, "--codebook", str(place / "codes.yaml")]) == 0
    for coder in ("alice", "bob"):
        assert (
            main(["import-codes", str(study), str(place / f"{coder}.csv"), "--coder", coder]) == 0
        )
    with Study.open(study) as opened:
        opened.decisions.set_note("r1", "pay", "long shifts, 😀 <b>", coder="alice")
        opened.decisions.set_note("r3", "team", "see the canteen", coder="bob")
    return study


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


def notes_of(study: Study) -> set[tuple[str, str, str, str]]:
    return {
        (r, c, who, study.decisions.note(r, c, coder=who) or "")
        for r in study.response_ids()
        for c in (code.id for code in study.codes)
        for who in study.decisions.coders()
        if study.decisions.note(r, c, coder=who)
    }


def valid(path: Path) -> None:
    if path.suffix == ".qde":
        SCHEMA.validate(path.read_text(encoding="utf-8"))
        return
    with zipfile.ZipFile(path) as archive:
        SCHEMA.validate(archive.read("project.qde").decode("utf-8"))


# --- the round trip --------------------------------------------------------------------


def test_round_trip_through_a_project(
    coded: Path, place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = place / "out.qdpx"
    assert main(["export", str(coded), "--project", str(project), "--all-coders"]) == 0
    assert "every coder's decisions" in capsys.readouterr().err
    valid(project)
    again = place / "again.codecurve"
    assert main(["new", str(again), "--project", str(project)]) == 0
    err = capsys.readouterr().err
    assert "alice 6 decisions" in err
    assert "bob 6 decisions" in err
    assert "2 notes" in err
    with Study.open(coded, read_only=True) as before, Study.open(again, read_only=True) as after:
        assert after.codebook == before.codebook
        assert [(r.id, r.text) for r in after.responses()] == [
            (r.id, r.text) for r in before.responses()
        ]
        assert [dict(r.attrs) for r in after.responses()] == [
            {k: v for k, v in r.attrs.items() if v is not None} for r in before.responses()
        ]
        assert decisions_of(after) == decisions_of(before)
        assert notes_of(after) == notes_of(before)
        assert len(notes_of(after)) == 2
    # A second export of the re-made study validates too, and so does a .qde of one coder.
    assert main(["export", str(again), "--project", str(place / "bob.qde"), "--coder", "bob"]) == 0
    valid(place / "bob.qde")
    project_read, _ = read_project(place / "bob.qde")
    assert {u.name for u in project_read.users} == {"bob"}


def test_accepted_picks_stay_accepted_through_a_project(coded: Path, place: Path) -> None:
    """A decision the coder accepted from the model comes back as one (not as the coder's
    own, and not blind); the coder's own decisions come back blind when they were made
    blind, and not blind when made seeing the model."""
    with Study.open(coded) as study:
        study.decisions.record("r2", "hours", 1, coder="carol", source="model")
        study.decisions.record("r3", "hours", 0, coder="carol", blind=True)
        study.decisions.record("r1", "hours", 0, coder="carol")
    project = place / "accepted.qdpx"
    assert main(["export", str(coded), "--project", str(project), "--all-coders"]) == 0
    again = place / "accepted.codecurve"
    assert main(["new", str(again), "--project", str(project)]) == 0
    with Study.open(again, read_only=True) as after:
        carol = after.queries.annotated_pairs(None, coder="carol")
        sources = dict(zip(carol["response_id"], carol["source"], strict=True))
        assert sources == {"r1": "human", "r2": "model", "r3": "human"}
        blind = after.audit.blind_pairs(coder="carol")
        assert ("r3", "hours", "carol") in blind
        assert ("r2", "hours", "carol") not in blind
        assert ("r1", "hours", "carol") not in blind  # seen the model: stays so
    # import-codes of the same project into another study keeps it too.
    other = place / "other.codecurve"
    new = ["new", str(other), "--responses", str(place / "answers.csv")]
    assert main([*new, "--codebook", str(place / "codes.yaml")]) == 0
    assert (
        main(["import-codes", str(other), str(project), "--coder", "carol", "--user", "carol"]) == 0
    )
    with Study.open(other, read_only=True) as imported:
        frame = imported.queries.annotated_pairs(None, coder="carol")
        assert dict(zip(frame["response_id"], frame["source"], strict=True)) == {
            "r1": "human",
            "r2": "model",
            "r3": "human",
        }


def test_exports_of_one_study_keep_their_guids(coded: Path, place: Path) -> None:
    one, two = place / "one.qdpx", place / "two.qdpx"
    assert main(["export", str(coded), "--project", str(one)]) == 0
    assert main(["export", str(coded), "--project", str(two)]) == 0
    first, _ = read_project(one)
    second, _ = read_project(two)
    assert [s.guid for s in first.sources] == [s.guid for s in second.sources]
    assert [c.guid for c, _ in first.all_codes()] == [c.guid for c, _ in second.all_codes()]


def test_import_codes_from_a_project_of_another_tool(
    coded: Path, place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = place / "out.qdpx"
    assert main(["export", str(coded), "--project", str(project), "--coder", "alice"]) == 0
    assert main(["import-codes", str(coded), str(project), "--coder", "carol"]) == 0
    assert "imported 6 decisions by 'carol'" in capsys.readouterr().out
    with Study.open(coded, read_only=True) as study:
        got = decisions_of(study)
    assert got["carol"] == got["alice"]
    assert notes_of_coder(coded, "carol") == {("r1", "pay", "long shifts, 😀 <b>")}


def notes_of_coder(study_path: Path, coder: str) -> set[tuple[str, str, str]]:
    with Study.open(study_path, read_only=True) as study:
        return {(r, c, t) for r, c, who, t in notes_of(study) if who == coder}


def test_a_project_of_several_users_needs_one_chosen(
    coded: Path, place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = place / "out.qdpx"
    assert main(["export", str(coded), "--project", str(project), "--all-coders"]) == 0
    capsys.readouterr()
    before = folder_state(place)
    argv = ["import-codes", str(coded), str(project), "--coder", "carol"]
    assert main(argv) == 1
    line = one_error_line(capsys.readouterr().err)
    assert "alice, bob" in line
    assert "--user" in line
    assert main([*argv, "--user", "zed"]) == 1
    assert "no codings by user 'zed' (users: alice, bob)" in one_error_line(capsys.readouterr().err)
    assert folder_state(place) == before
    assert main([*argv, "--user", "bob"]) == 0
    with Study.open(coded, read_only=True) as study:
        got = decisions_of(study)
    assert got["carol"] == got["bob"]


# --- refusals: one line, nothing written -----------------------------------------------


def refused(
    argv: list[str], folder: Path, capsys: pytest.CaptureFixture[str], *, status: int = 1
) -> str:
    capsys.readouterr()
    before = folder_state(folder)
    assert main(argv) == status
    line = one_error_line(capsys.readouterr().err)
    assert folder_state(folder) == before
    return line


@pytest.mark.parametrize(
    ("entries", "words"),
    [
        ({"project.qde": NVIVO, "../evil.txt": "x"}, "zip slip"),
        ({"project.qde": NVIVO, "/etc/evil.txt": "x"}, "zip slip"),
        ({"project.qde": NVIVO, "sources/z.txt": b"\0" * 5_000_000}, "zip bomb"),
        ({"project.qde": "<Project name='x'><Sources>"}, "XML"),
        (
            {
                "project.qde": '<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaa">'
                '<!ENTITY b "&a;&a;&a;&a;">]><Project name="&b;"/>'
            },
            "DTD or entities",
        ),
        ({"readme.txt": "hi"}, ".qde"),
    ],
    ids=["zip-slip", "absolute", "bomb", "not-xml", "entities", "no-project"],
)
def test_new_refuses_a_bad_project(
    place: Path, capsys: pytest.CaptureFixture[str], entries: dict[str, str | bytes], words: str
) -> None:
    project = qdpx(place / "bad.qdpx", entries)
    line = refused(["new", str(place / "s.codecurve"), "--project", str(project)], place, capsys)
    assert words in line
    assert str(project) in line


def test_new_refuses_files_that_are_no_project(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (place / "text.qdpx").write_text("just text", encoding="utf-8")
    (place / "broken.qde").write_bytes(b"\x00\x01 not xml")
    for name in ("text.qdpx", "broken.qde", "missing.qdpx"):
        line = refused(
            ["new", str(place / "s.codecurve"), "--project", str(place / name)], place, capsys
        )
        assert name in line


def test_new_never_replaces_a_study(
    coded: Path, place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = place / "out.qdpx"
    assert main(["export", str(coded), "--project", str(project)]) == 0
    line = refused(["new", str(coded), "--project", str(project)], place, capsys)
    assert "already exists" in line
    line = refused(["new", str(project), "--project", str(project)], place, capsys)
    assert "project file" in line


def test_a_failure_while_filling_leaves_no_study(
    coded: Path, place: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = place / "out.qdpx"
    assert main(["export", str(coded), "--project", str(project), "--all-coders"]) == 0
    calls = []

    def fail(self: Decisions, items: object, **kwargs: object) -> None:
        calls.append(kwargs["coder"])
        if len(calls) == 2:
            raise StudyError("the second coder fails")

    monkeypatch.setattr(Decisions, "import_decisions", fail)
    line = refused(["new", str(place / "new.codecurve"), "--project", str(project)], place, capsys)
    assert "the second coder fails" in line
    assert calls == ["alice", "bob"]


def test_export_refusals(coded: Path, place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(place / "out.qdpx")
    line = refused(["export", str(coded), "--project", out, "--coder", "zed"], place, capsys)
    assert "'alice', 'bob'" in line
    line = refused(["export", str(coded), "--project", str(coded)], place, capsys, status=2)
    assert ".codecurve" in line
    line = refused(
        ["export", str(coded), "--project", str(place / "x.zip")], place, capsys, status=2
    )
    assert ".qdpx" in line
    line = refused(["export", str(coded), "-o", out + ".csv"], place, capsys, status=2)
    assert "2 coders ('alice', 'bob')" in line  # never the latest decision of any coder
    assert not (place / "out.qdpx.csv").exists()
    argv = ["export", str(coded), "--project", out, "--all-coders", "--coder", "bob"]
    assert "not both" in refused(argv, place, capsys, status=2)
    (place / "other.qde").write_text("<x/>", encoding="utf-8")
    study_copy = place / "copy.qdpx"
    study_copy.write_bytes(coded.read_bytes())  # a study under a project's name
    assert "study" in refused(["export", str(coded), "--project", str(study_copy)], place, capsys)


def test_new_command_line_mistakes(place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    study = str(place / "s.codecurve")
    project = str(qdpx(place / "p.qdpx", {"project.qde": NVIVO}))
    line = refused(["new", study], place, capsys, status=2)
    assert "--responses and --codebook" in line
    assert "--project" in line
    argv = ["new", study, "--project", project, "--responses", str(place / "answers.csv")]
    assert "drop --responses" in refused(argv, place, capsys, status=2)
    argv = ["import-codes", study, str(place / "alice.csv"), "--coder", "a", "--user", "b"]
    (place / "s.codecurve").write_bytes(b"")  # exists, so that the options are checked
    assert ".qdpx" in refused(argv, place, capsys, status=2)


# --- the study UUID and a full disk ----------------------------------------------------


def test_a_study_stores_its_uuid_and_old_ones_keep_their_guids(coded: Path, place: Path) -> None:
    with Study.open(coded, read_only=True) as study:
        meta = study.meta()
    assert len(meta["study_uuid"]) == 36
    # An older study, made before the UUID was stored, exports under the same GUIDs
    # before and after it is opened for writing (which writes the UUID down).
    with sqlite3.connect(coded) as conn:
        conn.execute("DELETE FROM meta WHERE key = 'study_uuid'")
    conn.close()
    assert main(["export", str(coded), "--project", str(place / "old.qdpx")]) == 0
    with Study.open(coded, read_only=True) as study:
        assert "study_uuid" not in study.meta()
    with Study.open(coded) as study:
        assert "study_uuid" in study.meta()
    assert main(["export", str(coded), "--project", str(place / "upgraded.qdpx")]) == 0
    old, _ = read_project(place / "old.qdpx")
    upgraded, _ = read_project(place / "upgraded.qdpx")
    assert [s.guid for s in old.sources] == [s.guid for s in upgraded.sources]


def test_two_studies_of_the_same_moment_get_different_guids(place: Path) -> None:
    sources = ["--responses", str(place / "answers.csv"), "--codebook", str(place / "codes.yaml")]
    guids = []
    for name in ("a", "b"):
        assert main(["new", str(place / f"{name}.codecurve"), *sources]) == 0
        assert (
            main(
                [
                    "export",
                    str(place / f"{name}.codecurve"),
                    "--project",
                    str(place / f"{name}.qdpx"),
                ]
            )
            == 0
        )
        project, _ = read_project(place / f"{name}.qdpx")
        guids.append({s.guid for s in project.sources})
    assert not guids[0] & guids[1]


def test_new_into_a_full_disk_names_the_real_reason(
    place: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite rolls back itself when the disk fills; the failing ROLLBACK after it must not
    hide the reason."""
    from study.file import schema

    real = schema.initialise

    def full(conn: sqlite3.Connection) -> None:
        real(conn)
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError:
            raise sqlite3.OperationalError("cannot rollback - no transaction is active") from None

    monkeypatch.setattr(schema, "initialise", full)
    sources = ["--responses", str(place / "answers.csv"), "--codebook", str(place / "codes.yaml")]
    line = refused(["new", str(place / "s.codecurve"), *sources], place, capsys)
    assert "database or disk is full" in line
    assert "rollback" not in line


@needs_mounts
@pytest.mark.parametrize("fill", [False, True], ids=["nearly-full", "full"])
def test_new_on_a_real_full_file_system(place: Path, fill: bool) -> None:
    target = place / "tiny"
    target.mkdir()
    sources = ["--responses", str(place / "answers.csv"), "--codebook", str(place / "codes.yaml")]
    proc = run_mounted(["new", str(target / "s.codecurve"), *sources], full=target, fill=fill)
    assert proc.returncode == 1, proc.stderr
    line = one_error_line(proc.stderr)
    assert "full" in line.lower() or "no space" in line.lower(), line
    assert "rollback" not in line
    assert [n for n in proc.stdout.split() if n != "fill"] == []


def test_export_never_replaces_the_project_a_study_was_made_from(
    coded: Path, place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pictures, sets and links a QDA program keeps in the project would be lost."""
    project = place / "from-tool.qdpx"
    assert main(["export", str(coded), "--project", str(project), "--all-coders"]) == 0
    made = place / "made.codecurve"
    assert main(["new", str(made), "--project", str(project)]) == 0
    link = place / "link.qdpx"
    link.symlink_to(project)
    before = (project.read_bytes(), project.stat().st_mtime_ns)
    for target in (project, link, place / "." / project.name):
        argv = ["export", str(made), "--project", str(target), "--all-coders"]
        capsys.readouterr()
        assert main(argv) == 1
        line = one_error_line(capsys.readouterr().err)
        assert f"refusing to overwrite the study's project {project.absolute()}" in line
        assert (project.read_bytes(), project.stat().st_mtime_ns) == before
    # Another name is written as ever.
    assert main(["export", str(made), "--project", str(place / "next.qdpx"), "--all-coders"]) == 0
    # The app's export goes through the same functions: refused there too.
    from study.errors import ProjectFileError, StudyError
    from study.exchange.export import export_study
    from study.refi import export_project

    refusal = pytest.raises(ProjectFileError, match="refusing to overwrite")
    with Study.open(made, read_only=True) as study, refusal:
        export_project(study, project, all_coders=True)
    csv_made = place / "csv.codecurve"
    new = ["new", str(csv_made), "--responses", str(place / "answers.csv")]
    assert main([*new, "--codebook", str(place / "codes.yaml")]) == 0
    refused_too = pytest.raises(StudyError, match="refusing to overwrite")
    with Study.open(csv_made, read_only=True) as study, refused_too:
        export_study(study, place / "answers.csv")


def test_an_import_stopped_while_storing_notes_stores_nothing_and_a_rerun_is_honest(
    coded: Path, place: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decisions and notes are one transaction: a process stopped (here: interrupted)
    as the notes are written leaves neither; run again, it stores both, and a third
    run says the decisions are already there and stores no note again."""
    from study.log import decision_log

    project = place / "out.qdpx"
    assert main(["export", str(coded), "--project", str(project), "--coder", "alice"]) == 0
    original = decision_log.apply_event

    def stopped(*args: object, **kwargs: object) -> object:
        if kwargs.get("sets_note"):
            raise KeyboardInterrupt  # stands for the kill, once the decisions are written
        return original(*args, **kwargs)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(decision_log, "apply_event", stopped)
        assert main(["import-codes", str(coded), str(project), "--coder", "carol"]) == 130
    with Study.open(coded, read_only=True) as study:
        assert "carol" not in decisions_of(study)
        before = len(study.decisions.events())
    assert notes_of_coder(coded, "carol") == set()
    capsys.readouterr()
    assert main(["import-codes", str(coded), str(project), "--coder", "carol"]) == 0
    assert "imported 6 decisions by 'carol' from the project and 1 note\n" in (
        capsys.readouterr().out
    )
    assert main(["import-codes", str(coded), str(project), "--coder", "carol"]) == 0
    out = capsys.readouterr().out
    assert "imported 0 decisions by 'carol' from the project; 6 already there as given" in out
    with Study.open(coded, read_only=True) as study:
        assert len(study.decisions.events()) == before + 6 + 1  # nothing twice
    assert notes_of_coder(coded, "carol") == {("r1", "pay", "long shifts, 😀 <b>")}


def test_a_source_whose_text_differs_from_its_response_is_counted(
    coded: Path, place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = place / "out.qdpx"
    assert main(["export", str(coded), "--project", str(project), "--coder", "alice"]) == 0
    with zipfile.ZipFile(project) as archive:
        entries = {n: archive.read(n) for n in archive.namelist()}
    changed = 0
    for name in [n for n in entries if n.startswith("sources/")][:2]:
        entries[name] = b"A text the coder of the study never saw."
        changed += 1
    edited = place / "edited.qdpx"
    with zipfile.ZipFile(edited, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    capsys.readouterr()
    assert main(["import-codes", str(coded), str(edited), "--coder", "carol"]) == 0
    err = capsys.readouterr().err
    assert f"{changed} source(s) hold another text than the response of the same name" in err
    capsys.readouterr()
    assert main(["import-codes", str(coded), str(project), "--coder", "dan"]) == 0
    assert "another text" not in capsys.readouterr().err  # the same texts: not a word
