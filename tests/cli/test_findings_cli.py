"""``codecurve findings``: figures checked against pandas on the export, outputs, errors."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from study import Study
from study.exchange.writers import read_export
from tests.cli.test_audit_cli import exit_code, one_line
from tests.study.test_findings import findings_study
from tui.cli import main

ppi_py = pytest.importorskip("ppi_py")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "f.codecurve"
    findings_study(path, n=600, audit=200)
    with Study.open(path) as study:
        sample = study.audit.sample()
        assert sample is not None
        coded = next(
            r
            for r in sample.pairs("wait")
            if getattr(study.decisions.decision(r, "wait", coder="ana"), "value", None) == 1
        )
        study.decisions.set_note(coded, "wait", "long queue at reception", coder="ana")
    return path


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(scope="module")
def exported(built: Path, tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The long export with each response's site from the wide export."""
    folder = tmp_path_factory.mktemp("exports")
    assert main(["export", str(built), "-o", str(folder / "long.csv"), "--layout", "long"]) == 0
    assert main(["export", str(built), "-o", str(folder / "wide.csv"), "--layout", "wide"]) == 0
    long = read_export(folder / "long.csv")
    site = read_export(folder / "wide.csv").set_index("response_id")["site"]
    return long.assign(site=long["response_id"].map(site))


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(["findings", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def reference(rows: pd.DataFrame) -> tuple[float, float, float]:
    """ppi_py's power-tuned estimate and interval from an export's rows (blind = audit)."""
    audit = rows["blind"].fillna(False).astype(bool).to_numpy()
    y = rows["decision"].to_numpy(float)[audit]
    f = rows["model_applies"].astype(float).to_numpy()
    point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f[audit], f[~audit], lam=None)))
    lower, upper = ppi_py.ppi_mean_ci(y, f[audit], f[~audit], alpha=0.05, lam=None)
    return point, float(np.squeeze(lower)), float(np.squeeze(upper))


def test_by_groups_and_differences_match_pandas_on_the_export(
    built: Path, exported: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_json(capsys, str(built), "--by", "site")
    for code in ("staff", "wait"):
        rows = exported[exported["code_id"] == code]
        got = {g["group"]: g for g in result["groups"] if g["code_id"] == code}
        expected = {}
        for site, part in rows.groupby("site"):
            expected[site] = reference(part)
            ppi = got[site]["ppi"]
            assert ppi["estimate"] == pytest.approx(expected[site][0])
            if ppi["interval"] == "normal":
                assert (ppi["lower"], ppi["upper"]) == pytest.approx(expected[site][1:])
            else:
                # Fewer than 40 audit decisions on a side: the score interval, never
                # narrower than ppi_py's normal one towards 1/2.
                assert ppi["interval"] == "score"
                assert "score interval" in ppi["why"]
                if ppi["estimate"] <= 0.5:
                    assert ppi["upper"] >= expected[site][2] - 1e-12
            audit = part[part["blind"].fillna(False).astype(bool)]
            assert got[site]["audit"]["estimate"] == pytest.approx(audit["decision"].mean())
            assert got[site]["count"]["share"] == pytest.approx(part["final_applies"].mean())
        diff = next(d for d in result["differences"] if d["code_id"] == code)
        assert diff["ppi"]["estimate"] == pytest.approx(expected["A"][0] - expected["B"][0])
        a, b = got["A"]["ppi"], got["B"]["ppi"]
        assert diff["ppi"]["upper"] - diff["ppi"]["estimate"] == pytest.approx(
            np.hypot(a["upper"] - a["estimate"], b["estimate"] - b["lower"])
        )
        assert "square-and-add" in diff["ppi"]["method"]


def test_co_occurrence_counts_match_pandas_on_the_export(
    built: Path, exported: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    table = run_json(capsys, str(built), "--co-occurrence")
    wide = exported.pivot(index="response_id", columns="code_name", values="final_applies")
    wide = wide.astype(bool)
    both = int((wide["Staff manner"] & wide["Waiting time"]).sum())
    i, j = table["codes"].index("Staff manner"), table["codes"].index("Waiting time")
    assert table["counts"][i][j] == both
    assert table["counts"][i][i] == int(wide["Staff manner"].sum())
    union = int((wide["Staff manner"] | wide["Waiting time"]).sum())
    assert table["jaccard"][j][i] == pytest.approx(both / union)
    sources = exported["final_from"].value_counts()
    assert table["sources"] == {k: int(v) for k, v in sources.items()}


def test_list_prints_the_coded_responses_with_notes(
    built: Path, exported: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["findings", str(built), "--code", "Waiting time", "--list", "--format", "csv"]) == 0
    )

    listed = pd.read_csv(StringIO(capsys.readouterr().out), dtype={"response_id": str})
    rows = exported[(exported["code_id"] == "wait") & exported["final_applies"].astype(bool)]
    assert list(listed["response_id"]) == list(rows["response_id"])
    assert list(listed["note"].dropna()) == ["long queue at reception"]


def test_table_and_markdown_show_every_code_and_the_sentences(
    built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["findings", str(built)]) == 0
    out = capsys.readouterr().out
    assert "Prevalence of each code" in out
    assert "Staff manner" in out
    assert "Waiting time" in out
    assert "descriptive" in out
    assert main(["findings", str(built), "--by", "site", "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| code | group |" in md
    assert "## Differences between groups" in md
    assert "prediction-powered inference" in md


def test_csv_and_xlsx_carry_the_method_and_sentences(built: Path, tmp_path: Path) -> None:
    csv = tmp_path / "findings.csv"
    assert main(["findings", str(built), "--by", "site", "-o", str(csv)]) == 0
    frame = read_export(csv)
    assert set(frame["group"]) == {"(all)", "A", "B", "A - B"}
    meta = json.loads((tmp_path / "findings.csv-metadata.json").read_text(encoding="utf-8"))
    prov = meta["dc:provenance"]
    assert "PPI++" in prov["findings method"]
    assert prov["sentence (Staff manner)"].startswith("Staff manner applies to an estimated")
    xlsx = tmp_path / "findings.xlsx"
    assert main(["findings", str(built), "-o", str(xlsx)]) == 0
    sheet = pd.read_excel(xlsx, sheet_name="provenance").set_index("field")["value"]
    assert "sentence (Waiting time)" in sheet.index
    assert "model" in sheet.index


@pytest.mark.parametrize(
    ("argv", "status", "words"),
    [
        (["--by", "trust"], 1, "no response column 'trust'; columns: wave, site, ward"),
        (["--code", "Parking"], 1, "no code 'Parking'"),
        (["--coder", "bo"], 1, "no blind audit decisions by coder 'bo'"),
        (["--list"], 2, "--list needs --code"),
        (["--top", "3"], 2, "--top goes with --by"),
        (["-o", "out.txt"], 1, "findings are written as .csv or .xlsx"),
    ],
)
def test_bad_input_is_one_line(
    built: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    status: int,
    words: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert exit_code(["findings", str(built), *argv]) == status
    assert words in one_line(capsys.readouterr().err)


def test_a_missing_study_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code(["findings", str(tmp_path / "none.codecurve")]) == 1
    assert "no such study file" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("command", ["findings", "export"])
def test_an_output_never_replaces_the_file_the_study_was_made_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    responses = tmp_path / "answers.csv"
    responses.write_text("id,text\nr1,Too much work.\nr2,Pay is low.\n", encoding="utf-8")
    codebook = tmp_path / "codebook.yaml"
    codebook.write_text("name: W\ncodes:\n  - name: Workload\n", encoding="utf-8")
    study = tmp_path / "s.codecurve"
    assert (
        main(["new", str(study), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    )
    before = responses.read_bytes()
    capsys.readouterr()
    assert main([command, str(study), "-o", str(responses)]) == 1
    err = capsys.readouterr().err
    assert "refusing to overwrite the study's responses file" in err
    assert responses.read_bytes() == before


def test_the_table_says_which_interval(built: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["findings", str(built)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "interval" in text
    assert "a score interval (" in text or "the normal interval of PPI++ (" in text
