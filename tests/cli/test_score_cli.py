"""``codecurve score`` in file mode: outputs, and one clear line for each kind of bad input."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui.cli import main

CODEBOOK = """\
name: Test codes
question: How well does "{code}" apply to this answer?
scale: 1-5
codes:
  - name: Pay
    definition: Salary and benefits.
  - name: Team
    definition: Colleagues and teamwork.
"""

RESPONSES = """\
id,text,department
a1,The pay is too low for the work we do.,Ops
a2,My colleagues are great.,IT
=2+3,"A spreadsheet would run that id as a formula.",IT
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    responses = tmp_path / "responses.csv"
    responses.write_text(RESPONSES, encoding="utf-8")
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    return responses, codebook


def score(*args: str | Path) -> int:
    return main(["score", *map(str, args)])


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("codecurve: error:")]
    assert len(errors) == 1, err
    assert "Traceback" not in "\n".join(err)
    return errors[0]


def test_csv_output_has_a_row_per_pair_with_the_whole_curve(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses, codebook = files
    out = tmp_path / "scores.csv"
    assert (
        score("--responses", responses, "--codebook", codebook, "--model", "fake", "-o", out) == 0
    )
    with out.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["response_id"], r["code_name"]) for r in rows] == [
        ("a1", "Pay"),
        ("a1", "Team"),
        ("a2", "Pay"),
        ("a2", "Team"),
        ("'=2+3", "Pay"),
        ("'=2+3", "Team"),
    ]
    row = rows[0]
    probs = [float(row[f"prob_{i}"]) for i in range(1, 6)]
    assert sum(probs) == pytest.approx(1.0)
    for column in (
        "surprisal_3",
        "on_scale_mass",
        "entropy",
        "norm_entropy",
        "pick",
        "pick_label",
        "expected",
        "spread",
        "confidence",
        "off_scale",
        "prompt_hash",
        "template_id",
        "context",
        "model_name",
        "model_revision",
        "model_dtype",
        "model_device",
        "model_backend",
    ):
        assert row[column] != "", column
    token_ids = json.loads(row["option_token_ids"])
    assert len(token_ids) == 5
    assert row["template_id"] == "base-v1"
    assert row["model_name"] == "fake"
    assert "prompt" not in row
    assert not list(tmp_path.glob(".*tmp*"))  # the temporary file was renamed away
    assert "wrote 6 rows" in capsys.readouterr().err


def test_jsonl_rows_carry_the_exact_prompt(files: tuple[Path, Path], tmp_path: Path) -> None:
    responses, codebook = files
    out = tmp_path / "scores.jsonl"
    args: list[str | Path] = [
        "--responses",
        responses,
        "--codebook",
        codebook,
        "--model",
        "fake",
        "-o",
        out,
    ]
    assert score(*args, "--scale", "binary", "--context", "none", "--strict") == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 6
    first = rows[0]
    assert first["prompt"].endswith("The pay is too low for the work we do.\nAnswer:")
    assert "Definition" not in first["prompt"]
    assert first["scale"] == "binary"
    assert first["pick_label"] in ("No", "Yes")
    assert first["option_token_ids"] == [[list(v) for v in o] for o in first["option_token_ids"]]
    assert len(first["option_token_ids"][0]) == 1  # strict: one variant per option
    assert first["strict"] is True
    assert first["context"] == "none"


def test_formula_like_cells_are_neutralised(files: tuple[Path, Path], tmp_path: Path) -> None:
    responses, codebook = files
    out = tmp_path / "scores.csv"
    assert (
        score("--responses", responses, "--codebook", codebook, "--model", "fake", "-o", out) == 0
    )
    text = out.read_text(encoding="utf-8")
    assert "\n'=2+3," in text
    assert "\n=2+3," not in text


def test_without_output_a_table_with_sparklines_is_printed(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    responses, codebook = files
    assert score("--responses", responses, "--codebook", codebook, "--model", "fake") == 0
    out = capsys.readouterr().out
    assert "Pay" in out
    assert "Team" in out
    assert any(ch in out for ch in "▁▂▃▄▅▆▇█")


def test_missing_file(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, codebook = files
    missing = tmp_path / "nope.csv"
    assert score("--responses", missing, "--codebook", codebook, "--model", "fake") == 1
    line = one_error_line(capsys)
    assert str(missing) in line
    assert "no such responses file" in line


def test_no_text_column(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    responses, codebook = files
    args: list[str | Path] = ["--responses", responses, "--codebook", codebook, "--model", "fake"]
    assert score(*args, "--text-column", "answer") == 1
    line = one_error_line(capsys)
    assert "answer" in line
    assert str(responses) in line


def test_empty_file(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, codebook = files
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    assert score("--responses", empty, "--codebook", codebook, "--model", "fake") == 1
    assert str(empty) in one_error_line(capsys)


def test_malformed_yaml(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses, _ = files
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncodes: [\n  - name: a\n", encoding="utf-8")
    assert score("--responses", responses, "--codebook", bad, "--model", "fake") == 1
    line = one_error_line(capsys)
    assert str(bad) in line
    assert "YAML" in line


def test_unknown_scale(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    responses, codebook = files
    args: list[str | Path] = ["--responses", responses, "--codebook", codebook, "--model", "fake"]
    assert score(*args, "--scale", "1-7") == 2  # a bad option value: a usage error
    line = one_error_line(capsys)
    assert "unknown scale '1-7'" in line
    assert "1-5" in line


def test_model_path_that_does_not_exist(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses, codebook = files
    model = tmp_path / "models" / "mine"
    assert score("--responses", responses, "--codebook", codebook, "--model", model) == 1
    line = one_error_line(capsys)
    assert f"model path {model} does not exist" in line


def test_bad_output_suffix_fails_before_the_model_loads(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses, codebook = files
    out = tmp_path / "scores.xlsx"
    args: list[str | Path] = [
        "--responses",
        responses,
        "--codebook",
        codebook,
        "--model",
        "/no/such/model",
    ]
    assert score(*args, "-o", out) == 1
    assert ".csv or .jsonl" in one_error_line(capsys)


def test_missing_arguments_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert score("--model", "fake") == 2
    assert "--responses" in one_error_line(capsys)


def test_subprocess_reports_one_line_and_a_nonzero_exit(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    _, codebook = files
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("CODECURVE_DEBUG", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui",
            "score",
            "--responses",
            str(tmp_path / "x.csv"),
            "--codebook",
            str(codebook),
            "--model",
            "fake",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0
    assert proc.stderr.startswith("codecurve: error:")
    assert "x.csv" in proc.stderr
