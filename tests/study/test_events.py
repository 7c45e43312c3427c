"""The event log's one writer: declared kinds and columns, readers, and the one-writer rule."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from study import Study
from study.file import events
from study.file.schema import EVENT_KINDS
from study.scores import configurations
from tests.factories import likert_config

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("codebooks", "scoring", "screening", "study", "tui")
WRITER = "study/file/events.py"
_INSERT = re.compile(r"INSERT\s+(?:OR\s+\w+\s+)?INTO\s+events\b", re.IGNORECASE)


@pytest.fixture
def conn(study: Study) -> Iterator[sqlite3.Connection]:
    with study.transaction() as c:
        yield c


def _count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])


def _full_row(conn: sqlite3.Connection, kind: str) -> dict[str, Any]:
    """A value for every column ``kind`` declares, each one the foreign keys accept."""
    config_id = configurations.add_config(conn, likert_config())
    first = int(conn.execute("SELECT MIN(id) FROM events").fetchone()[0])
    values: dict[str, Any] = {
        "coder": "ana",
        "rid": 2,
        "cid": 3,
        "value": 4,
        "source": "human",
        "note": "a note",
        "sets_note": 1,
        "config_id": config_id,
        "prev_value": 2,
        "prev_source": "model",
        "prev_event": first,
        "prev_note": "the old note",
        "prev_note_event": first,
        "undoes": first,
        "detail": '{"x": 1}',
        "blind": 1,
        "batch": first,
        "codebook_version": 1,
    }
    return {column: values[column] for column in events.KINDS[kind].columns}


def test_the_declared_kinds_are_the_ones_sqlite_checks() -> None:
    assert tuple(events.KINDS) == EVENT_KINDS
    for kind, spec in events.KINDS.items():
        assert spec.required <= set(spec.columns), kind
        assert len(set(spec.columns)) == len(spec.columns), kind


@pytest.mark.parametrize("kind", EVENT_KINDS)
def test_each_kind_round_trips_through_append_and_the_readers(
    conn: sqlite3.Connection, kind: str
) -> None:
    row = _full_row(conn, kind)
    event_id = events.append(conn, kind, at="2026-01-02T03:04:05.000006+00:00", **row)
    assert event_id > 0
    columns = ("kind", "at", *row)
    stored = events.event_row(conn, event_id, columns)
    assert stored is not None
    assert dict(zip(columns, stored, strict=True)) == {
        "kind": kind,
        "at": "2026-01-02T03:04:05.000006+00:00",
        **row,
    }
    assert events.latest_id(conn, kind) == event_id
    assert (event_id,) in events.of_kind(conn, kind, ("id",))


@pytest.mark.parametrize("kind", EVENT_KINDS)
def test_each_kind_needs_only_its_required_columns(conn: sqlite3.Connection, kind: str) -> None:
    spec = events.KINDS[kind]
    row = {c: v for c, v in _full_row(conn, kind).items() if c in spec.required}
    event_id = events.append(conn, kind, **row)
    omitted = [c for c in spec.columns if c not in spec.required]
    if omitted:
        stored = events.event_row(conn, event_id, omitted)
        assert stored is not None
        defaults = {"sets_note": 0, "blind": 0}
        expected = [defaults.get(c) for c in omitted]
        assert list(stored) == expected
    at = events.event_row(conn, event_id, ("at",))
    assert at is not None
    assert at[0].endswith("+00:00")  # stamped now, in UTC


def test_an_unknown_kind_is_refused_and_nothing_written(conn: sqlite3.Connection) -> None:
    before = _count(conn)
    with pytest.raises(ValueError, match="unknown event kind 'decide'"):
        events.append(conn, "decide", detail="{}")
    assert _count(conn) == before


def test_an_undeclared_column_is_refused_and_nothing_written(conn: sqlite3.Connection) -> None:
    before = _count(conn)
    with pytest.raises(TypeError, match="'audit' event carries no coder"):
        events.append(conn, "audit", detail="{}", coder="ana")
    with pytest.raises(TypeError, match="carries no colour"):
        events.append(conn, "record", coder="ana", rid=1, cid=2, value=1, source="human", colour=1)
    assert _count(conn) == before


def test_a_missing_required_column_is_refused(conn: sqlite3.Connection) -> None:
    before = _count(conn)
    with pytest.raises(TypeError, match="'record' event needs value"):
        events.append(conn, "record", coder="ana", rid=1, cid=2, source="human")
    with pytest.raises(TypeError, match="'undo' event needs undoes"):
        events.append(conn, "undo", coder="ana", undoes=None)
    assert _count(conn) == before


def test_the_readers_refuse_unknown_kinds_and_columns(conn: sqlite3.Connection) -> None:
    with pytest.raises(ValueError, match="unknown event kind"):
        events.of_kind(conn, "decide", ("id",))
    with pytest.raises(ValueError, match="unknown event kind"):
        events.latest_id(conn, "decide")
    with pytest.raises(ValueError, match="no column id; DROP TABLE events"):
        events.event_row(conn, 1, ("id; DROP TABLE events",))
    with pytest.raises(ValueError, match="no column"):
        events.of_kind(conn, "audit", ())


def test_standing_leaves_out_what_an_undo_reverted(conn: sqlite3.Connection) -> None:
    config_id = configurations.add_config(conn, likert_config())
    kept, undone = (
        events.append(
            conn, "delegate", coder=who, source="delegated", config_id=config_id, detail="{}"
        )
        for who in ("ana", "ben")
    )
    events.append(conn, "undo", coder="ben", undoes=undone)
    assert events.of_kind(conn, "delegate", ("id",)) == [(kept,), (undone,)]
    assert events.of_kind(conn, "delegate", ("id",), standing=True) == [(kept,)]
    assert events.of_kind(conn, "delegate", ("id",), newest_first=True) == [(undone,), (kept,)]
    assert events.of_kind(conn, "delegate", ("coder",), coder="ben") == [("ben",)]
    assert events.event_row(conn, undone, ("id",), standing=True) is None
    assert events.event_row(conn, kept, ("coder",), standing=True) == ("ana",)
    assert events.latest_id(conn, "activate") is None


def test_only_the_event_log_module_writes_events() -> None:
    writers = sorted(
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if _INSERT.search(path.read_text(encoding="utf-8"))
    )
    assert writers == [WRITER]
