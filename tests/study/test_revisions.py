"""Codebook revisions in a study: versions, kept decisions, archived codes, rescoring."""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from codebooks.model import LIKERT_5, Code, Codebook
from scoring.engine import ScoringEngine
from scoring.fake import FakeBackend
from scoring.score import ScoreConfig
from study import Study
from study.errors import StudyError
from study.score_run import score_study


def content(path: Path) -> str:
    """A hash of every row of the study (what a refused command must leave unchanged)."""
    con = sqlite3.connect(path)
    try:
        return hashlib.sha256("\n".join(con.iterdump()).encode()).hexdigest()
    finally:
        con.close()


def revised(codebook: Codebook) -> Codebook:
    """Pay's definition sharpened, workload renamed, team removed, a new code added."""
    codes = []
    for code in codebook.codes:
        if code.id == "pay":
            code = replace(code, definition="Pay, bonuses and pensions.", exclusion="Not hours.")
        elif code.id == "workload":
            code = replace(code, name="Hours and workload")
        elif code.id == "team":
            continue
        codes.append(code)
    codes.append(Code("growth", "Growth", definition="Learning and promotion."))
    return replace(codebook, codes=tuple(codes))


def test_a_revision_keeps_decisions_and_records_the_version(
    study: Study, codebook: Codebook
) -> None:
    study.decisions.record("r1", "pay", 4, coder="ana")
    study.decisions.record("r2", "team", 1, coder="ana")
    assert study.versions.current() == 1
    new = revised(codebook)
    diff = study.versions.plan_revision(new)
    kinds = {(c.kind, c.code_id) for c in diff.changes}
    assert kinds == {
        ("changed", "pay"),
        ("renamed", "workload"),
        ("added", "growth"),
        ("removed", "team"),
    }
    assert study.versions.revise(new, source="v2.yaml") == 2
    assert study.codebook == new
    decision = study.decisions.decision("r1", "pay", coder="ana")
    assert decision is not None
    assert decision.value == 4
    versions = study.versions.all()
    assert [v.version for v in versions] == [1, 2]
    assert versions[0].codebook == codebook
    assert versions[1].codebook == new
    assert versions[1].source == "v2.yaml"
    assert [c.id for c in study.codes] == ["workload", "pay", "growth"]
    # New decisions record the version they were made under; old ones keep theirs.
    study.decisions.record("r3", "growth", 2, coder="ana")
    con = sqlite3.connect(study.path)
    try:
        stamped = dict(
            con.execute(
                "SELECT c.id, a.codebook_version FROM annotations a JOIN codes c USING (cid)"
            ).fetchall()
        )
        kinds_logged = [r[0] for r in con.execute("SELECT kind FROM events ORDER BY id")]
    finally:
        con.close()
    assert stamped == {"pay": 1, "team": 1, "growth": 2}
    assert "codebook" in kinds_logged


def test_a_removed_codes_decisions_are_archived_and_out_of_the_queue(
    study: Study, codebook: Codebook, config: ScoreConfig, score_pairs: Any
) -> None:
    config_id = study.scores.ensure_config(config)
    study.scores.store(config_id, score_pairs(study.scores.pending_pairs(config_id), config))
    study.decisions.record("r2", "team", 1, coder="ana")
    study.versions.revise(revised(codebook))
    path = study.path
    study.close()
    with Study.open(path) as reopened:
        codes_in_queue = {p.code_id for p in reopened.queries.page(config_id, limit=1000)}
        assert "team" not in codes_in_queue
        assert reopened.queries.count(config_id) == 4 * 3
        frame = reopened.queries.annotated_pairs(config_id)
        assert ("r2", "team", 1) in set(
            zip(frame.response_id, frame.code_id, frame.value, strict=True)
        )
        # The old version, with the code, stays readable.
        assert reopened.versions.all()[0].codebook.code("team").name == "Team"


def test_a_new_codes_unscored_pairs_follow_in_every_order_after_a_revision(
    study: Study, codebook: Codebook, config: ScoreConfig, score_pairs: Any
) -> None:
    """The archived code's scores are kept but not counted: the queue, in an order by
    score, still lists the new code's pairs (not scored yet) after the scored ones."""
    config_id = study.scores.ensure_config(config)
    study.scores.store(config_id, score_pairs(study.scores.pending_pairs(config_id), config))
    codes = [c for c in codebook.codes if c.id != "team"]
    study.versions.revise(
        replace(codebook, codes=(*codes, Code("growth", "Growth", definition="Learning.")))
    )
    assert study.scores.scored_count(config_id) == 4 * 2  # the two kept codes
    for order in ("entropy", "confidence", "pick", "id"):
        listed = study.queries.page(config_id, order=order, limit=1000)
        assert len(listed) == study.queries.count(config_id, order=order) == 4 * 3, order
        growth = [i for i, p in enumerate(listed) if p.code_id == "growth"]
        assert len(growth) == 4, order
        if order != "id":
            assert growth == [8, 9, 10, 11], order  # unscored, after every scored pair
        for index in (0, growth[0], 11):
            pair = listed[index]
            assert (
                study.queries.position(config_id, pair.response_id, pair.code_id, order=order)
                == index
            )


def test_rescoring_after_a_revision_scores_only_new_and_changed_codes(
    study: Study, codebook: Codebook
) -> None:
    backend = FakeBackend()
    first = score_study(study, ScoringEngine(backend, study.codebook))
    assert first.stored == 4 * 3
    calls = sum(len(b) for b in backend.batches)
    study.versions.revise(revised(codebook))
    again = FakeBackend()
    run = score_study(study, ScoringEngine(again, study.codebook))
    # pay (changed) and growth (new) on 4 responses; workload only renamed... its name
    # is part of the prompt, so it is rescored too; team is archived.
    assert run.pending == 4 * 3
    assert sum(len(b) for b in again.batches) <= calls
    assert study.scores.pending_pairs(run.config_id) == []
    # A revision that touches one code rescores only that code's pairs.
    one = replace(
        study.codebook,
        codes=tuple(
            replace(c, definition="Anything about growth.") if c.id == "growth" else c
            for c in study.codebook.codes
        ),
    )
    study.versions.revise(one)
    third = FakeBackend()
    run = score_study(study, ScoringEngine(third, study.codebook))
    assert run.pending == 4
    assert run.stored == 4
    assert sum(len(b) for b in third.batches) == 4


def test_two_old_codes_to_one_id_is_refused_and_nothing_changes(
    study: Study, codebook: Codebook
) -> None:
    study.decisions.record("r1", "pay", 4, coder="ana")
    # 'pay' keeps its id but takes the name of 'team', which is gone: a merge.
    merged = replace(
        codebook,
        codes=tuple(
            replace(c, name="Team") if c.id == "pay" else c
            for c in codebook.codes
            if c.id != "team"
        ),
    )
    before = content(study.path)
    with pytest.raises(StudyError, match="two old codes cannot become one"):
        study.versions.revise(merged)
    assert content(study.path) == before
    assert study.versions.current() == 1


def test_a_scale_change_on_a_decided_code_is_refused(study: Study, codebook: Codebook) -> None:
    study.decisions.record("r2", "team", 1, coder="ana")
    changed = replace(
        codebook,
        codes=tuple(replace(c, scale=LIKERT_5) if c.id == "team" else c for c in codebook.codes),
    )
    before = content(study.path)
    with pytest.raises(StudyError, match="scale"):
        study.versions.revise(changed)
    assert content(study.path) == before


def test_a_scale_change_on_an_undecided_code_is_allowed(study: Study, codebook: Codebook) -> None:
    changed = replace(
        codebook,
        codes=tuple(replace(c, scale=LIKERT_5) if c.id == "team" else c for c in codebook.codes),
    )
    assert study.versions.revise(changed) == 2


def test_the_same_codebook_is_not_a_revision(study: Study, codebook: Codebook) -> None:
    with pytest.raises(StudyError, match="same as the current"):
        study.versions.revise(codebook)


def test_a_removed_code_can_come_back_with_its_decisions(study: Study, codebook: Codebook) -> None:
    study.decisions.record("r2", "team", 1, coder="ana")
    study.versions.revise(revised(codebook))
    with pytest.raises(StudyError):
        study.decisions.decision("r2", "team", coder="ana")  # archived: not a codable code
    back = replace(study.codebook, codes=(*study.codebook.codes, codebook.code("team")))
    study.versions.revise(back)
    decision = study.decisions.decision("r2", "team", coder="ana")
    assert decision is not None
    assert decision.value == 1


def test_a_renamed_id_keeps_the_codes_decisions(study: Study, codebook: Codebook) -> None:
    study.decisions.record("r1", "pay", 3, coder="ana")
    renamed = replace(
        codebook,
        codes=tuple(replace(c, id="money") if c.id == "pay" else c for c in codebook.codes),
    )
    diff = study.versions.plan_revision(renamed)
    assert [(c.kind, c.old_id, c.code_id) for c in diff.changes] == [("renamed", "pay", "money")]
    study.versions.revise(renamed)
    decision = study.decisions.decision("r1", "money", coder="ana")
    assert decision is not None
    assert decision.value == 3


def test_an_older_study_is_upgraded_with_its_first_version_and_wave(
    tmp_path: Path, codebook: Codebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    from study import ResponseTable
    from study.file import schema as study_schema

    path = tmp_path / "old.codecurve"
    with monkeypatch.context() as m:
        m.setattr(study_schema, "SCHEMA_VERSION", 2)
        responses = ResponseTable.from_texts({"r1": "a", "r2": "b"})
        with Study.create(path, responses=responses, codebook=codebook) as old:
            old.decisions.record("r1", "pay", 3, coder="ana")
    with Study.open(path) as s:
        assert [v.version for v in s.versions.all()] == [1]
        assert s.versions.all()[0].codebook == codebook
        assert [(w.wave, w.count) for w in s.versions.waves()] == [(1, 2)]
        decision = s.decisions.decision("r1", "pay", coder="ana")
        assert decision is not None
        assert decision.value == 3
        s.versions.revise(revised(codebook))
        s.decisions.record("r2", "pay", 1, coder="ana")
    con = sqlite3.connect(path)
    try:
        stamps = con.execute(
            "SELECT rid, codebook_version FROM annotations ORDER BY rid"
        ).fetchall()
    finally:
        con.close()
    assert stamps == [(1, None), (2, 2)]  # NULL: made under the first codebook


def test_the_audit_order_follows_the_codebook_and_a_study_made_anew(tmp_path: Path) -> None:
    """The audit listing is kept per study handle and codebook: a code removed and
    restored comes back into it, and a study made anew at the same path lists its own
    sample (not the one an earlier study there had drawn)."""
    from study.intake.responses import ResponseTable
    from tests.factories import working_life

    path = tmp_path / "s.codecurve"
    texts = ResponseTable.from_texts({f"r{i}": f"text {i}" for i in range(1, 41)})
    book = working_life()
    with Study.create(path, responses=texts, codebook=book) as first:
        first.audit.draw(per_code=5, seed=1)
        first_sample = first.audit.sample()
        assert first_sample is not None
        assert first.queries.count(None, order="audit") == 15
        first.versions.revise(replace(book, codes=tuple(c for c in book.codes if c.id != "team")))
        assert first.queries.count(None, order="audit") == 10
        first.versions.revise(book)  # team comes back
        assert first.queries.count(None, order="audit") == 15
    with Study.create(path, responses=texts, codebook=book, overwrite=True) as again:
        again.audit.draw(per_code=5, seed=2)
        sample = again.audit.sample()
        assert sample is not None
        assert sample.queue()[:4] != first_sample.queue()[:4]
        listed = again.queries.page(None, order="audit", limit=4)
        assert [(p.response_id, p.code_id) for p in listed] == list(sample.queue()[:4])
