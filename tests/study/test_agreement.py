"""Study-level agreement (study.analysis.agreement): which coders and units, the
coefficients per code and pooled, and errors that speak of the study."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from study.analysis.agreement import (
    MODEL,
    POOLED,
    AgreementError,
    describe_estimate,
    study_agreement,
)
from study.errors import StudyError
from study.store import Study
from tests.factories import build_study

ANA = {"workload": [1, 1, 0, 1, 0, 1, 1, 0], "team": [5, 4, 3, 2, 1, 5, 4, 3]}
BEN = {"workload": [1, 0, 0, 1, 0, 1, 0, 0], "team": [5, 4, 2, 2, 1, 4, 4, 3]}


@pytest.fixture
def study(tmp_path: Path) -> Iterator[Study]:
    s = build_study(tmp_path / "a.codecurve", n=10, scored=False)
    for coder, values in (("ana", ANA), ("ben", BEN)):
        s.decisions.import_decisions(
            [(f"r{i}", code, v) for code, col in values.items() for i, v in enumerate(col, 1)],
            coder=coder,
        )
    yield s
    s.close()


def test_per_code_coefficients_are_the_reference_ones(study: Study) -> None:
    report = study_agreement(study, resamples=50, seed=3)
    assert report.coders == ("ana", "ben")
    by_code = {row.code: row for row in report.per_code}
    assert list(by_code) == ["Workload", "Team support"]  # pay has no decisions
    workload = by_code["Workload"].result
    assert workload.n_units == 8
    assert workload.percent.value == pytest.approx(0.75)
    assert workload.kappa is not None
    assert workload.kappa.value == pytest.approx(
        cohen_kappa_score(ANA["workload"], BEN["workload"])
    )
    team = by_code["Team support"].result
    assert team.kappa is not None
    assert team.kappa.value == pytest.approx(
        cohen_kappa_score(ANA["team"], BEN["team"], weights="quadratic")
    )
    assert by_code["Workload"].applies == pytest.approx((5 / 8, 3 / 8))
    assert report.pooled is not None
    assert report.pooled.code == POOLED
    assert report.pooled.result.n_units == 16
    assert report.pooled.result.bootstrap.over == "clusters"
    assert "1 code(s) without shared decisions are not listed" in report.notes


def test_the_same_seed_gives_the_same_report_and_to_dict_is_plain(study: Study) -> None:
    first = study_agreement(study, resamples=40, seed=9).to_dict()
    assert study_agreement(study, resamples=40, seed=9).to_dict() == first
    assert first["coders"] == ["ana", "ben"]
    assert first["bootstrap"]["resamples"] == 40
    assert first["pooled"]["code"] == POOLED
    assert [r["code"] for r in first["per_code"]] == ["Workload", "Team support"]
    assert "40 resamples, seed 9" in first["caption"]


def test_one_code_has_no_pooled_row(study: Study) -> None:
    report = study_agreement(study, code="team", resamples=20)
    assert report.pooled is None
    assert [r.code for r in report.rows] == ["Team support"]


def test_shared_units_need_every_coder(study: Study) -> None:
    study.decisions.import_decisions([("r1", "workload", 1), ("r2", "workload", 1)], coder="cy")
    every = study_agreement(study, code="workload", resamples=20)
    shared = study_agreement(study, code="workload", units="shared", resamples=20)
    assert every.per_code[0].result.n_units == 8
    assert shared.per_code[0].result.n_units == 2


@pytest.mark.parametrize(
    ("kwargs", "problem", "words"),
    [
        ({"coders": ["ana"]}, "too_few_coders", "agreement needs two or more coders, got 1"),
        ({"coders": ["ana", "zed"]}, "unknown_coder", "no decisions by coder 'zed'"),
        ({"coders": ["ana", "ana"]}, "repeated_coder", "a coder is named twice: ana, ana"),
        ({"coders": ["ana", MODEL]}, "no_scores", "the study has no scores yet"),
        ({"code": "Bonus"}, "unknown_code", "no code 'Bonus' in this study"),
        ({"units": "some"}, "units", "units must be 'all' or 'shared'"),
    ],
)
def test_errors_speak_of_the_study(
    study: Study, kwargs: dict[str, object], problem: str, words: str
) -> None:
    with pytest.raises(AgreementError) as caught:
        study_agreement(study, resamples=10, **kwargs)  # type: ignore[arg-type]
    assert caught.value.problem == problem
    assert words in str(caught.value)
    assert "--" not in caught.value.message  # no command-line option named
    assert isinstance(caught.value, StudyError)


def test_a_single_coder_and_no_shared_units(tmp_path: Path) -> None:
    with build_study(tmp_path / "b.codecurve", n=4, scored=False) as s:
        s.decisions.import_decisions([("r1", "workload", 1)], coder="ana")
        with pytest.raises(AgreementError, match="coders in this study: ana") as one:
            study_agreement(s)
        assert one.value.problem == "too_few_coders"
        s.decisions.import_decisions([("r2", "workload", 1)], coder="ben")
        with pytest.raises(AgreementError, match="no shared units") as none:
            study_agreement(s)
        assert none.value.problem == "no_shared_units"
        assert none.value.coders == ("ana", "ben")


def test_the_model_joins_as_a_coder(tmp_path: Path) -> None:
    with build_study(tmp_path / "c.codecurve", n=8) as s:
        s.decisions.import_decisions(
            [(f"r{i}", "workload", i % 2) for i in range(1, 9)], coder="ana"
        )
        report = study_agreement(s, coders=["ana", MODEL], code="workload", resamples=20)
        frame = s.queries.annotated_pairs(s.scores.active_config_id())
        picks = frame[frame["code_id"] == "workload"]["pick"].to_numpy(int)
        values = frame[frame["code_id"] == "workload"]["value"].to_numpy(int)
        row = report.per_code[0].result
        assert row.n_units == 8
        assert row.percent.value == pytest.approx(np.mean(picks == values))
        assert any("active scoring configuration" in n for n in report.notes)


def test_estimates_are_described_as_the_table_shows_them(study: Study) -> None:
    row = study_agreement(study, code="workload", resamples=30).per_code[0].result
    text = describe_estimate(row.percent, percent=True)
    assert text.startswith("75.0% [")
    assert describe_estimate(None) == "-"


def test_consensus_and_delegated_picks_are_not_a_coders_ratings(study: Study) -> None:
    study.decisions.record("r2", "workload", 0, coder="consensus")
    # The model's pick filed under ana's name by a delegation, on a pair ben decided.
    study.decisions.import_decisions(
        [("r9", "workload", 1)], coder="ana", sources={("r9", "workload"): "delegated"}
    )
    study.decisions.record("r9", "workload", 1, coder="ben")
    report = study_agreement(study, resamples=50, seed=3)
    assert report.coders == ("ana", "ben")  # consensus only when named
    workload = next(row for row in report.per_code if row.code == "Workload").result
    assert workload.n_units == 8  # r9 is the model against ben: not counted
    notes = " ".join(report.notes)
    assert "consensus coder is left out" in notes
    assert "1 delegated decision(s)" in notes
    assert "ana 1" in notes
    named = study_agreement(study, coders=["ana", "consensus"], resamples=50, seed=3)
    assert named.coders == ("ana", "consensus")
