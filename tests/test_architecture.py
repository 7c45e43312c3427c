"""The composition rules of docs/architecture.md, checked on the source.

* No class in ``study`` or ``tui`` inherits from more than one project class: work is
  composed (a collaborator held by the class), never mixed in.
* No ``raise NotImplementedError`` stands in for a method some host class provides: a
  method that raises it belongs to an abstract base whose every subclass defines it.
* The event log has one writer: one module of the packages holds ``INSERT INTO events``.
* No module imports another module's underscore names.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("codebooks", "scoring", "screening", "study", "tui")


def sources(*packages: str) -> list[Path]:
    return sorted(path for package in packages for path in (ROOT / package).rglob("*.py"))


def project_classes() -> set[str]:
    """Names of the classes defined anywhere in the packages."""
    names: set[str] = set()
    for path in sources(*PACKAGES):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names.update(node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef))
    return names


def base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):
        return base_name(node.value)
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


#: Library bases that a project class may stand beside (``Protocol``, ``Generic``).
NOT_PROJECT = {"Protocol", "Generic", "NamedTuple", "Enum", "StrEnum", "Exception"}


@pytest.mark.parametrize("package", ["study", "tui"])
def test_no_class_mixes_in_more_than_one_project_class(package: str) -> None:
    ours = project_classes() - NOT_PROJECT
    mixed = []
    for path in sources(package):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            project_bases = [name for b in node.bases if (name := base_name(b)) in ours]
            if len(project_bases) > 1:
                mixed.append(f"{path.relative_to(ROOT)}: {node.name}({', '.join(project_bases)})")
    assert not mixed, "classes mixing project classes:\n" + "\n".join(mixed)


def is_stub(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a method's body is only (a docstring and) ``raise NotImplementedError``."""
    body = [
        s
        for s in function.body
        if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    return (
        len(body) == 1
        and isinstance(body[0], ast.Raise)
        and "NotImplementedError" in ast.unparse(body[0].exc or ast.Constant(None))
    )


def test_no_host_stubs() -> None:
    # A method that raises NotImplementedError is allowed only as an abstract base's:
    # the class has subclasses in the packages and each of them defines the method. A
    # stub standing in for what a host class provides has none.
    classes: dict[str, tuple[str, list[str], set[str], set[str]]] = {}
    for path in sources(*PACKAGES):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            methods = {
                f.name for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            }
            stubs = {
                f.name
                for f in node.body
                if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                and path.parts[len(ROOT.parts)] in ("study", "tui")
                and is_stub(f)
            }
            bases = [base_name(b) for b in node.bases]
            classes[node.name] = (str(path.relative_to(ROOT)), bases, methods, stubs)
    bad = []
    for name, (where, _, _, stubs) in classes.items():
        if not stubs:
            continue
        subclasses = [c for c, (_, bases, _, _) in classes.items() if name in bases]
        if not subclasses:
            bad.append(f"{where}: {name} has stubs {sorted(stubs)} and no subclass")
        for sub in subclasses:
            missing = stubs - classes[sub][2]
            if missing:
                bad.append(f"{classes[sub][0]}: {sub} does not define {sorted(missing)}")
    assert not bad, bad


def test_the_event_log_has_one_writer() -> None:
    writers = {
        str(path.relative_to(ROOT))
        for path in sources(*PACKAGES)
        if re.search(r"INSERT\s+INTO\s+events\b", path.read_text(encoding="utf-8"), re.I)
    }
    assert writers == {"study/file/events.py"}


def test_no_module_imports_another_modules_private_names() -> None:
    found = []
    for path in sources(*PACKAGES):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                top = node.module.split(".")[0]
                if top not in PACKAGES:
                    continue
                private = [
                    a.name for a in node.names if a.name.startswith("_") and a.name != "__version__"
                ]
                if private:
                    found.append(f"{path.relative_to(ROOT)}: from {node.module} import {private}")
    assert not found, found
