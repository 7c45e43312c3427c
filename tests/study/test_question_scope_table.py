"""The ``scoped_pairs`` table (schema 8) holds exactly the pairs of the scoped codes that
the study's :class:`~study.scope.PairScope` says, after every change that can change
them, and the queue's SQL finds a pair in it through its primary key."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from codebooks.model import Code, Codebook
from study import ResponseTable, Study
from study.errors import StudyError
from study.file import schema as study_schema
from study.file import scoped_pairs
from study.intake.responses import Response
from tests.study.test_question_scope import scoped_book, survey


def stored(path: Path) -> set[tuple[int, int]]:
    """``(cid, rid)`` of every row of the file's table, read apart from the study."""
    con = sqlite3.connect(path)
    try:
        return {(int(c), int(r)) for c, r in con.execute("SELECT cid, rid FROM scoped_pairs")}
    finally:
        con.close()


def scoped_by_scope(study: Study) -> set[tuple[int, int]]:
    """The same pairs as the scope's in-memory answers give them."""
    scope = study.index.scope
    return {
        (cid, rid)
        for cid in study.index.codable_keys
        if scope.limited(cid)
        for rid in scope.rids(cid)
    }


def consistent(study: Study) -> None:
    """The table is the scope's, and the SQL counts agree with the in-memory ones."""
    assert stored(study.path) == scoped_by_scope(study)
    progress = study.queries.progress()
    assert progress["total"] == study.pair_count()
    assert study.queries.count(None, search="answer") == study.pair_count()
    assert len(study.queries.page(None, order="id", limit=10_000)) == study.pair_count()


@pytest.fixture
def scoped(tmp_path: Path) -> Iterator[Study]:
    study = Study.create(tmp_path / "q.codecurve", responses=survey(), codebook=scoped_book())
    yield study
    study.close()


def test_a_new_scoped_study_stores_its_scoped_pairs(scoped: Study) -> None:
    # privacy 6 (q1) + stress 12 (q1, q2) + tech 6 (q2) + alternatives 6 (q3); tone none
    assert len(stored(scoped.path)) == 30
    consistent(scoped)


def test_an_unscoped_study_has_no_rows_and_no_condition(tmp_path: Path) -> None:
    book = replace(
        scoped_book(),
        codes=tuple(replace(c, questions=()) for c in scoped_book().codes),
        question_column=None,
    )
    with Study.create(tmp_path / "u.codecurve", responses=survey(), codebook=book) as study:
        assert stored(study.path) == set()
        assert study.index.scope.sql("r.rid", "c.cid") == "1"
        assert study.pair_count() == 18 * 5


def test_a_revision_that_changes_the_scoping_rewrites_the_pairs(scoped: Study) -> None:
    book = scoped.codebook
    changed = replace(
        book,
        codes=(
            replace(book.code("privacy"), questions=()),  # now everywhere
            replace(book.code("stress"), questions=("q3",)),  # moved
            book.code("tech"),
            # alternatives removed (archived): its pairs leave the table
            book.code("tone"),
            Code("cost", "Cost", questions=("q2", "q3")),  # new and scoped
        ),
    )
    scoped.versions.revise(changed)
    assert scoped.codebook == changed
    consistent(scoped)
    by_code = scoped.queries.progress()["by_code"]
    assert {c: v["total"] for c, v in by_code.items()} == {
        "privacy": 18,
        "stress": 6,
        "tech": 6,
        "tone": 18,
        "cost": 12,
    }
    unscoped = replace(
        changed, codes=tuple(replace(c, questions=()) for c in changed.codes), question_column=None
    )
    scoped.versions.revise(unscoped)
    assert stored(scoped.path) == set()
    assert scoped.index.scope.sql("rid", "cid") == "1"
    consistent(scoped)


def test_a_revision_that_scopes_an_unscoped_study_fills_the_table(tmp_path: Path) -> None:
    book = scoped_book()
    plain = replace(book, codes=tuple(replace(c, questions=()) for c in book.codes))
    with Study.create(tmp_path / "p.codecurve", responses=survey(), codebook=plain) as study:
        assert stored(study.path) == set()
        study.versions.revise(book)
        assert len(stored(study.path)) == 30
        consistent(study)


def test_a_wave_gives_its_responses_their_pairs_and_moves_an_updated_ones(
    scoped: Study,
) -> None:
    wave = ResponseTable(
        responses=(
            Response("r100", "a new answer to q2", {"question_id": "q2"}),
            Response("r101", "a new answer to q3", {"question_id": "q3"}),
            Response("r102", "an answer to none", {}),
        ),
        attribute_columns=("question_id",),
    )
    scoped.versions.add_responses(wave)
    consistent(scoped)
    rid = scoped.index.response_key("r100")
    tech = scoped.index.code_key("tech")
    assert (tech, rid) in stored(scoped.path)
    assert [r.code_id for r in scoped.queries.of_response(None, "r102")] == ["tone"]
    # r1 answered q1; its new text answers q3: its privacy and stress pairs go.
    moved = ResponseTable(
        responses=(Response("r1", "now an answer to q3", {"question_id": "q3"}),),
        attribute_columns=("question_id",),
    )
    scoped.versions.add_responses(moved, update=True)
    consistent(scoped)
    assert [r.code_id for r in scoped.queries.of_response(None, "r1")] == ["alternatives", "tone"]


def test_a_change_that_fails_after_writing_the_pairs_leaves_the_old_ones(
    scoped: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = stored(scoped.path)
    real = scoped_pairs.sync

    def sync_then_fail(conn: sqlite3.Connection, scope: object) -> None:
        real(conn, scope)  # type: ignore[arg-type]
        raise OSError("the disk went away")

    monkeypatch.setattr(scoped_pairs, "sync", sync_then_fail)
    book = scoped.codebook
    with pytest.raises(OSError, match="the disk went away"):
        scoped.versions.revise(
            replace(book, codes=tuple(replace(c, questions=()) for c in book.codes))
        )
    with pytest.raises(OSError, match="the disk went away"):
        scoped.versions.add_responses(
            ResponseTable(
                responses=(Response("r200", "late", {"question_id": "q1"}),),
                attribute_columns=("question_id",),
            )
        )
    monkeypatch.undo()
    assert stored(scoped.path) == before
    assert scoped.codebook == book
    consistent(scoped)


def test_a_version_7_study_gains_its_scoped_pairs_when_opened_for_writing(
    scoped: Study,
) -> None:
    path = scoped.path
    scoped.versions.revise(
        replace(
            scoped.codebook, codes=(*scoped.codebook.codes, Code("late", "Late", questions=("q3",)))
        )
    )
    expected = scoped_by_scope(scoped)
    scoped.close()
    con = sqlite3.connect(path)
    con.execute("DROP TABLE scoped_pairs")
    con.execute("PRAGMA user_version = 7")
    con.commit()
    con.close()
    with pytest.raises(StudyError, match="older schema 7"):
        Study.open(path, read_only=True)
    with Study.open(path) as study:
        assert stored(path) == expected == scoped_by_scope(study)
        consistent(study)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == study_schema.SCHEMA_VERSION == 8
    con.close()
    with Study.open(path, read_only=True) as reader:
        assert reader.pair_count() == len(expected) + 18  # tone applies everywhere
        consistent(reader)


def test_the_scope_condition_seeks_the_table_and_never_drives_the_query(scoped: Study) -> None:
    scope = scoped.index.scope
    with scoped.snapshot() as conn:
        walk = [
            str(row[3])
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT s.rid FROM scores s WHERE s.config_id = 1 "
                f"AND {scope.sql('s.rid', 's.cid')} ORDER BY s.norm_entropy DESC LIMIT 50"
            )
        ]
        counted = [
            str(row[3])
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM (SELECT DISTINCT rid, cid "
                f"FROM annotations WHERE {scope.sql('rid', 'cid')})"
            )
        ]
    lookup = "USING INDEX sqlite_autoindex_scoped_pairs_1 FOR IN-OPERATOR"
    assert lookup in walk
    assert any(step.startswith("SEARCH s USING COVERING INDEX scores_by_entropy") for step in walk)
    # The few decisions are read and each looked up, not every scoped pair then a decision.
    assert lookup in counted
    assert any(step.startswith("SCAN annotations") for step in counted)
    assert not any("MULTI-INDEX OR" in step for step in counted)


def test_the_table_follows_the_scope_rule_of_codebook_applies(scoped: Study) -> None:
    codebook: Codebook = scoped.codebook
    asked = {r.id: r.attrs.get("question_id") for r in scoped.responses()}
    for cid, rid in stored(scoped.path):
        code = scoped.index.code_at(cid)
        assert code.questions
        assert codebook.applies(code, asked[scoped.index.response_id(rid)])
