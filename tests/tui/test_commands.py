"""``codecurve review`` and ``codecurve demo``: arguments, study creation, app options."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codebooks.samples import sample_paths
from study.store import Study
from tui import launch
from tui.cli import main


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, argparse.Namespace, bool]]:
    """Record what the commands would open instead of running the app."""
    calls: list[tuple[Path, argparse.Namespace, bool]] = []

    def fake_run_app(
        path: Path, args: argparse.Namespace, *, keys: dict[str, str], score_on_open: bool
    ) -> int:
        calls.append((path, args, score_on_open))
        return 0

    monkeypatch.setattr(launch, "run_app", fake_run_app)
    monkeypatch.setattr("tui.commands.review.run_app", fake_run_app)
    monkeypatch.setattr("tui.commands.demo.run_app", fake_run_app)
    # Under pytest stdin is not a terminal; the check itself is tested in tests/cli.
    monkeypatch.setattr("tui.commands.review.require_terminal", lambda: None)
    monkeypatch.setattr("tui.commands.demo.require_terminal", lambda: None)
    return calls


def test_review_needs_a_study_or_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review"]) == 2
    assert "give a study" in capsys.readouterr().err
    assert main(["review", "--responses", "x.csv"]) == 2
    assert "go together" in capsys.readouterr().err


def test_review_creates_the_study_then_opens_it_scoring(
    tmp_path: Path, opened: list[tuple[Path, argparse.Namespace, bool]]
) -> None:
    responses, codebook = sample_paths("work_survey")
    target = tmp_path / "new.codecurve"
    argv = ["review", "--responses", str(responses), "--codebook", str(codebook), "-s", str(target)]
    assert main([*argv, "--coder", "ann", "--no-model"]) == 0
    path, args, score = opened[0]
    assert path == target
    assert score is True
    assert args.coder == "ann"
    assert args.no_model
    with Study.open(target, read_only=True) as study:
        assert study.response_count() == 36
    # A second time the study exists: one clear line, nothing replaced.
    assert main(argv) == 1


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_a_bad_batch_size_is_refused_before_anything_is_written(
    tmp_path: Path,
    opened: list[tuple[Path, argparse.Namespace, bool]],
    capsys: pytest.CaptureFixture[str],
    value: str,
) -> None:
    responses, codebook = sample_paths("work_survey")
    target = tmp_path / "new.codecurve"
    argv = ["review", "--responses", str(responses), "--codebook", str(codebook), "-s", str(target)]
    with pytest.raises(SystemExit) as info:
        main([*argv, "--batch-size", value])
    assert info.value.code == 2
    assert "--batch-size" in capsys.readouterr().err
    assert not target.exists()
    assert opened == []


def test_review_of_an_existing_study_does_not_score_unless_asked(
    tmp_path: Path, opened: list[tuple[Path, argparse.Namespace, bool]]
) -> None:
    responses, codebook = sample_paths("work_survey")
    target = tmp_path / "s.codecurve"
    launch.create_study(target, responses=responses, codebook=codebook)
    assert main(["review", str(target)]) == 0
    assert main(["review", str(target), "--score", "--model", "embedded"]) == 0
    assert [score for _, _, score in opened] == [False, True]
    assert opened[1][1].model == "embedded"


def test_demo_keeps_its_study_in_the_data_folder(
    tmp_path: Path, opened: list[tuple[Path, argparse.Namespace, bool]]
) -> None:
    assert main(["demo", "--no-model"]) == 0
    path, _, score = opened[0]
    assert path == tmp_path / "data" / "demo.codecurve"
    assert path.exists()
    assert score is True  # first open: score it
    assert main(["demo"]) == 0
    assert opened[1][2] is True  # still unscored: score again
    assert main(["demo", "--reset", "causal"]) == 0
    assert opened[2][0].name == "demo-causal.codecurve"


BAD_KEYS = {
    "unknown action": ('[keys]\n"review.nope" = "m"\n', "unknown action 'review.nope'"),
    "clash": ('[keys]\n"review.note" = "m"\n', "'m' is bound to both review.note and"),
    "bad syntax": ('[keys\n"review.note" = "m"\n', "not valid TOML"),
}


@pytest.mark.parametrize("case", sorted(BAD_KEYS))
def test_a_bad_keys_file_is_refused_before_anything_is_written(tmp_path: Path, case: str) -> None:
    """The real command line, no terminal asked for: one line naming the file, exit 1,
    no traceback, and no study created."""
    text, message = BAD_KEYS[case]
    config = tmp_path / "config"
    config.mkdir()
    (config / "keys.toml").write_text(text, encoding="utf-8")
    responses, codebook = sample_paths("work_survey")
    target = tmp_path / "new.codecurve"
    env = {
        **os.environ,
        "CODECURVE_CONFIG_DIR": str(config),
        "CODECURVE_DATA_DIR": str(tmp_path / "data"),
        "PYTHONPATH": str(Path(__file__).parents[2]),
    }
    env.pop("CODECURVE_DEBUG", None)
    argv = ["review", "--responses", str(responses), "--codebook", str(codebook), "-s", str(target)]
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", *argv, "--no-model"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("codecurve: error: ")
    assert str(config / "keys.toml") in lines[0]
    assert message in lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    assert not target.exists()
