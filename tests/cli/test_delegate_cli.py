"""``codecurve delegate``: the plan, applying it, undoing it, and refusing bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from study import Study
from tests.cli.test_audit_cli import exit_code, one_line
from tests.study.test_audit import code_audit_blind, file_digest, simulated_study
from tui.cli import main

Truth = dict[tuple[str, str], int]


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, truth = simulated_study(tmp_path_factory.mktemp("d") / "d.codecurve", n=1200, seed=11)
    with Study.open(path) as study:
        study.audit.draw(per_code=400, seed=5)
        code_audit_blind(study, truth)
    return path


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def study_path(audited: Path, tmp_path: Path) -> Path:
    target = tmp_path / audited.name
    target.write_bytes(audited.read_bytes())
    return target


def delegate_json(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["delegate", str(path), "--format", "json", *extra]) == 0
    payload: dict[str, Any] = json.loads(capsys.readouterr().out)
    return payload


def delegated_count(path: Path) -> int:
    with Study.open(path, read_only=True) as study, study.snapshot() as conn:
        return int(
            conn.execute("SELECT COUNT(*) FROM annotations WHERE source = 'delegated'").fetchone()[
                0
            ]
        )


def test_plan_changes_nothing(study_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = file_digest(study_path)
    plan = delegate_json(study_path, capsys)
    assert plan["max_error"] == 0.05
    assert plan["level"] == 0.95
    pay = plan["codes"]["pay"]
    assert pay["tier"] == "Valid"
    assert pay["threshold"] is not None
    assert pay["upper_bound"] <= 0.05
    assert pay["n"] >= 59
    assert pay["delegated"] + pay["left"] == pay["uncoded"] == 800
    assert plan["delegated"] == sum(c["delegated"] for c in plan["codes"].values())
    assert pay["guarantee"].startswith("With 95% confidence")
    assert "applied" not in plan
    assert main(["delegate", str(study_path)]) == 0
    text = capsys.readouterr().out
    assert "Total" in text
    assert "Left for review" in text
    assert "Procedure: thresholds tested in a fixed sequence from the highest down" in (
        " ".join(text.split())
    )
    assert "fixed sequence from the highest down" in pay["guarantee"]
    assert "--apply" in text
    assert file_digest(study_path) == before


def test_apply_and_undo(study_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = delegate_json(study_path, capsys, "--code", "Pay", "--apply")
    assert list(plan["codes"]) == ["pay"]
    recorded = plan["applied"]["recorded"]["pay"]
    assert recorded == plan["codes"]["pay"]["delegated"] > 0
    assert delegated_count(study_path) == recorded
    # The same plan again is not a new delegation: every pair already stands.
    again = delegate_json(study_path, capsys, "--code", "Pay", "--apply")
    assert again["applied"]["event_id"] is None
    assert again["applied"]["recorded"]["pay"] == 0
    assert again["applied"]["withdrawn"]["pay"] == 0
    assert again["applied"]["unchanged"]["pay"] == recorded
    assert delegated_count(study_path) == recorded
    assert main(["delegate", str(study_path), "--code", "Pay", "--apply"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"Nothing new: the {recorded} delegated decisions of the latest delegation" in out
    assert "Recorded" not in out
    # So undo takes back the one delegation there is.
    assert main(["delegate", str(study_path), "--undo", "--coder", "ana"]) == 0
    assert "undone" in capsys.readouterr().out
    assert delegated_count(study_path) == 0
    assert main(["delegate", str(study_path), "--apply", "--coder", "ana"]) == 0
    out = capsys.readouterr().out
    assert "Recorded" in out
    assert "--undo" in out


def test_nothing_to_undo(study_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["delegate", str(study_path), "--undo"]) == 1
    assert "no delegation to undo" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--max-error", "0"], 2, "strictly between 0 and 1"),
        (["--max-error", "1.5"], 2, "strictly between 0 and 1"),
        (["--level", "1"], 2, "strictly between 0 and 1"),
        (["--level", "x"], 2, "expected a number"),
        (["--apply", "--undo"], 2, "not allowed with"),
        (["--undo", "--code", "Pay"], 2, "drop --code"),
        (["--code", "Nope", "--apply"], 1, "Nope"),
        (["--coder", "zed", "--apply"], 1, "zed"),
    ],
)
def test_bad_input_leaves_the_study_unchanged(
    study_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    status: int,
    message: str,
) -> None:
    before = file_digest(study_path)
    assert exit_code(["delegate", str(study_path), *args]) == status
    assert message in one_line(capsys.readouterr().err)
    assert file_digest(study_path) == before


def test_delegating_with_no_audit_decisions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = simulated_study(tmp_path / "bare.codecurve", n=100)
    before = file_digest(path)
    assert main(["delegate", str(path), "--apply", "--coder", "ana"]) == 1
    assert "no audit sample" in one_line(capsys.readouterr().err)
    assert file_digest(path) == before
    assert main(["audit", str(path), "--per-code", "50", "--seed", "1"]) == 0
    capsys.readouterr()
    drawn = file_digest(path)
    assert main(["delegate", str(path), "--apply", "--coder", "ana"]) == 1
    assert "no blind decisions on the audit sample" in one_line(capsys.readouterr().err)
    assert file_digest(path) == drawn


def test_a_refused_plan_applies_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, truth = simulated_study(tmp_path / "chance.codecurve", n=300, behaviour="chance")
    with Study.open(path) as study:
        study.audit.draw(per_code=150, seed=2)
        code_audit_blind(study, truth)
    before = file_digest(path)
    plan = delegate_json(path, capsys)
    assert plan["delegated"] == 0
    assert all(c["threshold"] is None and c["reason"] for c in plan["codes"].values())
    # The plan tests the delegated pairs themselves, refused or not.
    assert {c["scope"] for c in plan["codes"].values()} == {"delegated"}
    assert main(["delegate", str(path), "--apply"]) == 1
    assert "nothing to delegate" in one_line(capsys.readouterr().err)
    assert file_digest(path) == before


def test_a_constant_model_is_refused_for_adding_nothing_not_for_too_few_decisions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model that answers every pair alike at one confidence adds nothing, and leaves
    the screen's low-confidence cells empty however much is coded: the refusal says the
    first, instead of the tier's "too few decisions", which would send the coder to code
    more in vain."""
    path, truth = simulated_study(tmp_path / "c.codecurve", n=400, behaviour="constant", seed=3)
    with Study.open(path) as study:
        study.audit.draw(per_code=300, seed=5)
        code_audit_blind(study, truth)
    plan = delegate_json(path, capsys)
    for code in plan["codes"].values():
        reason = code["reason"]
        assert code["tier"] == "Insufficient data"
        assert "delegation needs a model that adds something" in reason, reason
        assert "adds nothing here" in reason, reason
        assert code["screen"] == "adds nothing"
        assert "too few decisions" not in reason, reason


def test_a_coder_whose_pairs_others_decided_is_told_why_none_are_left(
    study_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """lena's audit is coded, and another coder decided every pair outside it: nothing
    is left for review (nobody's pair is undecided), and lena is told that her own
    undecided pairs were decided by another coder, not that she has none."""
    with Study.open(study_path) as study:
        blind = [(r, c, v) for r, c, v in _audit_decisions(study, "ana")]
        study.decisions.import_decisions(blind, coder="lena")
        rest = [
            (r, c.id, 1)
            for c in study.codes
            for r in study.response_ids()
            if (r, c.id) not in {(a, b) for a, b, _ in blind}
        ]
        study.decisions.import_decisions(rest, coder="primary")
    capsys.readouterr()
    assert main(["delegate", str(study_path), "--coder", "lena"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Left for review counts the pairs nobody has decided; lena has 1,600 pairs" in out


def _audit_decisions(study: Study, coder: str) -> list[tuple[str, str, int]]:
    sample = study.audit.sample()
    assert sample is not None
    out = []
    for code in study.codes:
        for rid in sample.pairs(code.id):
            d = study.decisions.decision(rid, code.id, coder=coder)
            assert d is not None
            assert d.value is not None
            out.append((rid, code.id, d.value))
    return out
