"""Learning from the coder (study.analysis._learning) with the fake model's features.

The fake model's features are a hashed bag of the response's words, and its zero-shot
curve is noise: a curve learned from decisions that follow the words must beat the
zero-shot curve on the blind audit, and no audit pair, delegated or accepted pick may
ever change what is learned.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from codebooks.model import BINARY, LIKERT_5, Code, Codebook
from scoring import FakeBackend, ScoringEngine
from scoring.learned import LearningError
from study import ResponseTable, Study, score_study
from study.analysis._learning import fits, learn, learned_config_id, training_decisions
from study.errors import StudyError

WORDS = [
    "staff",
    "were",
    "kind",
    "the",
    "wait",
    "was",
    "long",
    "parking",
    "ambulance",
    "late",
    "rude",
    "nurse",
    "food",
]

CODEBOOK = Codebook(
    name="Patients",
    codes=(
        Code("wait", "Waiting", "Mentions of waiting or delays."),
        Code("kind", "Kindness", "Staff were kind or caring."),
        Code("mood", "Mood", "How positive the comment is.", scale=LIKERT_5),
    ),
    scale=BINARY,
)


def _texts(n: int, seed: int = 3) -> dict[str, str]:
    rng = random.Random(seed)
    return {f"c{i + 1}": " ".join(rng.choices(WORDS, k=rng.randint(4, 12))) for i in range(n)}


def truth(text: str, code: str) -> int:
    words = set(text.split())
    if code == "wait":
        return int("wait" in words or "late" in words)
    if code == "kind":
        return int("kind" in words)
    return 1 + min(4, len(words & {"kind", "staff", "nurse", "food"}))


def scored_study(path: Path) -> Study:
    opened = Study.create(path, responses=ResponseTable.from_texts(_texts(240)), codebook=CODEBOOK)
    score_study(opened, ScoringEngine(FakeBackend(), opened.codebook))
    opened.audit.draw(per_code=80, seed=11)
    return opened


@pytest.fixture
def study(tmp_path: Path) -> Iterator[Study]:
    with scored_study(tmp_path / "s.codecurve") as opened:
        yield opened


def decide_outside_audit(study: Study, code: str, n: int, *, coder: str = "ana") -> None:
    sample = study.audit.sample()
    assert sample is not None
    done = 0
    for response in study.responses():
        if sample.is_audit(response.id, code):
            continue
        study.decisions.record(response.id, code, truth(response.text, code), coder=coder)
        done += 1
        if done == n:
            return


def decide_audit(study: Study, code: str, *, coder: str = "ana", flip: bool = False) -> None:
    sample = study.audit.sample()
    assert sample is not None
    texts = {r.id: r.text for r in study.responses()}
    for rid in sample.pairs(code):
        value = truth(texts[rid], code)
        study.decisions.record(rid, code, 1 - value if flip else value, coder=coder, blind=True)


def audit_auroc(study: Study, config_id: int, code: str) -> float:
    sample = study.audit.sample()
    assert sample is not None
    rows = study.queries.annotated_pairs(config_id, coder="ana")
    rows = rows[(rows.code_id == code) & rows.response_id.isin(sample.pairs(code))]
    return float(roc_auc_score(rows.applies, rows.p_applies))


def test_learning_beats_the_zero_shot_curve_on_the_blind_audit(study: Study) -> None:
    decide_outside_audit(study, "wait", 100)
    decide_audit(study, "wait")
    zero_shot = study.scores.active_config_id()
    assert zero_shot is not None
    run = learn(study, coder="ana", code="wait")
    (wait,) = run.codes
    assert wait.learned
    assert wait.counts[0] + wait.counts[1] == 100
    assert wait.left_out_audit == 80
    assert study.scores.active_config_id() == run.config_id != zero_shot
    assert audit_auroc(study, zero_shot, "wait") < 0.7
    assert audit_auroc(study, run.config_id, "wait") > 0.9
    assert wait.cv_auroc is not None
    assert wait.cv_auroc > 0.8
    # Every pair of the code has a learned curve; the other codes keep the zero-shot one.
    assert study.scores.scored_count(run.config_id) >= 240


def test_no_audit_decision_changes_what_is_learned(study: Study) -> None:
    decide_outside_audit(study, "wait", 100)
    first = learn(study, coder="ana", code="wait").codes[0]
    # The audit decided, deliberately wrong: were it learned from, the fit would move.
    decide_audit(study, "wait", flip=True)
    second = learn(study, coder="ana", code="wait").codes[0]
    assert second.left_out_audit == 80
    assert second.params_hash == first.params_hash
    assert dict(second.counts) == dict(first.counts)


def test_the_same_decisions_give_the_same_numbers(study: Study) -> None:
    decide_outside_audit(study, "kind", 90)
    run = learn(study, coder="ana")
    first = study.queries.annotated_pairs(run.config_id, coder="ana")
    again = learn(study, coder="ana")
    assert again.config_id == run.config_id
    assert [c.params_hash for c in again.codes] == [c.params_hash for c in run.codes]
    second = study.queries.annotated_pairs(run.config_id, coder="ana")
    assert first.probs.tolist() == second.probs.tolist()
    (kind,) = [f for f in fits(study, run.config_id) if f.code_id == "kind"]
    assert kind.learned
    assert kind.coder == "ana"
    assert kind.base_config_id == run.base_config_id


def test_accepted_picks_and_other_coders_are_not_learned_from(study: Study) -> None:
    decide_outside_audit(study, "wait", 60)
    chosen, _ = training_decisions(study, study.codebook.code("wait"), "ana")
    sample = study.audit.sample()
    assert sample is not None
    spare = [
        r.id
        for r in study.responses()
        if not sample.is_audit(r.id, "wait") and study.index.response_key(r.id) not in chosen
    ]
    study.decisions.record(spare[0], "wait", 1, coder="ana", source="model")
    study.decisions.record(spare[1], "wait", 1, coder="ben")
    after, _ = training_decisions(study, study.codebook.code("wait"), "ana")
    assert after == chosen


def test_a_code_with_one_value_decided_says_what_it_needs(study: Study) -> None:
    sample = study.audit.sample()
    assert sample is not None
    for r in study.responses():
        if not sample.is_audit(r.id, "kind") and truth(r.text, "kind") == 0:
            study.decisions.record(r.id, "kind", 0, coder="ana")
    with pytest.raises(LearningError, match=r"needs 5 more of 1 \(has 0\)"):
        learn(study, coder="ana", code="kind")


def test_a_scale_point_never_decided_is_named(study: Study) -> None:
    sample = study.audit.sample()
    assert sample is not None
    for r in study.responses():
        if not sample.is_audit(r.id, "mood") and truth(r.text, "mood") != 3:
            study.decisions.record(r.id, "mood", truth(r.text, "mood"), coder="ana")
    with pytest.raises(LearningError, match=r"more of 3 \(has 0\)"):
        learn(study, coder="ana", code="mood")


def test_codes_not_ready_keep_the_zero_shot_curve(study: Study) -> None:
    decide_outside_audit(study, "wait", 100)
    zero_shot = study.scores.active_config_id()
    run = learn(study, coder="ana")
    by_code = {c.code_id: c for c in run.codes}
    assert by_code["wait"].learned
    assert not by_code["kind"].learned
    assert by_code["kind"].needs == {0: 5, 1: 5}
    learned = study.queries.annotated_pairs(run.config_id)
    assert learned.empty or set(learned.code_id) == {"wait"}
    # Kindness under the learned configuration is the zero-shot curve, pair for pair.
    from study.scores import learned as stored

    cid = study.index.code_key("kind")
    with study.snapshot() as conn:
        base = stored.code_scores(conn, zero_shot or 0, cid, with_features=False)
        copy = stored.code_scores(conn, run.config_id, cid, with_features=False)
    assert np.array_equal(base.rids, copy.rids)
    assert np.allclose(base.logprobs, copy.logprobs)


def test_no_decisions_and_several_coders_are_clear_errors(study: Study) -> None:
    with pytest.raises(StudyError, match="no coder has decided anything yet"):
        learn(study)
    decide_outside_audit(study, "wait", 10, coder="ana")
    decide_outside_audit(study, "wait", 10, coder="ben")
    with pytest.raises(StudyError, match=r"several coders have decided \(ana, ben\)"):
        learn(study)
    with pytest.raises(StudyError, match="'cy' has made no decisions"):
        learn(study, coder="cy")


def test_features_missing_say_that_scoring_recaptures_them(tmp_path: Path) -> None:
    texts = _texts(60)
    with Study.create(
        tmp_path / "old.codecurve", responses=ResponseTable.from_texts(texts), codebook=CODEBOOK
    ) as study:
        recapture(study)


def recapture(study: Study) -> None:
    # Scored without features (as before codecurve kept them), then partly with them.
    score_study(study, ScoringEngine(FakeBackend(), study.codebook, features=False))
    config = study.scores.active_config_id()
    assert config is not None
    assert study.scores.feature_layout(config) is None
    assert len(study.scores.pending_pairs(config, features=True)) == 180
    decide_outside_audit_plain(study, "wait", 40)
    run = learn(study, coder="ana", code="wait")
    assert run.codes[0].inputs == "zero-shot"
    assert "recapture" in run.notes[0]
    # Some features kept, the rest missing: refused, with the way out named.
    engine = ScoringEngine(FakeBackend(), study.codebook)
    first = list(study.scores.pending_pairs(config, features=True))[:20]
    study.scores.store(config, engine.score(first), feature_layout=engine.feature_layout)
    with pytest.raises(StudyError, match=r"score the study again to recapture") as refused:
        learn(study, coder="ana", code="wait", config_id=config)
    assert [r.action for r in refused.value.remedies] == ["score"]
    # Scoring again recaptures the features and keeps the scores as they were.
    before = study.queries.annotated_pairs(config).probs.tolist()
    run_again = score_study(study, engine, activate=False)
    assert run_again.stored == 0
    assert study.scores.pending_pairs(config, features=True) == []
    assert study.queries.annotated_pairs(config).probs.tolist() == before
    assert learn(study, coder="ana", code="wait", config_id=config).codes[0].inputs == (
        "features+zero-shot"
    )


def decide_outside_audit_plain(study: Study, code: str, n: int) -> None:
    for response in list(study.responses())[:n]:
        study.decisions.record(response.id, code, truth(response.text, code), coder="ana")


def test_learned_configuration_is_found_again(study: Study) -> None:
    decide_outside_audit(study, "wait", 100)
    run = learn(study, coder="ana", code="wait")
    assert learned_config_id(study, run.base_config_id, "ana") == run.config_id
    assert learned_config_id(study, run.base_config_id, "ben") is None
    # Learning again while the learned configuration is active learns on its base.
    again = learn(study, coder="ana", code="wait")
    assert again.base_config_id == run.base_config_id


def test_learning_one_code_leaves_every_other_code_scored(study: Study) -> None:
    decide_outside_audit(study, "wait", 100)
    zero_shot = study.scores.active_config_id()
    assert zero_shot is not None
    run = learn(study, coder="ana", code="wait")
    assert study.scores.scored_count(run.config_id) == study.scores.scored_count(zero_shot)
    from study.scores import learned as stored

    cid = study.index.code_key("mood")
    with study.snapshot() as conn:
        base = stored.code_scores(conn, zero_shot, cid, with_features=False)
        copy = stored.code_scores(conn, run.config_id, cid, with_features=False)
    assert np.array_equal(base.logprobs, copy.logprobs)


def test_a_code_is_rescored_in_blocks_and_marked_until_its_fit_is_recorded(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    from study.scores import learned as stored

    decide_outside_audit(study, "wait", 100)
    learn(study, coder="ana", code="wait")
    monkeypatch.setattr(stored, "WRITE_ROWS", 50)
    writes: list[int] = []
    real = stored.write_rows

    def counting(conn: object, rows: list[object], *, in_place: bool) -> None:
        assert in_place  # a refit of the same pairs updates its rows
        writes.append(len(rows))
        if len(writes) == 3:
            raise RuntimeError("killed mid-way")
        real(conn, rows, in_place=in_place)  # type: ignore[arg-type]

    monkeypatch.setattr(stored, "write_rows", counting)
    decide_outside_audit(study, "wait", 120)
    with pytest.raises(RuntimeError, match="killed mid-way"):
        learn(study, coder="ana", code="wait")
    assert writes == [50, 50, 50]
    (fit,) = [f for f in fits(study, 2) if f.code_id == "wait"]
    assert fit.params_hash == ""  # known as interrupted: the next learn refits it whole
    monkeypatch.setattr(stored, "write_rows", real)
    again = learn(study, coder="ana", code="wait")
    (fit,) = [f for f in fits(study, again.config_id) if f.code_id == "wait"]
    assert fit.params_hash == again.codes[0].params_hash != ""


def learned_score_rows(study: Study, config_id: int) -> list[tuple[object, ...]]:
    with study.snapshot() as conn:
        return conn.execute(
            "SELECT * FROM scores WHERE config_id = ? ORDER BY rid, cid", (config_id,)
        ).fetchall()


def test_a_refit_updates_in_place_exactly_what_a_first_fit_inserts(tmp_path: Path) -> None:
    with (
        scored_study(tmp_path / "a.codecurve") as refitted,
        scored_study(tmp_path / "b.codecurve") as fresh,
    ):
        decide_outside_audit(refitted, "wait", 60)
        learn(refitted, coder="ana", code="wait")
        decide_outside_audit(refitted, "wait", 110)
        again = learn(refitted, coder="ana", code="wait")
        decide_outside_audit(fresh, "wait", 110)
        first = learn(fresh, coder="ana", code="wait")
        assert again.codes[0].params_hash == first.codes[0].params_hash
        # Every column but the time it was written (the last) is the same.
        assert [r[:-1] for r in learned_score_rows(refitted, again.config_id)] == [
            r[:-1] for r in learned_score_rows(fresh, first.config_id)
        ]


def test_features_of_another_layout_are_recaptured_by_scoring(study: Study) -> None:
    # Features kept by a codecurve that defined them otherwise: learning must not mix the
    # two, and scoring again replaces them all, its scores kept as they were.
    config = study.scores.active_config_id()
    assert config is not None
    engine = ScoringEngine(FakeBackend(), study.codebook)
    assert study.scores.pending_pairs(config, features=True, layout=engine.feature_layout) == []
    with study.transaction() as conn:
        conn.execute("UPDATE configs SET feature_layout = 'h1:old' WHERE id = ?", (config,))
    stale = study.scores.pending_pairs(config, features=True, layout=engine.feature_layout)
    assert len(stale) == 240 * len(study.codebook.codable)
    before = study.queries.annotated_pairs(config).probs.tolist()
    run = score_study(study, engine, activate=False)
    assert run.stored == 0
    assert study.scores.feature_layout(config) == engine.feature_layout
    assert study.scores.pending_pairs(config, features=True, layout=engine.feature_layout) == []
    assert study.queries.annotated_pairs(config).probs.tolist() == before


def test_a_refit_reuses_the_features_it_read_while_the_pairs_are_the_same(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from study.analysis._learning import ReadMemory
    from study.scores import learned as stored

    with (
        scored_study(tmp_path / "a.codecurve") as remembered,
        scored_study(tmp_path / "b.codecurve") as fresh,
    ):
        zero_shot = remembered.scores.active_config_id()
        assert zero_shot is not None
        cid = remembered.index.code_key("wait")
        layout = remembered.scores.feature_layout(zero_shot)
        memory = ReadMemory()
        decide_outside_audit(remembered, "wait", 60)
        learn(remembered, coder="ana", code="wait", memory=memory)
        kept = memory.recall(zero_shot, cid, layout)
        assert kept is not None
        assert kept.features is not None
        decide_outside_audit(remembered, "wait", 110)
        again = learn(remembered, coder="ana", code="wait", memory=memory)
        # The kept features were taken, not read again ...
        recalled = memory.recall(zero_shot, cid, layout)
        assert recalled is not None
        assert recalled.features is kept.features
        # ... and the numbers are those of a study that read everything.
        decide_outside_audit(fresh, "wait", 110)
        first = learn(fresh, coder="ana", code="wait")
        assert again.codes[0].params_hash == first.codes[0].params_hash
        assert [r[:-1] for r in learned_score_rows(remembered, again.config_id)] == [
            r[:-1] for r in learned_score_rows(fresh, first.config_id)
        ]
        # Another layout, or scores of another text, are never answered from memory.
        assert memory.recall(zero_shot, cid, "h1:old") is None
        changed = replace(kept, text_hash=("x", *kept.text_hash[1:]))
        with remembered.snapshot() as conn:
            read = stored.code_scores(conn, zero_shot, cid, with_features=True, known=changed)
        assert read.features is not None
        assert read.features is not kept.features
        assert np.array_equal(read.features, kept.features)


def prompt_hashes(study: Study, config_id: int, cid: int) -> list[str]:
    with study.snapshot() as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT prompt_hash FROM scores WHERE config_id = ? AND cid = ? ORDER BY rid",
                (config_id, cid),
            )
        ]


def test_a_refit_after_the_base_was_rescored_writes_the_new_identity(study: Study) -> None:
    # A refit updates only the curves in place; the base's pairs rescored under another
    # prompt must not leave the learned rows with the old prompt's hash.
    zero_shot = study.scores.active_config_id()
    assert zero_shot is not None
    decide_outside_audit(study, "wait", 60)
    run = learn(study, coder="ana", code="wait")
    cid = study.index.code_key("wait")
    with study.transaction() as conn:
        conn.execute(
            "UPDATE scores SET prompt_hash = 'rescored' WHERE config_id = ? AND cid = ? "
            "AND rid = (SELECT MIN(rid) FROM scores WHERE config_id = ? AND cid = ?)",
            (zero_shot, cid, zero_shot, cid),
        )
    learn(study, coder="ana", code="wait")
    hashes = prompt_hashes(study, run.config_id, cid)
    assert hashes[0] == "rescored"
    assert "rescored" not in hashes[1:]


def rescore_one_pair(study: Study, config_id: int, cid: int) -> None:
    """What scoring does to a pair whose text changed: its row deleted, a new one stored
    with a new curve, prompt and time."""
    from study.stamps import now

    with study.transaction() as conn:
        row = list(
            conn.execute(
                "SELECT * FROM scores WHERE config_id = ? AND cid = ? ORDER BY rid LIMIT 1",
                (config_id, cid),
            ).fetchone()
        )
        names = [d[0] for d in conn.execute("SELECT * FROM scores LIMIT 0").description]
        conn.execute(
            "DELETE FROM scores WHERE config_id = ? AND rid = ? AND cid = ?",
            (config_id, row[names.index("rid")], cid),
        )
        row[names.index("entropy")] += 0.125
        row[names.index("prompt_hash")] = "rescored"
        row[names.index("scored_at")] = now()
        conn.execute(
            f"INSERT INTO scores ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", row
        )


def test_the_apps_refits_read_nothing_again_until_the_scores_change(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    from study.analysis._learning import ReadMemory
    from study.scores import learned as stored

    zero_shot = study.scores.active_config_id()
    assert zero_shot is not None
    cid = study.index.code_key("wait")
    reads: list[int] = []
    checks: list[tuple[str | None, bool]] = []
    real_read, real_begin = stored.code_scores, stored.begin_rescoring

    def counting_read(*args: object, **kwargs: object) -> stored.CodeScores:
        reads.append(1)
        return real_read(*args, **kwargs)  # type: ignore[arg-type]

    def watching_begin(*args: object, written: str | None = None) -> bool:
        same = real_begin(*args, written=written)  # type: ignore[arg-type]
        checks.append((written, same))
        return same

    monkeypatch.setattr(stored, "code_scores", counting_read)
    monkeypatch.setattr(stored, "begin_rescoring", watching_begin)
    memory = ReadMemory()
    decide_outside_audit(study, "wait", 60)
    learn(study, coder="ana", code="wait", memory=memory)
    decide_outside_audit(study, "wait", 80)
    learn(study, coder="ana", code="wait", memory=memory)
    decide_outside_audit(study, "wait", 100)
    again = learn(study, coder="ana", code="wait", memory=memory)
    # Read once; the refits after the first knew the rows the last one had written.
    assert len(reads) == 1
    assert [(w is not None, same) for w, same in checks] == [
        (False, False),
        (True, True),
        (True, True),
    ]
    # The base rescored: read again, and the learned rows take the new identity.
    rescore_one_pair(study, zero_shot, cid)
    learn(study, coder="ana", code="wait", memory=memory)
    assert len(reads) == 2
    assert checks[-1] == (None, False)
    hashes = prompt_hashes(study, again.config_id, cid)
    assert hashes[0] == "rescored"
    assert "rescored" not in hashes[1:]
    # Another session rewrote the learned rows: they are checked again, not trusted.
    learn(study, coder="ana", code="wait", memory=memory)
    assert checks[-1][0] is not None
    with study.transaction() as conn:
        conn.execute(
            "UPDATE scores SET scored_at = 'elsewhere', prompt_hash = 'elsewhere' "
            "WHERE config_id = ? AND cid = ? "
            "AND rid = (SELECT MIN(rid) FROM scores WHERE config_id = ? AND cid = ?)",
            (again.config_id, cid, again.config_id, cid),
        )
    learn(study, coder="ana", code="wait", memory=memory)
    assert checks[-1][0] is not None
    assert checks[-1][1] is False  # compared, and found to differ: written anew
    assert len(reads) == 2
