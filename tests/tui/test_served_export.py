"""The served app's exports: only into the study's exports folder, whatever is typed.

A coder in a browser must not write files anywhere the server's user may (a startup
script, another study): ``export_folder`` confines the export dialog to one folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from study.exchange.export import read_export
from study.store import Study
from tests.tui.waiting import wait_for
from tui.app import make_app
from tui.screens.export import ExportScreen


async def export_as(study: Study, folder: Path, typed: str | None) -> list[str]:
    """Open the dialog in an app confined to ``folder``, type a file, export; the
    notifications shown."""
    app = make_app(study, coder="tester", export_folder=folder)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        box = app.screen.query_one("#export-path", Input)
        if typed is None:
            assert box.value == "work-coded_long.csv"  # a name, not the server's path
        else:
            box.value = typed
        box.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, ExportScreen))
        await app.workers.wait_for_complete()
        await pilot.pause()
        return [str(n.message) for n in app._notifications]


async def test_the_default_and_a_bare_name_land_in_the_exports_folder(
    study: Study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "work-exports"
    said = await export_as(study, folder, None)
    assert "work-coded_long.csv" in [p.name for p in folder.iterdir()]
    assert any("Exported to" in s for s in said)
    await export_as(study, folder, "mine.csv")
    assert (folder / "mine.csv").exists()
    assert not (tmp_path / "mine.csv").exists()
    assert len(read_export(folder / "mine.csv")) == 90


@pytest.mark.parametrize("typed", ["../escaped.csv", "/tmp/escaped.csv", "sub/escaped.csv"])
async def test_a_path_outside_the_folder_is_refused(
    study: Study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed: str
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "work-exports"
    said = await export_as(study, folder, typed.replace("/tmp", str(tmp_path)))
    assert any("give a file name only" in s for s in said)
    assert not list(tmp_path.rglob("escaped.csv"))


async def test_a_served_coder_exports_their_own_decisions_and_sees_no_server_path(
    study: Study, tmp_path: Path
) -> None:
    config_id = study.scores.active_config_id()
    pairs = [(r.response_id, r.code_id) for r in study.queries.page(config_id, limit=40)]
    study.decisions.import_decisions([(r, c, 1) for r, c in pairs[:20]], coder="tester")
    study.decisions.import_decisions([(r, c, 1) for r, c in pairs], coder="ben")
    folder = tmp_path / "server" / "work-exports" / "tester"
    app = make_app(study, coder="tester", export_folder=folder)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        dialog = app.screen
        assert isinstance(dialog, ExportScreen)
        shown = " ".join(str(w.render()) for w in dialog.query("*") if w.display)
        assert str(tmp_path) not in shown
        assert "your own decisions" in shown
        assert "ben" not in shown
        assert not dialog.query("#export-coder")  # no choice of another coder's
        assert dialog.chosen_coder == "tester"
        box = dialog.query_one("#export-path", Input)
        box.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, ExportScreen))
        await app.workers.wait_for_complete()
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
    written = read_export(folder / "work-coded_long.csv")
    decided = written.dropna(subset=["value"]) if "value" in written else written
    assert set(decided["coder"].dropna()) == {"tester"}
    assert not any(str(tmp_path) in s for s in said), said


def test_each_coder_has_a_folder_of_their_own(tmp_path: Path) -> None:
    from tui.serve.child import coder_folder, exports_folder

    study = tmp_path / "work.codecurve"
    assert exports_folder(study, "ana") == tmp_path / "work-exports" / "ana"
    names = ["ana", "Ana", "Ana María", "Ana_María", "..", "a/b", "j.smith@uni.edu"]
    folders = [coder_folder(n) for n in names]
    assert len(set(folders)) == len(names)
    for folder in folders:
        assert "/" not in folder
        assert "." not in folder
        assert (exports_folder(study, "x").parent / folder).parent == tmp_path / "work-exports"
