"""A study on a read-only, full or damaged disk, or hand-edited (issue 11)."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest

from codebooks.model import Codebook
from scoring.score import ScoreConfig
from study import ResponseTable, Study, StudyError
from study.exchange.export import export_study
from study.file import schema
from tests.factories import synthetic_score


def _scored(study: Study, config: ScoreConfig) -> Path:
    """Score every pair of ``study``, close it and return its path."""
    config_id = study.scores.ensure_config(config)
    study.scores.store(
        config_id,
        [synthetic_score(p, config) for p in study.scores.pending_pairs(config_id)],
    )
    path = study.path
    study.close()
    return path


def _big_study(tmp_path: Path, codebook: Codebook, config: ScoreConfig) -> Path:
    texts = {f"r{i}": f"response number {i} " * 20 for i in range(400)}
    study = Study.create(
        tmp_path / "big.codecurve", responses=ResponseTable.from_texts(texts), codebook=codebook
    )
    return _scored(study, config)


def test_a_damaged_page_stops_the_export_with_a_clear_message(
    tmp_path: Path, codebook: Codebook, config: ScoreConfig
) -> None:
    path = _big_study(tmp_path, codebook, config)
    size = path.stat().st_size
    page = 4096
    with open(path, "r+b") as handle:  # garble a page in the scores, past the schema
        handle.seek((size // page - 3) * page + 100)
        handle.write(b"\xff\x00garbage" * 300)
    target = tmp_path / "out.csv"
    with (
        pytest.raises(StudyError, match="damaged") as caught,
        Study.open(path, read_only=True) as reader,
    ):
        export_study(reader, target)
    assert "restore it from a copy" in str(caught.value)
    assert not target.exists()


def test_quick_check_passes_on_a_sound_study(study: Study) -> None:
    study.quick_check()


def test_a_schema_0_study_is_called_unfinished_not_upgradable(tmp_path: Path) -> None:
    path = tmp_path / "zero.codecurve"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
    con.execute("CREATE TABLE x (y)")
    con.close()
    for read_only in (True, False):
        with pytest.raises(StudyError, match="unfinished codecurve study") as caught:
            Study.open(path, read_only=read_only)
        assert "open it once for writing" not in str(caught.value)


def test_a_hand_edited_codebook_is_reported_as_damage(study: Study) -> None:
    path = study.path
    study.close()
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = '{not json' WHERE key = 'codebook'")
    con.commit()
    con.close()
    with pytest.raises(StudyError, match="damaged: its codebook cannot be read"):
        Study.open(path)
    # The failed open left no lock behind.
    assert not path.with_name(path.name + ".lock").exists()


def test_hand_edited_attributes_and_scale_are_reported_as_damage(
    study: Study, config: ScoreConfig
) -> None:
    config_id = study.scores.ensure_config(config)
    path = study.path
    study.close()
    con = sqlite3.connect(path)
    con.execute("UPDATE responses SET attrs = '[1, 2' WHERE id = 'r1'")
    con.execute("UPDATE configs SET scale = 'nonsense' WHERE id = ?", (config_id,))
    con.commit()
    con.close()
    with Study.open(path, read_only=True) as reader:
        with pytest.raises(StudyError, match="damaged: a response's attributes"):
            reader.response("r1")
        with pytest.raises(StudyError, match=f"damaged: configuration {config_id}"):
            reader.scores.config_row(config_id)


def test_a_code_missing_from_the_codebook_is_reported_as_damage(study: Study) -> None:
    path = study.path
    study.close()
    con = sqlite3.connect(path)
    con.execute("UPDATE codes SET id = 'ghost' WHERE id = 'pay'")
    con.commit()
    con.close()
    with pytest.raises(StudyError, match="damaged: code 'ghost'"):
        Study.open(path, read_only=True)


def test_a_read_only_folder_refuses_writing_with_a_message(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = study.path
    study.close()

    def read_only_fs(*args: object, **kwargs: object) -> object:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr("study.file.locking.open", read_only_fs, raising=False)
    with pytest.raises(StudyError, match=r"cannot open the study for writing.*Read-only file"):
        Study.open(path)
    monkeypatch.undo()
    with Study.open(path, read_only=True) as reader:  # reading still works
        assert reader.response_count() == 4


def test_new_on_a_full_disk_says_so_and_leaves_nothing(
    tmp_path: Path,
    responses: ResponseTable,
    codebook: Codebook,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def full(conn: sqlite3.Connection) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(schema, "initialise", full)
    target = tmp_path / "new.codecurve"
    with pytest.raises(StudyError, match=r"cannot write the study.*disk is full"):
        Study.create(target, responses=responses, codebook=codebook)
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_while_coding_is_a_study_error_and_loses_nothing_saved(
    tmp_path: Path, codebook: Codebook
) -> None:
    texts = {f"r{i}": f"response {i}" for i in range(300)}
    study = Study.create(
        tmp_path / "full.codecurve", responses=ResponseTable.from_texts(texts), codebook=codebook
    )
    with study.transaction() as conn:  # the writer's file may not grow: a full disk
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
    saved = 0
    failure: StudyError | None = None
    for response_id in study.response_ids():
        try:
            study.decisions.record(response_id, "pay", 3, coder="ann", note="x" * 200)
        except StudyError as exc:
            failure = exc
            break
        saved += 1
    assert failure is not None
    assert "could not save the change" in str(failure)
    assert "full" in str(failure)
    assert saved > 0
    assert study.decisions.count() == saved
    study.close()
    with Study.open(tmp_path / "full.codecurve", read_only=True) as again:
        assert again.decisions.count() == saved
        assert again.check() == []
