"""The dependency rules of DESIGN.md, checked in fresh interpreters.

* ``screening`` and ``codebooks`` import nothing else of the project, and no torch.
* Nothing but ``tui`` imports textual.
* ``import scoring`` alone does not import torch (backends import it lazily).
* The command line's ``--help`` starts without torch or textual.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("codebooks", "scoring", "screening", "study", "tui")
HEAVY = ("torch", "transformers", "textual")


def loaded_after(statement: str) -> set[str]:
    """Top-level module names present in ``sys.modules`` after running ``statement``."""
    code = (
        f"import sys, json\n{statement}\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("package", ["codebooks", "screening"])
def test_leaf_packages_import_nothing_of_the_project(package: str) -> None:
    loaded = loaded_after(f"import {package}")
    others = set(PACKAGES) - {package}
    assert not loaded & others, f"{package} pulled in {sorted(loaded & others)}"
    assert not loaded & set(HEAVY), f"{package} pulled in {sorted(loaded & set(HEAVY))}"


@pytest.mark.parametrize("package", ["codebooks", "scoring", "screening", "study"])
def test_headless_packages_never_load_textual_or_torch(package: str) -> None:
    loaded = loaded_after(f"import {package}")
    assert "textual" not in loaded
    assert "torch" not in loaded, f"import {package} loaded torch"
    assert "transformers" not in loaded


def test_cli_help_is_light() -> None:
    loaded = loaded_after(
        "import contextlib, io\nfrom tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main(['--help'])\n    except SystemExit:\n        pass"
    )
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def _imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


ALLOWED = {
    "codebooks": set(),
    "screening": set(),
    "scoring": {"codebooks"},
    "study": {"codebooks", "scoring", "screening"},
    "tui": {"codebooks", "scoring", "screening", "study"},
}


@pytest.mark.parametrize("package", PACKAGES)
def test_dependencies_point_one_way(package: str) -> None:
    """Static check over every module, including ones imported lazily inside functions."""
    for path in sorted((ROOT / package).rglob("*.py")):
        imported = _imports_of(path)
        project = imported & set(PACKAGES) - {package}
        assert project <= ALLOWED[package], f"{path.relative_to(ROOT)} imports {sorted(project)}"
        if package != "tui":
            assert "textual" not in imported, f"{path.relative_to(ROOT)} imports textual"
        if package in ("codebooks", "screening", "study", "tui"):
            assert "torch" not in imported, f"{path.relative_to(ROOT)} imports torch"


@pytest.mark.parametrize(
    "statement",
    [
        "import contextlib, io\nfrom tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main(['report', '--help'])\n    except SystemExit:\n        pass",
        "import tui.app",
        "import study.report._files, study.report._data, study.report._content",
    ],
)
def test_matplotlib_waits_for_the_first_figure(statement: str) -> None:
    """The report's figures are drawn with matplotlib, imported only when drawing: the
    command line and the app start without it."""
    assert "matplotlib" not in loaded_after(statement)


def test_only_the_drawing_module_imports_matplotlib() -> None:
    users = [
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "matplotlib" in _imports_of(path)
    ]
    assert users == ["study/report/_draw.py"]


def test_the_drawing_processes_import_no_analysis() -> None:
    """What the processes that draw figures import (their preload, then what unpickling
    a figure and its drawing function needs) leaves out pandas and scipy: the report's
    analyses need them, the figures do not, and the processes start beside the analyses."""
    from study.report._parallel import PRELOAD

    loaded = loaded_after(
        f"import importlib\nfor name in {list(PRELOAD)!r}:\n    importlib.import_module(name)\n"
    )
    assert not loaded & {"pandas", "scipy"}, sorted(loaded & {"pandas", "scipy"})
    from study.report._draw import save_in, svg_text
    from study.report._figure import Figure

    for needed in (Figure, svg_text, save_in):
        module = needed.__module__
        assert not loaded_after(f"import {module}") & {"pandas", "scipy"}, module


def test_screening_names_are_their_modules_objects() -> None:
    """Every public name of the lazy ``screening`` package is the object its module
    defines, also once every module is loaded (a submodule of the same name would win)."""
    import importlib

    import screening

    for path in (ROOT / "screening").glob("*.py"):
        importlib.import_module(f"screening.{path.stem}")
    lazy = screening.__dict__["_LAZY"]
    assert sorted(lazy) == sorted(screening.__all__)
    for name, module in lazy.items():
        assert getattr(screening, name) is getattr(importlib.import_module(module), name), name


def test_scoring_a_file_loads_no_statistics() -> None:
    """``codecurve score`` writes a CSV: scipy (through the screening package), pandas
    and matplotlib have no part in it, and cost seconds of start-up on every job."""
    loaded = loaded_after(
        "from tui.cli import build_parser\n"
        "from tui.commands import score\n"
        "import study.exchange._score_rows, study.store, scoring.engine\n"
        "build_parser()"
    )
    heavy = {"scipy", "matplotlib", "pandas"}
    assert not loaded & heavy, sorted(loaded & heavy)
