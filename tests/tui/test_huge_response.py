"""A 5 MB response: the detail pane and the response view show a bounded part of it.

Drawn whole, one such response is wrapped into tens of thousands of lines on every key;
shown, it is its start and its end around a line that says how much is left out, so a
key costs a bounded number of rendered lines, whatever the response's size.
"""

from __future__ import annotations

from pathlib import Path

from study.intake.responses import ResponseTable
from study.store import Study
from tests.factories import CODEBOOK, synthetic_config, synthetic_scores
from tests.tui.waiting import settle, wait_for
from tui.app import make_app
from tui.screens.response import ResponseScreen
from tui.text import SHOWN_HEAD, SHOWN_TAIL, shown_part
from tui.widgets.detail import DetailPane

HUGE = "It began well. " + "The pay was late again. " * 210_000 + "It ended badly."  # 5 MB

#: Lines the pane may draw at 100 columns: the shown part wrapped, the code, the curve.
BOUND = (SHOWN_HEAD + SHOWN_TAIL) // 40 + 200


def test_shown_part_keeps_both_ends_and_says_what_is_left_out() -> None:
    shown = shown_part(HUGE)
    assert shown.startswith("It began well. ")
    assert shown.endswith("It ended badly.")
    assert f"{len(HUGE) - SHOWN_HEAD - SHOWN_TAIL:,} characters not shown here" in shown
    assert len(shown) < SHOWN_HEAD + SHOWN_TAIL + 200
    assert shown_part("short") == "short"


async def test_a_key_on_a_huge_response_draws_a_bounded_number_of_lines(tmp_path: Path) -> None:
    table = ResponseTable.from_texts({"huge": HUGE, "small": "The pay is fine."})
    study = Study.create(tmp_path / "h.codecurve", responses=table, codebook=CODEBOOK)
    try:
        config = synthetic_config(CODEBOOK)
        study.scores.store(study.scores.ensure_config(config), synthetic_scores(study, config))
        app = make_app(study, coder="tester", close_study=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            detail = app.screen.query_one(DetailPane)
            seen = 0
            for _ in range(2 * len(CODEBOOK.codable)):  # every pair, the huge ones too
                text = detail.plain_text
                assert text.count("\n") < BOUND
                seen += "characters not shown here" in text
                await pilot.press("j")
                await settle(pilot)
            assert seen >= 1
            for _ in range(2 * len(CODEBOOK.codable)):  # back up to a pair of the huge one
                if detail.row is not None and detail.row.response_id == "huge":
                    break
                await pilot.press("k")
                await settle(pilot)
            assert detail.row is not None
            assert detail.row.response_id == "huge"
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, ResponseScreen))
            await settle(pilot)
            body = app.screen.query_one("#response-text")
            assert 0 < body.virtual_size.height < BOUND
    finally:
        study.close()
