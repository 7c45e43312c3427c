"""The export dialog from the keyboard: the format first, arrows that choose, a default
name per format and layout, a REFI-QDA project, and buttons visible at 80x24.

Snapshots (``--snapshot-update``, then look at the SVGs) at 80x24 and 140x40.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import xmlschema
from textual.pilot import Pilot
from textual.widgets import Button, Input

from study.exchange.export import read_export
from study.refi import read_project
from study.store import Study
from tests.factories import build_study
from tui.app import make_app
from tui.screens.export import EVERY_CODER, ChoiceSet, ExportScreen, default_name

SCHEMA = xmlschema.XMLSchema(str(Path(__file__).parents[1] / "study" / "data" / "Project.xsd"))
SnapCompare = Callable[..., bool]


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def open_dialog(pilot: Pilot[None]) -> ExportScreen:
    await settle(pilot)
    await pilot.press("e")
    await pilot.pause()
    dialog = pilot.app.screen
    assert isinstance(dialog, ExportScreen)
    return dialog


def path_of(dialog: ExportScreen) -> str:
    return dialog.query_one("#export-path", Input).value


def test_default_names() -> None:
    assert default_name("coded", format="csv", layout="long") == "coded_long.csv"
    assert default_name("coded", format="csv", layout="wide") == "coded_wide.csv"
    assert default_name("coded", format="qdpx", layout="wide") == "coded.qdpx"


async def test_the_keyboard_alone_exports_a_wide_workbook(
    study: Study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app(study, coder="tester")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        dialog = await open_dialog(pilot)
        assert isinstance(app.focused, ChoiceSet)
        assert app.focused.id == "export-format"
        # Enter on a choice moves on: it never exports from the start.
        await pilot.press("down")
        assert dialog.chosen_format == "xlsx"
        assert path_of(dialog).endswith("work-coded_long.xlsx")
        await pilot.press("enter")
        assert app.screen is dialog
        assert app.focused is not None
        assert app.focused.id == "export-layout"
        await pilot.press("right")
        assert dialog.chosen_layout == "wide"
        assert path_of(dialog).endswith("work-coded_wide.xlsx")
        await pilot.press("left")
        assert path_of(dialog).endswith("work-coded_long.xlsx")
        await pilot.press("right", "tab")
        focused: object = app.focused  # a fresh read: tab moved the focus
        assert focused is dialog.query_one("#export-path", Input)
        await pilot.press("enter")
        await settle(pilot)
        screen: object = app.screen  # a fresh read: enter closed the dialog
        assert screen is app.review
    frame = read_export(tmp_path / "work-coded_wide.xlsx")
    assert len(frame) == 30  # one row per response


async def test_a_typed_name_keeps_its_stem(study: Study, tmp_path: Path) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await open_dialog(pilot)
        dialog.query_one("#export-path", Input).value = str(tmp_path / "mine.csv")
        dialog.choose(format="parquet")
        await pilot.pause()
        assert path_of(dialog) == str(tmp_path / "mine.parquet")
        dialog.choose(format="qdpx")
        await pilot.pause()
        assert path_of(dialog) == str(tmp_path / "mine.qdpx")
        assert dialog.query_one("#export-layout", ChoiceSet).disabled
        dialog.choose(format="csv")
        await pilot.pause()
        assert not dialog.query_one("#export-layout", ChoiceSet).disabled
        await pilot.press("escape")
        assert app.screen is app.review


async def test_the_dialog_writes_a_qda_project(
    study: Study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    study.decisions.record(study.response_ids()[0], "pay", 1, coder="tester")
    study.decisions.record(study.response_ids()[1], "team", 4, coder="other")
    app = make_app(study, coder="tester")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        dialog = await open_dialog(pilot)
        await pilot.press("down", "down", "down", "down")
        assert dialog.chosen_format == "qdpx"
        assert path_of(dialog).endswith("work-coded.qdpx")
        await pilot.press("tab")  # the layout is skipped: a project has none
        coders = dialog.query_one("#export-coder", ChoiceSet)
        assert app.focused is coders
        assert dialog.chosen_coder == ""  # two coders, no consensus: nothing chosen
        await pilot.press("tab")
        focused: object = app.focused  # fresh reads: each key moved the focus
        assert focused is dialog.query_one("#export-path", Input)
        await pilot.press("enter")  # refused until a coder choice is made
        shown: object = app.screen
        assert shown is dialog
        assert any("whose decisions" in n.message for n in app._notifications)
        focused = app.focused
        assert focused is coders
        await pilot.press("up")  # wraps round to the last choice: every coder apart
        assert dialog.chosen_coder == EVERY_CODER
        await pilot.press("tab", "enter")
        await settle(pilot)
        shown = app.screen
        assert shown is app.review
        assert any("work-coded.qdpx" in n.message for n in app._notifications)
    target = tmp_path / "work-coded.qdpx"
    with zipfile.ZipFile(target) as archive:
        SCHEMA.validate(archive.read("project.qde").decode("utf-8"))
    project, report = read_project(target)
    assert not report
    assert {u.name for u in project.users} == {"tester", "other"}
    assert sum(len(s.codings) for s in project.sources) == 2


@pytest.mark.parametrize("size", [(80, 24), (140, 40)])
async def test_the_buttons_are_visible(study: Study, size: tuple[int, int]) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=size) as pilot:
        dialog = await open_dialog(pilot)
        box = dialog.query_one("#export-dialog")
        assert box.max_scroll_y == 0  # nothing hidden below
        for name in ("#export-ok", "#export-cancel"):
            region = dialog.query_one(name, Button).region
            assert region.area > 0
            assert region.bottom <= size[1]
            assert region.right <= size[0]


def snap_app(tmp_path: Path):
    study = build_study(tmp_path / "snap.codecurve", n=40)
    return make_app(study, coder="tester", close_study=True)


async def _open(pilot: Pilot[None]) -> None:
    await open_dialog(pilot)
    await pilot.pause()


async def _open_project(pilot: Pilot[None]) -> None:
    await open_dialog(pilot)
    await pilot.press("up")  # wraps round to the last format: the project
    await pilot.pause()


def test_export_dialog_80x24(
    snap_compare: SnapCompare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir("/")
    assert snap_compare(snap_app(tmp_path), run_before=_open)


def test_export_dialog_project_140x40(
    snap_compare: SnapCompare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir("/")
    assert snap_compare(snap_app(tmp_path), terminal_size=(140, 40), run_before=_open_project)


async def test_the_path_field_shows_no_control_character_and_exports_to_the_real_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A study whose name carries an escape sequence and a right-to-left override: the
    field shows stand-ins, and left as shown the export goes to the real file name."""
    import re

    monkeypatch.chdir(tmp_path)
    name = "w\x1b]0;pwned\x07\u202eevil\u2066"
    study = build_study(tmp_path / f"{name}.codecurve")
    try:
        app = make_app(study, coder="tester")
        async with app.run_test(size=(100, 30)) as pilot:
            dialog = await open_dialog(pilot)
            shown = path_of(dialog)
            assert not re.search("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", shown)
            assert "\u241b]0;pwned\u2407\\u202eevil\\u2066" in shown
            dialog.query_one("#export-path", Input).focus()
            await pilot.press("enter")
            await settle(pilot)
            assert app.screen is app.review
        assert len(read_export(tmp_path / f"{name}-coded_long.csv")) > 0
    finally:
        study.close()


async def test_several_coders_choose_whose_decisions(study: Study, tmp_path: Path) -> None:
    first, second = study.response_ids()[:2]
    study.decisions.record(first, "pay", 1, coder="tester")
    study.decisions.record(first, "pay", 0, coder="other")  # the latest: never taken blindly
    study.decisions.record(second, "pay", 1, coder="other")
    app = make_app(study, coder="tester")
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        dialog = await open_dialog(pilot)
        dialog.query_one("#export-path", Input).value = str(tmp_path / "mine.csv")
        dialog.choose(coder="tester")
        await pilot.pause()
        dialog.query_one("#export-ok", Button).press()
        await settle(pilot)
        assert app.screen is app.review
    frame = read_export(tmp_path / "mine.csv")
    decided = frame[frame["decision"].notna()]
    assert list(zip(decided["response_id"], decided["coder"], strict=True)) == [(first, "tester")]


def coders_app(tmp_path: Path):
    study = build_study(tmp_path / "snap.codecurve", n=40)
    ids = study.response_ids()
    for coder in ("ana", "ben"):
        study.decisions.record(ids[0], "pay", 1, coder=coder)
    study.decisions.record(ids[1], "pay", 1, coder="ana")
    study.decisions.record(ids[1], "pay", 0, coder="ben")
    study.decisions.record(ids[1], "pay", 1, coder="consensus")
    return make_app(study, coder="ana", close_study=True)


@pytest.mark.parametrize("size", [(80, 24), (140, 40)])
def test_export_dialog_with_coders(
    snap_compare: SnapCompare,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    size: tuple[int, int],
) -> None:
    monkeypatch.chdir("/")
    assert snap_compare(coders_app(tmp_path), terminal_size=size, run_before=_open)
