"""The study file: creation, opening, decisions, undo, scores and one session per coder."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codebooks.model import Codebook
from scoring.score import ScoreConfig
from study import ResponseTable, Study, StudyError, StudyLockedError
from study.file import schema as study_schema
from study.store import natural_key


def test_create_and_reopen_keeps_everything(
    tmp_path: Path, responses: ResponseTable, codebook: Codebook
) -> None:
    path = tmp_path / "a.codecurve"
    with Study.create(path, responses=responses, codebook=codebook) as s:
        assert s.response_count() == 4
        assert s.response_ids() == ["r1", "r2", "r3", "r10"]
    with Study.open(path) as s:
        assert s.codebook == codebook
        assert s.response("r2").text == "My colleagues are great."
        assert [r.id for r in s.responses()] == ["r10", "r2", "r1", "r3"]  # file order
        assert [c.id for c in s.codes] == ["workload", "pay", "team"]
        assert s.pair_count() == 12
        assert s.check() == []
        meta = s.meta()
        assert meta["codebook_hash"] == codebook.content_hash()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("PRAGMA user_version").fetchone()[0] == study_schema.SCHEMA_VERSION
    con.close()


def test_create_refuses_to_overwrite(
    tmp_path: Path, responses: ResponseTable, codebook: Codebook
) -> None:
    path = tmp_path / "a.codecurve"
    Study.create(path, responses=responses, codebook=codebook).close()
    with pytest.raises(StudyError, match="already exists"):
        Study.create(path, responses=responses, codebook=codebook)
    with Study.create(
        path, responses=ResponseTable.from_texts({"x": "y"}), codebook=codebook, overwrite=True
    ) as s:
        assert s.response_ids() == ["x"]
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_overwrite_of_an_open_study_is_refused(
    tmp_path: Path, responses: ResponseTable, codebook: Codebook
) -> None:
    path = tmp_path / "a.codecurve"
    with (
        Study.create(path, responses=responses, codebook=codebook),
        pytest.raises(StudyLockedError),
    ):
        Study.create(path, responses=responses, codebook=codebook, overwrite=True)
    with Study.open(path) as s:
        assert s.response_count() == 4


def test_open_bad_files(tmp_path: Path) -> None:
    with pytest.raises(StudyError, match="no such study"):
        Study.open(tmp_path / "missing.codecurve")
    junk = tmp_path / "junk.codecurve"
    junk.write_text("hello")
    with pytest.raises(StudyError, match="not an SQLite file"):
        Study.open(junk)
    other = tmp_path / "other.codecurve"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.close()
    with pytest.raises(StudyError, match="not a codecurve study"):
        Study.open(other)
    with pytest.raises(StudyError, match="directory"):
        Study.open(tmp_path)


def test_newer_schema_is_refused(study: Study) -> None:
    path = study.path
    study.close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {study_schema.SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(StudyError, match="newer codecurve"):
        Study.open(path)


def test_forward_migration_runs_once(study: Study, monkeypatch: pytest.MonkeyPatch) -> None:
    path = study.path
    study.close()
    calls = []

    def to_next(conn: sqlite3.Connection) -> None:
        calls.append(1)
        conn.execute("CREATE TABLE extra (x)")

    nxt = study_schema.SCHEMA_VERSION + 1
    monkeypatch.setitem(study_schema.MIGRATIONS, nxt, to_next)
    monkeypatch.setattr(study_schema, "SCHEMA_VERSION", nxt)
    with pytest.raises(StudyError, match="older schema"):
        Study.open(path, read_only=True)
    Study.open(path).close()
    Study.open(path).close()
    assert calls == [1]
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == nxt
    con.close()


def test_natural_order() -> None:
    ids = ["r10", "r2", "a", "r1", "r02", "10", "9"]
    assert sorted(ids, key=natural_key) == ["9", "10", "a", "r1", "r02", "r2", "r10"]


# --- decisions -------------------------------------------------------------------------


def test_record_is_stored_and_validated(study: Study) -> None:
    d = study.decisions.record("r2", "team", 1, coder="ann")
    assert (d.response_id, d.code_id, d.value, d.source, d.coder) == (
        "r2",
        "team",
        1,
        "human",
        "ann",
    )
    assert study.decisions.decision("r2", "team") == d
    assert (
        study.decisions.record("r2", "Pay", 4, coder="ann", note="hm").code_id == "pay"
    )  # by name
    assert study.decisions.note("r2", "pay", coder="ann") == "hm"
    with pytest.raises(StudyError, match="not a value of scale"):
        study.decisions.record("r2", "team", 3, coder="ann")
    with pytest.raises(StudyError, match="no response"):
        study.decisions.record("nope", "team", 1, coder="ann")
    with pytest.raises(StudyError, match="no code"):
        study.decisions.record("r2", "nope", 1, coder="ann")
    with pytest.raises(StudyError, match="category"):
        study.decisions.record("r2", "pressures", 1, coder="ann")
    with pytest.raises(StudyError, match="coder"):
        study.decisions.record("r2", "team", 1, coder=" ")
    with pytest.raises(StudyError, match="source"):
        study.decisions.record("r2", "team", 1, coder="ann", source="robot")
    study.decisions.skip("r2", "team")  # stores nothing
    assert study.decisions.count() == 2


def test_undo_walks_back_through_several_decisions(study: Study) -> None:
    study.decisions.record("r1", "pay", 2, coder="ann")
    study.decisions.record("r1", "pay", 5, coder="ann")
    study.decisions.set_note("r1", "pay", "check later", coder="ann")
    study.decisions.record("r2", "team", 0, coder="ann")
    study.decisions.clear("r2", "team", coder="ann")
    study.decisions.record("r3", "pay", 1, coder="bob")

    assert study.decisions.decision("r2", "team", coder="ann") is None
    undone = study.decisions.undo(coder="ann")
    assert undone is not None
    assert undone.kind == "clear"
    assert study.decisions.decision("r2", "team", coder="ann").value == 0  # type: ignore[union-attr]
    assert study.decisions.undo(coder="ann").kind == "record"  # type: ignore[union-attr]
    assert study.decisions.decision("r2", "team", coder="ann") is None
    assert study.decisions.undo(coder="ann").kind == "note"  # type: ignore[union-attr]
    assert study.decisions.note("r1", "pay", coder="ann") is None
    first = study.decisions.decision("r1", "pay")
    assert first is not None
    assert first.value == 5
    back = study.decisions.undo(coder="ann")
    assert back is not None
    assert back.value == 5
    restored = study.decisions.decision("r1", "pay")
    assert restored is not None
    assert restored.value == 2
    assert restored.id < first.id
    assert study.decisions.undo(coder="ann") is not None
    assert study.decisions.decision("r1", "pay") is None
    assert study.decisions.undo(coder="ann") is None
    # bob's decision is untouched, and the log kept everything
    assert study.decisions.decision("r3", "pay", coder="bob").value == 1  # type: ignore[union-attr]
    kinds = [e.kind for e in study.decisions.events()]
    assert kinds.count("undo") == 5
    assert kinds[0] == "create"


def test_undo_after_reopen(study: Study) -> None:
    study.decisions.record("r1", "pay", 2, coder="ann")
    study.decisions.record("r1", "pay", 3, coder="ann")
    path = study.path
    study.close()
    with Study.open(path) as s:
        assert s.decisions.undo(coder="ann").value == 3  # type: ignore[union-attr]
        assert s.decisions.decision("r1", "pay").value == 2  # type: ignore[union-attr]


def test_import_decisions_all_or_nothing(study: Study) -> None:
    study.decisions.record("r1", "pay", 2, coder="ann")
    with pytest.raises(StudyError, match="already decided differently"):
        study.decisions.import_decisions([("r2", "pay", 3), ("r1", "pay", 4)], coder="ann")
    assert study.decisions.count() == 1
    with pytest.raises(StudyError, match="not a value"):
        study.decisions.import_decisions([("r2", "pay", 3), ("r1", "team", 4)], coder="ann")
    assert study.decisions.count() == 1
    result = study.decisions.import_decisions(
        [("r2", "pay", 3), ("r1", "pay", 2)], coder="ann", detail={"file": "x.csv"}
    )
    assert (result.added, result.changed, result.unchanged) == (1, 0, 1)
    result = study.decisions.import_decisions([("r1", "pay", 4)], coder="ann", replace=True)
    assert result.changed == 1
    # imports are not on the undo stack: undo reverts the interactive record
    assert study.decisions.undo(coder="ann").value == 2  # type: ignore[union-attr]


def test_imported_decisions_keep_the_source_they_are_given(study: Study) -> None:
    with pytest.raises(StudyError, match="unknown decision source 'guess'"):
        study.decisions.import_decisions(
            [("r1", "pay", 3)], coder="ann", sources={("r1", "pay"): "guess"}
        )
    assert study.decisions.count() == 0
    study.decisions.import_decisions(
        [("r1", "pay", 3), ("r2", "pay", 4), ("r3", "pay", 1)],
        coder="ann",
        sources={("r1", "pay"): "model", ("r2", "pay"): "delegated"},
    )
    decided = {r: study.decisions.decision(r, "pay", coder="ann") for r in ("r1", "r2", "r3")}
    assert {r: d.source for r, d in decided.items() if d is not None} == {
        "r1": "model",
        "r2": "delegated",
        "r3": "human",
    }
    # Only the coder's own decisions are blind: the others came from the model.
    assert study.audit.blind_pairs(coder="ann") == {("r3", "pay", "ann")}


# --- several writers, one session per coder ----------------------------------------------


def test_writers_at_once_and_a_reader(study: Study) -> None:
    with (
        Study.open(study.path, coder="ben") as ben,
        Study.open(study.path, read_only=True) as reader,
    ):
        study.decisions.record("r1", "pay", 3, coder="ann")
        ben.decisions.record("r1", "pay", 2, coder="ben")
        assert reader.decisions.decision("r1", "pay", coder="ann").value == 3  # type: ignore[union-attr]
        assert reader.decisions.decision("r1", "pay", coder="ben").value == 2  # type: ignore[union-attr]
        with pytest.raises(StudyError, match="read-only"):
            reader.decisions.record("r1", "pay", 2, coder="ann")
    study.close()
    with Study.open(study.path) as again:
        assert again.decisions.count() == 2


def test_the_same_coder_twice_is_refused_naming_the_session(study: Study) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from study import Study, StudyLockedError
        try:
            Study.open({str(study.path)!r}, coder=sys.argv[1]).close()
        except StudyLockedError as exc:
            print(exc)
            sys.exit(3)
        sys.exit(0)
        """
    )

    def run(coder: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script, coder], capture_output=True, text=True, check=False
        )

    with Study.open(study.path, coder="ann"):
        out = run("ann")
        assert out.returncode == 3, out.stderr
        assert "coder 'ann' already has this study open (pid " in out.stdout
        assert f"pid {os.getpid()} on {socket.gethostname()}, since 20" in out.stdout
        assert run("ben").returncode == 0  # another coder is welcome
        with pytest.raises(StudyLockedError, match="this process"):
            Study.open(study.path, coder="ann")
    assert run("ann").returncode == 0, "the session ended: the coder may open it again"


# --- scores ------------------------------------------------------------------------------


def test_scores_pending_and_idempotent(study: Study, config: ScoreConfig, score_pairs) -> None:
    cid = study.scores.ensure_config(config)
    assert study.scores.ensure_config(config) == cid
    assert study.scores.active_config_id() == cid
    assert study.scores.config_row(cid).config == config
    pending = study.scores.pending_pairs(cid)
    assert len(pending) == 12
    assert study.scores.store(cid, score_pairs(pending[:5], config)) == 5
    assert study.scores.store(cid, score_pairs(pending[:6], config)) == 1
    assert len(study.scores.pending_pairs(cid)) == 6
    assert study.scores.scored_count(cid) == 6
    assert study.scores.token_ids(cid, pending[0].response_id, pending[0].code.id) is not None
    other = ScoreConfig(
        model=config.model,
        template_id="other",
        template_hash="x",
        context="none",
        scale=config.scale,
    )
    with pytest.raises(StudyError, match="cannot be stored under"):
        study.scores.store(cid, score_pairs(pending[6:7], other))
    assert study.scores.scored_count(cid) == 6
