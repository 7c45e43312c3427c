"""Schema 2: an existing study upgrades in place with every row kept, and the widened
checks take the new kinds of event and source while still refusing nonsense."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from codebooks.model import Codebook
from study import ResponseTable, Study
from study.file import schema as study_schema


def _v1_study(
    path: Path, responses: ResponseTable, codebook: Codebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A version 1 study: written by today's code, then copied, column for column, into a
    file that has version 1's tables only (today's writer names columns version 1 lacks)."""
    with Study.create(path, responses=responses, codebook=codebook) as s:
        s.decisions.record("r1", "workload", 4, coder="ana")
        s.decisions.record("r2", "pay", 2, coder="ana", source="model")
        s.decisions.record("r2", "team", 1, coder="ben")
        s.decisions.set_note("r1", "workload", "long hours", coder="ana")
        s.decisions.record("r3", "pay", 5, coder="ana")
        s.decisions.undo(coder="ana")
    today = path.with_name("today.codecurve")
    path.rename(today)
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("BEGIN")
        study_schema.MIGRATIONS[1](con)
        con.execute(f"PRAGMA application_id = {study_schema.APPLICATION_ID}")
        con.execute("PRAGMA user_version = 1")
        con.execute("ATTACH DATABASE ? AS today", (str(today),))
        tables = [
            name
            for (name,) in con.execute(
                "SELECT name FROM main.sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%'"
            )
        ]
        for table in tables:  # version 1's columns of each of today's rows
            cols = ", ".join(r[1] for r in con.execute(f"PRAGMA main.table_info({table})"))
            con.execute(f"INSERT INTO main.{table} ({cols}) SELECT {cols} FROM today.{table}")
        con.execute("COMMIT")
        con.execute("DETACH DATABASE today")
        assert con.execute("PRAGMA user_version").fetchone()[0] == 1
        assert "blind" not in {r[1] for r in con.execute("PRAGMA table_info(events)")}
    finally:
        con.close()
    for leftover in today.parent.glob("today.codecurve*"):
        leftover.unlink()


def _rows(path: Path, table: str) -> list[tuple[object, ...]]:
    con = sqlite3.connect(path)
    try:
        return con.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3").fetchall()
    finally:
        con.close()


def test_a_version_1_study_upgrades_with_every_row_kept(
    tmp_path: Path, responses: ResponseTable, codebook: Codebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.codecurve"
    _v1_study(path, responses, codebook, monkeypatch)
    events, annotations, notes = (_rows(path, t) for t in ("events", "annotations", "notes"))

    with Study.open(path) as s:
        assert s.check() == []
        decision = s.decisions.decision("r1", "workload", coder="ana")
        assert decision is not None
        assert decision.value == 4
        assert s.decisions.decision("r3", "pay", coder="ana") is None
        assert s.decisions.note("r1", "workload", coder="ana") == "long hours"
        assert _rows(path, "notes") == notes
        s.decisions.record("r3", "team", 1, coder="ana")  # the upgraded tables take new rows
        s.decisions.undo(coder="ana")
        s.decisions.undo(
            coder="ana"
        )  # undo reaches past the upgrade: ana's last old event, the note
        assert s.decisions.note("r1", "workload", coder="ana") is None

    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA user_version").fetchone()[0] == study_schema.SCHEMA_VERSION
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # The first rows are the old ones, column for column, with the new columns' defaults.
        new_events = con.execute("SELECT * FROM events ORDER BY id").fetchall()
        assert [row[:18] for row in new_events[: len(events)]] == events
        assert {row[18:] for row in new_events[: len(events)]} == {(0, None, None)}
        indexes = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert {"events_by_coder", "events_by_pair", "annotations_by_code"} <= indexes
    finally:
        con.close()
    assert len(annotations) == 3


def test_the_widened_checks_take_the_new_kinds_and_refuse_others(
    tmp_path: Path, responses: ResponseTable, codebook: Codebook
) -> None:
    path = tmp_path / "new.codecurve"
    Study.create(path, responses=responses, codebook=codebook).close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA foreign_keys = ON")
    try:
        for kind in ("audit", "delegate", "setting", "codebook", "wave", "update", "activate"):
            con.execute("INSERT INTO events (at, kind) VALUES ('now', ?)", (kind,))
        with pytest.raises(sqlite3.IntegrityError):
            con.execute("INSERT INTO events (at, kind) VALUES ('now', 'bogus')")
        event = con.execute("SELECT max(id) FROM events").fetchone()[0]
        con.execute(
            "INSERT INTO annotations (rid, cid, coder, value, source, event_id, decided_at, "
            "blind) VALUES (1, 1, 'x', 1, 'delegated', ?, 'now', 1)",
            (event,),
        )
        with pytest.raises(sqlite3.IntegrityError):
            con.execute(
                "INSERT INTO annotations (rid, cid, coder, value, source, event_id, decided_at)"
                " VALUES (2, 1, 'x', 1, 'guessed', ?, 'now')",
                (event,),
            )
        with pytest.raises(sqlite3.IntegrityError):  # references are still enforced
            con.execute(
                "INSERT INTO annotations (rid, cid, coder, value, source, event_id, decided_at)"
                " VALUES (3, 1, 'x', 1, 'human', 99999, 'now')"
            )
    finally:
        con.close()


def test_a_failed_upgrade_leaves_the_study_at_version_1(
    tmp_path: Path, responses: ResponseTable, codebook: Codebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.codecurve"
    _v1_study(path, responses, codebook, monkeypatch)
    before = _rows(path, "events")

    original = study_schema.MIGRATIONS[2]

    def broken(conn: sqlite3.Connection) -> None:
        original(conn)  # the tables are rebuilt, then the disk fails before the commit
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setitem(study_schema.MIGRATIONS, 2, broken)
    with pytest.raises(Exception, match="disk I/O error"):
        Study.open(path)
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 1
        assert con.execute("SELECT * FROM events ORDER BY 1, 2, 3").fetchall() == before
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        con.close()
