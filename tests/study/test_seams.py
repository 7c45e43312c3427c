"""The study package's seams: its public face, and modules that do not import in circles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from study import Study, StudyError, StudyIndex

STUDY = Path(__file__).resolve().parents[2] / "study"


def _imports(path: Path) -> set[str]:
    """Modules of ``study`` that ``path`` imports anywhere (also lazily or for types)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "study":
                found |= {f"study.{a.name}" for a in node.names}
            elif node.module.startswith("study."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("study.")}
    return found


def test_study_modules_do_not_import_each_other_in_circles() -> None:
    modules = {f"study.{p.stem}": p for p in STUDY.glob("*.py") if p.stem != "__init__"}
    graph = {name: _imports(path) & set(modules) - {name} for name, path in modules.items()}
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for other in sorted(graph[name]):
            if state.get(other) == 1:
                pytest.fail("import cycle: " + " -> ".join([*trail, name, other]))
            if other not in state:
                visit(other, [*trail, name])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])


def test_no_study_module_reaches_into_another_objects_private_names() -> None:
    offenders = [
        f"{path.name}:{node.lineno} .{node.attr}"
        for path in STUDY.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]
    assert offenders == []


def test_the_index_maps_ids_and_keys_both_ways(study: Study) -> None:
    index = study.index
    assert isinstance(index, StudyIndex)
    assert index.response_ids() == ["r1", "r2", "r3", "r10"] == study.response_ids()
    rid = index.response_key("r10")
    assert index.response_id(rid) == "r10"
    assert index.response_ids_by_key()[rid] == "r10"
    cid = index.code_key("Pay")  # by name, case-insensitively, as by id
    assert index.code_at(cid).id == "pay" == study.code("pay").id
    assert [c.id for c in index.codable_codes()] == ["workload", "pay", "team"]
    assert len(index.codable_keys) == 3
    assert index.response_count == 4
    with pytest.raises(StudyError, match="no response with id 'r99'"):
        index.response_key("r99")
    with pytest.raises(StudyError, match="no code 'nope'"):
        index.code_key("nope")
    with pytest.raises(StudyError, match="only groups codes"):
        index.code_key("pressures")


def test_a_snapshot_sees_one_state_and_nests(study: Study) -> None:
    with study.snapshot() as conn:
        before = conn.execute("SELECT COUNT(*) FROM annotations").fetchone()[0]
        with study.snapshot() as inner:
            assert inner is conn
        assert conn.in_transaction
    assert not conn.in_transaction
    study.decisions.record("r1", "pay", 3, coder="ann")
    with study.snapshot() as conn:
        assert conn.execute("SELECT COUNT(*) FROM annotations").fetchone()[0] == before + 1
