"""Next steps that fit the study: no "code N more" beyond what is left, and where a
verdict or a delegation is out of reach, the words say so and what to do instead."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from study import Study
from tests.cli.test_headline_cli import constant_study
from tests.study.test_audit import code_audit_blind, simulated_study
from tui.cli import main

#: "code 23 more ...", "about 171 more audit responses", "code the 45 ... left".
NUMBERS = re.compile(r"(?:code|about|least|needs) (?:the )?([\d,]+) (?:more )?")


def asked(text: str) -> list[int]:
    """Every number of pairs or responses a step asks for."""
    return [int(n.replace(",", "")) for n in NUMBERS.findall(text)]


def steps(payload: dict) -> list[str]:  # type: ignore[type-arg]
    return [payload["next_action"], *(r["delegation"] for r in payload.get("codes", []))]


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """60 responses x 2 codes (the 1-5 simulation), a 15-per-code audit coded blind."""
    path, truth = simulated_study(tmp_path / "small.codecurve", n=60, seed=5)
    assert main(["audit", str(path), "--per-code", "15", "--seed", "2"]) == 0
    with Study.open(path) as study:
        code_audit_blind(study, truth)
    return path


def test_no_step_is_larger_than_what_remains_in_60_responses(
    small: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    left = 60 - 15
    assert main(["screen", str(small), "--format", "json"]) == 0
    screened = json.loads(capsys.readouterr().out)
    assert screened["remaining"] == {"Workload": left, "Pay": left}
    assert main(["audit", str(small), "--format", "json"]) == 0
    audit = json.loads(capsys.readouterr().out)
    assert main(["delegate", str(small)]) == 0
    plan = capsys.readouterr().out
    texts = [screened["next_action"], *(c["verdict"] for c in audit["codes"])]
    texts += [c["delegation"] for c in audit["codes"]]
    for text in texts:
        # A number above what is left only ever comes with "out of reach".
        for n in asked(text):
            assert n <= left or "out of reach" in text, text
    flat = " ".join(plan.split())
    assert "out of reach in this study" in flat
    assert f"only {left} are left" in flat
    assert "code the pairs yourself" in flat


def test_a_study_of_four_responses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "four.codecurve"
    constant_study(path, n=4, codes=("Pay", "Staff"))
    with Study.open(path) as study:
        study.decisions.clear("r3", "pay", coder="ana")
    capsys.readouterr()
    assert main(["screen", str(path), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["remaining"] == {"Pay": 1, "Staff": 0}
    for n in asked(out["next_action"]):
        assert n <= 1, out["next_action"]
    assert main(["screen", str(path), "--code", "Staff", "--format", "json"]) == 0
    staff = json.loads(capsys.readouterr().out)
    # Every Staff pair is coded: the step says so instead of asking for more.
    assert "more" not in staff["next_action"] or "every" in staff["next_action"]


def test_a_tiny_maximum_error_is_a_plain_refusal(
    small: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["delegate", str(small), "--max-error", "1e-9"]) == 0
    captured = capsys.readouterr()
    assert "unexpected" not in captured.err
    assert "Traceback" not in captured.err
    assert "Nothing delegated" in captured.out


def test_add_and_revise_say_what_the_audit_and_delegation_lack(
    small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wave = tmp_path / "wave2.csv"
    wave.write_text("id,text\n" + "".join(f"w{i},a new comment {i}\n" for i in range(20)), "utf-8")
    capsys.readouterr()
    assert main(["add", str(small), "--responses", str(wave)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "wave 2: added 20 responses" in err
    assert f"pairs to score under the active configuration (run 'codecurve score {small}')" in err
    assert "The new wave 2 of 20 responses is not in the audit sample" in err
    assert "drawn from the 60 responses before it" in err
    assert "leaves the new wave's pairs for review" in err
    with Study.open(small, read_only=True) as study:
        codebook = study.codebook
    from codebooks.model import Code, Codebook
    from codebooks.writers import save_codebook

    pay = codebook.code("pay")
    revised = Codebook(
        name=codebook.name,
        scale=codebook.scale,
        codes=(
            *(c for c in codebook.codes if c.id != "pay"),
            Code(pay.id, pay.name, definition="Money, and now bonuses too."),
            Code("team", "Team", definition="Colleagues."),
        ),
    )
    path = tmp_path / "v2.yaml"
    save_codebook(revised, path)
    capsys.readouterr()
    assert main(["codebook", str(small), "--revise", str(path), "--yes"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "Changed definition of Pay: their scores are stale" in err
    assert "made under the earlier definition" in err
    assert "New code Team has no audit pairs: extend the audit sample by 15" in err
    assert f"(run 'codecurve audit {small} --extend 15 --code Team')" in err
    # The step it names works.
    assert main(["audit", str(small), "--extend", "15", "--code", "Team"]) == 0


def test_the_vrs_tables_distance_to_a_verdict_says_what_is_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The seed's "about N more annotated items" estimate stays, with what the study has
    left beside it: nothing, for a code whose every pair is coded."""
    path = tmp_path / "four.codecurve"
    constant_study(path, n=4, codes=("Pay", "Staff"))
    with Study.open(path) as study:
        study.decisions.clear("r3", "pay", coder="ana")
    capsys.readouterr()
    for fmt in ("table", "markdown"):
        assert main(["screen", str(path), "--format", fmt]) == 0
        flat = " ".join(capsys.readouterr().out.split()).replace("│", " ")
        flat = " ".join(flat.split())
        assert "more annotated items" in flat
        assert "every pair is coded: no verdict can be reached in this study" in flat
        assert "the study has 1 pair left to code" in flat


def test_each_distance_estimate_above_what_is_left_says_so_where_it_stands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every "about N more" of the distance to a verdict that the study cannot give says
    so beside it, not once at the end of the row."""
    path = tmp_path / "four.codecurve"
    constant_study(path, n=4, codes=("Pay", "Staff"))
    with Study.open(path) as study:
        study.decisions.clear("r3", "pay", coder="ana")
    capsys.readouterr()
    assert main(["screen", str(path), "--code", "Pay", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "Distance to a verdict" in line)
    estimates = re.findall(r"about \d+ more [a-z ]+?(?: \([^)]*\))?(?= at|;|$| \|)", row)
    assert estimates, row
    for estimate in estimates:
        assert "more than the 1 left in this study: out of reach here" in estimate, row
