"""The context levels are defined once (study.rows) and the parsers read them lazily."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from study.rows import CONTEXTS
from tui import launch
from tui.cli import main
from tui.commands import score, types

ROOT = Path(__file__).resolve().parents[2]


def test_the_commands_use_the_study_vocabulary() -> None:
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    score.register(subparsers)
    app = argparse.ArgumentParser()
    launch.add_app_options(app)
    for command in (subparsers.choices["score"], app):
        (context,) = [a for a in command._actions if a.dest == "context"]
        assert context.choices is types.CONTEXTS
    assert tuple(types.CONTEXTS) == CONTEXTS
    assert "full" in types.CONTEXTS
    assert "bogus" not in types.CONTEXTS


def test_building_the_parsers_does_not_import_the_study_package() -> None:
    code = (
        "import contextlib, io, json, sys\nfrom tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
        "print(json.dumps('study' in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) is False


def test_help_lists_the_levels_and_a_bad_one_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    assert "none, definition, full" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit) as exc:
        main(["score", "x.codecurve", "--context", "bogus"])
    assert exc.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
