"""The study commands from the command line: new, import-codes, export.

Bad input is one clear line on stderr, a non-zero exit, and the study as it was.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from study import Study
from tui.cli import main

ROOT = Path(__file__).resolve().parents[2]
CODECURVE = ROOT / ".venv" / "bin" / "codecurve"

CODEBOOK = """\
name: Working life
scale: 1-5
codes:
  - name: Pressures
    codable: false
    codes:
      - name: Workload
        definition: Too much work.
  - name: Pay
    definition: Money matters.
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    responses = tmp_path / "answers.csv"
    responses.write_text(
        "respondent,answer,age\nr1,Too many hours.,31\nr2,The pay is fine.,45\nr3,=1+1 ok,22\n",
        encoding="utf-8",
    )
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    return {"responses": responses, "codebook": codebook, "study": tmp_path / "s.codecurve"}


def new(files: dict[str, Path], *extra: str) -> int:
    return main(
        [
            "new",
            str(files["study"]),
            "--responses",
            str(files["responses"]),
            "--codebook",
            str(files["codebook"]),
            *extra,
        ]
    )


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("codecurve: error: "), err
    assert "Traceback" not in err
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name or p.name.endswith(".lock"))


def test_new_creates_a_study(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert new(files, "--scale", "binary") == 0
    err = capsys.readouterr().err
    assert "created" in err
    assert "3 responses x 2 codes" in err
    with Study.open(files["study"]) as study:
        assert study.response_ids() == ["r1", "r2", "r3"]
        assert study.codebook.scale.name == "binary"
        assert study.response("r1").attrs == {"age": "31"}
    assert leftovers(files["study"].parent) == []


def test_new_refuses_an_existing_study(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert new(files) == 0
    before = digest(files["study"])
    capsys.readouterr()
    assert new(files) == 1
    assert "already exists" in one_error_line(capsys.readouterr().err)
    assert digest(files["study"]) == before
    assert new(files, "--force") == 0


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        (lambda f: f["responses"].rename(f["responses"].with_suffix(".doc")), "no such file"),
        (lambda f: f["responses"].write_text("id;text\n"), "no responses"),
        (
            lambda f: f["responses"].write_bytes("id,text\n1,caf\xe9\n".encode("cp1252")),
            "--encoding",
        ),
        (lambda f: f["responses"].write_text("id,text\n1,a\n1,b\n"), "duplicate ids"),
        (
            lambda f: f["codebook"].write_text(
                "name: x\ncodes:\n  - name: Pay\n  - name: pay\n", encoding="utf-8"
            ),
            "used twice",
        ),
        (
            lambda f: f["codebook"].write_text(
                "name: x\ncodes:\n  - {name: A, parent: B}\n  - {name: B, parent: A}\n",
                encoding="utf-8",
            ),
            "cycle",
        ),
        (lambda f: f["codebook"].write_text("name: x\ncodes: [\n", encoding="utf-8"), "YAML"),
    ],
)
def test_new_with_bad_input_leaves_nothing(
    files: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    setup: Callable[[dict[str, Path]], object],
    expected: str,
) -> None:
    setup(files)
    assert new(files) == 1
    assert expected in one_error_line(capsys.readouterr().err)
    assert not files["study"].exists()
    assert leftovers(files["study"].parent) == []


def test_new_with_missing_columns(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert new(files, "--text-column", "answr") == 1
    line = one_error_line(capsys.readouterr().err)
    assert "no text column 'answr'" in line
    assert "did you mean 'answer'" in line
    assert not files["study"].exists()
    assert new(files, "--id-column", "nope") == 1
    assert "no id column 'nope'" in one_error_line(capsys.readouterr().err)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.binary(max_size=300), suffix=st.sampled_from([".csv", ".jsonl", ".xlsx", ".parquet"])
)
def test_new_with_arbitrary_bytes_never_half_writes(
    tmp_path: Path, data: bytes, suffix: str
) -> None:
    folder = tmp_path / f"run-{hashlib.sha256(data).hexdigest()[:8]}{suffix[1:]}"
    folder.mkdir(exist_ok=True)
    responses = folder / f"r{suffix}"
    responses.write_bytes(data)
    codebook = folder / "codes.yaml"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    study = folder / "s.codecurve"
    if study.exists():
        study.unlink()
    rc = main(["new", str(study), "--responses", str(responses), "--codebook", str(codebook)])
    assert rc in (0, 1)
    if rc == 1:
        assert not study.exists()
    else:
        with Study.open(study) as opened:
            assert opened.check() == []
    assert leftovers(folder) == []


def test_import_codes_and_export(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert new(files) == 0
    codes = tmp_path / "coded.csv"
    codes.write_text("respondent,Pay,Workload\nr1,4,5\nr2,2,\n", encoding="utf-8")
    rc = main(["import-codes", str(files["study"]), str(codes), "--coder", "ann"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "imported 3 decisions on 2 responses by 'ann'" in out
    wide = tmp_path / "wide.xlsx"
    assert main(["export", str(files["study"]), "-o", str(wide), "--layout", "wide"]) == 0
    frame = pd.read_excel(wide, sheet_name="data")
    assert frame["Pay"].fillna(-1).tolist() == [4, 2, -1]  # the 1-5 values, not 0/1
    assert frame["Pay (applies)"].fillna(-1).tolist() == [1, 0, -1]
    assert frame["text"].tolist()[2] == "=1+1 ok"  # typed text in XLSX: exactly as it is
    with pd.ExcelFile(wide) as book:
        assert "provenance" in book.sheet_names
    long = tmp_path / "long.jsonl"
    assert main(["export", str(files["study"]), "-o", str(long), "--coder", "ann"]) == 0
    assert len(pd.read_json(long, lines=True)) == 6


def test_import_codes_bad_input_leaves_the_study_unchanged(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert new(files) == 0
    cases = {
        "unknown.csv": ("respondent,codes\nr1,Pay;Bonus\n", "unknown code name"),
        "ghost.csv": ("respondent,Pay\nr1,3\nghost,2\n", "not in the study"),
        "value.csv": ("respondent,Pay\nr1,3\nr2,9\n", "not a value of scale"),
        "cols.csv": ("who,what\nr1,3\n", "no response id column"),
        "codes.doc": ("x", "unknown file format"),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        capsys.readouterr()
        assert main(["import-codes", str(files["study"]), str(path), "--coder", "ann"]) == 1
        assert expected in one_error_line(capsys.readouterr().err), name
    with Study.open(files["study"]) as study:
        assert study.decisions.count() == 0
        assert [e.kind for e in study.decisions.events()] == ["create"]


def test_the_same_coder_twice_gets_a_clear_message(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert new(files) == 0
    codes = tmp_path / "c.csv"
    codes.write_text("respondent,Pay\nr1,3\n", encoding="utf-8")
    with Study.open(files["study"], coder="ann"):
        capsys.readouterr()
        assert main(["import-codes", str(files["study"]), str(codes), "--coder", "ann"]) == 1
        line = one_error_line(capsys.readouterr().err)
        assert "coder 'ann' already has this study open (pid" in line
        # another coder imports at the same time, and read-only commands work
        assert main(["import-codes", str(files["study"]), str(codes), "--coder", "ben"]) == 0
        assert main(["export", str(files["study"]), "-o", str(tmp_path / "x.csv")]) == 0
    capsys.readouterr()
    for coder in ("", "ann\x1b[31m", "consensus"):
        assert main(["import-codes", str(files["study"]), str(codes), "--coder", coder]) == 1
        line = one_error_line(capsys.readouterr().err)
        assert "coder" in line or "consensus" in line, line


def test_export_usage_errors(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert new(files) == 0
    capsys.readouterr()
    assert main(["export", str(files["study"])]) == 2
    assert "nothing to write" in one_error_line(capsys.readouterr().err)
    assert main(["export", str(files["study"]), "-o", "out.txt"]) == 1
    assert "cannot tell the format" in one_error_line(capsys.readouterr().err)
    assert main(["export", "missing.codecurve", "-o", "x.csv"]) == 1
    assert "no such study" in one_error_line(capsys.readouterr().err)


@pytest.mark.skipif(not CODECURVE.exists(), reason="the console script is not installed")
def test_real_subprocess(files: dict[str, Path], tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    files["responses"].write_bytes("id,text\n1,caf\xe9\n".encode("cp1252"))
    run = [
        str(CODECURVE),
        "new",
        str(files["study"]),
        "--responses",
        str(files["responses"]),
        "--codebook",
        str(files["codebook"]),
    ]
    bad = subprocess.run(run, capture_output=True, text=True, env=env, check=False)
    assert bad.returncode == 1
    line = one_error_line(bad.stderr)
    assert "not UTF-8" in line
    assert "--encoding cp1252" in line
    assert not files["study"].exists()
    good = subprocess.run(
        [*run, "--encoding", "cp1252"], capture_output=True, text=True, env=env, check=False
    )
    assert good.returncode == 0, good.stderr
    out = tmp_path / "wide.csv"
    exported = subprocess.run(
        [str(CODECURVE), "export", str(files["study"]), "-o", str(out), "--layout", "wide"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert exported.returncode == 0, exported.stderr
    assert "café" in out.read_text(encoding="utf-8-sig")
    assert sys.executable  # the test ran in the project's interpreter


def test_score_a_study_and_resume(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    study = str(files["study"])
    rc = main(
        [
            "score",
            study,
            "--responses",
            str(files["responses"]),
            "--codebook",
            str(files["codebook"]),
            "--model",
            "fake",
            "--batch-size",
            "2",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "stored 6 new scores; 6 of 6 pairs are scored" in err
    assert main(["score", study, "--model", "fake"]) == 0
    assert "stored 0 new scores" in capsys.readouterr().err
    with Study.open(files["study"]) as opened:
        config_id = opened.scores.active_config_id()
        assert config_id is not None
        assert opened.scores.scored_count(config_id) == 6
        assert opened.scores.config_row(config_id).model.backend == "fake"
    assert main(["score", study, "--model", "fake", "--scale", "binary"]) == 2
    assert "scale is fixed" in one_error_line(capsys.readouterr().err)
    assert main(["score", study, "--model", "fake", "-o", str(tmp_path / "x.csv")]) == 2
    assert "codecurve export" in one_error_line(capsys.readouterr().err)
    out = tmp_path / "long.parquet"
    assert main(["export", study, "-o", str(out)]) == 0
    assert pd.read_parquet(out)["scored"].all()


def test_new_says_which_id_and_text_columns_it_took(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses = tmp_path / "answers.csv"
    pd.DataFrame(
        {
            "respondent": ["a1", "a2"],
            "site": ["North", "South"],
            "comment": ["The nurses were kind.", "Long wait."],
        }
    ).to_csv(responses, index=False)
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    study = tmp_path / "s.codecurve"
    assert (
        main(["new", str(study), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    )
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if line.startswith("columns:"))
    assert "id 'respondent' (detected" in line
    assert "text 'comment' (detected" in line
    assert "--text-column to choose" in line
    assert "kept with each response: site" in line
    rc = main(
        [
            "new",
            str(study),
            "--force",
            "--responses",
            str(responses),
            "--codebook",
            str(codebook),
            "--text-column",
            "site",
        ]
    )
    assert rc == 0
    assert "text 'site' (as given)" in capsys.readouterr().err
