"""A team on one study at once, with real processes: eight coders deciding, undoing and
noting at random, a lead delegating and revising the codebook mid-way, one coder killed
with SIGKILL; afterwards nothing any session reported as saved is missing or misfiled.

The random schedule: coder ``k`` of seed ``s`` draws its actions from
``random.Random(1000 * s + k)``; the operating system interleaves the eight processes
differently on every run, so each run is one more draw of the schedules. CI runs seed 1 at
:data:`ACTIONS` actions per coder (about 2,000 actions in all, under a minute on two
cores); ``CODECURVE_TEAM_SEEDS=1,2,3,...`` and ``CODECURVE_TEAM_ACTIONS`` run more.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from study import Study, StudyChangedError, StudyError, StudyLockedError
from study.file import locking
from tests.cli.test_safety import needs_mounts
from tests.factories import build_study
from tests.study.test_audit import code_audit_blind, simulated_study

ROOT = Path(__file__).resolve().parents[2]
CODERS = 8
ACTIONS = int(os.environ.get("CODECURVE_TEAM_ACTIONS", "250"))
SEEDS = [int(s) for s in os.environ.get("CODECURVE_TEAM_SEEDS", "1").split(",")]
#: The coder killed with SIGKILL once it has saved half its actions.
KILLED = 3


def spawn(*args: object) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.study.team_worker", *map(str, args)],
        env=env,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )


def lines(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    # A line cut short by the kill was never reported as saved: it is not counted.
    out = []
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, truth = simulated_study(tmp_path_factory.mktemp("team") / "team.codecurve", n=400)
    with Study.open(path) as study:
        study.audit.draw(per_code=120, seed=5)
        code_audit_blind(study, truth)
    return path


@pytest.mark.parametrize("seed", SEEDS)
def test_eight_coders_a_lead_and_a_kill(audited: Path, tmp_path: Path, seed: int) -> None:
    path = tmp_path / audited.name
    path.write_bytes(audited.read_bytes())
    with Study.open(path, read_only=True) as reader:
        base = int(reader.query().__enter__().execute("SELECT COUNT(*) FROM events").fetchone()[0])
    logs = [tmp_path / f"c{k}.jsonl" for k in range(CODERS)]
    total = CODERS * ACTIONS
    # Records come from about 60% of the actions; the lead acts a third and two thirds in.
    records_before = 240  # the audit's blind decisions
    lead_log = tmp_path / "lead.json"
    lead = spawn("lead", path, lead_log, records_before + total // 6, records_before + total // 3)
    ready = lead_log.with_suffix(".ready")
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert lead.poll() is None, lead.stderr.read()  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.01)
    coders = [
        spawn("coder", path, f"c{k}", 1000 * seed + k, ACTIONS, logs[k]) for k in range(CODERS)
    ]
    deadline = time.monotonic() + 120
    while len(lines(logs[KILLED])) < ACTIONS // 2:
        assert coders[KILLED].poll() is None, coders[KILLED].stderr.read()  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.01)
    os.kill(coders[KILLED].pid, signal.SIGKILL)
    for k, proc in enumerate(coders):
        _, err = proc.communicate(timeout=180)
        if k != KILLED:
            assert proc.returncode == 0, err.decode()
    _, err = lead.communicate(timeout=180)
    assert lead.returncode == 0, err.decode()
    assert coders[KILLED].returncode == -signal.SIGKILL
    done = json.loads(lead_log.read_text(encoding="utf-8"))
    assert done["delegated"] > 0
    assert done["version"] == 2

    # The killed coder's session did not outlive it: the coder opens the study again.
    with Study.open(path, coder=f"c{KILLED}") as again:
        assert again.coder == f"c{KILLED}"

    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        events = {
            row[0]: row[1:]
            for row in con.execute(
                "SELECT id, kind, coder, rid, cid, value, note, undoes, codebook_version "
                "FROM events WHERE id > ?",
                (base,),
            )
        }
        rid_of = dict(con.execute("SELECT id, rid FROM responses"))
        cid_of = dict(con.execute("SELECT id, cid FROM codes"))
        hashes = dict(con.execute("SELECT version, hash FROM codebook_versions"))
        revision = con.execute("SELECT MAX(id) FROM events WHERE kind = 'codebook'").fetchone()[0]
        undone_by = {row[6]: (eid, row[1]) for eid, row in events.items() if row[0] == "undo"}
        pay = cid_of["pay"]
        # No decision, clearing or note for the archived code after its revision.
        late = [
            e for e, row in events.items() if e > revision and row[3] == pay and row[0] != "undo"
        ]
        assert late == []
        owners = con.execute(
            "SELECT COUNT(*) FROM annotations a JOIN events e ON e.id = a.event_id "
            "WHERE e.coder != a.coder"
        ).fetchone()[0]
        assert owners == 0
    finally:
        con.close()

    saved = refused = 0
    for k, log in enumerate(logs):
        name = f"c{k}"
        for entry in lines(log):
            if entry["kind"] == "refused":
                refused += 1
                continue
            saved += 1
            event = events.get(int(entry["id"]))  # type: ignore[call-overload]
            assert event is not None, entry
            kind, who, rid, cid, value, note, _, version = event
            assert who == name, (entry, event)
            if entry["kind"] == "undo":
                # The undone event was this coder's own, and its undo is there, by them.
                assert int(entry["id"]) in undone_by, entry  # type: ignore[call-overload]
                assert undone_by[int(entry["id"])][1] == name  # type: ignore[call-overload]
                continue
            assert kind == entry["kind"]
            assert (rid, cid) == (rid_of[entry["rid"]], cid_of[entry["code"]])
            if kind == "record":
                assert value == entry["value"]
            if kind == "note":
                assert note == entry["note"]
            if kind in ("record", "clear"):  # stamped with the codebook version
                # Made under the codebook the session showed, never a stale one.
                assert hashes[version] == entry["codebook"], entry
    assert saved > total // 2
    # Every undo, anyone's, took back its own coder's work.
    for undone, (_, who) in undone_by.items():
        if undone in events:
            assert events[undone][1] == who
    print(f"seed {seed}: {saved} actions saved, {refused} refused after the revision")


@needs_mounts
def test_the_disk_filling_while_three_coders_write(tmp_path: Path) -> None:
    """Each coder gets one clear message when the disk is full; nothing saved is lost."""
    source = tmp_path / "s.codecurve"
    build_study(source, n=5, scored=False).close()
    place = tmp_path / "small"
    place.mkdir()
    steps = [
        f"mount -t tmpfs -o size=600k tmpfs '{place}'",
        f"cp '{source}' '{place}/'",
        f"cd '{ROOT}' && '{sys.executable}' -m tests.study.team_worker full '{place}/s.codecurve'",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        ["unshare", "-rm", "sh", "-c", " && ".join(steps)],
        capture_output=True, text=True, env=env, timeout=180, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["saved"] > 0
    assert sorted(seen["errors"]) == ["c0", "c1", "c2"]
    for message in seen["errors"].values():
        assert message.endswith("could not save the change (database or disk is full)")
    assert seen["missing"] == []
    assert seen["check"] == []


# --- the pieces, one at a time -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("", "needs a coder's name"),
        ("   ", "needs a coder's name"),
        ("ana\nben", "control characters"),
        ("ana\x1b[2J", "control characters"),
        ("consensus", "reconciliation records"),
        ("Consensus", "reconciliation records"),
    ],
)
def test_a_bad_coder_name_is_one_clear_message(tmp_path: Path, name: str, said: str) -> None:
    path = tmp_path / "s.codecurve"
    build_study(path, n=3, scored=False).close()
    with pytest.raises(StudyError, match=said):
        Study.open(path, coder=name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.codecurve"]  # no lock left


def test_a_killed_coder_does_not_block_their_next_session(tmp_path: Path) -> None:
    path = tmp_path / "s.codecurve"
    build_study(path, n=3, scored=False).close()
    script = (
        "import sys, time; from study import Study; "
        f"s = Study.open({str(path)!r}, coder='ana'); print('open', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"open"
        with pytest.raises(StudyLockedError, match=rf"pid {proc.pid} on "):
            Study.open(path, coder="ana")
        assert [h.coder for h in locking.sessions(path)] == ["ana"]
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert locking.sessions(path) == []  # its lock file stays, but nobody holds it
    with Study.open(path, coder="ana") as again:
        assert again.coder == "ana"


def test_one_scoring_run_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "s.codecurve"
    build_study(path, n=3, scored=False).close()
    with (
        locking.ScoringLock(path, coder="ana"),
        pytest.raises(StudyLockedError, match=r"being scored in another session \(by 'ana'"),
    ):
        locking.ScoringLock(path, coder="ben").acquire()
    with locking.ScoringLock(path, coder="ben"):
        pass


def test_a_decision_prepared_on_an_older_codebook_is_refused_then_taken(tmp_path: Path) -> None:
    path = tmp_path / "s.codecurve"
    build_study(path, n=3, scored=False).close()
    with Study.open(path, coder="ana") as ana, Study.open(path, coder="lead") as lead:
        archived = ana.codes[-1].id
        kept = tuple(c for c in lead.codebook.codes if c.id != archived)
        lead.versions.revise(dataclasses.replace(lead.codebook, codes=kept))
        assert archived in {c.id for c in ana.codes}  # ana has not looked yet
        with pytest.raises(StudyChangedError, match="changed in another session"):
            ana.decisions.record("r1", archived, 1, coder="ana")
        assert ana.decisions.count() == 0
        # The refusal brought the new codebook in: the archived code is gone, others work.
        assert archived not in {c.id for c in ana.codes}
        with pytest.raises(StudyError, match=r"cannot be decided|no code"):
            ana.decisions.record("r1", archived, 1, coder="ana")
        ana.decisions.record("r1", ana.codes[0].id, 1, coder="ana")
        assert ana.decisions.count(coder="ana") == 1


def test_refresh_is_cheap_and_says_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "s.codecurve"
    build_study(path, n=3, scored=False).close()
    with Study.open(path, coder="ana") as ana, Study.open(path, coder="ben") as ben:
        assert not ana.refresh().changed
        ana.decisions.record("r1", ana.codes[0].id, 1, coder="ana")
        assert not ana.refresh().changed  # its own commit is no news
        ben.decisions.record("r1", ben.codes[0].id, 1, coder="ben")
        update = ana.refresh()
        assert update.changed
        assert not update.structure
        kept = ben.codebook.codes[:-1]
        ben.versions.revise(dataclasses.replace(ben.codebook, codes=kept))
        update = ana.refresh()
        assert update.structure
        assert ana.codebook == ben.codebook


def test_a_study_on_a_network_share_is_told_apart(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(
        "/dev/sda1 / ext4 rw 0 0\n"
        f"server:/export {tmp_path / 'share'} nfs4 rw 0 0\n"
        f"tmpfs {tmp_path / 'share' / 'local'} tmpfs rw 0 0\n",
        encoding="utf-8",
    )
    on = locking.network_file_system
    assert on(tmp_path / "share" / "s.codecurve", mounts=str(mounts)) == "nfs4"
    assert on(tmp_path / "share" / "deeper" / "s.codecurve", mounts=str(mounts)) == "nfs4"
    assert on(tmp_path / "share" / "local" / "s.codecurve", mounts=str(mounts)) is None
    assert on(tmp_path / "shared" / "s.codecurve", mounts=str(mounts)) is None
    assert on(tmp_path / "s.codecurve", mounts=str(tmp_path / "missing")) is None
