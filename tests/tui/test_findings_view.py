"""The findings view (``P``): each code's prevalence, from the same core as the command."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from study.analysis.findings import study_findings
from study.store import Study
from tests.study.test_findings import findings_study
from tui.app import make_app
from tui.screens.findings import FindingsScreen

SIZE = (140, 40)


def body_text(screen: FindingsScreen) -> str:
    from rich.console import Console

    console = Console(width=130, record=True)
    console.print(screen.query_one("#findings-body", Static).content)
    return console.export_text()


async def test_f_shows_each_codes_prevalence_as_the_command_computes_it(tmp_path: Path) -> None:
    path = tmp_path / "v.codecurve"
    findings_study(path, n=300, audit=80)
    with Study.open(path) as study:
        expected = study_findings(study, coder="ana")
        app = make_app(study, coder="ana")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await pilot.press("P")
            screen = app.screen
            assert isinstance(screen, FindingsScreen)
            await app.workers.wait_for_complete()
            await pilot.pause()
            text = body_text(screen)
            staff = expected.codes[0]
            assert "Staff manner" in text
            assert f"{100 * staff.ppi.estimate:.1f}%" in text
            assert "PPI++" in text
            await pilot.press("escape")
            assert app.screen is app.review
