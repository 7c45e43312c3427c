"""codecurve's own record in a ``.qdpx`` (``codecurve.json``), changed by hand or by a
hostile program: ignored as invalid JSON is, never an "unexpected" failure, and never a
source of delegated decisions without a guarantee."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from study.refi import create_from_project, export_project
from study.store import Study
from tests.factories import build_study


@pytest.fixture
def project(tmp_path: Path) -> Path:
    study = build_study(tmp_path / "s.codecurve", n=6)
    try:
        ids = study.response_ids()
        items = []
        for i, r in enumerate(ids):
            for j, code in enumerate(study.codebook.codable):
                values = study.codebook.scale_for(code).values
                items.append((r, code.id, values[(i + j) % len(values)]))
        study.decisions.import_decisions(items, coder="ann")
        return export_project(study, tmp_path / "p.qdpx", all_coders=True)
    finally:
        study.close()


def rewrite(path: Path, change: Callable[[dict[str, Any]], Any]) -> Path:
    """The project with its ``codecurve.json`` replaced by ``change(record)`` (bytes or
    a value to dump as JSON)."""
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    name = next(n for n in entries if n.endswith("codecurve.json"))
    changed = change(json.loads(entries[name]))
    entries[name] = changed if isinstance(changed, bytes) else json.dumps(changed).encode()
    out = path.with_name("changed.qdpx")
    with zipfile.ZipFile(out, "w") as archive:
        for entry, data in entries.items():
            archive.writestr(entry, data)
    return out


def _deep(record: dict[str, Any]) -> bytes:
    return b'{"format": "codecurve-qdpx", "codes": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"


def _with(key: str, value: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda record: {**record, key: value}


def _entries(change: Callable[[list[Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    return lambda record: {**record, "decisions": [change(e) for e in record["decisions"]]}


HOSTILE = {
    "codes-a-list": _with("codes", ["a", "b"]),
    "codes-of-numbers": _with("codes", {"g": 5}),
    "codebook-a-string": _with("codebook", "nope"),
    "codebook-of-junk": _with("codebook", {"codes": 5, "scale": {"x": []}}),
    "decisions-an-object": _with("decisions", {"a": 1}),
    "value-a-string": _entries(lambda e: [*e[:3], "3", e[4]]),
    "value-true": _entries(lambda e: [*e[:3], True, e[4]]),
    "entry-short": _entries(lambda e: e[:2]),
    "notes-a-list": _with("notes", [1, 2]),
    "nan": lambda record: json.dumps({**record, "version": float("nan")}).encode(),
    "infinity": lambda record: (
        json.dumps(record).replace('"version": 1', '"version": Infinity').encode()
    ),
    "deep": _deep,
}


@pytest.mark.parametrize("change", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_record_is_ignored_and_the_project_read_from_its_xml(
    project: Path, tmp_path: Path, change: Callable[[dict[str, Any]], Any]
) -> None:
    changed = rewrite(project, change)
    study, report = create_from_project(tmp_path / "new.codecurve", changed)
    with study:
        said = " ".join(report.messages)
        assert "not codecurve's record" in said or "codes are read from the project" in said
        assert study.response_count() == 6
        assert study.decisions.count() > 0  # the codings in the XML


def test_delegated_decisions_in_a_record_are_left_out_and_said(
    project: Path, tmp_path: Path
) -> None:
    def delegate_half(record: dict[str, Any]) -> dict[str, Any]:
        entries = record["decisions"]
        for entry in entries[::2]:
            entry[4] = "delegated"
        return {**record, "decisions": entries}

    changed = rewrite(project, delegate_half)
    with zipfile.ZipFile(changed) as archive:
        name = next(n for n in archive.namelist() if n.endswith("codecurve.json"))
        total = len(json.loads(archive.read(name))["decisions"])
    study, report = create_from_project(tmp_path / "new.codecurve", changed)
    left = (total + 1) // 2
    with study:
        assert f"{left} decisions the exporting study delegated to the model left out" in (
            " ".join(report.messages)
        )
        assert study.decisions.count() == total - left
        with study.query() as conn:
            sources = {row[0] for row in conn.execute("SELECT DISTINCT source FROM annotations")}
        assert "delegated" not in sources
    with Study.open(tmp_path / "new.codecurve", read_only=True) as again:
        assert again.delegations.guarantees() == {}
