"""The screening panel follows the decisions: Insufficient data, then Valid."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from codebooks.model import LIKERT_5, Code, Codebook
from tests.tui.conftest import build_study
from tui.app import make_app

CODEBOOK_5 = Codebook(
    name="Scaled",
    codes=(
        Code("workload", "Workload", "Mentions of how much work there is."),
        Code("pay", "Pay", "Mentions of salary."),
    ),
    scale=LIKERT_5,
)

#: A 2x2 table that the screen calls Valid: L = 5/15, Fp = 5/25, RBS < 0.
TARGET = {"a": 20, "b": 5, "c": 5, "d": 10}


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause(0.35)  # the screening refresh is debounced
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def test_tiers_follow_the_decisions(tmp_path: Path) -> None:
    study = build_study(tmp_path / "scaled.codecurve", n=60, codebook=CODEBOOK_5)
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        panel = app.review.screening
        assert panel.display
        assert panel.tier == "Insufficient data"
        queue = app.review.pair_queue
        left = dict(TARGET)
        first_round = True
        while any(left.values()):
            row = queue.current
            assert row is not None, left
            assert row.pick is not None
            assert row.confidence is not None
            high = row.confidence >= 0.6  # the scale-aware cut on 1-5: (5 + 1) / 10
            correct_cell, wrong_cell = ("a", "b") if high else ("c", "d")
            # On 1-5 a value applies from 4: 5 agrees with a pick of 4-5, 1 with 1-3.
            agree = "5" if row.pick >= 4 else "1"
            disagree = "1" if row.pick >= 4 else "5"
            if left[correct_cell]:
                left[correct_cell] -= 1
                await pilot.press(agree)
            elif left[wrong_cell]:
                left[wrong_cell] -= 1
                await pilot.press(disagree)
            else:
                await pilot.press("space")
            if first_round and sum(TARGET.values()) - sum(left.values()) == 8:
                first_round = False
                await settle(pilot)
                summary = app.screening_summary
                assert summary is not None
                pooled = summary.groups[0]
                assert pooled.tier == "Insufficient data"
                assert any("more" in line for line in pooled.lines), pooled.lines
        await settle(pilot)
        summary = app.screening_summary
        assert summary is not None
        pooled = summary.groups[0]
        assert pooled.n == 40
        assert pooled.tier == "Valid", pooled
        assert panel.tier == "Valid"
        text = " ".join(pooled.lines)
        assert "Accepting the model wherever confidence ≥" in text
        assert "of the time on" in text
        # Per code: each has its own verdict, selectable in the panel.
        assert {g.code_id for g in summary.groups[1:]} == {"workload", "pay"}
        panel.select_code("pay")
        await pilot.pause()
        assert panel.selected_code == "pay"
