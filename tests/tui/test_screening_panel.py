"""The screening panel follows the decisions: Insufficient data, then Valid."""

from __future__ import annotations

import io
from pathlib import Path

from codebooks.model import LIKERT_5, Code, Codebook
from tests.factories import build_study
from tests.tui.waiting import settle
from tui.app import make_app
from tui.widgets.screening import ScreeningPanel

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


def shown(panel: ScreeningPanel, selector: str) -> str:
    """The text a Static of the panel shows, as plain text."""
    from rich.console import Console
    from textual.widgets import Static

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(panel.query_one(selector, Static).content)
    return console.export_text()


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


async def test_the_panel_speaks_plainly_and_its_keys_work(tmp_path: Path) -> None:
    from textual.message import Message

    from tui.messages import ScreeningFilterRequested

    study = build_study(tmp_path / "plain.codecurve", n=30, codebook=CODEBOOK_5)
    # A few decisions on both codes: not enough for a verdict.
    study.decisions.import_decisions(
        [(f"r{i}", code, 5 if i % 2 else 1) for i in range(1, 9) for code in ("workload", "pay")],
        coder="tester",
    )
    seen: list[Message] = []
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(120, 40), message_hook=seen.append) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        panel = app.review.screening
        advice = shown(panel, "#screening-advice")
        # One headline in words, one next action with its key, and the cut in use.
        assert "is not settled yet for" in advice, advice
        # 30 responses, 8 decided per code: the step fits the 22 left.
        assert "Next: code the 22 " in advice
        assert "pairs left (every one)" in advice
        assert "F shows them" in advice
        assert "Confidence cut: scale-aware" in advice
        summary = app.screening_summary
        assert summary is not None
        assert summary.advice is not None
        body = shown(panel, "#screening-body")
        assert "L (confident when wrong)" in body
        assert "Fp (unsure when right)" in body
        assert ">= 0.600 (scale-aware" in body

        # The code selector from the keyboard: tab to the panel, then right / left.
        await pilot.press("tab")
        assert panel.has_focus
        await pilot.press("right")
        assert panel.selected_code == "workload"
        await pilot.press("right")
        assert panel.selected_code == "pay"
        await pilot.press("left", "left")
        assert panel.selected_code is None

        # t cycles the cut (the confidence threshold), and the app screens again with it.
        await pilot.press("t")
        await settle(pilot)
        assert app.screening_cut == "median"
        summary = app.screening_summary
        assert summary is not None
        assert summary.cut == "the sample median"
        assert "Confidence cut: sample median" in shown(panel, "#screening-advice")
        body = shown(panel, "#screening-body")
        assert "(sample median)" in body

        # F asks for the next action's pairs.
        await pilot.press("F")
        await pilot.pause()
        asked = [m for m in seen if isinstance(m, ScreeningFilterRequested)]
        assert asked
        assert asked[-1].code_id == summary.advice_code_id
        assert asked[-1].code_id in ("workload", "pay")
        query = app.review.pair_queue.pair_query
        assert (query.code_id, query.status) == (asked[-1].code_id, "undecided")
        assert app.review.pair_queue.has_focus
        # ... and lists what it said: the 22 pairs left.
        await pilot.pause()
        assert app.review.pair_queue.total == 22


async def test_a_format_failure_is_said_once_for_the_study(tmp_path: Path) -> None:

    study = build_study(tmp_path / "off.codecurve", n=10, codebook=CODEBOOK_5)
    study.decisions.import_decisions([("r1", "pay", 5)], coder="tester")
    # Every scored pair flagged off the scale, as when the model answers in prose.
    import sqlite3

    conn = sqlite3.connect(study.path)
    conn.execute("UPDATE scores SET off_scale = 1")
    conn.commit()
    conn.close()
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        panel = app.review.screening
        text = shown(panel, "#screening-advice")
        assert text.count("not answering in the scale's format") == 1, text
        assert "20 of 20 scored pairs" in text
        body = shown(panel, "#screening-body")
        assert "scale's format" not in body
