"""The blind audit in the app: its order, the model hidden until a decision, blind flags,
the status line's progress, and the response view's audit order."""

from __future__ import annotations

from pathlib import Path

from study.store import Study
from tests.factories import build_study
from tests.tui.waiting import settle
from tui.app import make_app
from tui.source import HiddenRow, Query
from tui.widgets.queue import HIDDEN_MARK


def audited(path: Path, *, per_code: int = 6) -> Study:
    study = build_study(path, n=30)
    study.audit.draw(per_code=per_code, seed=3)
    return study


def row_text(app: object, index: int) -> str:
    queue = app.review.pair_queue  # type: ignore[attr-defined]
    return queue.render_line(index + 1 - int(queue.scroll_offset.y)).text


def test_the_audit_order_is_the_sample_queue(tmp_path: Path) -> None:
    study = audited(tmp_path / "s.codecurve")
    try:
        sample = study.audit.sample()
        assert sample is not None
        expected = list(sample.queue())
        config_id = study.scores.active_config_id()
        listed = [
            (r.response_id, r.code_id)
            for r in study.queries.page(config_id, order="audit", limit=1000)
        ]
        assert listed == expected
        assert study.queries.count(config_id, order="audit") == len(expected)
        # Paged: two pages join up, and backwards is the same list reversed.
        first = study.queries.page(config_id, order="audit", limit=7)
        rest = study.queries.page(config_id, order="audit", offset=7, limit=1000)
        assert [(r.response_id, r.code_id) for r in first + rest] == expected
        back = study.queries.page(config_id, order="audit", reverse=True, limit=1000)
        assert [(r.response_id, r.code_id) for r in back] == expected[::-1]
        for index in (0, 5, len(expected) - 1):
            rid, cid = expected[index]
            assert study.queries.position(config_id, rid, cid, order="audit") == index
        # Filtered by code: that code's audit pairs, in the same order.
        pay = [p for p in expected if p[1] == "pay"]
        listed_pay = study.queries.page(config_id, order="audit", code_id="pay", limit=1000)
        assert [(r.response_id, r.code_id) for r in listed_pay] == pay
        # A pair outside the sample is not in the order.
        outside = next(r for r in study.response_ids() if not sample.is_audit(r, "pay"))
        assert study.queries.position(config_id, outside, "pay", order="audit") is None
        # Response order: the audit's responses first, in audit order.
        responses = study.queries.response_page(config_id, order="audit", limit=6)
        assert responses == list(sample.permutation[:6])
    finally:
        study.close()


def test_no_audit_sample_lists_nothing(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=10)
    try:
        assert study.queries.page(study.scores.active_config_id(), order="audit") == []
        assert study.queries.count(study.scores.active_config_id(), order="audit") == 0
    finally:
        study.close()


async def test_the_model_is_hidden_until_the_coder_decides(tmp_path: Path) -> None:
    study = audited(tmp_path / "s.codecurve")
    sample = study.audit.sample()
    assert sample is not None
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        # o reaches the audit order (entropy -> id -> pick -> confidence -> audit).
        for _ in range(4):
            await pilot.press("o")
        queue = app.review.pair_queue
        assert queue.pair_query.order == "audit"
        assert queue.total == len(sample.queue())
        row = queue.current
        assert isinstance(row, HiddenRow)
        assert (row.response_id, row.code_id) == sample.queue()[0]
        scored = study.queries.page(study.scores.active_config_id(), order="id", limit=1000)
        truth = next(r for r in scored if (r.response_id, r.code_id) == sample.queue()[0])
        assert truth.pick_label is not None
        assert truth.confidence is not None
        confidence = f"{truth.confidence:.2f}"[1:]
        line = row_text(app, 0)
        assert HIDDEN_MARK in line
        assert confidence not in line
        detail = " ".join(app.review.detail.plain_text.split())
        assert "◀ model" not in detail
        assert "confidence" not in detail
        assert "uncertainty" not in detail
        assert "hidden until you decide" in detail
        assert "a to accept" not in detail
        status = app.review.status_line.render_line(0).text
        assert f"audit 0/{sample.total} blind" in status
        # Accepting the hidden pick is refused and saves nothing.
        await pilot.press("a")
        assert study.decisions.decision(row.response_id, row.code_id, coder="tester") is None
        # Decide it: saved as blind, and the model's answer is shown on its row.
        await pilot.press("1")
        await settle(pilot)
        decided = queue.row_at(0)
        assert decided is not None
        assert not isinstance(decided, HiddenRow)
        assert decided.pick == truth.pick
        line = row_text(app, 0)
        assert HIDDEN_MARK not in line
        assert confidence in line
        assert (row.response_id, row.code_id, "tester") in study.audit.blind_pairs(coder="tester")
        status = app.review.status_line.render_line(0).text
        assert f"audit 1/{sample.total} blind" in status
        # The cursor moved on to the next audit pair, hidden again.
        assert queue.cursor == 1
        assert isinstance(queue.current, HiddenRow)
        # Back on the decided pair, the detail pane shows the model's curve.
        await pilot.press("k")
        await pilot.pause()
        detail = app.review.detail.plain_text
        assert "◀ model" in detail
        assert "confidence" in detail


async def test_an_undone_blind_decision_leaves_the_model_shown_and_the_next_not_blind(
    tmp_path: Path,
) -> None:
    """Once decided, the coder has seen the model's answer: undo does not hide it again,
    and the decision made after the undo is not counted as blind."""
    study = audited(tmp_path / "s.codecurve")
    sample = study.audit.sample()
    assert sample is not None
    first = sample.queue()[0]
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        for _ in range(4):
            await pilot.press("o")
        queue = app.review.pair_queue
        assert isinstance(queue.current, HiddenRow)
        await pilot.press("1")
        await settle(pilot)
        assert (*first, "tester") in study.audit.blind_pairs(coder="tester")
        await pilot.press("u")
        await settle(pilot)
        row = queue.current
        assert row is not None
        assert (row.response_id, row.code_id) == first
        assert row.decision is None
        assert not isinstance(row, HiddenRow)
        assert row.pick is not None
        assert HIDDEN_MARK not in row_text(app, 0)
        assert "audit 0/" in app.review.status_line.render_line(0).text
        await pilot.press("0")
        await settle(pilot)
        assert study.decisions.decision(*first, coder="tester") is not None
        assert study.audit.blind_pairs(coder="tester") == set()
    # The log remembers it: a new session does not hide that pair either.
    reopened = Study.open(tmp_path / "s.codecurve")
    try:
        assert first in reopened.decisions.decided_ever(coder="tester")
        assert reopened.decisions.decided_ever(coder="someone else") == set()
    finally:
        reopened.close()


async def test_outside_the_audit_order_decisions_are_not_blind(tmp_path: Path) -> None:
    study = audited(tmp_path / "s.codecurve")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        row = app.review.pair_queue.current
        assert row is not None
        assert not isinstance(row, HiddenRow)
        assert row.pick is not None
        await pilot.press("1")
        await settle(pilot)
        assert study.audit.blind_pairs(coder="tester") == set()
        assert "audit" not in app.review.status_line.render_line(0).text


async def test_o_skips_the_audit_without_a_sample(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=10)
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        seen = set()
        for _ in range(6):
            await pilot.press("o")
            seen.add(app.review.pair_queue.pair_query.order)
        assert seen == {"entropy", "id", "pick", "confidence"}


async def test_the_response_view_hides_the_model_in_audit_order(tmp_path: Path) -> None:
    study = audited(tmp_path / "s.codecurve")
    sample = study.audit.sample()
    assert sample is not None
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        app.review.set_query(Query(order="audit"))
        await pilot.press("v")
        await settle(pilot)
        from tui.screens.response import ResponseScreen

        screen = app.screen
        assert isinstance(screen, ResponseScreen)
        assert screen.order == "audit"
        assert screen.response_id == sample.permutation[0]
        assert all(isinstance(r, HiddenRow) for r in screen.rows)
        table = screen.codes_table
        cells = [str(c) for c in table.get_row_at(0)]
        assert "blind" in cells
        assert all(r.pick_label is None and r.confidence is None for r in screen.rows)
        code = screen.rows[0].code_id
        await pilot.press("1")
        await pilot.pause()
        assert (sample.permutation[0], code, "tester") in study.audit.blind_pairs(coder="tester")
        decided = next(r for r in screen.rows if r.code_id == code)
        assert not isinstance(decided, HiddenRow)
        assert decided.pick is not None
        # ] goes to the next audit response.
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert screen.response_id == sample.permutation[1]
