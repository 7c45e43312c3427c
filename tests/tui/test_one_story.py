"""One story everywhere: a model that answers No to every pair "adds nothing", and no
surface (the terminal's ``screen``, its JSON, the app's panel, the report, delegation,
the project's provenance) gives it a tier or draws its calibration, even where the
screen's rules alone would call its confidence pattern Valid."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from screening.headline import make_headline
from screening.story import NO_TIER, story, vrs_rows
from study import Study
from study.analysis.screen import screen_study
from study.report._content import figures
from study.report._data import ReportOptions, report_data
from tests.cli.test_headline_cli import constant_study
from tests.tui.test_headline_panel import open_panel, panel_text
from tui.app import make_app
from tui.cli import main

#: A code whose confidence pattern the screen's rules call Valid (seed 0, 150 audited).
VALID_CODE = "Staff"


def audited_constant_study(tmp_path: Path, coder: str = "ana") -> Path:
    """160 responses x Pay, Staff; the model answers No throughout; every decision is
    blind (imported) and 150 responses per code are in the audit sample."""
    path = constant_study(
        tmp_path / "c.codecurve", n=160, codes=("Pay", VALID_CODE), coder=coder, seed=0
    )
    with Study.open(path) as study:
        study.audit.draw(per_code=150, seed=1)
        screened = screen_study(study, sample="audit", phase_b=True)
        # What the rules alone find, kept for the record (and what this test is about).
        assert screened.per_code[VALID_CODE].tier == "Valid"
    return path


def test_the_story_of_a_constant_model() -> None:
    head = make_headline(
        "Staff",
        picks=[0] * 40,
        decisions=[0] * 30 + [1] * 10,
        pick_applies=[False] * 40,
        decision_applies=[False] * 30 + [True] * 10,
        confidence=[0.6, 0.9] * 20,
    )
    told = story("Valid", head)
    assert told.adds_nothing
    assert told.verdict == "adds nothing"
    assert told.tier_words == NO_TIER
    assert not told.calibration
    assert not told.delegable
    assert told.to_dict()["tier"] is None
    assert "Valid" not in told.pattern_line(head)
    rows = vrs_rows([("Tier classification", "Valid"), ("ECE", "0.165")], head)
    assert ("Tier classification", NO_TIER) in rows
    assert not [r for r in rows if r[0] == "ECE"]
    assert rows[-1][0] == "Phase B"
    assert rows[-1][1].startswith("not shown: the model said the code does not apply to all 40")


def test_screen_and_its_json_tell_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = audited_constant_study(tmp_path)
    assert main(["screen", str(path), "--code", VALID_CODE, "--phase-b"]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert "adds nothing here" in flat
    assert not re.search(r"\bValid\b", out), out
    assert "ECE" not in out
    assert "Brier" not in out
    assert main(["screen", str(path), "--phase-b", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    staff = data["per_code"][VALID_CODE]
    assert staff["phase_b"] is None
    assert staff["story"]["adds_nothing"] is True
    assert staff["story"]["tier"] is None
    assert staff["story"]["calibration"] is False


def test_compare_tells_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = audited_constant_study(tmp_path)
    capsys.readouterr()
    assert main(["compare", str(path), "--sample", "audit", "--resamples", "20"]) == 0
    table = capsys.readouterr().out.split("compared on")[0]
    assert "adds nothing" in table
    assert "no pathology found" not in table
    assert main(["compare", str(path), "--format", "json", "--resamples", "20"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["verdict"] for r in rows} == {"adds nothing"}


def test_the_report_draws_no_calibration_and_says_no_valid(tmp_path: Path) -> None:
    path = audited_constant_study(tmp_path)
    with Study.open(path, read_only=True) as study:
        data = report_data(study, ReportOptions(coder="ana"))
    assert not [f for f in figures(data) if f.kind in ("reliability", "risk_coverage")]
    for group, rows in data.vrs_rows.items():
        tier = dict(rows)["Tier classification"]
        assert tier == NO_TIER, (group, tier)
        assert not [label for label, _ in rows if label in ("ECE", "Brier score")]
    plan = data.section("delegation")
    assert plan is not None
    staff = next(c for c in plan["codes"].values() if c["code_name"] == VALID_CODE)
    assert staff["threshold"] is None
    assert staff["screen"] == "adds nothing"
    assert "adds something" in staff["guarantee"]
    out = tmp_path / "report.html"
    assert main(["report", str(path), "--coder", "ana", "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style).*?</\1>", "", html, flags=re.S))
    assert "Reliability diagram" not in text
    assert "Risk-coverage curve" not in text
    assert not re.search(r"Tier classification\s+Valid", text)
    assert not re.search(r"\bValid\s*/\s*refused", text)


def test_the_projects_provenance_tells_it(tmp_path: Path) -> None:
    from study.refi import project_from_study

    path = audited_constant_study(tmp_path)
    with Study.open(path, read_only=True) as study:
        project = project_from_study(study, coder="ana")
    text = next(n.text for n in project.notes if n.name == "codecurve provenance")
    line = next(x for x in text.splitlines() if x.startswith("screen tier against ana: "))
    assert f"{VALID_CODE}: the model answered No to all 150 pairs of this code" in line
    assert not re.search(r"\bValid\b", line.replace("(Valid: no pathological", "")), line


@pytest.mark.parametrize("suffix", [".csv", ".xlsx"])
def test_an_exports_provenance_tells_it(tmp_path: Path, suffix: str) -> None:
    # CSV and XLSX carried no screen at all: a reader of the export had the model's picks
    # and no word that they add nothing.
    import openpyxl

    path = audited_constant_study(tmp_path)
    target = tmp_path / f"coded{suffix}"
    assert main(["export", str(path), "-o", str(target), "--coder", "ana"]) == 0
    if suffix == ".csv":
        sidecar = json.loads((tmp_path / "coded.csv-metadata.json").read_text(encoding="utf-8"))
        text = "\n".join(f"{k}: {v}" for k, v in sidecar["dc:provenance"].items())
    else:
        sheet = openpyxl.load_workbook(target)["provenance"]
        text = "\n".join(" ".join(str(c.value) for c in row) for row in sheet.iter_rows())
    flat = " ".join(text.split())
    assert "screen tier against ana" in flat
    line = next(x for x in text.splitlines() if "screen tier against ana" in x)
    assert f"{VALID_CODE}: the model answered No to all 150 pairs of this code" in line
    assert "adds nothing here" in line
    assert not re.search(r"\bValid\b", line.replace("(Valid: no pathological", "")), line


async def test_the_panel_tells_it(tmp_path: Path) -> None:
    path = audited_constant_study(tmp_path, coder="tester")
    app = make_app(Study.open(path), coder="tester", close_study=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await open_panel(pilot)
        panel = app.review.screening
        panel.select_code(VALID_CODE.lower())
        await pilot.pause()
        text = panel_text(panel)
        assert "it adds nothing here" in text
        assert not re.search(r"\bValid\b", text), text
        assert "ECE" not in text
        assert panel.plots_text == ""
        summary = app.screening_summary
        assert summary is not None
        group = summary.group(VALID_CODE.lower())
        assert group is not None
        assert group.short == "adds nothing"
