"""The delegation plan's pairs read once for all codes equal the per-code queries.

:class:`study.log.delegation_scope.DelegationScope` answers what
:func:`study.log.delegations.barred`, :func:`~study.log.delegations.outside_audit` and
:func:`~study.log.delegations.delegable` answer one code at a time, from one read of the
configuration. Checked on a study where every part of those answers is non-trivial:
two codes, a revised definition (stale scores on one code), replaced texts, a second
wave (partly scored) the audit does not cover, human decisions outside the audit,
delegated decisions, and audit pairs left uncoded.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from study import ResponseTable, Study
from study.analysis.delegation_plan import plan_delegation, skipped_confidence
from study.log.delegation_scope import DelegationScope
from study.log.delegations import barred, delegable, outside_audit
from tests.study.test_audit import simulated_study
from tests.study.test_delegation_coverage import confident_scores, real_code_hashes


@pytest.fixture(scope="module")
def messy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, truth = simulated_study(tmp_path_factory.mktemp("scope") / "s.codecurve", n=800, seed=3)
    with Study.open(path) as study:
        real_code_hashes(study)
        sample = study.audit.draw(per_code=250, seed=2)
        for code in study.codes:
            for rid in sample.pairs(code.id)[:200]:
                study.decisions.record(rid, code.id, truth[(rid, code.id)], coder="ana", blind=True)
        outside = [r for r in (f"r{i}" for i in range(800)) if not sample.is_audit(r, "pay")]
        for rid in outside[:40]:
            study.decisions.record(rid, "pay", truth[(rid, "pay")], coder="ana")
        applied = study.delegations.apply(plan_delegation(study, cut=0.5), coder="ana")
        assert applied.total
        # Then every tenth audit pair taken back: skipped, with later pairs coded.
        for code in study.codes:
            for rid in sample.pairs(code.id)[3:200:10]:
                study.decisions.clear(rid, code.id, coder="ana")
        changed = dataclasses.replace(study.codebook.code("pay"), definition="Pay and benefits.")
        study.versions.revise(
            dataclasses.replace(
                study.codebook,
                codes=tuple(changed if c.id == "pay" else c for c in study.codes),
            )
        )
        study.versions.add_responses(
            ResponseTable.from_texts({r: f"a new text for {r}" for r in outside[100:130]}),
            update=True,
        )
        wave = [f"w{i}" for i in range(120)]
        study.versions.add_responses(ResponseTable.from_texts({r: f"new {r}" for r in wave}))
        config_id = study.scores.active_config_id()
        assert config_id is not None
        study.scores.store(config_id, confident_scores(study, wave[:70]))
    return path


def test_each_code_gets_what_the_per_code_queries_give(messy: Path) -> None:
    with Study.open(messy, read_only=True) as study:
        config_id = study.scores.active_config_id()
        assert config_id is not None
        sample = study.audit.sample()
        assert sample is not None
        with study.snapshot() as conn:
            scope = DelegationScope(conn, study.index, config_id)
            seen_stale = seen_new = seen_delegated_above = 0
            for code in study.codes:
                left_out = barred(conn, study.index, config_id, code.id)
                assert scope.barred(code.id) == left_out
                seen_stale += left_out.stale
                seen_new += left_out.not_covered
                conf, uncoded = outside_audit(conn, study.index, config_id, code.id, left_out)
                got_conf, got_uncoded = scope.outside_audit(code.id)
                order = np.lexsort((got_uncoded, got_conf))
                want = np.lexsort((np.asarray(uncoded), np.asarray(conf)))
                assert got_conf[order].tolist() == np.asarray(conf)[want].tolist()
                assert got_uncoded[order].tolist() == np.asarray(uncoded)[want].tolist()
                confidences = sorted(set(conf)) or [0.7]  # all stale: none outside
                for threshold in (None, 0.0, 0.5, confidences[len(confidences) // 2], 0.999):
                    counts = delegable(conn, study.index, config_id, code.id, threshold, left_out)
                    assert scope.delegable(code.id, threshold) == counts
                    seen_delegated_above += counts[2]
                coded = set(sample.pairs(code.id)[:200]) - set(sample.pairs(code.id)[3:200:10])
                skipped = skipped_confidence(conn, study, config_id, code.id, coded=coded)
                pairs = sample.pairs(code.id)
                missing = [r for r in pairs[:200] if r not in coded] + ["w1", "w100"]
                assert len(skipped) == 20
                assert sorted(scope.confidence_of(code.id, missing)) == sorted(
                    [*skipped.tolist(), *_confidence(conn, study, config_id, code.id, ["w1"])]
                )
        # The study exercises what the answers are made of.
        assert seen_stale
        assert seen_new
        assert seen_delegated_above


def _confidence(conn, study: Study, config_id: int, code_id: str, rids: list[str]) -> list[float]:
    rows = conn.execute(
        "SELECT confidence FROM scores WHERE config_id = ? AND cid = ? "
        "AND rid IN (SELECT value FROM json_each(?))",
        (
            config_id,
            study.index.code_key(code_id),
            json.dumps([study.index.response_key(r) for r in rids]),
        ),
    ).fetchall()
    return [float(r[0]) for r in rows]
