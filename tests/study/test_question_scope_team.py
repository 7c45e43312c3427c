"""A scoped study's team work follows its questions (issue 35, 9): agreement between two
coders counts each code's own pairs, delegation delegates only pairs the study has,
co-occurrence pairs codes only where both apply, a new wave's pairs follow the scope, and
a revision that scopes an existing study leaves the decisions off a code's questions out
of every count (kept in the file, as an archived code's are)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from codebooks.model import Codebook
from study import Response, ResponseTable, Study
from study.analysis.agreement import study_agreement
from study.analysis.delegation_plan import plan_delegation
from study.analysis.findings import co_occurrence, study_findings
from study.exchange.frames import long_frame
from tests.study.test_audit import SIM_CODEBOOK, SIM_CONFIG, simulated_score
from tests.study.test_question_scope import scoped_book, survey

Truth = dict[tuple[str, str], int]


def unscoped_book() -> Codebook:
    book = scoped_book()
    codes = tuple(replace(c, questions=()) for c in book.codes)
    return replace(book, codes=codes, question_column=None)


def test_agreement_counts_only_each_codes_own_pairs(tmp_path: Path) -> None:
    with Study.create(tmp_path / "a.codecurve", responses=survey(), codebook=scoped_book()) as s:
        pairs = [(r.response_id, r.code_id) for r in s.queries.page(None, order="id", limit=999)]
        s.decisions.import_decisions([(r, c, 1) for r, c in pairs], coder="ana")
        # bob disagrees on the first of each code's pairs.
        first = {c: r for r, c in reversed(pairs)}
        s.decisions.import_decisions([(r, c, int(first[c] != r)) for r, c in pairs], coder="bob")
        report = study_agreement(s, coders=["ana", "bob"], resamples=50)
    units = {row.code: row.result.n_units for row in report.rows}
    assert units == {
        "Privacy": 6,
        "Stress": 12,
        "Technical problems": 6,
        "Alternatives": 6,
        "Negative tone": 18,
        "All codes": 48,
    }


def scoped_simulation(path: Path, *, n: int, seed: int) -> Truth:
    """``n`` responses, the even ones answering q1 and the odd ones q2; Workload is
    scoped to q1, Pay applies to both; a calibrated model scored the study's pairs."""
    rng = np.random.default_rng(seed)
    rows = [Response(f"r{i}", f"response {i}", {"question_id": f"q{1 + i % 2}"}) for i in range(n)]
    table = ResponseTable(responses=tuple(rows), attribute_columns=("question_id",))
    workload, pay = SIM_CODEBOOK.codes
    book = replace(
        SIM_CODEBOOK,
        codes=(replace(workload, questions=("q1",)), pay),
        question_column="question_id",
    )
    truth: Truth = {}
    with Study.create(path, responses=table, codebook=book) as study:
        config_id = study.scores.ensure_config(SIM_CONFIG)
        scores = []
        for code in book.codes:
            for i in range(n):
                rid = f"r{i}"
                if code.questions and i % 2:
                    continue  # no pair off the code's question
                high = rng.random() < 0.7
                c = float(min(rng.uniform(0.97, 1.0) if high else rng.uniform(0.25, 0.6), 0.999))
                pick = int(rng.choice([1, 5]))
                truth[(rid, code.id)] = pick if rng.random() < c else 6 - pick
                scores.append(simulated_score(rid, code.id, pick, c))
        study.scores.store(config_id, scores)
    return truth


def test_delegation_on_a_scoped_study_delegates_only_its_pairs(tmp_path: Path) -> None:
    path = tmp_path / "d.codecurve"
    truth = scoped_simulation(path, n=2000, seed=11)
    with Study.open(path) as study:
        sample = study.audit.draw(per_code=400, seed=5)
        for code in study.codes:
            for rid in sample.pairs(code.id):
                study.decisions.record(rid, code.id, truth[(rid, code.id)], coder="ana", blind=True)
        plan = plan_delegation(study, cut=0.5, max_error=0.05, level=0.95)
        by_code = {c.code_id: c for c in plan.codes}
        # Workload has the 1,000 answers to q1; Pay all 2,000.
        assert by_code["workload"].uncoded == 1000 - 400
        assert by_code["pay"].uncoded == 2000 - 400
        assert by_code["workload"].certified
        assert by_code["workload"].delegated > 0
        applied = study.delegations.apply(plan, coder="ana")
        assert applied.total == plan.delegated > 0
        with study.snapshot() as conn:
            rows = conn.execute(
                "SELECT rid, cid FROM annotations WHERE source = 'delegated'"
            ).fetchall()
        delegated = [(study.index.response_id(r), study.index.code_at(c).id) for r, c in rows]
        assert len(delegated) == plan.delegated
        assert all((r, c) in truth for r, c in delegated)  # every one a pair of the study
        workload = [r for r, c in delegated if c == "workload"]
        assert workload
        assert all(int(r[1:]) % 2 == 0 for r in workload)  # answers to q1 only
        progress = study.queries.progress()
        assert progress["total"] == 1000 + 2000
        assert progress["by_code"]["workload"]["total"] == 1000


def test_co_occurrence_pairs_codes_only_where_both_apply(tmp_path: Path) -> None:
    with Study.create(tmp_path / "c.codecurve", responses=survey(), codebook=scoped_book()) as s:
        pairs = [(r.response_id, r.code_id) for r in s.queries.page(None, order="id", limit=999)]
        s.decisions.import_decisions([(r, c, 1) for r, c in pairs], coder="ana")
        co = co_occurrence(s, config=None)
        ids = [s.code(name).id for name in co.codes]
    counts = np.asarray(co.counts)
    # Privacy (q1) and Alternatives (q3) never meet; Privacy and Stress share q1's 6.
    assert counts[ids.index("privacy"), ids.index("alternatives")] == 0
    assert counts[ids.index("privacy"), ids.index("stress")] == 6
    assert counts[ids.index("stress"), ids.index("tone")] == 12
    assert counts[ids.index("tone"), ids.index("tone")] == 18


def test_a_new_wave_follows_the_scope(tmp_path: Path) -> None:
    with Study.create(tmp_path / "w.codecurve", responses=survey(), codebook=scoped_book()) as s:
        assert s.pair_count() == 48
        wave = ResponseTable(
            responses=(
                Response("n1", "new answer to q1", {"question_id": "q1"}),
                Response("n2", "new answer to q3", {"question_id": "q3"}),
                Response("n3", "an answer naming no question", {"question_id": ""}),
            ),
            attribute_columns=("question_id",),
        )
        s.versions.add_responses(wave)
        # n1: privacy, stress, tone; n2: alternatives, tone; n3: tone only.
        assert s.pair_count() == 48 + 3 + 2 + 1
        assert [r.code_id for r in s.queries.of_response(None, "n1")] == [
            "privacy",
            "stress",
            "tone",
        ]
        assert [r.code_id for r in s.queries.of_response(None, "n3")] == ["tone"]
        s.decisions.record("n2", "alternatives", 1, coder="ana")
        with pytest.raises(Exception, match="does not apply"):
            s.decisions.record("n2", "privacy", 1, coder="ana")
        assert s.queries.progress()["by_code"]["privacy"]["total"] == 7


def test_a_revision_that_scopes_a_study_leaves_off_question_decisions_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.codecurve"
    with Study.create(path, responses=survey(), codebook=unscoped_book()) as s:
        assert s.pair_count() == 5 * 18
        everything = [(r, c.id) for r in s.index.response_ids() for c in s.codes]
        s.decisions.import_decisions([(r, c, 1) for r, c in everything], coder="ana")
        s.decisions.import_decisions([(r, c, 0) for r, c in everything], coder="bob")
        assert s.queries.progress()["decided"] == 90
        # Scoping alone is a change (it was refused as "the same codebook" before).
        lines = s.versions.plan_revision(scoped_book()).lines()
        assert "changed codebook: question_column" in lines
        assert "changed privacy: questions" in lines
        assert "changed tone: questions" not in " ".join(lines)
        s.versions.revise(scoped_book(), source="scoped.yaml")
        assert s.pair_count() == 48
        progress = s.queries.progress()
        assert progress["total"] == 48
        assert progress["by_code"]["privacy"] == {**progress["by_code"]["privacy"], "total": 6}
        assert progress["by_code"]["privacy"]["decided"] == 6
        assert progress["decided"] == 48
        # Agreement, findings and exports count only the pairs the study still has.
        report = study_agreement(s, coders=["ana", "bob"], resamples=20)
        assert {r.code: r.result.n_units for r in report.rows}["Privacy"] == 6
        findings = study_findings(s, coder="ana")
        assert {f.code_id: f.pairs for f in findings.codes}["privacy"] == 6
        long = long_frame(s, config_id=None, coder="ana")
        assert len(long) == 48
        # The decisions are kept: a revision that drops the scoping counts them again.
        s.versions.revise(unscoped_book(), source="unscoped.yaml")
        assert s.queries.progress()["decided"] == 90
