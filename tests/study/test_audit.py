"""The audit sample of a study: drawn once from a seeded permutation, extended, blind."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codebooks.model import LIKERT_5, Code, Codebook
from scoring.backend import ModelIdentity
from scoring.curves import curve_from_logprobs
from scoring.score import Score, ScoreConfig
from screening.sampling import DEFAULT_AUDIT_PER_CODE, audit_permutation
from study import ResponseTable, Study, StudyError

SIM_CONFIG = ScoreConfig(
    model=ModelIdentity("fake:sim", "r1", "float32", "cpu", "fake"),
    template_id="test-v1",
    template_hash="t0",
    context="definition",
    scale=LIKERT_5,
)
SIM_CODEBOOK = Codebook(
    name="Simulated",
    codes=(
        Code("workload", "Workload", definition="Too much work."),
        Code("pay", "Pay", definition="Money."),
    ),
    scale=LIKERT_5,
)


def simulated_score(response_id: str, code_id: str, pick: int, confidence: float) -> Score:
    """A score of the simulated model: ``pick`` (1-5) at ``confidence``, the other options
    sharing the rest."""
    probs = [(1 - confidence) / 4] * 5
    probs[pick - 1] = confidence
    return Score(
        response_id=response_id,
        code_id=code_id,
        config_key=SIM_CONFIG.key(),
        scale=LIKERT_5,
        curve=curve_from_logprobs(np.log(probs), LIKERT_5.values),
        token_ids=tuple(((k,),) for k in range(5)),
        missing=(False,) * 5,
        prompt="p",
        prompt_hash="h",
        text_hash="t",
        code_hash="c",
    )


def simulated_study(
    path: Path, *, n: int, behaviour: str = "calibrated", seed: int = 0
) -> tuple[Path, dict[tuple[str, str], int]]:
    """A scored study of ``n`` responses x 2 codes (1-5 scale) with a known truth.

    The model picks 1 or 5 with confidence c (its p; the other options share the rest);
    a wrong pick's truth is the other end of the scale. ``calibrated``: c near 1 for
    70% of the pairs, 0.25-0.6 for the rest, the pick correct with probability c.
    ``chance``: the pick is right at random (30% errors) whatever c says. ``constant``:
    the model picks 1 at c = 0.99 on every pair, right on about 84%. Returns the path and
    the true value of every pair.
    """
    rng = np.random.default_rng(seed)
    texts = {f"r{i}": f"response {i}" for i in range(n)}
    study = Study.create(path, responses=ResponseTable.from_texts(texts), codebook=SIM_CODEBOOK)
    config_id = study.scores.ensure_config(SIM_CONFIG)
    truth: dict[tuple[str, str], int] = {}
    scores = []
    for code in SIM_CODEBOOK.codes:
        conf = np.where(rng.random(n) < 0.7, rng.uniform(0.97, 1.0, n), rng.uniform(0.25, 0.6, n))
        picks = rng.choice([1, 5], n)
        correct = rng.random(n) < conf if behaviour == "calibrated" else rng.random(n) >= 0.3
        if behaviour == "constant":
            conf, picks, correct = np.full(n, 0.99), np.ones(n, int), rng.random(n) >= 0.16
        for i in range(n):
            rid = f"r{i}"
            c = float(min(conf[i], 0.999))
            truth[(rid, code.id)] = int(picks[i]) if correct[i] else 6 - int(picks[i])
            scores.append(simulated_score(rid, code.id, int(picks[i]), c))
    study.scores.store(config_id, scores)
    study.close()
    return path, truth


def code_audit_blind(study: Study, truth: dict[tuple[str, str], int], *, coder: str = "ana") -> int:
    """Record the true value of every audit pair, blind; return how many."""
    sample = study.audit.sample()
    assert sample is not None
    count = 0
    for code in study.codes:
        for rid in sample.pairs(code.id):
            study.decisions.record(rid, code.id, truth[(rid, code.id)], coder=coder, blind=True)
            count += 1
    return count


def code_second_coder(
    study: Study,
    truth: dict[tuple[str, str], int],
    *,
    per_code: int,
    flip: float,
    seed: int,
    coder: str = "bo",
) -> None:
    """A second coder on the first ``per_code`` audit pairs of every code, giving the
    other end of the scale instead of the truth with probability ``flip``."""
    rng = np.random.default_rng(seed)
    sample = study.audit.sample()
    assert sample is not None
    for code in study.codes:
        for rid in sample.pairs(code.id)[:per_code]:
            value = truth[(rid, code.id)]
            other = 6 - value if rng.random() < flip else value
            study.decisions.record(rid, code.id, other, coder=coder)


def file_digest(path: Path) -> str:
    """The study's content, as SQLite sees it (the WAL folded in by closing)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


Simulated = tuple[Path, dict[tuple[str, str], int]]


@pytest.fixture
def sim(tmp_path: Path) -> Simulated:
    return simulated_study(tmp_path / "sim.codecurve", n=300)


def test_draw_is_the_seeded_permutation_and_is_logged(sim: Simulated) -> None:
    path, _ = sim
    with Study.open(path) as study:
        assert study.audit.sample() is None
        sample = study.audit.draw(per_code=40, seed=7)
        assert sample.seed == 7
        assert sample.permutation == audit_permutation(study.response_ids(), seed=7)
        assert dict(sample.sizes) == {"workload": 40, "pay": 40}
        assert sample.pairs("pay") == sample.permutation[:40]
        first = sample.permutation[0]
        assert sample.position(first) == 0
        assert sample.is_audit(first, "pay")
        assert not sample.is_audit(sample.permutation[40], "pay")
        assert sample.position("nobody") is None
        events = [e for e in study.decisions.events() if e.kind == "audit"]
        assert len(events) == 1
        detail = json.loads(events[0].detail or "")
        assert detail["seed"] == 7
        assert detail["sizes"] == {"workload": 40, "pay": 40}
    with Study.open(path, read_only=True) as study:
        assert study.audit.sample() == sample  # read back from the log


def test_default_size_is_capped_by_the_population(tmp_path: Path) -> None:
    path, _ = simulated_study(tmp_path / "small.codecurve", n=30)
    with Study.open(path) as study:
        assert dict(study.audit.draw(seed=1).sizes) == {"workload": 30, "pay": 30}
    path, _ = simulated_study(tmp_path / "big.codecurve", n=DEFAULT_AUDIT_PER_CODE + 5)
    with Study.open(path) as study:
        sizes = study.audit.draw(seed=1).sizes
        assert set(sizes.values()) == {DEFAULT_AUDIT_PER_CODE}


def test_extend_takes_the_next_items_of_the_same_permutation(sim: Simulated) -> None:
    path, _ = sim
    with Study.open(path) as study:
        drawn = study.audit.draw(per_code=20, seed=3)
        grown = study.audit.extend(15, codes=["Pay"])
        assert grown.seed == 3
        assert grown.permutation == drawn.permutation
        assert dict(grown.sizes) == {"workload": 20, "pay": 35}
        assert grown.pairs("pay")[:20] == drawn.pairs("pay")
        again = study.audit.extend(5)
        assert dict(again.sizes) == {"workload": 25, "pay": 40}
        assert len(again.draws) == 3


def test_the_queue_walks_responses_in_audit_order_with_all_their_codes(
    sim: Simulated,
) -> None:
    path, _ = sim
    with Study.open(path) as study:
        study.audit.draw(per_code=2, seed=3)
        sample = study.audit.extend(1, codes=["Pay"])
        first, second, third = sample.permutation[:3]
        assert sample.queue() == (
            (first, "workload"),
            (first, "pay"),
            (second, "workload"),
            (second, "pay"),
            (third, "pay"),
        )


def test_total_size_is_split_over_the_codes(sim: Simulated) -> None:
    path, _ = sim
    with Study.open(path) as study:
        assert dict(study.audit.draw(total=41, seed=1).sizes) == {"workload": 21, "pay": 20}


def test_a_second_draw_is_refused(sim: Simulated) -> None:
    path, _ = sim
    with Study.open(path) as study:
        study.audit.draw(per_code=10, seed=1)
        with pytest.raises(StudyError, match="already has an audit sample"):
            study.audit.draw(per_code=10, seed=2)
        assert study.audit.sample().seed == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"per_code": 0}, "at least 1"),
        ({"per_code": 301}, "larger than the population"),
        ({"total": 0}, "at least 1"),
        ({"total": 1}, "without any"),
        ({"seed": -1}, "seed"),
        ({"codes": ["nope"]}, "nope"),
        ({"per_code": 5, "total": 10}, "not both"),
    ],
)
def test_bad_draws_leave_the_study_unchanged(
    sim: Simulated, kwargs: dict[str, Any], message: str
) -> None:
    path, _ = sim
    before = file_digest(path)
    with Study.open(path) as study:
        n_events = len(study.decisions.events())
        with pytest.raises(StudyError, match=message):
            study.audit.draw(**kwargs)
        assert len(study.decisions.events()) == n_events
        assert study.audit.sample() is None
    assert file_digest(path) == before


def test_bad_extensions(sim: Simulated) -> None:
    path, _ = sim
    with Study.open(path) as study:
        with pytest.raises(StudyError, match="no audit sample"):
            study.audit.extend(5)
        study.audit.draw(per_code=290, seed=1)
        n_events = len(study.decisions.events())
        with pytest.raises(StudyError, match="larger than the population"):
            study.audit.extend(11)
        with pytest.raises(StudyError, match="at least 1"):
            study.audit.extend(0)
        assert len(study.decisions.events()) == n_events
        assert set(study.audit.sample().sizes.values()) == {290}  # type: ignore[union-attr]


def test_the_sample_ignores_responses_added_later(sim: Simulated) -> None:
    # The permutation is of the responses stored with the first draw: rebuilt from them.
    path, _ = sim
    with Study.open(path) as study:
        sample = study.audit.draw(per_code=10, seed=5)
        assert sample.population == 300


def test_blind_decisions_are_marked_and_progress_counts_them(sim: Simulated) -> None:
    path, truth = sim
    with Study.open(path) as study:
        sample = study.audit.draw(per_code=10, seed=4)
        pay = sample.pairs("pay")
        for rid in pay[:3]:
            study.decisions.record(rid, "pay", truth[(rid, "pay")], coder="ana", blind=True)
        study.decisions.record(pay[5], "pay", 5, coder="ana", blind=True)  # 3 and 4 skipped
        study.decisions.record(pay[6], "pay", 5, coder="ana")  # seen the model: not blind
        study.decisions.record(pay[7], "pay", 5, coder="ana", source="model")
        outside = sample.permutation[50]
        study.decisions.record(outside, "pay", 5, coder="ana", blind=True)  # not an audit pair
        progress = study.audit.progress(coder="ana")["pay"]
        assert (progress.progress.coded, progress.progress.skipped) == (4, 2)
        assert progress.progress.remaining == 4
        assert progress.unblind == 2
        assert study.audit.progress()["workload"].progress.coded == 0
        blind = study.audit.blind_pairs(coder="ana")
        assert (pay[0], "pay", "ana") in blind
        assert (pay[6], "pay", "ana") not in blind
        with study.snapshot() as conn:
            rows = conn.execute(
                "SELECT blind FROM events WHERE kind = 'record' ORDER BY id"
            ).fetchall()
        assert [r[0] for r in rows] == [1, 1, 1, 1, 0, 0, 1]


def test_a_blind_decision_cannot_be_an_accepted_pick(sim: Simulated) -> None:
    path, _ = sim
    with Study.open(path) as study, pytest.raises(StudyError, match="blind"):
        study.decisions.record("r1", "pay", 5, coder="ana", source="model", blind=True)


def test_undo_restores_the_blind_flag(sim: Simulated) -> None:
    path, _ = sim
    with Study.open(path) as study:
        study.decisions.record("r1", "pay", 5, coder="ana", blind=True)
        study.decisions.record("r1", "pay", 1, coder="ana")
        assert ("r1", "pay", "ana") not in study.audit.blind_pairs()
        study.decisions.undo(coder="ana")
        assert ("r1", "pay", "ana") in study.audit.blind_pairs()


def test_imported_decisions_count_as_blind(sim: Simulated) -> None:
    path, _ = sim
    with Study.open(path) as study:
        study.decisions.import_decisions([("r1", "pay", 1), ("r2", "workload", 5)], coder="gold")
        assert study.audit.blind_pairs(coder="gold") == {
            ("r1", "pay", "gold"),
            ("r2", "workload", "gold"),
        }


def test_a_report_permutes_the_responses_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample is read once per code and step; the permutation is made once, and an
    extension (a new event) is read as it is."""
    import study.audit.sample as audit_sample
    from study.report._data import ReportOptions, report_data

    audit_sample._first_draw.cache_clear()
    real = audit_permutation
    made: list[int] = []

    def counted(ids: Any, *, seed: int) -> tuple[str, ...]:
        made.append(seed)
        return real(ids, seed=seed)

    monkeypatch.setattr(audit_sample, "audit_permutation", counted)
    path, truth = simulated_study(tmp_path / "once.codecurve", n=300, seed=3)
    with Study.open(path) as study:
        drawn = study.audit.draw(per_code=60, seed=7)
        code_audit_blind(study, truth)
        report_data(study, ReportOptions(coder="ana"))
        assert len(made) <= 2  # once to draw it, once to read it (not once per read)
        before = len(made)
        study.audit.extend(20)
        sample = study.audit.sample()
        assert sample is not None
        assert len(made) == before
        assert sample.permutation == drawn.permutation == real(sample.permutation, seed=7)
        assert {c.id: sample.size(c.id) for c in study.codes} == {c.id: 80 for c in study.codes}
        assert sample.position(sample.permutation[79]) == 79
