"""At 80x24 and 140x40: the code and its curve stay in view on a long response, the
status line keeps its facts, toasts keep off the status line, the cursor keeps the next
rows in view."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from textual.widgets._toast import ToastRack

from codebooks.model import BINARY, Code, Codebook
from study.intake.responses import Response, ResponseTable
from study.store import Study
from tests.factories import build_study, synthetic_config, synthetic_scores
from tests.tui.waiting import settle
from tui.app import make_app
from tui.screens.response import ResponseScreen
from tui.widgets.detail import DetailPane
from tui.widgets.status import StatusLine

SIZES = [(80, 24), (140, 40)]

LONG_CODEBOOK = Codebook(
    name="Feedback",
    codes=(
        Code(
            "staff",
            "Staff attitude",
            "How staff treated the patient: kindness, respect, rudeness, being listened "
            "to or dismissed, by any member of staff on the ward or in clinic.",
            inclusion="Praise or complaint about a named or unnamed member of staff.",
            exclusion="Staffing levels and waiting (see Waiting).",
            examples=("The nurses were kind.", "The doctor would not listen to me."),
        ),
        Code("wait", "Waiting", "Waiting times, delays, appointments running late."),
    ),
    scale=BINARY,
    question="Does the comment mention {code}?",
)

SENTENCE = (
    "I was seen by a junior doctor who asked me about my life for an hour and then said "
    "they could not help me, which left me feeling worse than when I arrived. "
)


def long_study(path: Path) -> Study:
    """A long response (about 40 lines at 80 columns) first, then short ones, scored."""
    responses = (
        Response("long", SENTENCE * 14, {}),
        *(Response(f"r{i}", f"Short comment {i}.", {}) for i in range(1, 30)),
    )
    study = Study.create(path, responses=ResponseTable(responses=responses), codebook=LONG_CODEBOOK)
    config = synthetic_config(LONG_CODEBOOK)
    config_id = study.scores.ensure_config(config)
    study.scores.store(config_id, synthetic_scores(study, config))
    return study


def screen_text(app: object) -> str:
    """The screen's text, tags left out (a line's styled runs joined again)."""
    svg = app.export_screenshot()  # type: ignore[attr-defined]
    body = svg[svg.index("<g class") :]
    return html.unescape(re.sub(r"<[^>]+>", "", body)).replace("\xa0", " ")


@pytest.mark.parametrize("size", SIZES)
async def test_the_code_and_its_curve_stay_in_view_on_a_long_response(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    app = make_app(long_study(tmp_path / "s.codecurve"), coder="tester", close_study=True)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"long", "enter")
        await settle(pilot)
        row = app.review.pair_queue.current
        assert row is not None
        assert row.response_id == "long"
        detail = app.review.query_one(DetailPane)
        assert detail.virtual_size.height > detail.scrollable_content_region.height  # long
        shot = screen_text(app)
        assert "Does the comment mention" in shot
        # Both options of the curve, with their probabilities.
        assert shot.count("bits") >= 2
        assert "Press 1 for Yes" in shot  # the decision line, at both sizes
        # Scrolling the response keeps them there.
        await pilot.press("tab", "pagedown", "pagedown")
        await settle(pilot)
        assert detail.scroll_y > 0
        shot = screen_text(app)
        assert "Does the comment mention" in shot
        assert shot.count("bits") >= 2


@pytest.mark.parametrize("size", SIZES)
async def test_the_response_view_shows_the_curve_before_a_long_definition(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    app = make_app(long_study(tmp_path / "s.codecurve"), coder="tester", close_study=True)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"long", "enter")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResponseScreen)
        screen.codes_table.move_cursor(
            row=next(i for i, r in enumerate(screen.rows) if r.code_id == "staff")
        )
        await settle(pilot)
        shot = screen_text(app)
        assert "Does the comment mention Staff attitude?" in shot
        assert shot.count("bits") >= 2


async def test_the_status_line_keeps_its_order_and_model_state_at_80_columns(
    study: Study,
) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        line = app.review.query_one(StatusLine)
        text = line.render().plain
        assert len(text) <= line.content_size.width
        assert "no model" in text
        assert "most uncertain first" in text
        assert "1/90" in text


async def test_toasts_keep_off_the_status_line_and_do_not_pile_up(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=4)
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        for i in range(6):
            app.notify(f"Message number {i}, long enough to wrap at eighty columns wide.")
        app.notify("The same words twice.")
        app.notify("The same words twice.")
        await settle(pilot)
        rack = app.screen.get_child_by_type(ToastRack)
        status = app.review.query_one(StatusLine)
        assert rack.region.bottom <= status.region.y  # above the status line and key bar
        assert rack.region.height <= 24 * 0.3 + 1
        messages = [n.message for n in app._notifications]
        assert messages.count("The same words twice.") == 1


async def test_the_cursor_keeps_two_rows_in_view_below_it(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        await pilot.press("g")
        height = queue.scrollable_content_region.height - 1  # rows below the header
        for _ in range(height + 3):
            await pilot.press("j")
            top = int(queue.scroll_offset.y)
            assert queue.cursor - top <= height - 3, (queue.cursor, top, height)
        for _ in range(height):
            await pilot.press("k")
            top = int(queue.scroll_offset.y)
            assert queue.cursor == 0 or queue.cursor - top >= min(2, queue.cursor)
