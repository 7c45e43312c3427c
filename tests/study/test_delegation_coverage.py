"""Delegation leaves out what its audit cannot speak for, and counts it.

* A new wave added after the audit was drawn is not in the population the audit sampled:
  its pairs are not delegated, and are left for the coder (the audit's random order
  covers only the responses it was drawn from, so it cannot be extended over them).
* A code whose definition changed, or a response whose text was replaced, has stale
  scores: those pairs are not delegated until they are scored again.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from codebooks.model import LIKERT_5
from scoring.curves import curve_from_logprobs
from scoring.score import Score
from study import ResponseTable, Study
from study.analysis.delegation_plan import plan_delegation
from tests.study.test_audit import SIM_CONFIG, code_audit_blind, simulated_study

CUT = 0.5


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, truth = simulated_study(tmp_path_factory.mktemp("cov") / "cov.codecurve", n=2000, seed=11)
    with Study.open(path) as study:
        study.audit.draw(per_code=400, seed=5)
        code_audit_blind(study, truth)
    return path


def copy_of(path: Path, tmp_path: Path) -> Path:
    target = tmp_path / path.name
    target.write_bytes(path.read_bytes())
    return target


def confident_scores(study: Study, rids: list[str], *, code_hash: str = "c") -> list[Score]:
    probs = np.log([0.995] + [0.00125] * 4)
    return [
        Score(
            response_id=rid,
            code_id=code.id,
            config_key=SIM_CONFIG.key(),
            scale=LIKERT_5,
            curve=curve_from_logprobs(probs, LIKERT_5.values),
            token_ids=tuple(((i,),) for i in range(5)),
            missing=(False,) * 5,
            prompt="p",
            prompt_hash="h",
            text_hash="t",
            code_hash=code_hash,
        )
        for rid in rids
        for code in study.codes
    ]


def delegated_rids(study: Study) -> set[str]:
    with study.snapshot() as conn:
        rows = conn.execute("SELECT rid FROM annotations WHERE source = 'delegated'").fetchall()
    return {study.index.response_id(r[0]) for r in rows}


def test_a_new_wave_is_not_delegated_before_its_audit(audited: Path, tmp_path: Path) -> None:
    with Study.open(copy_of(audited, tmp_path)) as study:
        before = plan_delegation(study, cut=CUT)
        wave = [f"w{i}" for i in range(200)]
        study.versions.add_responses(ResponseTable.from_texts({r: f"new {r}" for r in wave}))
        config_id = study.scores.active_config_id()
        assert config_id is not None
        study.scores.store(config_id, confident_scores(study, wave))
        plan = plan_delegation(study, cut=CUT)
        assert plan.certified
        for old, new in zip(before.codes, plan.codes, strict=True):
            assert new.not_covered == 200
            assert new.delegated == old.delegated  # the wave's confident pairs left out
            assert new.left == old.left + 200
            assert new.to_dict()["not_covered"] == 200
        study.delegations.apply(plan, coder="ana")
        assert delegated_rids(study).isdisjoint(wave)


def real_code_hashes(study: Study) -> None:
    # The simulated scores carry a stand-in code hash; a scored study has the code's own.
    with study.transaction() as conn:
        for code in study.codes:
            conn.execute(
                "UPDATE scores SET code_hash = ? WHERE cid = ?",
                (code.content_hash(), study.index.code_key(code.id)),
            )


def test_stale_scores_are_not_delegated(audited: Path, tmp_path: Path) -> None:
    with Study.open(copy_of(audited, tmp_path)) as study:
        real_code_hashes(study)
        before = plan_delegation(study, cut=CUT)
        pay = next(c for c in before.codes if c.code_id == "pay")
        assert pay.delegated > 0
        changed = dataclasses.replace(study.codebook.code("pay"), definition="Pay and benefits.")
        codebook = dataclasses.replace(
            study.codebook, codes=tuple(changed if c.id == "pay" else c for c in study.codes)
        )
        study.versions.revise(codebook)
        plan = plan_delegation(study, cut=CUT)
        pay = next(c for c in plan.codes if c.code_id == "pay")
        assert pay.delegated == 0
        assert pay.stale == pay.uncoded
        assert pay.delegation.threshold is None
        work = next(c for c in plan.codes if c.code_id == "workload")
        assert work.stale == 0
        assert work.delegated > 0


def test_replaced_texts_are_not_delegated(audited: Path, tmp_path: Path) -> None:
    with Study.open(copy_of(audited, tmp_path)) as study:
        sample = study.audit.sample()
        assert sample is not None
        audit = set(sample.pairs("workload")) | set(sample.pairs("pay"))
        replaced = [r for r in (f"r{i}" for i in range(2000)) if r not in audit][:50]
        study.versions.add_responses(
            ResponseTable.from_texts({r: f"a new text for {r}" for r in replaced}), update=True
        )
        plan = plan_delegation(study, cut=CUT)
        assert plan.certified
        assert {c.stale for c in plan.codes} == {50}
        study.delegations.apply(plan, coder="ana")
        assert delegated_rids(study).isdisjoint(replaced)


def test_the_cli_says_what_was_left_out(audited: Path, tmp_path: Path, capsys) -> None:
    from tui.cli import main

    path = copy_of(audited, tmp_path)
    with Study.open(path) as study:
        wave = [f"w{i}" for i in range(30)]
        study.versions.add_responses(ResponseTable.from_texts({r: f"new {r}" for r in wave}))
    assert main(["delegate", str(path), "--cut", str(CUT)]) == 0
    out = capsys.readouterr().out
    assert "Workload: not delegated, left for review: 30 pairs of responses added after" in out
    # The step it names must be one that can be taken: extending the audit never
    # reaches a wave added after the draw.
    assert "codecurve audit --extend" not in out
    flat = " ".join(out.split())
    assert "code them yourself: the audit cannot be extended over responses added" in flat


def test_blind_decisions_under_an_older_definition_are_stale_evidence(
    audited: Path, tmp_path: Path
) -> None:
    from study.analysis.screen import screen_study

    with Study.open(copy_of(audited, tmp_path)) as study:
        real_code_hashes(study)
        changed = dataclasses.replace(study.codebook.code("pay"), definition="Pay and benefits.")
        codebook = dataclasses.replace(
            study.codebook, codes=tuple(changed if c.id == "pay" else c for c in study.codes)
        )
        study.versions.revise(codebook)
        real_code_hashes(study)  # scored again under the new definition: fresh scores
        assert len(study.audit.stale_pairs(coder="ana")) == 400
        assert all(c == "pay" for _r, c, _w in study.audit.stale_pairs())
        assert {c for _r, c, _w in study.audit.blind_pairs()} == {"workload"}
        progress = study.audit.progress(coder="ana")
        assert (progress["pay"].stale, progress["workload"].stale) == (400, 0)
        # The screen counts them apart and says so; they are not evidence on Pay now.
        screened = screen_study(study, sample="audit", cut=CUT)
        assert screened.stale_evidence == 400
        assert screened.to_dict()["stale_evidence"] == 400
        assert any("400 blind audit decision(s)" in w and "Pay 400" in w for w in screened.warnings)
        assert screened.n_decisions == 400  # workload's alone
        plan = plan_delegation(study, cut=CUT)
        pay = next(c for c in plan.codes if c.code_id == "pay")
        work = next(c for c in plan.codes if c.code_id == "workload")
        assert (pay.stale_evidence, work.stale_evidence) == (400, 0)
        assert not pay.certified
        assert pay.delegated == 0
        assert "400 blind audit decision(s) made under an older definition" in pay.guarantee()
        assert pay.to_dict()["stale_evidence"] == 400
        assert work.certified


def test_audit_pairs_the_coder_skipped_count_as_errors(audited: Path, tmp_path: Path) -> None:
    # The coder leaves out exactly the audit pairs where a confident model was wrong
    # (missing not at random): the certificate must not improve by it.
    with Study.open(copy_of(audited, tmp_path)) as study:
        full = plan_delegation(study, cut=CUT)
        config_id = study.scores.active_config_id()
        frame = study.queries.annotated_pairs(config_id, coder="ana")
        wrong = frame[(frame["code_id"] == "workload") & (frame["pick"] != frame["value"])]
        confident = wrong[wrong["p_max"] >= 0.9]
        sample = study.audit.sample()
        assert sample is not None
        last = sample.pairs("workload")[-1]
        skipped = [r for r in confident["response_id"] if r != last]
        assert skipped
        for rid in skipped:
            study.decisions.clear(rid, "workload", coder="ana")
        assert study.audit.progress(coder="ana")["workload"].progress.skipped == len(skipped)
        plan = plan_delegation(study, cut=CUT)
    before = next(c for c in full.codes if c.code_id == "workload")
    after = next(c for c in plan.codes if c.code_id == "workload")
    assert after.skipped == len(skipped)
    # Counted as errors, the skipped pairs give back the complete audit's evidence.
    assert after.delegation.n_audit == before.delegation.n_audit
    assert after.delegation.n_audit_errors == before.delegation.n_audit_errors
    assert after.delegation.threshold == before.delegation.threshold
    assert after.delegation.upper_bound == pytest.approx(before.delegation.upper_bound)
    assert f"{len(skipped)} audit pair(s) the coder skipped" in after.guarantee()
    assert "counted as errors" in after.guarantee()
    assert after.to_dict()["skipped"] == len(skipped)
    # The app's delegation panel says it too.
    from rich.console import Console

    from tui.plans import plan_renderable

    console = Console(width=200, record=True)
    console.print(plan_renderable(plan, "", None))
    shown = " ".join(console.export_text().split())
    assert f"Workload: audit evidence: {len(skipped)} audit pair(s) the coder skipped" in shown


def test_the_export_carries_versions_audit_ranks_and_delegations(
    audited: Path, tmp_path: Path
) -> None:
    from study.exchange.export import export_study, read_export

    with Study.open(copy_of(audited, tmp_path)) as study:
        applied = study.delegations.apply(plan_delegation(study, cut=CUT), coder="ana")
        changed = dataclasses.replace(study.codebook.code("pay"), definition="Pay and benefits.")
        codebook = dataclasses.replace(
            study.codebook, codes=tuple(changed if c.id == "pay" else c for c in study.codes)
        )
        study.versions.revise(codebook)
        study.decisions.record("r1999", "pay", 5, coder="ana")
        sample = study.audit.sample()
        assert sample is not None
        out = export_study(study, tmp_path / "x.parquet", coder="ana")
        frame = read_export(out)
    for code in ("pay", "workload"):
        rows = frame[frame["code_id"] == code]
        audit = rows[rows["audit"].astype(bool)]
        assert sorted(audit["response_id"]) == sorted(sample.pairs(code))
    ranks = dict(zip(frame["response_id"], frame["audit_rank"], strict=True))
    assert all(ranks[r] == (sample.position(r) or 0) + 1 for r in ("r0", "r5", "r1999"))
    decided = frame[frame["decision"].notna()]
    late = decided[(decided["response_id"] == "r1999") & (decided["code_id"] == "pay")]
    assert late["codebook_version"].tolist() == [2]
    blind = decided[decided["decision_source"] == "human"]
    assert set(blind.drop(late.index)["codebook_version"]) == {1}
    delegated = decided[decided["decision_source"] == "delegated"]
    assert len(delegated) == applied.total
    assert set(delegated["delegation"]) == {applied.event_id}
    assert decided[decided["decision_source"] == "human"]["delegation"].isna().all()


def test_guarantees_name_the_configuration_they_were_certified_on(
    audited: Path, tmp_path: Path
) -> None:
    from study.exchange.frames import provenance

    with Study.open(copy_of(audited, tmp_path)) as study:
        first = study.scores.active_config_id()
        assert first is not None
        applied = study.delegations.apply(plan_delegation(study, cut=CUT), coder="ana")
        info = provenance(study)
        said = info["delegation guarantee (Workload)"]
        assert f"Delegation {applied.event_id} by ana" in said
        assert "certified on the scores of configuration" in said
        assert "not the configuration" not in said
        other = study.scores.ensure_config(dataclasses.replace(SIM_CONFIG, context="full"))
        assert study.scores.active_config_id() == other
        said = provenance(study)["delegation guarantee (Workload)"]
        assert f"configuration {first}, not the configuration {other} this export shows" in said
