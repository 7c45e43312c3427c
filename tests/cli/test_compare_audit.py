"""``codecurve compare --sample audit``: only the coder's blind decisions on the audit sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from study import Study
from study.analysis.compare import compare_configs
from study.errors import StudyError
from tui.cli import main


@pytest.fixture
def study(tmp_path: Path) -> Path:
    lines = ["respondent,answer"] + [f"r{i},answer number {i}" for i in range(1, 21)]
    responses = tmp_path / "answers.csv"
    responses.write_text("\n".join(lines) + "\n", encoding="utf-8")
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(
        "name: W\ncodes:\n  - name: Pay\n    definition: Money.\n  - name: Hours\n",
        encoding="utf-8",
    )
    path = tmp_path / "s.codecurve"
    assert main(["new", str(path), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    for context in ("none", "full"):
        assert main(["score", str(path), "--model", "fake", "--context", context]) == 0
    assert main(["audit", str(path), "--per-code", "8", "--seed", "3"]) == 0
    return path


def value(i: int, j: int) -> int:
    return (i * 7 + j) % 5 + 1


def test_compare_on_the_audit_uses_only_blind_audit_decisions(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Study.open(study) as s:
        sample = s.audit.sample()
        assert sample is not None
        blind: set[tuple[str, str]] = set()
        for j, code in enumerate(("pay", "hours")):
            audit = sample.pairs(code)
            for i, rid in enumerate(s.response_ids()):
                if rid == audit[0]:  # an audit pair decided while seeing the model
                    s.decisions.record(rid, code, value(i, j), coder="ana")
                elif rid in audit:
                    s.decisions.record(rid, code, value(i, j), coder="ana", blind=True)
                    blind.add((rid, code))
                else:  # outside the audit: counts only for --sample all
                    s.decisions.record(rid, code, value(i, j), coder="ana")
        everything = compare_configs(s, resamples=50)
        audited = compare_configs(s, sample="audit", resamples=50)
    assert len(blind) == 2 * 7
    assert everything.n_pairs == 40
    assert audited.n_pairs == len(blind)
    assert audited.sample == "audit"
    per_code = {r.code: r.n for r in audited.rows if r.config_id == audited.configs[0][0]}
    assert per_code == {"pay": 7, "hours": 7, "All codes": 14}
    capsys.readouterr()
    assert main(["compare", str(study), "--sample", "audit", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["sample"], data["n_pairs"]) == ("audit", 14)
    assert main(["compare", str(study), "--sample", "audit", "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert "compared on the blind decisions on the audit sample: 14 pairs" in out


def test_an_audit_nobody_coded_blind_is_a_clear_error(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Study.open(study) as s:
        for rid in s.response_ids():
            s.decisions.record(rid, "pay", 3, coder="ana")  # none of it blind
        with pytest.raises(StudyError, match="no blind decisions by 'ana' on the audit sample"):
            compare_configs(s, sample="audit")
    capsys.readouterr()
    assert main(["compare", str(study), "--sample", "audit"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("codecurve: error:")
    assert "no blind decisions" in err
