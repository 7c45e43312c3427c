"""``codecurve codebook``, ``export --codebook --version`` and ``score --activate``."""

from __future__ import annotations

import hashlib
import io
import sqlite3
from pathlib import Path

import pytest
import yaml

from study import Study
from tui.cli import main

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
  - name: Team
    definition: Colleagues.
"""

REVISED = """\
name: Working life
scale: 1-5
codes:
  - name: Pressures
    codable: false
    codes:
      - name: Workload
        definition: Too many hours or tasks for the time given.
        exclusion: Not about pay.
  - name: Pay
    definition: Money matters.
  - name: Growth
    definition: Learning and promotion.
"""


def content(path: Path) -> str:
    con = sqlite3.connect(path)
    try:
        return hashlib.sha256("\n".join(con.iterdump()).encode()).hexdigest()
    finally:
        con.close()


@pytest.fixture
def study(tmp_path: Path) -> Path:
    responses = tmp_path / "answers.csv"
    responses.write_text(
        "respondent,answer\nr1,Too many hours.\nr2,The pay is fine.\nr3,Nice people.\n",
        encoding="utf-8",
    )
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    path = tmp_path / "s.codecurve"
    assert main(["new", str(path), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    with Study.open(path) as s:
        s.decisions.record("r3", "team", 4, coder="ana")
        s.decisions.record("r1", "workload", 5, coder="ana")
    return path


def test_revise_lists_and_exports_each_version(
    study: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    revised = tmp_path / "v2.yaml"
    revised.write_text(REVISED, encoding="utf-8")
    capsys.readouterr()
    assert main(["codebook", str(study), "--revise", str(revised), "--yes"]) == 0
    out = capsys.readouterr()
    assert "changed workload: definition, exclusion" in out.out
    assert "added growth" in out.out
    assert "removed team" in out.out
    assert "recorded codebook version 2" in out.err
    assert main(["codebook", str(study)]) == 0
    listing = capsys.readouterr().out
    assert "version 1" in listing
    assert "version 2" in listing
    assert "removed team" in listing
    for version, has_team in ((1, True), (2, False), (None, False)):
        out_file = tmp_path / f"cb{version}.yaml"
        extra = [] if version is None else ["--version", str(version)]
        assert main(["export", str(study), "--codebook", str(out_file), *extra]) == 0
        names = str(yaml.safe_load(out_file.read_text(encoding="utf-8")))
        assert ("Team" in names) is has_team
    with Study.open(study, read_only=True) as s:
        decision = s.decisions.decision("r1", "workload", coder="ana")
        assert decision is not None
        assert decision.value == 5


def test_export_of_an_unknown_version_is_one_clear_error(
    study: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["export", str(study), "--codebook", str(tmp_path / "x.yaml"), "--version", "7"]) == 1
    )
    assert "no codebook version 7" in capsys.readouterr().err


def test_without_a_terminal_and_without_yes_nothing_is_recorded(
    study: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    revised = tmp_path / "v2.yaml"
    revised.write_text(REVISED, encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    before = content(study)
    assert main(["codebook", str(study), "--revise", str(revised)]) == 2
    assert "--yes" in capsys.readouterr().err
    assert content(study) == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: [unclosed\n", "rev.yaml"),
        (CODEBOOK.replace("Money matters.", "Money matters.\n    scale: binary"), "scale"),
        (
            CODEBOOK.replace("  - name: Team\n    definition: Colleagues.\n", "").replace(
                "  - name: Pay\n", "  - name: Team\n    id: pay\n"
            ),
            "two old codes cannot become one",
        ),
        (CODEBOOK, "same as the current"),
    ],
)
def test_bad_revisions_are_refused_with_the_study_unchanged(
    study: Path, tmp_path: Path, text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    revised = tmp_path / "rev.yaml"
    revised.write_text(text, encoding="utf-8")
    with Study.open(study) as s:
        s.decisions.record("r2", "pay", 3, coder="ana")
    before = content(study)
    capsys.readouterr()
    assert main(["codebook", str(study), "--revise", str(revised), "--yes"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("codecurve: error:")
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert content(study) == before


def test_score_adds_a_configuration_and_activate_chooses_it(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["score", str(study), "--model", "fake"]) == 0
    with Study.open(study, read_only=True) as s:
        first = s.scores.active_config_id()
    assert main(["score", str(study), "--model", "fake", "--context", "full"]) == 0
    with Study.open(study, read_only=True) as s:
        assert len(s.scores.configs()) == 2
        assert s.scores.active_config_id() == first  # a new configuration does not take over
    assert main(["score", str(study), "--model", "fake", "--context", "full", "--activate"]) == 0
    with Study.open(study, read_only=True) as s:
        assert s.scores.active_config_id() != first
        assert [e.kind for e in s.decisions.events() if e.kind == "activate"] == ["activate"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "status", "version"), [("y\n", 0, 2), ("n\n", 1, 1)])
def test_on_a_terminal_the_revision_is_asked_for(
    study: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
    status: int,
    version: int,
) -> None:
    revised = tmp_path / "v2.yaml"
    revised.write_text(REVISED, encoding="utf-8")
    monkeypatch.setattr("sys.stdin", _Terminal(answer))
    assert main(["codebook", str(study), "--revise", str(revised)]) == status
    with Study.open(study, read_only=True) as s:
        assert s.versions.current() == version
