"""Findings over a study: PPI and audit estimates, groups, refusals, co-occurrence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from codebooks.model import BINARY, Code, Codebook
from scoring.curves import curve_from_logprobs
from scoring.score import Score, ScoreConfig, text_hash
from screening.prevalence import audit_proportion, ppi_mean
from study import Study
from study.analysis.findings import co_occurrence, coded_responses, study_findings
from study.errors import StudyError
from study.intake.responses import Response, ResponseTable
from tests.factories import FAKE_MODEL

BOOK = Codebook(
    name="Care",
    codes=(Code("staff", "Staff manner"), Code("wait", "Waiting time")),
    scale=BINARY,
)
CONFIG = ScoreConfig(
    model=FAKE_MODEL, template_id="t", template_hash="0", context="definition", scale=BINARY
)
#: True prevalence by site and code; the model over-predicts "applies".
TRUE = {"A": {"staff": 0.5, "wait": 0.2}, "B": {"staff": 0.2, "wait": 0.4}}

Truth = dict[tuple[str, str], int]


def findings_study(path: Path, *, n: int = 800, seed: int = 3, audit: int = 250) -> Truth:
    """A scored study of ``n`` responses at two sites, a biased model, a blind audit."""
    rng = np.random.default_rng(seed)
    sites = rng.choice(["A", "B"], size=n, p=[0.6, 0.4])
    responses = tuple(
        Response(f"r{i}", f"response {i}", {"site": str(sites[i]), "ward": f"w{i % 3}"})
        for i in range(n)
    )
    study = Study.create(path, responses=ResponseTable(responses=responses), codebook=BOOK)
    config_id = study.scores.ensure_config(CONFIG)
    truth: Truth = {}
    scores = []
    for code in BOOK.codes:
        for i in range(n):
            rid = f"r{i}"
            value = int(rng.random() < TRUE[str(sites[i])][code.id])
            truth[(rid, code.id)] = value
            says = value if rng.random() < 0.85 else 1
            p = float(rng.uniform(0.6, 0.99))
            probs = [1 - p, p] if says else [p, 1 - p]
            scores.append(
                Score(
                    response_id=rid,
                    code_id=code.id,
                    config_key=CONFIG.key(),
                    scale=BINARY,
                    curve=curve_from_logprobs(np.log(probs), BINARY.values),
                    token_ids=(((1,),), ((2,),)),
                    missing=(False, False),
                    prompt="p",
                    prompt_hash="h",
                    text_hash=text_hash(f"response {i}"),
                    code_hash=code.content_hash(),
                )
            )
    study.scores.store(config_id, scores)
    study.audit.draw(per_code=audit, seed=9)
    sample = study.audit.sample()
    assert sample is not None
    for code in BOOK.codes:
        for rid in sample.pairs(code.id):
            study.decisions.record(rid, code.id, truth[(rid, code.id)], coder="ana", blind=True)
    study.close()
    return truth


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Truth]:
    path = tmp_path_factory.mktemp("f") / "f.codecurve"
    return path, findings_study(path)


def _export(study: Study) -> pd.DataFrame:
    from study.exchange.frames import long_frame

    return long_frame(study, config_id="active")


def test_overall_estimates_equal_the_functions_on_the_export(built: tuple[Path, Truth]) -> None:
    path, truth = built
    with Study.open(path, read_only=True) as study:
        result = study_findings(study)
        long = _export(study)
        sample = study.audit.sample()
    assert sample is not None
    staff = next(f for f in result.codes if f.code_id == "staff")
    rows = long[long["code_id"] == "staff"]
    audit = rows["response_id"].isin(sample.pairs("staff")).to_numpy()
    y = rows["decision"].to_numpy(float)[audit]
    f = rows["model_applies"].astype(float).to_numpy()
    expected = ppi_mean(y, f[audit], f[~audit], binary=True)
    assert staff.ppi.estimate == pytest.approx(expected.estimate)
    assert (staff.ppi.lower, staff.ppi.upper) == pytest.approx((expected.lower, expected.upper))
    assert staff.audit.estimate == pytest.approx(y.mean())
    assert staff.labelled == 250
    assert staff.pairs == 800
    # The count of final codes is the export's final_applies, and descriptive.
    assert staff.count.share == pytest.approx(rows["final_applies"].astype(float).mean())
    assert staff.count.descriptive
    true_share = np.mean([truth[(r, "staff")] for r in rows["response_id"]])
    assert staff.ppi.lower <= true_share <= staff.ppi.upper
    assert staff.count.share > staff.ppi.upper  # the biased model inflates the count
    assert "PPI++" in staff.sentence
    assert "250 blind random audit decisions" in staff.sentence
    assert "#1 synthetic" in staff.sentence
    assert "descriptive" in staff.sentence


def test_by_groups_and_their_difference_against_pandas(built: tuple[Path, Truth]) -> None:
    path, _ = built
    with Study.open(path, read_only=True) as study:
        result = study_findings(study, by="site")
        long = _export(study)
        sample = study.audit.sample()
        site = {r.id: r.attrs["site"] for r in study.responses()}
    assert sample is not None
    long = long[long["code_id"] == "wait"].assign(site=lambda d: d["response_id"].map(site))
    estimates = {}
    for name, rows in long.groupby("site"):
        audit = rows["response_id"].isin(sample.pairs("wait")).to_numpy()
        y = rows["decision"].to_numpy(float)[audit]
        f = rows["model_applies"].astype(float).to_numpy()
        estimates[name] = ppi_mean(y, f[audit], f[~audit], binary=True)
        mine = next(g for g in result.groups if g.code_id == "wait" and g.group == name)
        assert mine.ppi.estimate == pytest.approx(estimates[name].estimate)
        assert mine.audit.estimate == pytest.approx(audit_proportion(y).estimate)
        assert mine.pairs == len(rows)
    diff = next(d for d in result.differences if d.code_id == "wait")
    assert (diff.group, diff.versus) == ("A", "B")  # the larger group first
    assert diff.ppi.estimate == pytest.approx(estimates["A"].estimate - estimates["B"].estimate)
    a, b = estimates["A"], estimates["B"]
    # Square-and-add of the two groups' intervals (score intervals here: small groups).
    assert {a.interval, b.interval} == {"score"}
    lower = diff.ppi.estimate - np.hypot(a.estimate - a.lower, b.upper - b.estimate)
    upper = diff.ppi.estimate + np.hypot(a.upper - a.estimate, b.estimate - b.lower)
    assert (diff.ppi.lower, diff.ppi.upper) == pytest.approx((lower, upper))
    assert "square-and-add" in diff.ppi.method
    assert "score" in diff.ppi.method


def test_more_than_two_groups_compare_each_with_the_rest(built: tuple[Path, Truth]) -> None:
    path, _ = built
    with Study.open(path, read_only=True) as study:
        result = study_findings(study, by="ward", code="Staff manner")
    assert {g.group for g in result.groups} == {"w0", "w1", "w2"}
    assert [d.versus for d in result.differences] == ["all other responses"] * 3
    assert sum(g.pairs for g in result.groups) == 800


def test_bad_input_is_one_clear_error(built: tuple[Path, Truth]) -> None:
    path, _ = built
    with Study.open(path, read_only=True) as study:
        with pytest.raises(StudyError, match=r"no response column 'trust'; columns: wave, site"):
            study_findings(study, by="trust")
        with pytest.raises(StudyError, match="no code 'Parking'; codes: Staff manner, Waiting"):
            study_findings(study, code="Parking")
        with pytest.raises(StudyError, match="no blind audit decisions by coder 'bo'"):
            study_findings(study, coder="bo")


def test_a_column_with_many_values_is_refused_with_the_largest_offered(tmp_path: Path) -> None:
    responses = tuple(
        Response(f"r{i}", f"text {i}", {"postcode": f"P{i % 60}"}) for i in range(200)
    )
    with Study.create(
        tmp_path / "m.codecurve", responses=ResponseTable(responses=responses), codebook=BOOK
    ) as study:
        with pytest.raises(StudyError, match=r"60 distinct values.*largest are P0 \(4\)"):
            study_findings(study, by="postcode")
        result = study_findings(study, by="postcode", top=3)
    assert [g.group for g in result.groups[:4]] == ["P0", "P1", "P2", "(other)"]


def test_no_audit_and_no_scores_say_so(tmp_path: Path) -> None:
    responses = ResponseTable.from_texts({f"r{i}": f"t {i}" for i in range(30)})
    with Study.create(tmp_path / "e.codecurve", responses=responses, codebook=BOOK) as study:
        result = study_findings(study)
    assert any("no audit sample" in n for n in result.notes)
    assert any("no scores" in n for n in result.notes)
    staff = result.codes[0]
    assert not staff.ppi.ok
    assert not staff.audit.ok
    assert staff.sentence.startswith("No estimate for Staff manner")


def test_a_small_audit_gets_no_ppi_interval(tmp_path: Path) -> None:
    path = tmp_path / "s.codecurve"
    findings_study(path, n=200, audit=12)
    with Study.open(path, read_only=True) as study:
        result = study_findings(study)
    staff = result.codes[0]
    assert not staff.ppi.ok
    assert "fewer than 20" in staff.ppi.reason
    assert staff.audit.ok
    assert "no prediction-powered estimate" in staff.sentence


def test_a_new_wave_is_left_out_and_said(tmp_path: Path) -> None:
    path = tmp_path / "w.codecurve"
    findings_study(path, n=300, audit=100)
    with Study.open(path) as study:
        study.versions.add_responses(ResponseTable.from_texts({"n1": "late one", "n2": "late two"}))
        result = study_findings(study, by="wave")
    assert result.population == 300
    assert any("2 response(s) (wave 2)" in n for n in result.notes)
    late = next(g for g in result.groups if g.group == "2")
    assert not late.ppi.ok
    assert "added after the audit" in late.ppi.reason


def test_co_occurrence_against_pandas(built: tuple[Path, Truth]) -> None:
    path, _ = built
    with Study.open(path, read_only=True) as study:
        table = co_occurrence(study)
        long = _export(study)
    wide = long.pivot(index="response_id", columns="code_id", values="final_applies").astype(bool)
    both = int((wide["staff"] & wide["wait"]).sum())
    either = int((wide["staff"] | wide["wait"]).sum())
    counts = table.frame("counts")
    assert counts.loc["Staff manner", "Waiting time"] == both
    assert counts.loc["Staff manner", "Staff manner"] == int(wide["staff"].sum())
    assert table.frame("jaccard").loc["Waiting time", "Staff manner"] == pytest.approx(
        both / either
    )
    phi = np.corrcoef(wide["staff"].astype(float), wide["wait"].astype(float))[0, 1]
    assert table.frame("phi").loc["Staff manner", "Waiting time"] == pytest.approx(phi)
    assert table.sources["human"] == 500


def test_coded_responses_list_the_final_codes_with_notes(built: tuple[Path, Truth]) -> None:
    path, _ = built
    with Study.open(path, read_only=True) as study:
        listed = coded_responses(study, "wait")
        long = _export(study)
    expected = long[(long["code_id"] == "wait") & long["final_applies"].fillna(False)]
    assert list(listed["response_id"]) == list(expected["response_id"])
    assert set(listed["source"]) <= {"human", "model"}
    assert listed["text"].str.startswith("response ").all()


def test_audit_decisions_under_an_earlier_definition_are_left_out(tmp_path: Path) -> None:
    path = tmp_path / "r.codecurve"
    findings_study(path, n=200, audit=60)
    revised = Codebook(
        name="Care",
        codes=(
            Code("staff", "Staff manner", "Only rudeness, not kindness."),
            Code("wait", "Waiting time"),
        ),
        scale=BINARY,
    )
    with Study.open(path) as study:
        study.versions.revise(revised)
        result = study_findings(study)
    staff, wait = result.codes
    assert staff.labelled == 0
    assert any(
        "60 blind audit decision(s) were made under an earlier definition" in n for n in staff.notes
    )
    assert not staff.audit.ok
    assert wait.labelled == 60


def test_an_ordinal_code_gets_a_mean_and_the_share_of_each_point(tmp_path: Path) -> None:
    from tests.study.test_audit import code_audit_blind, simulated_study

    path, truth = simulated_study(tmp_path / "o.codecurve", n=400, seed=2)
    with Study.open(path) as study:
        study.audit.draw(per_code=120, seed=1)
        code_audit_blind(study, truth)
        result = study_findings(study, code="pay")
        long = _export(study)
        sample = study.audit.sample()
    assert sample is not None
    (pay,) = result.codes
    assert pay.mean is not None
    rows = long[long["code_id"] == "pay"]
    audit = rows["response_id"].isin(sample.pairs("pay")).to_numpy()
    y = rows["decision"].to_numpy(float)[audit]
    f = rows["model_pick"].to_numpy(float)
    expected = ppi_mean(y, f[audit], f[~audit])
    assert pay.mean[1].estimate == pytest.approx(expected.estimate)
    assert pay.mean[0].estimate == pytest.approx(y.mean())
    assert [p.value for p in pay.points] == [1, 2, 3, 4, 5]
    assert pay.points[0].audit.estimate == pytest.approx(np.mean(y == 1))


def test_an_audit_not_yet_coded_says_so(tmp_path: Path) -> None:
    responses = ResponseTable.from_texts({f"r{i}": f"t {i}" for i in range(40)})
    with Study.create(tmp_path / "u.codecurve", responses=responses, codebook=BOOK) as study:
        study.audit.draw(per_code=20, seed=1)
        result = study_findings(study)
    assert any("no blind decisions on the audit sample yet" in n for n in result.notes)
    assert result.codes[0].labelled == 0


def test_scores_from_an_earlier_definition_are_noted(tmp_path: Path) -> None:
    path = tmp_path / "k.codecurve"
    findings_study(path, n=120, audit=40)
    with Study.open(path) as study:
        assert not any("scored under" in n for f in study_findings(study).codes for n in f.notes)
        study.versions.revise(
            Codebook(
                name="Care",
                codes=(
                    Code("staff", "Staff manner", "Rudeness only."),
                    Code("wait", "Waiting time"),
                ),
                scale=BINARY,
            )
        )
        staff, wait = study_findings(study).codes
    assert any("120 pair(s) were scored under an earlier text" in n for n in staff.notes)
    assert not any("scored under" in n for n in wait.notes)


def test_a_code_decided_by_people_on_every_response_is_its_exact_count(tmp_path: Path) -> None:
    path = tmp_path / "census.codecurve"
    truth = findings_study(path, n=125, audit=125)
    with Study.open(path, read_only=True) as study:
        result = study_findings(study, by="site")
    staff = next(f for f in result.codes if f.code_id == "staff")
    applies = sum(v for (_, code), v in truth.items() if code == "staff")
    assert staff.exact
    assert staff.count.applies == applies
    assert f"applies to exactly {applies} of the 125 responses" in staff.sentence
    assert "CI" not in staff.sentence
    assert "needs no interval" in staff.sentence
    diff = next(d for d in result.differences if d.code_id == "staff")
    a, b = (next(g for g in result.groups if g.code_id == "staff" and g.group == s) for s in "AB")
    assert diff.ppi.lower == diff.ppi.upper == pytest.approx(a.count.share - b.count.share)
    assert diff.ppi.method.startswith("exact")


def test_the_sentence_says_which_interval_and_why(built: tuple[Path, Truth]) -> None:
    path, _ = built
    with Study.open(path, read_only=True) as study:
        result = study_findings(study, by="site")
    for finding in (*result.codes, *result.groups):
        assert finding.ppi.why in finding.sentence
        assert finding.ppi.interval in ("normal", "score")
    assert "score interval" in result.method
    assert "ppi_py" in result.method
