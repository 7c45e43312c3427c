"""The review screen driven from the keyboard, headless (Pilot), on a real study."""

from __future__ import annotations

from textual import events
from textual.pilot import Pilot

from study.store import Study
from tui.app import CodecurveApp, make_app
from tui.screens.help import HelpScreen
from tui.screens.note import NoteScreen
from tui.screens.response import ResponseScreen
from tui.widgets.detail import DetailPane
from tui.widgets.keys import KeyBar
from tui.widgets.queue import PairQueue

SIZE = (100, 30)


def decisions(study: Study) -> dict[tuple[str, str], tuple[int, str]]:
    rows = study.queries.page(
        study.scores.active_config_id(), order="id", status="decided", limit=10_000
    )
    return {(r.response_id, r.code_id): (r.decision, r.source) for r in rows}  # type: ignore[misc]


def queue(app: CodecurveApp) -> PairQueue:
    return app.review.pair_queue


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def test_opens_on_the_most_uncertain_pair_first(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        q = queue(app)
        assert q.total == 90
        rows = [q.row_at(i) for i in range(q.total)]
        entropies = [r.norm_entropy for r in rows if r is not None]
        known = [e for e in entropies if e is not None]
        assert known == entropies  # every row has its entropy
        assert known == sorted(known, reverse=True)
        expected = study.queries.page(study.scores.active_config_id(), order="entropy", limit=5)
        assert [(r.response_id, r.code_id) for r in rows[:5] if r] == [
            (r.response_id, r.code_id) for r in expected
        ]
        assert q.cursor == 0
        detail = app.review.detail
        assert isinstance(detail, DetailPane)
        assert detail.border_title == f"Response {expected[0].response_id}"


async def test_digit_records_the_scale_position_and_moves_to_the_next_undecided(
    study: Study,
) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        q = queue(app)
        first = q.current
        assert first is not None
        scale = app.session.scale(first.code_id)
        assert scale.k == 2  # yes/no: 1 is Yes (present), as people press it
        await pilot.press("1")
        await settle(pilot)
        saved = decisions(study)
        assert saved[(first.response_id, first.code_id)] == (scale.options[1].value, "human")
        assert q.cursor == 1
        current = q.current
        assert current is not None
        assert current.decision is None


async def test_a_digit_beyond_the_scale_records_nothing(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        q = queue(app)
        # Move to a pair on the No/Yes scale.
        while q.current is not None and app.session.scale(q.current.code_id).k != 2:
            await pilot.press("j")
        await pilot.press("5")
        await settle(pilot)
        assert decisions(study) == {}


async def test_accept_records_the_model_pick_and_x_the_lowest_option(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        q = queue(app)
        first = q.current
        assert first is not None
        assert first.pick is not None
        await pilot.press("a")
        second = q.current
        assert second is not None
        await pilot.press("x")
        await settle(pilot)
        saved = decisions(study)
        assert saved[(first.response_id, first.code_id)] == (first.pick, "model")
        lowest = app.session.scale(second.code_id).lowest.value
        assert saved[(second.response_id, second.code_id)] == (lowest, "human")


async def test_space_skips_without_saving_and_jk_arrows_move(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        q = queue(app)
        await pilot.press("space")
        assert q.cursor == 1
        await pilot.press("j", "j", "down")
        assert q.cursor == 4
        await pilot.press("k", "up")
        assert q.cursor == 2
        await pilot.press("end")
        assert q.cursor == q.total - 1
        await pilot.press("home")
        assert q.cursor == 0
        await settle(pilot)
        assert decisions(study) == {}


async def test_undo_walks_back_several_decisions_and_returns_the_cursor(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        q = queue(app)
        keys = []
        for key in ("1", "x", "a", "1"):
            row = q.current
            assert row is not None
            keys.append((row.response_id, row.code_id, q.cursor))
            await pilot.press(key)
        assert len(decisions(study)) == 4
        assert q.cursor == 4
        await pilot.press("u")
        assert len(decisions(study)) == 3
        assert q.cursor == keys[3][2]
        await pilot.press("backspace")
        assert q.cursor == keys[2][2]
        await pilot.press("u", "u")
        await settle(pilot)
        assert decisions(study) == {}
        assert q.cursor == keys[0][2]
        assert q.current is not None
        assert q.current.decision is None
        await pilot.press("u")  # nothing left: a notification, no error
        await settle(pilot)


async def test_decisions_under_the_undecided_filter_leave_the_queue(study: Study) -> None:
    from tui.source import Query

    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        q = queue(app)
        app.review.set_query(Query(status="undecided"))
        first = q.current
        assert first is not None
        await pilot.press("1")
        await settle(pilot)
        assert q.total == 89
        assert q.cursor == 0
        assert q.current is not None
        assert q.current != first
        await pilot.press("u")
        assert q.total == 90
        assert q.current == first


async def test_note_is_saved(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        row = queue(app).current
        assert row is not None
        await pilot.press("c")
        assert isinstance(app.screen, NoteScreen)
        await pilot.press(*"recheck", "enter")
        await settle(pilot)
        assert study.decisions.note(row.response_id, row.code_id, coder="tester") == "recheck"
        current = queue(app).current
        assert current is not None
        assert current.note == "recheck"


async def test_tab_switches_between_queue_and_detail(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.focused is queue(app)
        await pilot.press("tab")
        focused: object = app.focused  # a fresh read: the key press moved the focus
        assert focused is app.review.detail
        await pilot.press("tab")
        assert app.focused is queue(app)


async def test_enter_opens_the_response_with_every_code(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        row = queue(app).current
        assert row is not None
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResponseScreen)
        # Every code, least sure first as the queue's order says.
        assert sorted(r.code_id for r in screen.rows) == ["pay", "team", "workload"]
        entropies = [r.norm_entropy or 0.0 for r in screen.rows]
        assert entropies == sorted(entropies, reverse=True)
        assert all(r.response_id == row.response_id for r in screen.rows)
        current = screen.current()
        assert current is not None
        assert current.code_id == row.code_id
        await pilot.press("1")
        await settle(pilot)
        saved = decisions(study)
        assert (row.response_id, row.code_id) in saved
        # The cursor went on to the response's next undecided code.
        nxt = screen.current()
        assert nxt is not None
        assert nxt.code_id != row.code_id
        assert nxt.decision is None
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is app.review
        first = queue(app).row_at(0)
        assert first is not None
        assert first.decision is not None


async def test_help_lists_every_key(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = " ".join(key + " " + desc for key, desc in app.screen._keys)
        for word in (
            "1-9",
            "Accept",
            "Does not apply",
            "Skip",
            "Undo",
            "note",
            "Cycle",
            "Filter",
            "Search",
            "Screening",
            "Export",
            "Score",
            "Cancel",
            "Quit",
            "tall"[:0],
        ):
            assert word in text, word
        await pilot.press("escape")
        screen: object = app.screen  # a fresh read: escape closed the help screen
        assert screen is app.review


async def test_command_palette_offers_the_actions(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Accept the model's pick", "Undo", "Export", "Screening panel"} <= titles


async def test_mouse_click_selects_a_row_and_the_wheel_scrolls(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        q = queue(app)
        # Line 0 of the queue is the header; line 3 shows row 2.
        await pilot.click(PairQueue, offset=(10, 3))
        assert q.cursor == 2
        # Pilot has no wheel helper; its private poster sends the real scroll events.
        for _ in range(3):
            await pilot._post_mouse_events([events.MouseScrollDown], PairQueue, offset=(10, 5))
        await pilot.pause()
        assert q.scroll_offset.y > 0
        assert q.cursor == 2  # scrolling moves the view, not the cursor


async def test_p_shows_progress_per_code(study: Study) -> None:
    from tui.screens.progress import ProgressScreen

    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("1", "1", "p")
        screen = app.screen
        assert isinstance(screen, ProgressScreen)
        assert "2 of 90 decided" in str(screen.query_one(".dialog").border_title)
        await pilot.press("escape")
        assert app.screen is app.review


def shown(app: CodecurveApp) -> list[str]:
    """The descriptions the key bar shows."""
    return [description for _, _, description, _ in app.screen.query_one(KeyBar).items]


async def test_the_key_bar_shows_the_keys_that_work_now(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert {"Accept", "Undo", "Help", "Quit"} <= set(shown(app))
        await pilot.press("f")  # in the filter bar, letters pick values: no screen keys
        await pilot.pause()
        assert {"Change", "Jump", "Close"} <= set(shown(app))
        assert "Accept" not in shown(app)
        await pilot.press("a")  # a jump in the bar, not an accept
        assert decisions(study) == {}
        await pilot.press("escape")
        await pilot.pause()
        assert "Accept" in shown(app)
        assert "Change" not in shown(app)
        await pilot.press("tab")  # the detail pane: other keys, the same bar
        await pilot.pause()
        assert "Accept" in shown(app)


async def test_clicking_a_key_in_the_key_bar_presses_it(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        row = queue(app).current
        assert row is not None
        bar = app.screen.query_one(KeyBar)
        text = bar.render_line(0).text
        await pilot.click(KeyBar, offset=(text.index("Accept"), 0))
        await settle(pilot)
        assert decisions(study)[(row.response_id, row.code_id)] == (row.pick, "model")


def test_the_key_bar_leaves_out_keys_from_the_end_but_keeps_help_and_quit() -> None:
    from tui.widgets.keys import fit

    items = [
        (k, k, d, True) for k, d in [("a", "Accept"), ("x", "Not"), ("?", "Help"), ("q", "Quit")]
    ]
    assert fit(items, 80) == (items, True)  # " a Accept  x Not  ? Help  q Quit "
    roomy = sum(len(d) + len(t) + 3 for _, d, t, _ in items)
    assert fit(items, roomy - 1) == (items, False)  # "aAccept xNot ?Help qQuit "
    kept, roomy_ = fit(items, 20)  # "aAccept ?Help qQuit " is 20 cells
    assert [d for _, _, d, _ in kept] == ["Accept", "Help", "Quit"]
    assert not roomy_
    kept, _ = fit(items, 3)
    assert [d for _, _, d, _ in kept] == ["Help", "Quit"]


async def test_a_wide_key_bar_lists_every_key(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot)
        text = app.screen.query_one(KeyBar).render_line(0).text
        for description in ("Accept", "Filter", "Search", "Order", "Note", "Export", "Help"):
            assert description in text


async def test_the_detail_pane_names_another_coder(study: Study) -> None:
    first = study.queries.page(study.scores.active_config_id(), limit=1)[0]
    study.decisions.record(first.response_id, first.code_id, 1, coder="gold")  # an imported label
    app = make_app(study, coder="tester")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home")  # it opens on the first pair nobody decided
        await settle(pilot)
        detail = app.review.detail
        assert detail.row is not None
        assert (detail.row.response_id, detail.row.code_id) == (first.response_id, first.code_id)
        assert "coded by gold" in detail.plain_text
        await pilot.press("1")  # the tester codes it too (the cursor moves on)
        await pilot.press("k")  # back: the latest decision is now their own
        await settle(pilot)
        assert "coded by you" in detail.plain_text
