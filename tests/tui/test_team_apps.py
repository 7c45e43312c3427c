"""Two coders' apps open on one study at once: each sees the other's progress within
about a second (the app looks at the study every half second), and under blind double
coding nothing of what the other decided; a second session of one coder is refused."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widget import Widget

from study import Study, StudyLockedError
from study.audit.blind import set_blind_coding
from tests.factories import build_study, synthetic_config, synthetic_scores
from tests.tui.waiting import settle, wait_for
from tui.app import CodecurveApp, make_app
from tui.source import Query, is_hidden


def text_of(widget: Widget) -> str:
    return "\n".join(widget.render_line(y).text for y in range(widget.size.height))


def team_text(app: CodecurveApp) -> str:
    """The progress panel's team part ("" while it is being redrawn)."""
    found = app.screen.query("#progress-team")
    return text_of(found.first()) if found else ""


async def test_two_apps_see_each_others_progress_and_nothing_of_their_decisions(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.codecurve"
    build_study(path, n=20).close()
    with Study.open(path) as lead:  # each coder's own setting
        set_blind_coding(lead, True, coder="ana")
        set_blind_coding(lead, True, coder="ben")
    ana = make_app(path, coder="ana")
    ben = make_app(path, coder="ben")
    async with ana.run_test(size=(140, 40)) as pa, ben.run_test(size=(140, 40)) as pb:
        await settle(pa)
        await settle(pb)
        await pa.press("p")
        await wait_for(pa, lambda: "ben" in team_text(ana))
        assert "ana" not in team_text(ana)
        # ben decides the pair at the top of ben's queue, and notes it.
        row = ben.review.pair_queue.current
        assert row is not None
        key = (row.response_id, row.code_id)
        await pb.press("1")
        await settle(pb)
        assert ben.study.decisions.decision(*key, coder="ben") is not None
        started = time.monotonic()
        await wait_for(pa, lambda: "ben" in team_text(ana) and " 1 " in f" {team_text(ana)} ")
        took = time.monotonic() - started
        print(f"ana saw ben's decision counted after {took:.2f} s")
        # Nothing of ben's decision reaches ana: not in her queue, status or progress.
        await pa.press("escape")
        await settle(pa)
        mine = ana.review.pair_queue.source.page(Query(order="id"), 0, 1000)
        shown = next(r for r in mine if (r.response_id, r.code_id) == key)
        assert shown.decision is None
        assert is_hidden(shown)  # and the model's answer is still hidden from her
        assert "0/" in ana.review.status_line.render_line(0).text
        screen = "\n".join(text_of(w) for w in ana.screen.query("*") if w.size.height)
        assert re.search(r"\bben\b", screen) is None
        # ana's decisions reach ben's count the same way.
        await pa.press("1")
        await settle(pa)
        await pb.press("p")
        await wait_for(pb, lambda: "ana" in team_text(ben) and " 1 " in f" {team_text(ben)} ")


async def test_scores_and_a_codebook_revision_arrive_live(tmp_path: Path) -> None:
    path = tmp_path / "s.codecurve"
    build_study(path, n=10, scored=False).close()
    app = make_app(path, coder="ana")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert app.session.config_id is None
        # Another session scores the study (as the one scoring process would).
        with Study.open(path, coder="lead") as lead:
            config = synthetic_config(lead.codebook)
            config_id = lead.scores.ensure_config(config)
            lead.scores.store(config_id, synthetic_scores(lead, config))
        await wait_for(pilot, lambda: app.session.config_id == config_id)
        await settle(pilot)
        row = app.review.pair_queue.current
        assert row is not None
        assert row.pick is not None  # the scores are shown
        # And archives a code: it leaves this coder's queue and codebook.
        with Study.open(path) as lead:
            kept = tuple(c for c in lead.codebook.codes if c.id != "pay")
            lead.versions.revise(dataclasses.replace(lead.codebook, codes=kept))
        await wait_for(pilot, lambda: "pay" not in app.session.codes)
        await settle(pilot)
        rows = app.review.pair_queue.source.page(Query(order="id"), 0, 1000)
        assert rows
        assert "pay" not in {r.code_id for r in rows}


def test_the_same_coder_twice_is_refused_with_where_it_runs(tmp_path: Path) -> None:
    path = tmp_path / "s.codecurve"
    build_study(path, n=5).close()
    first = make_app(path, coder="ana")
    try:
        with pytest.raises(StudyLockedError, match=r"coder 'ana' already has this study open"):
            make_app(path, coder="ana")
        make_app(path, coder="ben").study.close()
    finally:
        first.study.close()


async def test_a_decision_on_a_codebook_revised_meanwhile_is_refused_then_shown(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.codecurve"
    build_study(path, n=10).close()
    app = make_app(path, coder="ana")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        row = app.review.pair_queue.current
        assert row is not None
        with Study.open(path) as lead:
            kept = tuple(c for c in lead.codebook.codes if c.id != row.code_id)
            lead.versions.revise(dataclasses.replace(lead.codebook, codes=kept))
        # Before the app's next look at the study: the key reaches the old queue.
        app.review.action_decide(1)
        assert app.study.decisions.count() == 0
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert any("changed in another session" in m for m in said), said
        await wait_for(pilot, lambda: row.code_id not in app.session.codes)
        await settle(pilot)
        rows = app.review.pair_queue.source.page(Query(order="id"), 0, 1000)
        assert row.code_id not in {r.code_id for r in rows}


async def test_the_live_look_passes_over_this_sessions_own_decisions(tmp_path: Path) -> None:
    """The app's own decision is no news to its live look (no second reload of the
    queue after each key); another coder's decision is."""
    path = tmp_path / "s.codecurve"
    build_study(path, n=20).close()
    app = make_app(path, coder="ana")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert app.live.poll() is None
        reloads: list[bool] = []
        queue = app.review.pair_queue
        reload = queue.reload

        def counting(**kwargs: Any) -> None:
            reloads.append(True)
            reload(**kwargs)

        queue.reload = counting  # type: ignore[method-assign]
        await pilot.press("1")
        await pilot.press("2")
        await settle(pilot)
        assert app.live.poll() is None
        app.follow_team()
        assert reloads == []
        with Study.open(path, coder="ben") as ben:
            row = ben.queries.page(ben.scores.active_config_id(), order="id", limit=1)[0]
            ben.decisions.record(row.response_id, row.code_id, 1, coder="ben")
        await wait_for(pilot, lambda: reloads)
