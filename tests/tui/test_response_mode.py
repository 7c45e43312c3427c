"""Response-first coding: the response mode, ] and [, yes/no keys, the view at 80x24."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding
from textual.pilot import Pilot

from codebooks.model import BINARY, Code, Codebook
from study.intake.responses import Response, ResponseTable
from study.store import Study
from tests.factories import build_study, synthetic_config, synthetic_scores
from tui.app import make_app
from tui.screens.help import HelpScreen
from tui.screens.response import ResponseScreen
from tui.session import Refused, ReviewSession
from tui.widgets.keys import KeyBar

YES_NO = Codebook(
    name="Feedback",
    codes=(
        Code("staff", "Staff attitude", "Mentions of how staff treated the patient."),
        Code("wait", "Waiting", "Mentions of waiting times."),
        Code("clean", "Cleanliness", "Mentions of how clean the place was."),
    ),
    scale=BINARY,
    question="Does the comment mention {code}?",
)


def yes_no_study(path: Path, n: int = 6) -> Study:
    """``n`` responses with a survey question and a site, over a yes/no codebook."""
    question = ("What was good?", "What could we do better?")
    responses = tuple(
        Response(
            f"r{i}",
            f"Comment {i}: nothing" if i % 2 else f"Comment {i}: the nurses were kind",
            {"question": question[i % 2], "site": f"Site {i % 3}"},
        )
        for i in range(1, n + 1)
    )
    table = ResponseTable(responses=responses, attribute_columns=("question", "site"))
    study = Study.create(path, responses=table, codebook=YES_NO)
    config = synthetic_config(YES_NO)
    config_id = study.scores.ensure_config(config)
    study.scores.store(config_id, synthetic_scores(study, config))
    return study


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_yes_no_digits_are_one_for_yes_and_zero_for_no(tmp_path: Path) -> None:
    study = yes_no_study(tmp_path / "s.codecurve")
    try:
        session = ReviewSession(study, coder="tester")
        assert session.value_at("staff", 1) == BINARY.options[1].value  # Yes, present
        assert session.value_at("staff", 0) == BINARY.options[0].value  # No
        assert session.value_at("staff", 2) is None
        row = study.queries.of_response(session.config_id, "r1")[0]
        assert isinstance(session.decide(row, 2), Refused)
        assert session.yes_no(row, yes=True).value == 1  # type: ignore[union-attr]
    finally:
        study.close()


def test_y_and_n_are_refused_on_a_longer_scale(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=3)
    try:
        session = ReviewSession(study, coder="tester")
        team = next(
            r for r in study.queries.of_response(session.config_id, "r1") if r.code_id == "team"
        )
        outcome = session.yes_no(team, yes=True)
        assert isinstance(outcome, Refused)
        assert "1-5" in outcome.message
        assert session.value_at("team", 0) is None
    finally:
        study.close()


async def test_response_mode_codes_whole_responses_in_uncertainty_order(tmp_path: Path) -> None:
    study = yes_no_study(tmp_path / "s.codecurve")
    app = make_app(study, coder="tester", close_study=True)
    order = study.queries.response_page(study.scores.active_config_id(), order="entropy", limit=100)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResponseScreen)
        assert screen.response_id == order[0]
        # The response's other columns are shown with it.
        attrs = str(screen.query_one("#response-attrs").render())
        assert "question:" in attrs
        assert "site:" in attrs
        # As the order says, the least sure code first (not codebook order).
        entropies = [r.norm_entropy for r in screen.rows]
        assert entropies == sorted(entropies, reverse=True)  # type: ignore[type-var]
        codes = [r.code_id for r in screen.rows]
        # One read, every code: y, n, 1 decide the three codes, the cursor walks down.
        assert screen.current().code_id == codes[0]  # type: ignore[union-attr]
        await pilot.press("y", "n", "1")
        await settle(pilot)
        values = {r.code_id: r.decision for r in screen.rows}
        assert values == dict(zip(codes, (1, 0, 1), strict=True))
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert screen.response_id == order[1]
        await pilot.press("left_square_bracket")
        assert screen.response_id == order[0]
        await pilot.press("left_square_bracket")  # the first: stays, says so
        assert screen.response_id == order[0]
        # up / down move between codes.
        first = screen.current().code_id  # type: ignore[union-attr]
        await pilot.press("down")
        assert screen.current().code_id != first  # type: ignore[union-attr]
        await pilot.press("up")
        assert screen.current().code_id == first  # type: ignore[union-attr]
        # O reverses the order: ] now goes towards the most certain end.
        await pilot.press("O", "right_square_bracket")
        assert screen.response_id == order[-1] or screen.response_id != order[1]
        # The key bar and help say 1 is Yes and 0 No.
        bar = screen.query_one(KeyBar)
        assert ("1", "1/0", "Yes/No", True) in bar.items
        await pilot.press("question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        texts = dict(help_screen._keys)
        assert "]" in texts
        assert "[" in texts
        assert "1 Yes, 0 No" in texts["1-9"]


async def test_the_response_view_at_80x24_shows_values_and_notes(tmp_path: Path) -> None:
    study = yes_no_study(tmp_path / "s.codecurve")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ResponseScreen)
        await pilot.press("c", *"check", "enter")
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        shot = app.export_screenshot().replace("&#160;", " ")
        assert "✓ Yes" in shot
        assert "note" in shot
        assert "✎" in shot


async def test_enter_view_follows_the_queue_with_brackets(tmp_path: Path) -> None:
    study = yes_no_study(tmp_path / "s.codecurve")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("o")  # id order
        await pilot.press("g", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResponseScreen)
        assert screen.response_id == "r1"
        await pilot.press("right_square_bracket")
        assert screen.response_id == "r2"


def test_response_order_pages_a_few_thousand_responses(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=3000)
    try:
        config_id = study.scores.active_config_id()
        every = study.queries.response_page(config_id, order="entropy", limit=10_000)
        assert len(every) == len(set(every)) == 3000
        highest = [
            max(r.norm_entropy or 0.0 for r in study.queries.of_response(config_id, rid))
            for rid in every[:200]
        ]
        assert highest == sorted(highest, reverse=True)
        page = study.queries.response_page(config_id, order="entropy", offset=2000, limit=40)
        assert page == every[2000:2040]
        assert study.queries.response_position(config_id, page[5], order="entropy") == 2005
        assert study.queries.response_after(config_id, page[5], order="entropy") == page[6]
        assert study.queries.response_after(config_id, every[0], order="entropy", step=-1) is None
        assert study.queries.response_after(config_id, every[-1], order="entropy") is None
        backwards = study.queries.response_page(
            config_id, order="entropy", reverse=True, limit=10_000
        )
        assert backwards == every[::-1]
        assert study.queries.response_page(config_id, order="id", limit=3) == ["r1", "r2", "r3"]
        assert study.queries.response_position(config_id, "r10", order="id", reverse=True) == 2990
    finally:
        study.close()


async def test_the_detail_pane_asks_the_codebooks_question(tmp_path: Path) -> None:
    study = yes_no_study(tmp_path / "s.codecurve")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        shot = app.export_screenshot().replace("&#160;", " ")
        assert "Does the comment mention" in shot
        assert "how well does it apply" not in shot


async def test_reopening_puts_the_cursor_on_the_most_uncertain_undecided_pair(
    tmp_path: Path,
) -> None:
    study = yes_no_study(tmp_path / "s.codecurve")
    config_id = study.scores.active_config_id()
    ranked = study.queries.page(config_id, order="entropy", limit=3)
    for row in ranked[:2]:
        study.decisions.record(row.response_id, row.code_id, 1, coder="tester")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        current = app.review.pair_queue.current
        assert current is not None
        assert (current.response_id, current.code_id) == (
            ranked[2].response_id,
            ranked[2].code_id,
        )


@pytest.mark.parametrize("size", [(80, 24), (140, 40), (200, 50)])
async def test_the_progress_panel_keeps_its_fourth_column(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    long_names = Codebook(
        name="Long",
        codes=tuple(
            Code(f"c{i}", f"A rather long code name number {i} about the ward", "Mentions.")
            for i in range(4)
        ),
        scale=BINARY,
    )
    study = build_study(tmp_path / "s.codecurve", n=5, codebook=long_names)
    study.decisions.record("r1", "c0", 1, coder="tester")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        shot = app.export_screenshot().replace("&#160;", " ")
        assert shot.count("20%") == 1  # c0: 1 of 5
        assert shot.count("0%") >= 4  # every row's share is on screen
        assert "░" * 20 in shot


def test_the_help_wraps_inside_its_columns_at_80_columns() -> None:
    from rich.console import Console

    from tui.screens.help import bindings_table, legend_table
    from tui.screens.review import ReviewScreen

    keys = [
        (b.key_display or b.key, b.tooltip)
        for b in ReviewScreen.BINDINGS
        if isinstance(b, Binding) and b.tooltip
    ]
    for table, labels in ((bindings_table(keys), [k for k, _ in keys]), (legend_table(), None)):
        console = Console(width=66, record=True, color_system=None)
        console.print(table)
        lines = console.export_text().splitlines()
        if labels is None:
            from tui.screens.help import LEGEND

            labels = [term for term, _ in LEGEND]
        width = max(len(k) for k in labels)
        assert len(lines) > len(labels)  # some text wraps at this width ...
        for line in lines:  # ... but only within its column: the first stays clear
            assert len(line) <= 66
            assert line[:width].strip() in {"", *labels}, line


async def test_search_counts_and_marks_its_matches(tmp_path: Path) -> None:
    study = yes_no_study(tmp_path / "s.codecurve")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"NURSES", "enter")
        await settle(pilot)
        review = app.review
        assert review.pair_queue.total == 9  # three responses x three codes
        box = review.query_one("#queue-box")
        assert "9 matches" in str(box.border_subtitle)
        assert any("9 matches" in n.message for n in app._notifications)
        # The match is marked in the queue's row and in the detail pane.
        strip = review.pair_queue.render_line(1)
        marked = [seg for seg in strip if seg.text == "nurses"]
        assert marked
        assert marked[0].style is not None
        assert marked[0].style.bold
        detail = review.detail.render_line(0)
        assert any(seg.text == "nurses" and seg.style and seg.style.reverse for seg in detail)
        await pilot.press("escape")
        await settle(pilot)
        assert not box.border_subtitle


async def test_the_queue_marks_pairs_with_a_note(tmp_path: Path) -> None:
    study = yes_no_study(tmp_path / "s.codecurve")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        assert "✎" not in queue.render_line(1).text
        await pilot.press("c", *"recheck", "enter")
        await settle(pilot)
        assert queue.render_line(0).text.rstrip().endswith("✎¶")  # the header names it
        assert queue.render_line(1).text.rstrip().endswith("✎")
        assert "✎" not in queue.render_line(2).text


def test_a_memo_on_a_response_is_durable_and_undoable(tmp_path: Path) -> None:
    path = tmp_path / "s.codecurve"
    study = yes_no_study(path)
    study.decisions.set_memo("r1", "first thought", coder="ana")
    study.decisions.set_memo("r1", "second thought", coder="ana")
    study.decisions.record("r2", "staff", 1, coder="ana")
    assert study.decisions.memo("r1", coder="ana") == "second thought"
    assert study.decisions.undo(coder="ana").code_id == "staff"  # type: ignore[union-attr]
    undone = study.decisions.undo(coder="ana")
    assert undone is not None
    assert (undone.response_id, undone.code_id, undone.note) == ("r1", "", "second thought")
    assert study.decisions.memo("r1", coder="ana") == "first thought"
    study.close()
    reopened = Study.open(path)
    try:
        assert reopened.decisions.memo("r1") == "first thought"
        assert reopened.decisions.memo("r1", coder="bo") is None
        kinds = [(e.kind, e.code_id) for e in reopened.decisions.events() if e.response_id == "r1"]
        assert ("note", None) in kinds
        assert ("undo", None) in kinds
        reopened.decisions.set_memo("r1", "", coder="ana")  # an empty memo removes it
        assert reopened.decisions.memo("r1") is None
    finally:
        reopened.close()


async def test_m_writes_a_memo_on_the_response_and_u_takes_it_back(tmp_path: Path) -> None:
    study = yes_no_study(tmp_path / "s.codecurve")
    app = make_app(study, coder="tester")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResponseScreen)
        rid = screen.response_id
        await pilot.press("m", *"means the ward", "enter")
        await settle(pilot)
        assert study.decisions.memo(rid, coder="tester") == "means the ward"
        assert "memo: means the ward" in str(screen.query_one("#response-attrs").render())
        await pilot.press("u")
        await settle(pilot)
        assert study.decisions.memo(rid, coder="tester") is None
        assert "memo" not in str(screen.query_one("#response-attrs").render())
    study.close()


@pytest.mark.parametrize("order", ["entropy", "id", "pick", "confidence"])
def test_every_order_reverses_with_positions_to_match(tmp_path: Path, order: str) -> None:
    study = build_study(tmp_path / "s.codecurve", n=30, scored=60)  # 60 of 90 scored
    try:
        config_id = study.scores.active_config_id()
        forwards = study.queries.page(config_id, order=order, limit=1000)
        backwards = study.queries.page(config_id, order=order, reverse=True, limit=1000)
        keys = [(r.response_id, r.code_id) for r in forwards]
        back = [(r.response_id, r.code_id) for r in backwards]
        if order == "id":
            assert back == keys[::-1]
        else:  # scored pairs reversed, then the unscored ones, reversed too
            assert back == keys[:60][::-1] + keys[60:][::-1]
        pages = [
            study.queries.page(config_id, order=order, reverse=True, offset=o, limit=7)
            for o in range(0, 90, 7)
        ]
        assert [(r.response_id, r.code_id) for page in pages for r in page] == back
        for index in (0, 13, 59, 60, 89):
            rid, cid = back[index]
            assert study.queries.position(config_id, rid, cid, order=order, reverse=True) == index
    finally:
        study.close()


async def test_shift_o_reverses_the_queue(tmp_path: Path) -> None:
    study = yes_no_study(tmp_path / "s.codecurve")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        last = study.queries.page(study.scores.active_config_id(), order="entropy", limit=100)[-1]
        await pilot.press("O")
        await settle(pilot)
        assert queue.pair_query.reverse
        current = queue.current
        assert current is not None
        assert (current.response_id, current.code_id) == (last.response_id, last.code_id)
        assert "reversed" in app.review.status_line.render_line(0).text
        await pilot.press("o")  # the next order starts forwards
        assert not queue.pair_query.reverse
