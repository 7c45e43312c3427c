"""``codecurve audit`` and ``codecurve screen --sample`` end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from study import Study
from tests.study.test_audit import code_audit_blind, file_digest, simulated_study
from tui.cli import main

Truth = dict[tuple[str, str], int]


def exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        return int(exc.code or 0)


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("codecurve")
    return lines[0]


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def sim(tmp_path: Path) -> tuple[Path, Truth]:
    return simulated_study(tmp_path / "s.codecurve", n=400, seed=3)


def audit_json(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["audit", str(path), "--format", "json", *extra]) == 0
    payload: dict[str, Any] = json.loads(capsys.readouterr().out)
    return payload


def test_draw_extend_and_progress(
    sim: tuple[Path, Truth], capsys: pytest.CaptureFixture[str]
) -> None:
    path, truth = sim
    drawn = audit_json(path, capsys, "--per-code", "120", "--seed", "9")
    assert drawn["action"] == "drawn"
    assert drawn["seed"] == 9
    assert drawn["population"] == 400
    assert [(c["code"], c["size"], c["coded"]) for c in drawn["codes"]] == [
        ("Workload", 120, 0),
        ("Pay", 120, 0),
    ]
    assert drawn["codes"][0]["verdict"] == "no blind audit decision yet"
    grown = audit_json(path, capsys, "--extend", "30", "--code", "Pay")
    assert grown["action"] == "extended"
    assert [c["size"] for c in grown["codes"]] == [150]
    with Study.open(path) as study:
        code_audit_blind(study, truth)
        sample = study.audit.sample()
        assert sample is not None
        study.decisions.clear(sample.pairs("pay")[3], "pay", coder="ana")  # one skipped
    # The simulated confidences straddle 0.5 (their low band is 0.25-0.6): at that cut
    # every cell of the 2x2 table fills once the audit is coded.
    progress = audit_json(path, capsys, "--cut", "0.5")
    assert progress["action"] == "progress"
    assert len(progress["draws"]) == 2
    pay = progress["codes"][1]
    assert (pay["size"], pay["coded"], pay["skipped"], pay["remaining"]) == (150, 149, 1, 0)
    assert pay["tier"] in ("Valid", "Indeterminate", "Invalid")
    assert "response pattern: " in pay["verdict"]
    assert " · AUROC " in pay["verdict"]
    assert " · kappa " in pay["verdict"]
    assert pay["delegation"]
    assert main(["audit", str(path)]) == 0
    table = capsys.readouterr().out
    assert "seed 9" in table
    assert "Workload" in table
    assert "missing values" in table


def test_no_options_only_reports_and_draw_draws(
    sim: tuple[Path, Truth], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = sim
    # Asking for the status draws nothing: a draw is for good.
    assert main(["audit", str(path)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "no audit sample yet, and nothing was drawn" in err
    assert f"codecurve audit {path} --draw" in err
    with Study.open(path, read_only=True) as study:
        assert study.audit.sample() is None
    drawn = audit_json(path, capsys, "--draw")
    assert drawn["action"] == "drawn"
    assert {c["size"] for c in drawn["codes"]} == {150}
    # After the draw: how to code it.
    assert drawn["next"][0].startswith("Next: code the 300 audit pairs blind")
    assert "then s (the screening panel) and b (the blind audit" in drawn["next"][0]
    assert audit_json(path, capsys)["action"] == "progress"
    # A second --draw is refused: extend instead.
    assert main(["audit", str(path), "--draw"]) == 1
    assert "extend it" in capsys.readouterr().err


def test_a_complete_audit_points_to_screen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, truth = simulated_study(tmp_path / "small.codecurve", n=60, seed=5)
    assert main(["audit", str(path), "--per-code", "15", "--seed", "2"]) == 0
    capsys.readouterr()
    with Study.open(path) as study:
        code_audit_blind(study, truth)
    payload = audit_json(path, capsys)
    assert all(c["remaining"] == 0 for c in payload["codes"])
    assert payload["next"][0].startswith("The audit is fully coded. Next: read what it says")
    assert f"codecurve screen {path}" in payload["next"][0]
    assert "--extend N" in payload["next"][0]  # 15 of 60 responses: it can grow


def test_a_complete_audit_of_every_response_names_no_extension_and_the_new_wave(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from study import ResponseTable

    path, truth = simulated_study(tmp_path / "tiny.codecurve", n=20, seed=5)
    assert main(["audit", str(path), "--draw", "--seed", "2"]) == 0
    capsys.readouterr()
    with Study.open(path) as study:
        code_audit_blind(study, truth)
        wave = {f"w{i}": f"new {i}" for i in range(7)}
        study.versions.add_responses(ResponseTable.from_texts(wave))
    payload = audit_json(path, capsys)
    assert all(c["remaining"] == 0 for c in payload["codes"])
    first = payload["next"][0]
    # --extend is refused past the 20 responses drawn from: it is not offered.
    assert "--extend" not in first
    assert "covers all 20 responses it was drawn from" in first
    assert payload["next"][1].startswith("7 response(s) added after the draw (a new wave)")
    assert main(["audit", str(path), "--extend", "1"]) == 1


def test_screen_reports_its_sample(
    sim: tuple[Path, Truth], capsys: pytest.CaptureFixture[str]
) -> None:
    path, truth = sim
    with Study.open(path) as study:
        for rid in [f"r{i}" for i in range(30)]:
            study.decisions.record(rid, "pay", truth[(rid, "pay")], coder="ana")
    assert main(["screen", str(path), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sample"] == "all"
    assert "not a random sample" in out["sample_note"]
    assert out["sample_size"] == 30
    assert main(["screen", str(path)]) == 0
    assert "not a random sample" in capsys.readouterr().out
    assert main(["audit", str(path), "--per-code", "60", "--seed", "1"]) == 0
    capsys.readouterr()
    assert main(["screen", str(path), "--sample", "audit"]) == 1
    assert "no blind decisions on the audit sample" in one_line(capsys.readouterr().err)
    with Study.open(path) as study:
        sample = study.audit.sample()
        assert sample is not None
        for rid in sample.pairs("pay")[:20]:
            study.decisions.record(rid, "pay", truth[(rid, "pay")], coder="ana", blind=True)
    assert main(["screen", str(path), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sample"] == "audit"
    assert out["sample_size"] == 20
    assert out["sample_note"] == ""
    assert "blind random audit, 20 decisions" in out["pooled"]["dataset"]
    assert main(["screen", str(path), "--format", "json", "--sample", "all"]) == 0
    assert json.loads(capsys.readouterr().out)["sample"] == "all"
    assert main(["screen", str(path), "--code", "Pay"]) == 0
    text = capsys.readouterr().out
    assert "Sample: the blind random audit, 20 decisions." in text
    # 400 responses, 20 coded blind: the screen needs more than the study has left, and
    # says so rather than asking for more than there are.
    assert "code the 378 audit pairs of Pay left (every one)" in text
    assert "out of reach in this study" in text
    assert main(["screen", str(path), "--format", "markdown"]) == 0
    assert "> Sample: the blind random audit" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--per-code", "0"], 2, "at least 1"),
        (["--size", "-3"], 2, "at least 1"),
        (["--extend", "0"], 2, "at least 1"),
        (["--seed", "-1"], 2, "[0, 2^63)"),
        (["--per-code", "5", "--size", "10"], 2, "not allowed with"),
        (["--extend", "5", "--seed", "1"], 2, "--seed"),
        (["--per-code", "401"], 1, "larger than the population of 400"),
        (["--per-code", "5", "--code", "Nope"], 1, "Nope"),
        (["--extend", "5"], 1, "no audit sample to extend"),
    ],
)
def test_bad_input_leaves_the_study_unchanged(
    sim: tuple[Path, Truth],
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    status: int,
    message: str,
) -> None:
    path, _ = sim
    before = file_digest(path)
    assert exit_code(["audit", str(path), *args]) == status
    assert message in one_line(capsys.readouterr().err)
    assert file_digest(path) == before
    with Study.open(path, read_only=True) as study:
        assert study.audit.sample() is None


def test_a_second_draw_is_refused(
    sim: tuple[Path, Truth], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = sim
    assert main(["audit", str(path), "--per-code", "10", "--seed", "1"]) == 0
    capsys.readouterr()
    with Study.open(path, read_only=True) as study:
        events = len(study.decisions.events())
    assert main(["audit", str(path), "--per-code", "20"]) == 1
    assert "already has an audit sample" in one_line(capsys.readouterr().err)
    with Study.open(path, read_only=True) as study:
        assert len(study.decisions.events()) == events
        assert set(study.audit.sample().sizes.values()) == {10}  # type: ignore[union-attr]


def test_no_such_study(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", str(tmp_path / "none.codecurve")]) == 1
    assert "no such study file" in one_line(capsys.readouterr().err)


def test_an_audit_can_be_drawn_before_scoring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from study import ResponseTable
    from tests.study.test_audit import SIM_CODEBOOK

    path = tmp_path / "unscored.codecurve"
    texts = {f"r{i}": "text" for i in range(20)}
    Study.create(path, responses=ResponseTable.from_texts(texts), codebook=SIM_CODEBOOK).close()
    drawn = audit_json(path, capsys, "--seed", "3")
    assert {c["size"] for c in drawn["codes"]} == {20}
    assert {c["verdict"] for c in drawn["codes"]} == {"not scored yet"}


def test_a_draw_refused_for_its_coder_leaves_no_sample(
    sim: tuple[Path, Truth], capsys: pytest.CaptureFixture[str]
) -> None:
    """A coder who decided nothing: the draw is refused before anything is drawn, so the
    rerun with a coder the message names draws."""
    path, truth = sim
    with Study.open(path) as study:
        pairs = sorted(truth)[:20]
        study.decisions.import_decisions([(r, c, truth[(r, c)]) for r, c in pairs], coder="ana")
        study.decisions.import_decisions([(r, c, truth[(r, c)]) for r, c in pairs], coder="ben")
    before = file_digest(path)
    assert exit_code(["audit", str(path), "--draw", "--coder", "nobody"]) == 1
    err = one_line(capsys.readouterr().err)
    assert "ana, ben" in err
    assert file_digest(path) == before
    with Study.open(path, read_only=True) as study:
        assert study.audit.sample() is None
    assert main(["audit", str(path), "--draw", "--coder", "ana"]) == 0
    assert "Audit sample drawn" in capsys.readouterr().out


def test_with_several_coders_each_command_says_whose_decisions_it_uses(
    sim: tuple[Path, Truth], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Two coders, no --coder: audit, screen, delegate, findings, compare and report use
    the coder with the most blind audit decisions and say so once, at the start; the
    report keeps its screen and delegation sections."""
    path, truth = sim
    with Study.open(path) as study:
        study.audit.draw(per_code=60, seed=2)
        sample = study.audit.sample()
        assert sample is not None
        for code in study.codes:
            rids = sample.pairs(code.id)
            study.decisions.import_decisions(
                [(r, code.id, truth[(r, code.id)]) for r in rids[:40]], coder="ben"
            )
            study.decisions.import_decisions(
                [(r, code.id, truth[(r, code.id)]) for r in rids[:10]], coder="ana"
            )
    said = "Using the decisions of ben ("
    also = "also coded: ana; another coder can be named (try --coder NAME)."
    report = tmp_path / "r.html"
    for argv in (
        ["audit", str(path)],
        ["screen", str(path)],
        ["delegate", str(path)],
        ["findings", str(path)],
        ["report", str(path), "-o", str(report)],
    ):
        assert main(argv) == 0, argv
        err = capsys.readouterr().err
        notes = [line for line in err.splitlines() if line.startswith("Using the decisions")]
        assert len(notes) == 1, (argv, err)
        assert notes[0].startswith(said), notes[0]
        assert notes[0].endswith(also), notes[0]
        assert "blind audit decisions, the most" in notes[0]
    page = report.read_text(encoding="utf-8")
    assert "Not available yet" not in page.split("The validity screen")[1].split("Delegation")[0]
    assert "Using the decisions of ben" in page
    # A named coder is used as named, without a word.
    assert main(["screen", str(path), "--coder", "ana"]) == 0
    assert "Using the decisions" not in capsys.readouterr().err
    # Delegated decisions carry a coder's name: --apply never takes one by default.
    assert main(["delegate", str(path), "--apply"]) == 2
    assert "give --coder NAME" in capsys.readouterr().err


def test_the_report_compares_the_coders_it_is_given(
    sim: tuple[Path, Truth], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from study.report._data import ReportOptions, report_data

    path, truth = sim
    pairs = sorted(truth)[:60]
    with Study.open(path) as study:
        for coder in ("ana", "ben", "cy"):
            study.decisions.import_decisions([(r, c, truth[(r, c)]) for r, c in pairs], coder=coder)
        every = report_data(study, ReportOptions(resamples=50))
        two = report_data(study, ReportOptions(coders=("ana", "cy"), resamples=50))
    assert every.sections["agreement"]["coders"] == ["ana", "ben", "cy"]
    assert two.sections["agreement"]["coders"] == ["ana", "cy"]
    assert two.sections["agreement"]["pooled"]["kappa"] is not None
    report = tmp_path / "r.html"
    assert main(["report", str(path), "--coders", "ana,cy", "-o", str(report)]) == 0
    assert "ana" in report.read_text(encoding="utf-8")
