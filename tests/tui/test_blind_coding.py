"""Blind double coding: the recorded setting, another coder's decisions and the model
hidden until the coder decides, and the shared-sample order."""

from __future__ import annotations

import json
from pathlib import Path

from study.audit.blind import blind_setting, set_blind_coding, shared_order
from study.store import Study
from tests.factories import build_study
from tests.tui.waiting import settle
from tui.app import make_app
from tui.source import HiddenRow, Query
from tui.widgets.queue import PairQueue


def order_of(queue: PairQueue) -> str:
    """The queue's order, read anew (mypy would keep a narrowing across a key press)."""
    return queue.pair_query.order


def first_coder(study: Study, pairs: list[tuple[str, str]]) -> None:
    for rid, cid in pairs:
        value = 1 if cid != "team" else 4
        study.decisions.record(rid, cid, value, coder="ana", blind=True)
        study.decisions.set_note(rid, cid, "ana's reason", coder="ana")


def test_the_setting_is_an_event_with_its_seed(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=5)
    try:
        assert not blind_setting(study).enabled
        on = set_blind_coding(study, True, coder="ana", seed=42)
        assert on.enabled
        assert on.seed == 42
        off = set_blind_coding(study, False, coder="ana")
        assert not off.enabled
        assert off.seed == 42  # the order keeps its seed
        settings = [e for e in study.decisions.events() if e.kind == "setting"]
        assert [json.loads(e.detail or "") for e in settings] == [
            {"blind_coding": True, "seed": 42},
            {"blind_coding": False, "seed": 42},
        ]
        fresh = build_study(tmp_path / "t.codecurve", n=5)
        drawn = set_blind_coding(fresh, True, coder="ana")
        assert drawn.seed > 0
        fresh.close()
    finally:
        study.close()


def test_shared_order_is_seeded_and_stable_under_more_pairs() -> None:
    pairs = [(f"r{i}", c) for i in range(40) for c in ("a", "b")]
    one = shared_order(pairs, seed=1)
    assert sorted(one) == sorted(pairs)
    assert one == shared_order(list(reversed(pairs)), seed=1)
    assert one != shared_order(pairs, seed=2)
    assert one != sorted(pairs)
    # Pairs decided later slot in: the others keep their relative order.
    fewer = shared_order(pairs[:50], seed=1)
    assert [p for p in one if p in set(pairs[:50])] == fewer


async def test_blind_coding_hides_the_other_coder_and_the_model(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=20)
    shared = [(f"r{i}", c) for i in range(1, 7) for c in ("workload", "pay")]
    first_coder(study, shared)
    app = make_app(study, coder="ben", close_study=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        # Without the setting, ana's decisions show.
        seen = app.review.pair_queue.source.page(Query(order="id"), 0, 1)[0]
        assert (seen.response_id, seen.coder, seen.note) == ("r1", "ana", "ana's reason")
        await pilot.press("B")
        await settle(pilot)
        assert blind_setting(study).enabled
        assert "blind coding" in app.review.status_line.render_line(0).text
        queue = app.review.pair_queue
        # The model's orders would give its answer away: the queue is in id order.
        assert queue.pair_query.order == "id"
        for _ in range(6):
            await pilot.press("o")
            assert queue.pair_query.order not in ("entropy", "pick", "confidence")
        for index in range(queue.total):
            row = queue.row_at(index)
            assert row is not None
            assert isinstance(row, HiddenRow)  # ben has decided nothing
            assert row.decision is None
            assert row.coder is None
            assert row.note is None
        # The shared sample: exactly the pairs ana decided, in the seeded order.
        while order_of(queue) != "shared":
            await pilot.press("o")
        seed = blind_setting(study).seed
        listed = [
            (row.response_id, row.code_id)
            for i in range(queue.total)
            if (row := queue.row_at(i)) is not None
        ]
        assert listed == shared_order(shared, seed=seed)
        detail = " ".join(app.review.detail.plain_text.split())
        assert "ana's reason" not in detail
        assert "by ana" not in detail
        assert "Not decided yet" in detail
        assert "◀ model" not in detail
        assert "confidence" not in detail
        # ben decides: his decision is blind; the pair now shows his value and the model.
        first = queue.current
        assert first is not None
        await pilot.press("0")
        await settle(pilot)
        assert (first.response_id, first.code_id, "ben") in study.audit.blind_pairs(coder="ben")
        row = queue.row_at(0)
        assert row is not None
        assert not isinstance(row, HiddenRow)
        assert row.coder == "ben"
        assert row.decision == 0
        assert row.pick is not None
        # Turned off: the latest decision of anyone shows again (a new setting event).
        await pilot.press("B")
        await settle(pilot)
        assert not blind_setting(study).enabled
        assert len([e for e in study.decisions.events() if e.kind == "setting"]) == 2


async def test_the_status_line_counts_the_coders_own_decisions(
    tmp_path: Path,
) -> None:
    study = build_study(tmp_path / "s.codecurve", n=20)
    first_coder(study, [(f"r{i}", c) for i in range(1, 7) for c in ("workload", "pay")])
    app = make_app(study, coder="ben", close_study=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        total = app.review.pair_queue.total
        # A second coder starts at none decided, whatever the first one did.
        assert f"0/{total} decided" in app.review.status_line.render_line(0).text
        await pilot.press("B")
        await settle(pilot)
        assert f"0/{total} decided" in app.review.status_line.render_line(0).text
        await pilot.press("1")
        await settle(pilot)
        assert f"1/{total} decided" in app.review.status_line.render_line(0).text


async def test_shared_is_offered_only_with_another_coders_decisions(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=10)
    app = make_app(study, coder="ben", close_study=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        seen = set()
        for _ in range(6):
            await pilot.press("o")
            seen.add(app.review.pair_queue.pair_query.order)
        assert "shared" not in seen


async def test_blind_coding_is_each_coders_own(tmp_path: Path) -> None:
    path = tmp_path / "s.codecurve"
    study = build_study(path, n=10)
    app = make_app(study, coder="ana", close_study=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("B")
        await settle(pilot)
        assert app.session.blind_coding
    # ana's B does not carry over to ben's session; ana's next session keeps it.
    for coder, blind in (("ben", False), ("ana", True)):
        app = make_app(Study.open(path), coder=coder, close_study=True)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            assert app.session.blind_coding is blind
            assert ("blind coding" in app.review.status_line.render_line(0).text) is blind


async def test_another_coders_decision_is_named_never_you(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=4)
    config_id = study.scores.active_config_id()
    pairs = [(r.response_id, r.code_id) for r in study.queries.page(config_id, limit=100)]
    study.decisions.import_decisions([(r, c, 1) for r, c in pairs], coder="gold")
    app = make_app(study, coder="ana", close_study=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        detail = " ".join(app.review.detail.plain_text.split())
        assert "✓ gold" in detail  # the curve's mark
        assert "coded by gold" in detail
        assert "you" not in detail
