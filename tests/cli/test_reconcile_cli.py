"""The consensus coder from the command line: ``export --coder consensus``, the wide
layout's ``--all-coders`` columns and ``screen --coder consensus``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from study import Study
from tests.cli.test_screen_cli import make_study
from tui.cli import main


def _two_coders_and_consensus(tmp_path: Path) -> Path:
    """ana (from make_study) and ben decide pay on r0..r39; consensus settles r0..r9."""
    path = make_study(tmp_path / "c.codecurve", {"pay": (10, 10, 10, 10)}, constant=True)
    with Study.open(path) as study:
        study.decisions.import_decisions(
            [(f"r{i}", "pay", 5 if i % 4 else 1) for i in range(40)], coder="ben"
        )
        for i in range(10):
            study.decisions.record(
                f"r{i}", "pay", 5, coder="consensus", note="agreed at the meeting"
            )
    return path


def test_wide_export_has_one_column_per_coder_and_code(tmp_path: Path) -> None:
    path = _two_coders_and_consensus(tmp_path)
    out = tmp_path / "coders.csv"
    assert main(["export", str(path), "-o", str(out), "--layout", "wide", "--all-coders"]) == 0
    frame = pd.read_csv(out, encoding="utf-8-sig", dtype={"response_id": str})
    for coder in ("ana", "ben", "consensus"):
        assert f"Pay [{coder}]" in frame.columns
        assert f"Team [{coder}]" in frame.columns
    rows = frame.set_index("response_id")
    # ana: r0..r9 decided 5, r10..r19 decided 1; each coder's column holds the value.
    assert rows.loc["r0", "Pay [ana]"] == 5
    assert rows.loc["r10", "Pay [ana]"] == 1
    assert rows.loc["r0", "Pay [ben]"] == 1  # ben decided 1 on every fourth response
    assert rows.loc["r1", "Pay [ben]"] == 5
    assert rows.loc["r0", "Pay [consensus]"] == 5
    assert rows.loc[["r10"], "Pay [consensus]"].isna().all()  # consensus did not decide it
    assert frame["Team [ana]"].isna().all()  # nobody decided Team


def test_all_coders_in_the_long_layout_is_a_row_per_pair_and_coder(tmp_path: Path) -> None:
    path = _two_coders_and_consensus(tmp_path)
    out = tmp_path / "long.csv"
    assert main(["export", str(path), "-o", str(out), "--all-coders"]) == 0
    frame = pd.read_csv(out, encoding="utf-8-sig", dtype={"response_id": str})
    r0 = frame[(frame["response_id"] == "r0") & (frame["code_id"] == "pay")]
    assert sorted(r0["coder"]) == ["ana", "ben", "consensus"]


def _read(path: Path) -> dict[tuple[str, str], dict[Any, Any]]:
    frame = pd.read_csv(path, encoding="utf-8-sig", dtype={"response_id": str})
    return {(str(r["response_id"]), str(r["code_id"])): r for r in frame.to_dict("records")}


def test_export_coder_consensus_exports_the_reconciled_decisions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _two_coders_and_consensus(tmp_path)
    for who in ("ana", "ben"):
        assert main(["export", str(path), "-o", str(tmp_path / f"{who}.csv"), "--coder", who]) == 0
    ana, ben = _read(tmp_path / "ana.csv"), _read(tmp_path / "ben.csv")
    out = tmp_path / "consensus.csv"
    capsys.readouterr()
    # The default once there is a consensus, and said so.
    assert main(["export", str(path), "-o", str(out)]) == 0
    assert "writing the reconciled decisions" in capsys.readouterr().err
    frame = _read(out)
    settled = [row for row in frame.values() if row["coder"] == "consensus"]
    assert len(settled) == 10
    assert {row["note"] for row in settled} == {"agreed at the meeting"}
    unresolved = 0
    for key, row in frame.items():
        if row["coder"] == "consensus":
            continue
        known = [v for v in (ana[key]["decision"], ben[key]["decision"]) if not pd.isna(v)]
        if len(set(known)) > 1:
            assert pd.isna(row["decision"])
            assert row["final_from"] == "unresolved"
            unresolved += 1
        elif known:
            assert row["decision"] == known[0]
        else:
            assert pd.isna(row["decision"])
    assert unresolved > 0


def test_several_coders_without_a_consensus_must_be_chosen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _two_coders_and_consensus(tmp_path)
    with Study.open(path) as study:
        for i in range(10):
            study.decisions.clear(f"r{i}", "pay", coder="consensus")
    out = tmp_path / "x.csv"
    assert main(["export", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "2 coders ('ana', 'ben')" in err
    assert "--coder NAME" in err
    assert "--all-coders" in err
    assert len(err.splitlines()) == 1
    assert not out.exists()


def test_export_an_unknown_coder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _two_coders_and_consensus(tmp_path)
    out = tmp_path / "x.csv"
    assert main(["export", str(path), "-o", str(out), "--coder", "zed"]) == 1
    err = capsys.readouterr().err.strip()
    assert "no decisions by 'zed'" in err
    assert len(err.splitlines()) == 1
    assert not out.exists()


def test_screen_takes_the_consensus_as_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _two_coders_and_consensus(tmp_path)
    assert main(["screen", str(path), "--format", "json", "--coder", "consensus"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["coder"] == "consensus"
    # The consensus decided 5 on r0..r9, where the model picks 5 with high confidence.
    assert payload["n_decisions"] == 10
    assert payload["pooled"]["table"] == {"a": 10, "b": 0, "c": 0, "d": 0}
