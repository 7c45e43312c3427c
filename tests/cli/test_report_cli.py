"""``codecurve report``: every number is the JSON commands', the file stands alone, a
study that cannot fill a section says what to do, and bad output paths are refused."""

from __future__ import annotations

import errno
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import study.report._content as content
from codebooks.model import LIKERT_5
from study import Study
from study.intake.responses import ResponseTable
from study.report._data import ReportOptions, report_data
from tests.cli.test_audit_cli import exit_code, one_line
from tests.factories import synthetic_config, synthetic_scores
from tests.study.test_audit import (
    SIM_CODEBOOK,
    code_audit_blind,
    code_second_coder,
    simulated_study,
)
from tui.cli import main
from tui.text import json_text


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two codes, a blind audit coded by ana, a second coder bo on part of it."""
    path, truth = simulated_study(tmp_path_factory.mktemp("r") / "r.codecurve", n=1200, seed=11)
    with Study.open(path) as study:
        study.audit.draw(per_code=400, seed=5)
        code_audit_blind(study, truth)
        code_second_coder(study, truth, per_code=150, flip=0.15, seed=3)
    return path


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    payload: dict[str, Any] = json.loads(capsys.readouterr().out)
    return payload


def roundtrip(value: Any) -> Any:
    """A section as the CLI prints it: through the same JSON text."""
    return json.loads(json_text(value))


@pytest.fixture(scope="module")
def data(audited: Path) -> Any:
    with Study.open(audited, read_only=True) as study:
        return report_data(study, ReportOptions(coder="ana"))


def test_sections_are_the_commands_json(
    audited: Path, data: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    s = str(audited)
    screen = cli_json(capsys, "screen", s, "--coder", "ana", "--phase-b")
    plan = cli_json(capsys, "delegate", s, "--coder", "ana")
    agreement = cli_json(capsys, "agreement", s)
    assert roundtrip(data.sections["screen"]) == screen
    assert roundtrip(data.sections["delegation"]) == plan
    assert roundtrip(data.sections["agreement"]) == agreement
    assert data.missing == {}


def test_the_report_reads_each_set_of_annotated_pairs_once(
    audited: Path, data: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Study.open(audited, read_only=True) as study:
        read = study.queries.annotated_pairs
        calls: list[tuple[Any, Any]] = []

        def counted(config_id: Any, *, coder: Any = None) -> Any:
            calls.append((config_id, coder))
            return read(config_id, coder=coder)

        monkeypatch.setattr(study.queries, "annotated_pairs", counted)
        again = report_data(study, ReportOptions(coder="ana"))
    assert len(calls) == len(set(calls))
    assert roundtrip(again.to_dict()) == roundtrip(data.to_dict())


def test_each_figure_draws_the_json_numbers(
    audited: Path, data: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    s = str(audited)
    screen = cli_json(capsys, "screen", s, "--coder", "ana", "--phase-b")
    plan = cli_json(capsys, "delegate", s, "--coder", "ana")
    agreement = cli_json(capsys, "agreement", s)
    figures = {f.name: f for f in content.figures(data)}
    pay = screen["per_code"]["Pay"]
    assert pay["tier"] == "Valid"
    reliability = figures["reliability-pay"]
    assert reliability.data["bins"] == pay["phase_b"]["calibration"]
    assert sum(b["n"] for b in reliability.data["bins"]) == pay["n_items"]
    curve = figures["risk-coverage-pay"]
    assert curve.data["points"] == pay["phase_b"]["risk_coverage"]
    code = plan["codes"]["pay"]
    certified = curve.data["certified"]
    assert code["threshold"] is not None
    assert (certified["threshold"], certified["n"], certified["errors"]) == (
        code["threshold"],
        code["n"],
        code["errors"],
    )
    assert certified["upper_bound"] == code["upper_bound"]
    assert curve.data["max_error"] == plan["max_error"]
    # The certified point lies on the curve: the same audit pairs, the same errors.
    on_curve = {p["threshold"]: (p["n"], p["errors"]) for p in curve.data["points"]}
    if code["threshold"] in on_curve:
        assert on_curve[code["threshold"]] == (code["n"], code["errors"])
    forest = figures["forest-agreement"]
    rows = [agreement["pooled"], *agreement["per_code"]]
    assert forest.data["rows"] == [
        {"code": r["code"], "kappa": r["kappa"], "alpha": r["alpha"]} for r in rows
    ]
    confusion = figures["confusion-pay"].data
    assert confusion["n"] == pay["n_items"]
    agree = sum(confusion["counts"][i][i] for i in range(LIKERT_5.k))
    # On this 1-or-5 scale, exact agreement is agreement on applies.
    assert agree == pay["n_correct"]


def test_the_html_holds_the_numbers_and_nothing_from_outside(
    audited: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.html"
    assert main(["report", str(audited), "-o", str(out), "--coder", "ana"]) == 0
    assert str(out) in capsys.readouterr().out
    text = out.read_text(encoding="utf-8")
    plan = cli_json(capsys, "delegate", str(audited), "--coder", "ana")
    for code in plan["codes"].values():
        assert _escaped(code["guarantee"]) in text
    links = Links()
    links.feed(text)
    assert links.tags >= {"svg", "figure", "figcaption", "table"}
    assert "script" not in links.tags
    assert "link" not in links.tags
    assert "img" not in links.tags
    assert links.refs, "the table of contents links to the sections"
    outside = [r for r in links.refs if not r.startswith("#")]
    assert outside == []
    import re

    assert re.findall(r"url\(\s*([^#\s)][^)]*)\)", text) == []  # clip paths: url(#id) only
    assert "@import" not in text
    assert "@font-face" not in text
    assert links.figures == links.alts > 5


def _escaped(text: str) -> str:
    import html

    return html.escape(text, quote=True)


class Links(HTMLParser):
    """Every src and href (xlink:href too), every tag, the figures and their alt texts."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.tags: set[str] = set()
        self.figures = 0
        self.alts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.figures += tag == "figure"
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "srcset", "data"):
                self.refs.append(value or "")
            if tag == "svg" and name == "aria-label" and value:
                self.alts += 1


def test_figures_folder_has_svg_png_and_csv(
    audited: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "figures"
    assert main(["report", str(audited), "--figures", str(folder), "--coder", "ana"]) == 0
    names = {p.name for p in folder.iterdir()}
    for stem in ("reliability-pay", "risk-coverage-pay", "forest-agreement", "entropy-by-code"):
        assert {f"{stem}.svg", f"{stem}.png"} <= names
    assert {"agreement.csv", "delegation.csv", "vrs-pay.csv", "confusion-pay.csv"} <= names
    from PIL import Image

    with Image.open(folder / "reliability-pay.png") as image:
        dpi = image.info["dpi"]
    assert round(dpi[0]) == 300
    assert "http" not in (folder / "delegation.csv").read_text(encoding="utf-8")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# -- a study that cannot fill a section ---------------------------------------------------


def _stderr(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert exit_code(list(argv)) == 1
    return one_line(capsys.readouterr().err)


def _reported(path: Path, tmp_path: Path) -> str:
    out = tmp_path / "report.html"
    assert main(["report", str(path), "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_no_scores_says_to_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bare.codecurve"
    texts = {f"r{i}": f"text {i}" for i in range(6)}
    Study.create(path, responses=ResponseTable.from_texts(texts), codebook=SIM_CODEBOOK).close()
    text = _reported(path, tmp_path)
    said = _stderr(capsys, "screen", str(path))
    assert said.endswith(
        f"the study has no scores yet; score it first (run 'codecurve score {path}')"
    )
    with Study.open(path, read_only=True) as study:
        data = report_data(study)
    assert data.missing["screen"] in said
    assert data.missing["delegation"] in said
    assert _escaped(data.missing["screen"]) in text
    agreement = _stderr(capsys, "agreement", str(path))
    assert data.missing["agreement"].partition(" (")[0] in agreement
    assert _escaped(data.missing["agreement"]) in text
    assert text.count('class="todo"') >= 6


def test_scores_without_decisions_or_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "scored.codecurve"
    texts = {f"r{i}": f"text {i}" for i in range(20)}
    with Study.create(
        path, responses=ResponseTable.from_texts(texts), codebook=SIM_CODEBOOK
    ) as study:
        config = synthetic_config(SIM_CODEBOOK)
        study.scores.store(study.scores.ensure_config(config), synthetic_scores(study, config))
    text = _reported(path, tmp_path)
    with Study.open(path, read_only=True) as study:
        data = report_data(study)
    delegate = _stderr(capsys, "delegate", str(path))
    assert data.missing["delegation"] in delegate
    assert data.missing["audit"] == data.missing["delegation"]
    assert _escaped(data.missing["audit"]) in text
    capsys.readouterr()
    assert main(["screen", str(path)]) == 0
    screen_out = " ".join(capsys.readouterr().out.split())
    assert "screen" not in data.missing
    action = data.sections["screen"]["next_action"]
    assert action
    assert f"Next: {action}." in screen_out
    assert _escaped(action[:1].upper() + action[1:]) in text
    assert "entropy" in data.sections
    assert "curves" in data.sections


def test_the_terminal_names_the_sections_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Only the file held "Not available yet": the command said nothing was missing.
    path = tmp_path / "bare.codecurve"
    texts = {f"r{i}": f"text {i}" for i in range(6)}
    Study.create(path, responses=ResponseTable.from_texts(texts), codebook=SIM_CODEBOOK).close()
    capsys.readouterr()
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err
    with Study.open(path, read_only=True) as study:
        missing = report_data(study).missing
    assert missing
    for name, todo in missing.items():
        assert f"note: the {name} section is not in the report: {todo}" in err


def test_a_single_coder_is_told_how_to_add_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, truth = simulated_study(tmp_path / "one.codecurve", n=200, seed=2)
    with Study.open(path) as study:
        study.audit.draw(per_code=60, seed=1)
        code_audit_blind(study, truth)
    text = _reported(path, tmp_path)
    with Study.open(path, read_only=True) as study:
        data = report_data(study)
    said = _stderr(capsys, "agreement", str(path))
    # The report words the remedies, the command line gives the commands.
    message, _, remedies = data.missing["agreement"].partition(" (")
    assert message in said
    assert remedies == "import another coder's codes, or compare a coder with the model)"
    assert "codecurve import-codes" in said
    assert _escaped(data.missing["agreement"]) in text
    assert "screen" in data.sections
    assert "delegation" in data.sections


# -- bad output paths -------------------------------------------------------------------


def test_bad_outputs_are_refused_and_nothing_is_written(
    audited: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = str(audited)
    before = audited.read_bytes()
    assert "refusing to overwrite the study" in _stderr(capsys, "report", s, "-o", s)
    assert audited.read_bytes() == before
    missing = tmp_path / "nowhere" / "r.html"
    assert "does not exist" in _stderr(capsys, "report", s, "-o", str(missing))
    assert "is a folder" in _stderr(capsys, "report", s, "-o", str(tmp_path))
    a_file = tmp_path / "taken.txt"
    a_file.write_text("mine", encoding="utf-8")
    assert "is a file" in _stderr(capsys, "report", s, "--figures", str(a_file))
    assert "does not exist" in _stderr(capsys, "report", s, "--figures", str(missing))
    capsys.readouterr()
    assert exit_code(["report", s]) == 2
    assert a_file.read_text(encoding="utf-8") == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.txt"]


def test_the_responses_file_the_study_was_made_from_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "responses.csv"
    source.write_text("id,text\nr1,one\nr2,two\n", encoding="utf-8")
    path = tmp_path / "made.codecurve"
    assert (
        main(["new", str(path), "--responses", str(source), "--codebook", _codebook(tmp_path)]) == 0
    )
    said = _stderr(capsys, "report", str(path), "-o", str(source))
    assert "responses file" in said
    assert source.read_text(encoding="utf-8") == "id,text\nr1,one\nr2,two\n"


def _codebook(tmp_path: Path) -> str:
    from codebooks.writers import save_codebook

    return str(save_codebook(SIM_CODEBOOK, tmp_path / "codes.yaml"))


def test_a_full_disk_leaves_nothing_half_written(
    audited: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import study.report._draw as draw

    out = tmp_path / "report.html"
    out.write_text("the earlier report", encoding="utf-8")
    folder = tmp_path / "figures"
    real = draw.save
    calls = {"n": 0}

    def full(figure: Any, where: Path) -> list[Path]:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(figure, where)

    monkeypatch.setattr(draw, "save", full)
    said = _stderr(
        capsys, "report", str(audited), "-o", str(out), "--figures", str(folder), "--coder", "ana"
    )
    assert "No space left on device" in said
    assert out.read_text(encoding="utf-8") == "the earlier report"
    assert not folder.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_the_model_joins_the_coders_when_asked(
    audited: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Study.open(audited, read_only=True) as study:
        data = report_data(study, ReportOptions(coder="ana", with_model=True, resamples=200))
    agreement = cli_json(
        capsys, "agreement", str(audited), "--coders", "ana,bo,model", "--resamples", "200"
    )
    assert roundtrip(data.sections["agreement"]) == agreement
    forest = {f.name: f for f in content.figures(data)}["forest-agreement"]
    assert forest.data["coders"] == ["ana", "bo", "model"]


def test_several_configurations_are_compared(
    audited: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dataclasses import replace

    from scoring.curves import curve_from_logprobs
    from scoring.score import Score
    from tests.study.test_audit import SIM_CONFIG

    path = tmp_path / audited.name
    path.write_bytes(audited.read_bytes())
    other = replace(SIM_CONFIG, template_id="other-v1", template_hash="o1")
    rng = np.random.default_rng(9)
    with Study.open(path) as study:
        config_id = study.scores.ensure_config(other, activate=False)
        decided = study.queries.annotated_pairs(None)
        pairs = set(zip(decided["response_id"], decided["code_id"], strict=True))
        study.scores.store(
            config_id,
            [
                Score(
                    response_id=r,
                    code_id=c,
                    config_key=other.key(),
                    scale=LIKERT_5,
                    curve=curve_from_logprobs(np.log(rng.dirichlet(np.ones(5))), LIKERT_5.values),
                    token_ids=tuple(((i,),) for i in range(5)),
                    missing=(False,) * 5,
                    prompt="p",
                    prompt_hash="h",
                    text_hash="t",
                    code_hash="c",
                )
                for r, c in sorted(pairs)
            ],
        )
    with Study.open(path, read_only=True) as study:
        data = report_data(study, ReportOptions(coder="ana", resamples=200))
    compared = cli_json(capsys, "compare", str(path), "--coder", "ana", "--resamples", "200")
    assert roundtrip(data.sections["comparison"]) == compared
    section = next(s for s in content.sections(data) if s.name == "comparison")
    assert len(section.tables[0].rows) == len(compared["rows"])
