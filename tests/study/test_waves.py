"""Waves of responses: appended, refused duplicates, --update clears decisions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from scoring.engine import ScoringEngine
from scoring.fake import FakeBackend
from study import ResponseTable, Study
from study.errors import StudyError
from study.intake.responses import read_responses
from study.score_run import score_study
from tests.study.test_revisions import content


def test_a_wave_is_appended_and_recorded(study: Study) -> None:
    wave = ResponseTable.from_texts({"r20": "Great canteen.", "r4": "Long commute."})
    result = study.versions.add_responses(wave)
    assert result.wave == 2
    assert set(result.added) == {"r20", "r4"}
    assert study.response_count() == 6
    assert study.response("r4").text == "Long commute."
    waves = study.versions.waves()
    assert [(w.wave, w.count) for w in waves] == [(1, 4), (2, 2)]
    assert study.versions.wave_response_ids(2) == ["r4", "r20"]
    assert study.versions.wave_response_ids(1) == ["r1", "r2", "r3", "r10"]
    assert study.pair_count() == 6 * 3


def test_new_responses_are_scored_alone(study: Study) -> None:
    score_study(study, ScoringEngine(FakeBackend(), study.codebook))
    study.versions.add_responses(ResponseTable.from_texts({"r5": "Pay is fine."}))
    backend = FakeBackend()
    run = score_study(study, ScoringEngine(backend, study.codebook))
    assert run.pending == 3
    assert sum(len(b) for b in backend.batches) == 3


def test_ids_already_in_the_study_are_refused_and_listed(study: Study) -> None:
    before = content(study.path)
    wave = ResponseTable.from_texts({"r1": "changed", "r3": "again", "r9": "new"})
    with pytest.raises(StudyError, match=r"2 response id\(s\) already in the study: 'r1', 'r3'"):
        study.versions.add_responses(wave)
    assert content(study.path) == before
    assert study.response_count() == 4


def test_update_replaces_the_text_and_clears_decisions_for_re_review(study: Study) -> None:
    score_study(study, ScoringEngine(FakeBackend(), study.codebook))
    study.decisions.record("r1", "pay", 4, coder="ana")
    study.decisions.record("r2", "pay", 2, coder="ana")
    result = study.versions.add_responses(
        ResponseTable.from_texts({"r1": "Pay went up, thanks.", "r2": "My colleagues are great."}),
        update=True,
    )
    assert result.updated == ("r1",)
    assert result.unchanged == ("r2",)
    assert result.cleared == 1
    assert study.response("r1").text == "Pay went up, thanks."
    assert study.decisions.decision("r1", "pay", coder="ana") is None  # re-review: undecided ...
    decision = study.decisions.decision("r2", "pay", coder="ana")
    assert decision is not None
    assert decision.value == 2  # same text: kept
    history = [e.kind for e in study.decisions.events(response_id="r1")]
    assert history[-1] == "update"  # ... with its history in the log
    assert "record" in history
    # The old text's scores are stale: only r1's pairs are scored again.
    backend = FakeBackend()
    run = score_study(study, ScoringEngine(backend, study.codebook))
    assert run.pending == 3
    assert sum(len(b) for b in backend.batches) == 3


def test_a_file_with_another_id_column_is_refused(study: Study, tmp_path: Path) -> None:
    con = sqlite3.connect(study.path)
    con.execute("UPDATE meta SET value = 'id' WHERE key = 'responses_id_column'")
    con.commit()
    con.close()
    other = tmp_path / "w.csv"
    other.write_text("respondent,text\nx1,hello there\n", encoding="utf-8")
    table = read_responses(other)
    before = content(study.path)
    with pytest.raises(StudyError, match="id column is 'respondent'"):
        study.versions.add_responses(table)
    assert content(study.path) == before


def test_undo_never_restores_a_decision_made_on_the_replaced_text(study: Study) -> None:
    study.decisions.record("r3", "team", 1, coder="ana")
    study.decisions.record("r1", "pay", 2, coder="ana")
    study.decisions.record("r1", "pay", 4, coder="ana")
    study.versions.add_responses(ResponseTable.from_texts({"r1": "A new text."}), update=True)
    undone = study.decisions.undo(coder="ana")  # walks past r1's decisions to the one before
    assert study.decisions.decision("r1", "pay", coder="ana") is None
    assert study.decisions.decision("r3", "team", coder="ana") is None
    assert undone is not None


def test_the_queue_filters_by_wave(study: Study) -> None:
    config_id = score_study(study, ScoringEngine(FakeBackend(), study.codebook)).config_id
    study.versions.add_responses(ResponseTable.from_texts({"r7": "Second wave.", "r8": "Another."}))
    score_study(study, ScoringEngine(FakeBackend(), study.codebook))
    study.decisions.record("r7", "pay", 3, coder="ana")
    study.decisions.record("r1", "pay", 3, coder="ana")
    for config in (config_id, None):
        for order in ("entropy", "id"):
            if config is None and order == "entropy":
                continue
            rows = study.queries.page(config, order=order, wave=2, limit=100)
            assert {r.response_id for r in rows} == {"r7", "r8"}
            assert len(rows) == 2 * 3
    assert study.queries.count(config_id, wave=2) == 6
    assert study.queries.count(config_id, wave=1) == 12
    assert study.queries.count(config_id, wave=2, status="decided") == 1
    assert study.queries.count(config_id, wave=2, status="undecided") == 5
    assert study.queries.count(config_id, wave=2, search="second") == 3
    assert study.queries.position(config_id, "r7", "pay", order="id", wave=2) is not None
    assert study.queries.position(config_id, "r1", "pay", order="id", wave=2) is None
