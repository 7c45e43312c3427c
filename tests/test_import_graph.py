"""The modules of the five packages import each other without cycles.

A cycle between two modules (the app and its screens, a store and its queries) means
neither can be read, tested or changed alone. Every import counts, module-level or
inside a function, except those under ``if TYPE_CHECKING:``, which never run.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("codebooks", "scoring", "screening", "study", "tui")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    return {
        module_name(path, root): path
        for package in packages
        for path in (root / package).rglob("*.py")
    }


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(name: str, level: int, module: str, is_package: bool) -> str:
    if level == 0:
        return name
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The project modules that ``module`` imports (a package's ``__init__`` counts too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def target(name: str) -> str | None:
        # The deepest known module named by a dotted name.
        parts = name.split(".")
        while parts:
            candidate = ".".join(parts)
            if candidate in known:
                return candidate
            parts.pop()
        return None

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (hit := target(alias.name)) is not None:
                    found.add(hit)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node.module or "", node.level, module, is_package)
            for alias in node.names:
                hit = target(f"{base}.{alias.name}") or target(base)
                if hit is not None:
                    found.add(hit)
        for inner in ast.iter_child_nodes(node):
            visit(inner)

    visit(tree)
    found.discard(module)
    # A package importing its own submodules (re-exports in __init__) is not a cycle.
    return {m for m in found if not (is_package and m.startswith(module + "."))}


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Each module's project imports. Importing a submodule runs its package's
    ``__init__`` first, but that edge is Python's, not the code's: it is left out, or
    every re-exporting package would look cyclic."""
    modules = project_modules(root, packages)
    known = set(modules)
    return {name: imports_of(name, path, known) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


def test_the_graph_sees_the_project() -> None:
    graph = import_graph()
    assert len(graph) > 50
    assert "tui.cli" in graph
    assert any(dep.startswith("codebooks.") for dep in graph["scoring.engine"])


def test_the_package_modules_import_each_other_without_cycles() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_a_cycle_through_a_lazy_import_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg.a import f\n")
    (pkg / "a.py").write_text("def f():\n    from pkg import b\n    return b\n")
    (pkg / "b.py").write_text("from .a import f\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n"
    )
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.c"] == set()
    assert graph["pkg"] == set()
    assert sorted(find_cycle(graph) or []) == ["pkg.a", "pkg.a", "pkg.b"]
