"""The reconciliation view shows the compared coders' agreement per code (Pilot): the
same numbers as ``codecurve agreement``, and the reason when there are none."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from study.analysis.agreement import study_agreement
from study.store import Study
from tests.factories import build_study
from tui.app import make_app
from tui.screens.disagreements import DisagreementsScreen
from tui.widgets.agreement import AgreementPanel, agreement_rows

SIZE = (110, 34)

_OPENED: list[Study] = []


@pytest.fixture(autouse=True)
def _close_studies() -> Iterator[None]:
    yield
    while _OPENED:
        study = _OPENED.pop()
        if not study.closed:
            study.close()


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def panel_of(pilot: Pilot[None]) -> AgreementPanel:
    screen = pilot.app.screen
    assert isinstance(screen, DisagreementsScreen)
    return screen.query_one(AgreementPanel)


def cells(panel: AgreementPanel) -> list[tuple[str, ...]]:
    table = panel.table
    return [tuple(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]


async def test_the_table_shows_the_study_agreement_of_the_coders_compared(
    tmp_path: Path,
) -> None:
    study = build_study(tmp_path / "w.codecurve", n=10)
    _OPENED.append(study)
    ana = [1, 1, 0, 1, 0, 1, 1, 0]
    ben = [1, 0, 0, 1, 0, 1, 0, 0]
    study.decisions.import_decisions(
        [(f"r{i}", "workload", v) for i, v in enumerate(ana, 1)], coder="ana"
    )
    study.decisions.import_decisions(
        [(f"r{i}", "workload", v) for i, v in enumerate(ben, 1)], coder="ben"
    )
    expected = agreement_rows(study_agreement(study, coders=["ana", "ben"]))
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)
        panel = panel_of(pilot)
        shown = cells(panel)
        assert shown == expected
        (row,) = shown
        assert row[1] == "8"  # eight responses decided by both
        assert row[2].startswith("75.0% [")  # six of eight agree
        assert "[" in row[3]  # kappa with its interval
        assert "Agreement of ana, ben" in str(panel.title.render())
        # A consensus is not compared: the agreement stays as it was.
        await pilot.press("1")
        await settle(pilot)
        assert cells(panel_of(pilot)) == expected


async def test_fewer_than_two_coders_says_why_there_is_no_table(tmp_path: Path) -> None:
    study = build_study(tmp_path / "w.codecurve", n=6)
    _OPENED.append(study)
    study.decisions.import_decisions([("r1", "workload", 1)], coder="ana")
    app = make_app(study, coder="ana")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)
        panel = panel_of(pilot)
        assert panel.table.row_count == 0
        assert "two coders" in str(panel.title.render())
