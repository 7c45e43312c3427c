"""The screening panel's delegation plan: shown per code, applied after a confirmation,
undone with u, and the pairs left for review."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from textual.pilot import Pilot

from study.store import Study
from tests.study.test_audit import code_audit_blind, simulated_study
from tests.tui.waiting import settle
from tui.app import make_app
from tui.screens.confirm import ConfirmScreen
from tui.widgets.screening import ScreeningPanel


@pytest.fixture(scope="module")
def audited_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, truth = simulated_study(tmp_path_factory.mktemp("d") / "d.codecurve", n=1200, seed=11)
    with Study.open(path) as study:
        study.audit.draw(per_code=400, seed=5)
        code_audit_blind(study, truth)
    return path


@pytest.fixture
def audited(audited_file: Path, tmp_path: Path) -> Path:
    target = tmp_path / audited_file.name
    shutil.copy(audited_file, target)
    return target


def delegation_text(panel: ScreeningPanel) -> str:
    from rich.console import Console
    from textual.widgets import Static

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(panel.query_one("#screening-delegation", Static).content)
    return console.export_text()


def delegated(study: Study) -> int:
    with study.snapshot() as conn:
        return int(
            conn.execute("SELECT COUNT(*) FROM annotations WHERE source = 'delegated'").fetchone()[
                0
            ]
        )


async def test_the_plan_is_shown_applied_after_confirmation_and_undone(audited: Path) -> None:
    from study.analysis.delegation_plan import plan_delegation

    study = Study.open(audited)
    plan = plan_delegation(study, coder="ana")
    assert plan.delegated > 0
    app = make_app(study, coder="ana", close_study=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        panel = app.review.screening
        assert panel.plan is not None
        text = delegation_text(panel)
        assert "800 of 800 audit pairs coded blind by you" in text
        for code in plan.codes:
            assert code.code_name in text
            if code.certified:
                assert f"≥ {code.delegation.threshold:.3f}" in text
                assert f"{code.delegation.upper_bound:.1%}" in text
        assert f"{plan.delegated:,}" in text
        assert f"{plan.left:,}" in text
        assert "d delegates" in text
        panel.focus()
        # d asks first; n declines and nothing is written.
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert delegated(study) == 0
        # d, then y: the plan's pairs are delegated under the coder's name.
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert delegated(study) == plan.delegated
        queue = app.review.pair_queue
        assert any(
            (row := queue.row_at(i)) is not None and row.source == "delegated"
            for i in range(queue.total - 200, queue.total)  # the most confident pairs
        )
        # u takes the whole delegation back as one action.
        queue.focus()
        await pilot.press("u")
        await settle(pilot)
        assert delegated(study) == 0
        assert "the delegation" in " ".join(str(n.message) for n in app._notifications)


async def test_left_for_review_lists_undecided_pairs_outside_the_audit(audited: Path) -> None:
    from study.analysis.delegation_plan import plan_delegation

    study = Study.open(audited)
    config_id = study.scores.active_config_id()
    plan = plan_delegation(study, coder="ana")
    study.delegations.apply(plan, coder="ana")
    sample = study.audit.sample()
    assert sample is not None
    left = study.queries.count(config_id, status="review")
    assert left == plan.left
    rows = study.queries.page(config_id, status="review", order="entropy", limit=5000)
    assert len(rows) == plan.left
    assert all(r.decision is None for r in rows)
    assert not any(sample.is_audit(r.response_id, r.code_id) for r in rows)
    entropies = [r.norm_entropy for r in rows if r.norm_entropy is not None]
    assert entropies == sorted(entropies, reverse=True)
    app = make_app(study, coder="ana", close_study=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        app.review.screening.focus()
        await pilot.press("l")
        await settle(pilot)
        queue = app.review.pair_queue
        assert queue.pair_query.status == "review"
        assert queue.pair_query.order == "entropy"
        assert queue.total == plan.left
        assert "left for review" in app.review.status_line.render_line(0).text


async def test_no_audit_says_how_to_draw_one(tmp_path: Path) -> None:
    from tests.factories import build_study

    study = build_study(tmp_path / "s.codecurve", n=10)
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        panel = app.review.screening
        assert panel.plan is None
        said = delegation_text(panel)
        assert "draw an audit sample, then code it blind (b)" in said
        assert "codecurve" not in said
        panel.focus()
        await pilot.press("d")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        # b without a sample says so and keeps the order.
        await pilot.press("b")
        await pilot.pause()
        assert app.review.pair_queue.pair_query.order == "entropy"


async def test_b_in_the_panel_opens_the_audit(tmp_path: Path) -> None:
    from tests.factories import build_study

    study = build_study(tmp_path / "s.codecurve", n=20)
    study.audit.draw(per_code=5, seed=1)
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        text = delegation_text(app.review.screening)
        assert "0 of 15 audit pairs coded blind by you" in text
        app.review.screening.focus()
        await pilot.press("b")
        await pilot.pause()
        queue = app.review.pair_queue
        assert queue.pair_query.order == "audit"
        assert queue.has_focus
        assert "audit 0/15 blind" in app.review.status_line.render_line(0).text


def test_panel_with_a_plan_140x40(snap_compare: object, audited: Path) -> None:
    study = Study.open(audited)
    app = make_app(study, coder="ana", close_study=True)

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        await pilot.press("tab")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(140, 40), run_before=run_before)  # type: ignore[operator]
