"""The response list (``V``): paged from the study, its orders, enter into the response
view and back, memo and note marks, and blind coding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from study.audit.blind import set_blind_coding
from study.queries.pairs import Queries
from tests.factories import build_study
from tests.tui.waiting import settle, wait_for
from tui.app import CodecurveApp, make_app
from tui.screens.help import HelpScreen
from tui.screens.response import ResponseScreen
from tui.screens.responses import ResponsesScreen
from tui.screens.review import ReviewScreen
from tui.widgets.paged import PAGE_SIZE
from tui.widgets.queue_cells import HIDDEN_MARK
from tui.widgets.response_list import ResponseList


def listing(app: CodecurveApp) -> ResponseList:
    screen = app.screen
    assert isinstance(screen, ResponsesScreen)
    return screen.response_list


def line(app: CodecurveApp, index: int) -> str:
    """Row ``index`` of the list as drawn (it must be on screen)."""
    rows = listing(app)
    return rows.render_line(index + 1 - int(rows.scroll_offset.y)).text


def order_of(rows: ResponseList) -> str:
    """The list's order, read anew (mypy would keep a narrowing across a key press)."""
    return rows.response_query.order


def shown_ids(app: CodecurveApp, n: int) -> list[str]:
    rows = listing(app)
    return [row.response_id for i in range(n) if (row := rows.row_at(i)) is not None]


async def test_v_lists_the_responses_least_sure_first(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=30)
    config_id = study.scores.active_config_id()
    expected = study.queries.responses(config_id, limit=100)
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("V")
        await settle(pilot)
        rows = listing(app)
        assert rows.total == 30
        assert shown_ids(app, 30) == [r.response_id for r in expected]
        first = line(app, 0)
        assert first.startswith(expected[0].response_id)
        assert f"{expected[0].max_entropy:.2f}" in first
        assert "0/3" in first
        assert "H max" in rows.render_line(0).text
        box = app.screen.query_one("#responses-box")
        assert "1 of 30 responses" in str(box.border_subtitle)
        assert "least sure code first" in str(box.border_subtitle)
        await pilot.press("down", "down")
        assert rows.cursor == 2
        assert "3 of 30" in str(box.border_subtitle)
        # The keys and how to read the list are on ?.
        await pilot.press("question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        keys = dict(help_screen._keys)
        assert {"o", "O", "m", "esc, q"} <= set(keys)
        assert any(key.startswith("Open:") for key in keys.values())
        shot = app.export_screenshot().replace("&#160;", " ")
        assert "Reading the list" in shot
        assert "least sure code" in shot
        await pilot.press("escape", "escape")
        await settle(pilot)
        assert app.screen is app.review


async def test_the_review_help_lists_the_response_list_key(tmp_path: Path) -> None:
    app = make_app(build_study(tmp_path / "s.codecurve", n=3), coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        keys = dict(help_screen._keys)
        assert keys["V"].startswith("Responses:")
        assert "✎¶" in dict(help_screen._legend)


async def test_o_cycles_the_orders_and_shift_o_reverses(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=20)
    config_id = study.scores.active_config_id()
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("V")
        await settle(pilot)
        rows = listing(app)
        await pilot.press("o")  # no audit sample: entropy, id, entropy
        assert rows.response_query.order == "id"
        assert shown_ids(app, 3) == ["r1", "r2", "r3"]
        await pilot.press("O")
        assert rows.response_query.reverse
        assert shown_ids(app, 2) == ["r20", "r19"]
        assert "reversed: response id" in str(
            app.screen.query_one("#responses-box").border_subtitle
        )
        await pilot.press("o")
        assert (rows.response_query.order, rows.response_query.reverse) == ("entropy", False)
        assert shown_ids(app, 20) == study.queries.response_page(config_id, limit=100)
    study.close()


async def test_o_offers_the_audit_when_there_is_a_sample(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=20)
    study.audit.draw(per_code=3, seed=5)
    config_id = study.scores.active_config_id()
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("V", "o", "o")
        await settle(pilot)
        rows = listing(app)
        assert rows.response_query.order == "audit"
        assert shown_ids(app, 20) == study.queries.response_page(
            config_id, order="audit", limit=100
        )
        assert rows.blind  # the audit hides the model until the coder decides
    study.close()


async def test_enter_codes_a_response_and_back_shows_it_coded(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=30)
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("V")
        await settle(pilot)
        await pilot.press("down", "down", "down")
        chosen = listing(app).current
        assert chosen is not None
        assert chosen.decided == 0
        await pilot.press("enter")
        await settle(pilot)
        view = app.screen
        assert isinstance(view, ResponseScreen)
        assert view.response_id == chosen.response_id
        await pilot.press("1", "1")  # two of its three codes
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        rows = listing(app)
        assert rows.cursor == 3
        current = rows.current
        assert current is not None
        assert (current.response_id, current.decided) == (chosen.response_id, 2)
        assert "2/3" in line(app, 3)
        # ] in the view walks on in the list's order; back, the cursor is where it ended.
        following = rows.row_at(4)
        assert following is not None
        await pilot.press("enter", "right_square_bracket")
        await settle(pilot)
        assert isinstance(app.screen, ResponseScreen)
        assert app.screen.response_id == following.response_id
        await pilot.press("escape")
        await settle(pilot)
        assert rows.cursor == 4
        # The queue of pairs below caught up with the decisions too.
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)
        assert app.review.pair_queue.total == 90
        decided = [
            r for r in study.queries.page(study.scores.active_config_id(), limit=100) if r.decided
        ]
        assert len(decided) == 2


async def test_the_view_reversed_there_keeps_its_order_back_here(tmp_path: Path) -> None:
    app = make_app(build_study(tmp_path / "s.codecurve", n=10), coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("V", "o", "enter", "O", "left_square_bracket")
        await settle(pilot)
        view = app.screen
        assert isinstance(view, ResponseScreen)
        assert view.response_id == "r2"  # id order reversed: r1 is last, r2 before it
        await pilot.press("escape")
        await settle(pilot)
        rows = listing(app)
        assert (rows.response_query.order, rows.response_query.reverse) == ("id", True)
        assert rows.current is not None
        assert rows.current.response_id == "r2"
        assert rows.cursor == 8


async def test_memo_marks_in_the_pair_queue_and_the_list(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=10)
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        queue = app.review.pair_queue
        assert queue.render_line(0).text.rstrip().endswith("✎¶")  # the header names both
        assert "¶" not in queue.render_line(1).text
        row = queue.current
        assert row is not None
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("m", *"sarcastic", "enter")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        # Every pair of that response shows the memo mark; others do not.
        for y in range(1, 20):
            shown = queue.row_at(int(queue.scroll_offset.y) + y - 1)
            if shown is None:
                continue
            text = queue.render_line(y).text.rstrip()
            assert text.endswith("¶") == (shown.response_id == row.response_id), text
        # A note on a pair and the memo are told apart.
        await pilot.press("c", *"check", "enter")
        await settle(pilot)
        assert queue.render_line(queue.cursor + 1).text.rstrip().endswith("✎¶")
        # The list marks the response with both.
        await pilot.press("V")
        await settle(pilot)
        rows = listing(app)
        index = study.queries.response_position(study.scores.active_config_id(), row.response_id)
        rows.move_to(index)
        assert line(app, index).rstrip().endswith("✎¶")
        # m in the list writes a memo on the highlighted response.
        other = rows.row_at(0 if index else 1)
        assert other is not None
        rows.move_to(0 if index else 1)
        await pilot.press("m", *"ask ben", "enter")
        await settle(pilot)
        assert study.decisions.memo(other.response_id, coder="tester") == "ask ben"
        assert line(app, rows.cursor).rstrip().endswith("¶")


async def test_blind_coding_hides_entropy_until_a_response_is_done(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=12)
    set_blind_coding(study, True, coder="tester")  # each coder's own setting
    for code, value in (("workload", 1), ("pay", 0), ("team", 3)):
        study.decisions.record("r2", code, value, coder="tester")
    study.decisions.record("r3", "pay", 1, coder="tester")
    study.decisions.record("r4", "pay", 1, coder="ana")  # another coder's: not shown
    study.decisions.set_memo("r5", "ana's memo", coder="ana")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("V")
        await settle(pilot)
        rows = listing(app)
        assert rows.blind
        assert rows.response_query.order == "id"  # uncertainty would give the model away
        await pilot.press("o")
        assert rows.response_query.order == "id"  # ... and o does not offer it
        texts = {f"r{i + 1}": line(app, i) for i in range(12)}
        assert HIDDEN_MARK not in texts["r2"]
        assert "3/3" in texts["r2"]
        for rid in ("r1", "r3", "r4"):
            assert HIDDEN_MARK in texts[rid]
        assert "1/3" in texts["r3"]
        assert "0/3" in texts["r4"]
        assert not texts["r5"].rstrip().endswith("¶")
        assert all(
            row.max_entropy is None
            for i in range(12)
            if (row := rows.row_at(i)) and not row.complete
        )


async def test_the_audit_order_hides_entropy_until_a_response_is_done(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=20)
    study.audit.draw(per_code=3, seed=5)
    config_id = study.scores.active_config_id()
    first = study.queries.response_page(config_id, order="audit", limit=1)[0]
    for code, value in (("workload", 1), ("pay", 0), ("team", 3)):
        study.decisions.record(first, code, value, coder="tester", blind=True)
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("o", "o", "o", "o")  # the pair queue in the audit order
        assert app.review.pair_queue.pair_query.order == "audit"
        await pilot.press("V")  # the list opens in the audit order too
        await settle(pilot)
        rows = listing(app)
        assert rows.response_query.order == "audit"
        assert HIDDEN_MARK not in line(app, 0)
        assert "3/3" in line(app, 0)
        assert HIDDEN_MARK in line(app, 1)
        await pilot.press("o")  # back to the uncertainty order: no longer blind
        assert order_of(rows) == "entropy"
        assert not rows.blind
        assert HIDDEN_MARK not in line(app, 1)
    study.close()


@pytest.mark.parametrize("size", [(80, 24), (50, 10)])
async def test_the_list_reads_a_page_at_a_time(
    tmp_path: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    study = build_study(tmp_path / "s.codecurve", n=400)
    asked: list[tuple[int, int]] = []
    original = Queries.responses

    def spy(self: Queries, *args: Any, **kwargs: Any) -> Any:
        asked.append((kwargs.get("offset", 0), kwargs.get("limit", 40)))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Queries, "responses", spy)
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("V")
        await settle(pilot)
        assert listing(app).total == 400
        assert asked
        assert all(limit <= PAGE_SIZE for _, limit in asked)
        assert len({offset for offset, _ in asked}) <= 2
        await pilot.press("G")
        await settle(pilot)
        assert listing(app).cursor == 399
        assert len(asked) <= 4


async def test_scores_that_arrive_show_in_the_open_list(tmp_path: Path) -> None:
    """Scoring goes on while the coder looks at the response list: each stored batch
    shows there, not only on the next reload."""
    import threading

    from scoring import FakeBackend

    gate = threading.Event()

    study = build_study(tmp_path / "s.codecurve", n=12, scored=False)
    app = make_app(
        study,
        backend_factory=lambda: FakeBackend(gate=gate, gate_from=1),
        coder="tester",
        batch_size=6,
        score_on_open=True,
        close_study=True,
    )
    async with app.run_test(size=(100, 30)) as pilot:
        # The first batch stored, the second held at the gate.
        await wait_for(
            pilot, lambda: study.scores.scored_count(study.scores.active_config_id() or 0) == 6
        )
        await pilot.pause()  # not settle(): the scoring worker is held at the gate
        await pilot.press("V")
        await pilot.pause()
        rows = listing(app)
        scored = [r.scored for i in range(rows.total) if (r := rows.row_at(i)) is not None]
        assert 0 < sum(1 for n in scored if n) < rows.total  # some responses scored
        gate.set()
        await wait_for(pilot, lambda: not app.scoring)
        await settle(pilot)
        rows = listing(app)  # still the list on top
        found = [rows.row_at(i) for i in range(rows.total)]
        assert all(r is not None and r.max_entropy is not None for r in found)
        assert f"{found[0].max_entropy:.2f}" in line(app, 0)  # type: ignore[union-attr]


async def test_the_list_under_the_response_view_catches_up_once(tmp_path: Path) -> None:
    """Decisions in the response view leave the list below it to read its rows again
    once, when it is shown, not on every key."""
    app = make_app(build_study(tmp_path / "s.codecurve", n=10), coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("V")
        await settle(pilot)
        rows = listing(app)
        reloads = 0
        reload = rows.reload

        def counted(**options: Any) -> None:
            nonlocal reloads
            reloads += 1
            reload(**options)

        rows.reload = counted  # type: ignore[method-assign]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ResponseScreen)
        await pilot.press("1", "1", "1")
        await settle(pilot)
        assert reloads == 0
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ResponsesScreen)
        assert reloads == 1
        assert "3/3" in line(app, 0)


async def test_the_list_opens_on_the_first_response_left_to_code(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=10)
    first = study.queries.responses(study.scores.active_config_id(), limit=3)
    for summary in first:  # the three least sure responses, every code decided
        for code in study.codebook.codable:
            study.decisions.record(summary.response_id, code.id, 1, coder="tester")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("V")
        await settle(pilot)
        rows = listing(app)
        assert [r.response_id for r in (rows.row_at(i) for i in range(3)) if r] == [
            s.response_id for s in first
        ]
        assert rows.cursor == 3
        current = rows.current
        assert current is not None
        assert not current.complete
        assert "4 of 10 responses" in str(app.screen.query_one("#responses-box").border_subtitle)
