"""Certified delegation through the study: plan, apply, undo, repeat, the screen's sample.

The statistics are tested in tests/screening (1,000-draw simulations); here the wiring:
that a study whose truth is known delegates what the certificate allows, records it as
one undoable action, never over a human decision, and refuses a chance-level model.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from study import Study, StudyError
from study.analysis.delegation_plan import plan_delegation
from study.analysis.screen import NOT_RANDOM, screen_study
from study.log.delegations import guarantee_sentences, latest_delegations
from tests.study.test_audit import code_audit_blind, file_digest, simulated_study

Truth = dict[tuple[str, str], int]


#: The simulated confidences straddle 0.5 (their low band is 0.25-0.6), so the screens and
#: plans here cut there; the scale-aware default (0.6 on 1-5) leaves a cell nearly empty.
CUT = 0.5


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Truth]:
    """2,000 responses x 2 codes, an audit of 400 per code coded blind with the truth."""
    path, truth = simulated_study(tmp_path_factory.mktemp("cal") / "cal.codecurve", n=2000, seed=11)
    with Study.open(path) as study:
        study.audit.draw(per_code=400, seed=5)
        code_audit_blind(study, truth)
    return path, truth


def copy_of(path: Path, tmp_path: Path) -> Path:
    target = tmp_path / path.name
    target.write_bytes(path.read_bytes())
    return target


def test_calibrated_model_is_delegated_within_the_guarantee(
    calibrated: tuple[Path, Truth], tmp_path: Path
) -> None:
    path, truth = calibrated
    path = copy_of(path, tmp_path)
    with Study.open(path) as study:
        plan = plan_delegation(study, cut=CUT, max_error=0.05, level=0.95)
        assert [c.delegation.tier for c in plan.codes] == ["Valid", "Valid"]
        assert all(c.certified for c in plan.codes)
        for code in plan.codes:
            assert code.delegation.upper_bound <= 0.05
            assert code.uncoded == 2000 - 400
            assert code.delegated + code.left == code.uncoded
            assert code.delegated > 100
        applied = study.delegations.apply(plan, coder="ana")
        assert applied.total == plan.delegated
        # The realised error among the delegated pairs, against the truth.
        with study.snapshot() as conn:
            rows = conn.execute(
                "SELECT rid, cid, value, blind FROM annotations WHERE source = 'delegated'"
            ).fetchall()
        assert len(rows) == plan.delegated
        wrong = sum(
            value != truth[(study.index.response_id(rid), study.index.code_at(cid).id)]
            for rid, cid, value, _ in rows
        )
        assert wrong / len(rows) <= 0.05
        assert {r[3] for r in rows} == {0}  # delegated decisions are not blind
        # One delegate event with the evidence; every record points to it.
        events = study.decisions.events()
        heads = [e for e in events if e.kind == "delegate"]
        assert len(heads) == 1
        assert heads[0].coder == "ana"
        detail = json.loads(heads[0].detail or "")
        assert detail["level"] == 0.95
        assert detail["max_error"] == 0.05
        assert detail["audit_seed"] == 5
        assert "fake:sim" in detail["config"]
        assert detail["codes"]["pay"]["audit_size"] == 400
        assert detail["codes"]["pay"]["threshold"] == plan.codes[1].delegation.threshold
        with study.snapshot() as conn:
            batch = conn.execute(
                "SELECT COUNT(*) FROM events WHERE batch = ?", (applied.event_id,)
            ).fetchone()[0]
        assert batch == plan.delegated
        sentences = study.delegations.guarantees()
        assert sentences == guarantee_sentences(study)
        assert sentences["pay"].startswith("With 95% confidence, the model's error rate among the ")
        assert " delegated Pay pairs (confidence >= " in sentences["pay"]
        assert latest_delegations(study)["pay"]["event_id"] == applied.event_id
        # Progress sees the delegated pairs as decided, the rest left for review.
        assert study.queries.progress()["by_code"]["pay"]["undecided"] == plan.codes[1].left


def test_never_over_a_human_decision_and_undone_as_one(
    calibrated: tuple[Path, Truth], tmp_path: Path
) -> None:
    path, _ = calibrated
    path = copy_of(path, tmp_path)
    with Study.open(path) as study:
        sample = study.audit.sample()
        assert sample is not None
        outside = sample.permutation[1500]
        study.decisions.record(outside, "pay", 1, coder="bob")  # another coder's human decision
        before = {
            (e.response_id, e.code_id, e.value)
            for e in study.decisions.events()
            if e.kind == "record"
        }
        plan = plan_delegation(study, cut=CUT, coder="ana")
        study.delegations.apply(plan, coder="ana")
        mine = study.decisions.decision(outside, "pay", coder="ana")
        assert mine is None  # the pair bob decided was not delegated
        assert study.decisions.decision(outside, "pay", coder="bob").value == 1  # type: ignore[union-attr]
        # A delegated pair decided by hand afterwards keeps the human decision on undo.
        with study.snapshot() as conn:
            rid = conn.execute(
                "SELECT rid FROM annotations WHERE source = 'delegated' AND coder = 'ana' LIMIT 1"
            ).fetchone()[0]
        hand = study.index.response_id(rid)
        study.decisions.record(hand, "workload", 3, coder="ana")
        undone = study.delegations.undo(coder="ana")
        assert undone is not None
        assert undone.kind == "delegate"
        with study.snapshot() as conn:
            left = conn.execute(
                "SELECT COUNT(*) FROM annotations WHERE source = 'delegated'"
            ).fetchone()[0]
        assert left == 0
        kept = study.decisions.decision(hand, "workload", coder="ana")
        assert kept is not None
        assert kept.source == "human"
        assert kept.value == 3
        assert study.delegations.undo() is None
        assert study.delegations.guarantees() == {}
        after = {
            (e.response_id, e.code_id, e.value)
            for e in study.decisions.events()
            if e.kind == "record"
        }
        assert before <= after


def test_the_coders_undo_takes_back_a_delegation_as_one_action(
    calibrated: tuple[Path, Truth], tmp_path: Path
) -> None:
    path, _ = calibrated
    path = copy_of(path, tmp_path)
    with Study.open(path) as study:
        decided = study.decisions.count()
        plan = plan_delegation(study, cut=CUT)
        study.delegations.apply(plan, coder="ana")
        assert study.decisions.count() == decided + plan.delegated
        undone = study.decisions.undo(coder="ana")
        assert undone is not None
        assert undone.kind == "delegate"
        assert study.decisions.count() == decided
        # The next undo is the latest audit decision, as before the delegation.
        last = study.decisions.undo(coder="ana")
        assert last is not None
        assert last.kind == "record"


def test_repeated_delegation_replaces_the_last(
    calibrated: tuple[Path, Truth], tmp_path: Path
) -> None:
    path, _ = calibrated
    path = copy_of(path, tmp_path)
    with Study.open(path) as study:
        loose = plan_delegation(study, cut=CUT, max_error=0.10)
        study.delegations.apply(loose, coder="ana")
        strict = plan_delegation(study, cut=CUT, max_error=0.05)
        applied = study.delegations.apply(strict, coder="ana")
        with study.snapshot() as conn:
            count = conn.execute(
                "SELECT COUNT(*) FROM annotations WHERE source = 'delegated'"
            ).fetchone()[0]
        assert count == strict.delegated
        assert sum(applied.withdrawn.values()) == loose.delegated - strict.delegated
        assert latest_delegations(study)["pay"]["max_error"] == 0.05


def test_chance_level_model_is_never_delegated(tmp_path: Path) -> None:
    path, truth = simulated_study(tmp_path / "chance.codecurve", n=600, behaviour="chance")
    with Study.open(path) as study:
        study.audit.draw(per_code=300, seed=2)
        code_audit_blind(study, truth)
        plan = plan_delegation(study, cut=CUT)
        assert plan.delegated == 0
        assert not plan.certified
        for code in plan.codes:
            assert code.delegation.threshold is None
            assert code.delegated == 0
            assert code.guarantee().startswith(f"Nothing delegated for {code.code_name} pairs: ")
        before = len(study.decisions.events())
        with pytest.raises(StudyError, match="nothing to delegate"):
            study.delegations.apply(plan, coder="ana")
        assert len(study.decisions.events()) == before


def test_delegating_without_audit_decisions_is_refused(tmp_path: Path) -> None:
    path, _ = simulated_study(tmp_path / "s.codecurve", n=100)
    before = file_digest(path)
    with Study.open(path) as study, pytest.raises(StudyError, match="no audit sample"):
        plan_delegation(study, cut=CUT)
    with Study.open(path) as study:
        study.audit.draw(per_code=50, seed=1)
        with pytest.raises(StudyError, match="no blind decisions on the audit sample"):
            plan_delegation(study, cut=CUT)
        with pytest.raises(StudyError, match="strictly between 0 and 1"):
            plan_delegation(study, cut=CUT, max_error=1.0)
        with pytest.raises(StudyError, match="strictly between 0 and 1"):
            plan_delegation(study, cut=CUT, level=0.0)
    assert file_digest(path) != before  # the draw, and nothing else, changed it


def test_screen_uses_the_blind_audit_by_default(
    calibrated: tuple[Path, Truth], tmp_path: Path
) -> None:
    path, truth = calibrated
    path = copy_of(path, tmp_path)
    with Study.open(path) as study:
        sample = study.audit.sample()
        assert sample is not None
        # Unblind decisions outside the audit: the least confident pairs, all "wrong".
        for rid in sample.permutation[1900:]:
            study.decisions.record(rid, "pay", 6 - truth[(rid, "pay")], coder="ana")
        audit = screen_study(study)
        assert audit.sample == "audit"
        assert audit.sample_note == ""
        assert audit.n_decisions == 800
        assert "blind random audit, 800 decisions" in audit.labelled().pooled.dataset
        assert "blind random audit, 400 decisions" in audit.labelled().per_code["Pay"].dataset
        everything = screen_study(study, sample="all")
        assert everything.sample == "all"
        assert everything.sample_note == NOT_RANDOM
        assert everything.n_decisions == 900
        assert "not a random sample" in everything.labelled().pooled.dataset


def test_codes_audited_to_different_sizes_are_pooled_with_weights(
    calibrated: tuple[Path, Truth], tmp_path: Path
) -> None:
    path, _truth = calibrated
    path = copy_of(path, tmp_path)
    with Study.open(path) as study:
        # Take back 300 of Workload's 400 audit decisions: fractions 100/2000 and 400/2000.
        sample = study.audit.sample()
        assert sample is not None
        for rid in sample.pairs("workload")[100:]:
            study.decisions.clear(rid, "workload", coder="ana")
        result = screen_study(study)
        assert "weights N/n" in result.pooling
        raw = sum(r.table.n for r in result.per_code.values())
        assert raw == 500
        # Kish's effective size is below the raw count when the weights differ.
        assert result.pooled.table.n < raw
        shares = np.array(
            [result.pooled.table.cells()[k] for k in ("a", "b", "c", "d")], dtype=float
        )
        assert shares.sum() == result.pooled.table.n


def test_the_audit_screen_describes_the_population_and_the_uncertain_tail_does_not(
    calibrated: tuple[Path, Truth], tmp_path: Path
) -> None:
    from screening import screen_report

    path, truth = calibrated
    path = copy_of(path, tmp_path)
    with Study.open(path) as study:
        config_id = study.scores.active_config_id()
        assert config_id is not None
        rows = study.queries.page(config_id, order="id", limit=10_000)
        assert all(row.confidence is not None for row in rows)  # every pair is scored
        pairs = [(row.response_id, row.code_id, row.pick, row.confidence or 0.0) for row in rows]
        correct = np.array([truth[(r, c)] == pick for r, c, pick, _ in pairs])
        confidence = np.array([conf for *_, conf in pairs], dtype=float)
        population = screen_report(correct, confidence)  # its cut: p_max >= 0.5
        # Another coder follows the default queue: the 400 least confident pairs per code.
        for code in study.codes:
            tail = sorted((p for p in pairs if p[1] == code.id), key=lambda p: p[3])[:400]
            for rid, cid, _, _ in tail:
                study.decisions.record(rid, cid, truth[(rid, cid)], coder="bob")
        # The same cut as the population's: the screens must describe the same quantity.
        audit = screen_study(study, coder="ana", cut=CUT).pooled
        biased = screen_study(study, coder="bob", sample="all", cut=CUT).pooled
    for index in ("l", "fp"):
        truth_value = getattr(population, index).value
        covered = getattr(audit, index).interval
        assert covered.lower <= truth_value <= covered.upper, index
    missed = biased.fp.interval
    assert not missed.lower <= population.fp.value <= missed.upper


def test_uncoded_audit_pairs_are_left_for_the_blind_audit(
    calibrated: tuple[Path, Truth], tmp_path: Path
) -> None:
    path, _ = calibrated
    path = copy_of(path, tmp_path)
    with Study.open(path) as study:
        sample = study.audit.extend(100)  # 100 more audit responses per code, not coded yet
        plan = plan_delegation(study, cut=CUT)
        for code in plan.codes:
            assert code.uncoded == 2000 - 500
        study.delegations.apply(plan, coder="ana")
        with study.snapshot() as conn:
            rows = conn.execute(
                "SELECT rid, cid FROM annotations WHERE source = 'delegated'"
            ).fetchall()
        assert rows
        for rid, cid in rows:
            pair = (study.index.response_id(rid), study.index.code_at(cid).id)
            assert not sample.is_audit(*pair)


def test_a_study_wide_plan_splits_the_level_and_says_so(
    calibrated: tuple[Path, Truth], tmp_path: Path
) -> None:
    path, _ = calibrated
    with Study.open(copy_of(path, tmp_path), read_only=True) as study:
        own = plan_delegation(study, cut=CUT, max_error=0.05, level=0.95)
        wide = plan_delegation(study, cut=CUT, max_error=0.05, level=0.95, study_wide=True)
    assert wide.study_wide
    assert wide.to_dict()["study_wide"] is True
    assert {c.delegation.level for c in own.codes} == {0.95}
    assert [c.delegation.level for c in wide.codes] == pytest.approx([0.975, 0.975])
    # A stricter level never delegates more.
    for a, b in zip(own.codes, wide.codes, strict=True):
        assert b.delegated <= a.delegated
    for code in wide.certified:
        assert "Study-wide: certified at 0.975" in code.guarantee()
        assert "all 2 codes planned hold together" in code.guarantee()
    for code in own.certified:
        assert code.guarantee().endswith("(This code's own guarantee, not a study-wide one.)")
