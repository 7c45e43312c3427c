"""The project's one file writer: links, devices, pipes, studies and inputs (issue 11)."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from codebooks.errors import CodebookError
from codebooks.files import check_target, write_atomic, write_file
from scoring.score import ScoreConfig
from study import Study, StudyError
from study.exchange.export import export_study, read_export
from tests.factories import synthetic_score


@pytest.fixture
def coded(study: Study, config: ScoreConfig) -> Study:
    config_id = study.scores.ensure_config(config)
    study.scores.store(
        config_id,
        [synthetic_score(p, config) for p in study.scores.pending_pairs(config_id)],
    )
    study.decisions.record("r1", "pay", 5, coder="ann")
    return study


def test_a_symlink_stays_a_link_and_its_target_is_replaced(coded: Study, tmp_path: Path) -> None:
    real = tmp_path / "real.csv"
    real.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    export_study(coded, link)
    assert link.is_symlink()
    assert os.readlink(link) == str(real)
    assert read_export(real)["decision"].notna().sum() == 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".csv")) == [
        "link.csv",
        "real.csv",
    ]


def test_a_named_pipe_is_written_into_and_its_reader_gets_eof(coded: Study, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as handle:
            received.append(handle.read())  # returns only at end of file

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    export_study(coded, fifo)
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    lines = received[0].decode().splitlines()
    assert len(lines) == 4 * 3  # every (response, codable code) pair
    assert '"response_id"' in lines[0]


@pytest.mark.skipif(
    not os.path.exists("/dev/full") or not stat.S_ISCHR(os.stat("/dev/full").st_mode),
    reason="/dev/full is not a character device here",
)
def test_dev_full_says_no_space_and_stays_a_device(coded: Study) -> None:
    with pytest.raises(StudyError, match="No space left"):
        export_study(coded, "/dev/full", format="csv")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


@pytest.mark.skipif(
    not os.path.exists("/dev/null") or not stat.S_ISCHR(os.stat("/dev/null").st_mode),
    reason="/dev/null is not a character device here",
)
def test_dev_null_is_written_into_not_replaced() -> None:
    write_atomic("/dev/null", b"nothing")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_folder_is_refused(coded: Study, tmp_path: Path) -> None:
    with pytest.raises(StudyError, match="is a directory"):
        export_study(coded, tmp_path, format="csv")


def test_exporting_over_the_study_is_refused_and_loses_nothing(coded: Study) -> None:
    path = coded.path
    before = path.read_bytes()[:16]
    with pytest.raises(StudyError, match="SQLite database"):
        export_study(coded, path, format="csv")
    assert path.read_bytes()[:16] == before
    assert coded.decisions.count() == 1
    coded.close()
    with Study.open(path, read_only=True) as again:
        assert again.decisions.count() == 1
        assert again.check() == []


def test_any_sqlite_file_is_refused_by_the_writer(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "other.db"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(CodebookError, match="SQLite database"):
        write_atomic(db, b"codebook")
    assert db.read_bytes().startswith(b"SQLite format 3\x00")


def test_protected_inputs_are_refused_even_through_a_link(coded: Study, tmp_path: Path) -> None:
    source = tmp_path / "responses.csv"
    source.write_text("id,text\nr1,hello\n")
    link = tmp_path / "alias.csv"
    link.symlink_to(source)
    for target in (source, link):
        with pytest.raises(StudyError, match="input of this command"):
            export_study(coded, target, protect=[source])
        with pytest.raises(StudyError, match="input of this command"):
            check_target(target, protect=[source], error=StudyError)
    assert source.read_text() == "id,text\nr1,hello\n"


def test_a_missing_folder_is_named(coded: Study, tmp_path: Path) -> None:
    with pytest.raises(StudyError, match="does not exist"):
        export_study(coded, tmp_path / "nowhere" / "x.csv")


def test_permissions_of_a_replaced_file_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "book.yaml"
    target.write_text("old")
    target.chmod(0o640)
    write_atomic(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def _dead_pid() -> int:
    for pid in range(4_000_000, 4_100_000):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except OSError:
            continue
    pytest.skip("no free pid found")


def test_stale_temporaries_are_cleaned_on_the_next_write(tmp_path: Path) -> None:
    dead = tmp_path / f".out.csv.{_dead_pid()}-0123abcd.tmp.csv"
    old = tmp_path / f".out.csv.{os.getppid()}-89abcdef.tmp.csv"
    young = tmp_path / f".out.csv.{os.getppid()}-deadbeef.tmp.csv"
    unrelated = tmp_path / ".notes.txt"
    for path in (dead, old, young, unrelated):
        path.write_text("partial")
    hours_ago = time.time() - 2 * 3600
    os.utime(old, (hours_ago, hours_ago))
    os.utime(unrelated, (hours_ago, hours_ago))
    write_file(tmp_path / "out.csv", lambda p: p.write_text("done"))
    assert not dead.exists()
    assert not old.exists()
    assert young.exists()  # its writer may still be at work
    assert unrelated.exists()
    assert (tmp_path / "out.csv").read_text() == "done"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    target.write_text("previous")

    def broken(p: Path) -> None:
        p.write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(StudyError, match="No space left"):
        write_file(target, broken, error=StudyError)
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]
