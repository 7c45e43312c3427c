"""Response mode follows the queue's filter and its stated order; the filter bar's
letters reach every value; ``d`` always says why nothing is delegated."""

from __future__ import annotations

from pathlib import Path

from study.intake.responses import ResponseTable
from study.store import Study
from tests.factories import build_study, synthetic_config, synthetic_scores
from tests.tui.test_response_mode import YES_NO, yes_no_study
from tests.tui.waiting import settle, wait_for
from tui.app import make_app
from tui.screens.response import ResponseScreen
from tui.source import Query


def two_waves(path: Path) -> Study:
    """Six responses, then a second wave of four, every pair scored."""
    study = yes_no_study(path)
    study.versions.add_responses(
        ResponseTable.from_texts({f"w{i}": f"Second wave comment {i}" for i in range(1, 5)})
    )
    config = synthetic_config(YES_NO)
    study.scores.store(study.scores.ensure_config(config), synthetic_scores(study, config))
    return study


def notices(app: object) -> list[str]:
    return [n.message for n in app._notifications]  # type: ignore[attr-defined]


async def test_response_mode_walks_the_filtered_wave_and_skips_finished_responses(
    tmp_path: Path,
) -> None:
    study = two_waves(tmp_path / "s.codecurve")
    wave_two = set(study.versions.wave_response_ids(2))
    assert wave_two == {"w1", "w2", "w3", "w4"}
    # One response of wave 2 is finished already: ] must pass over it.
    for code in ("staff", "wait", "clean"):
        study.decisions.record("w2", code, 0, coder="tester")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.review.set_query(Query(wave=2))
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResponseScreen)
        visited = [screen.response_id]
        for _ in range(5):
            await pilot.press("right_square_bracket")
            if screen.response_id == visited[-1]:
                break
            visited.append(screen.response_id)
        assert set(visited) == wave_two - {"w2"}
        assert len(visited) == 3
        assert any("further on" in m for m in notices(app))
        subtitle = str(screen.query_one("#response-text-box").border_subtitle)
        assert "of 4" in subtitle
        assert "wave 2" in subtitle
        assert "3 with codes left" in subtitle
        # [ goes back to any response of the filter, finished or not (to look again).
        await pilot.press("left_square_bracket")
        assert screen.response_id in wave_two


async def test_response_mode_lands_on_the_least_sure_undecided_code(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=12)
    config_id = study.scores.active_config_id()
    first = study.queries.response_page(config_id, order="entropy", limit=1)[0]
    rows = sorted(
        study.queries.of_response(config_id, first),
        key=lambda r: -(r.norm_entropy or 0.0),
    )
    # The least sure code of the first response is decided: the cursor goes to the next.
    study.decisions.record(first, rows[0].code_id, 1, coder="tester")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResponseScreen)
        assert screen.response_id == first
        assert [r.code_id for r in screen.rows] == [r.code_id for r in rows]
        assert screen.current().code_id == rows[1].code_id  # type: ignore[union-attr]
        assert "least sure code first" in str(
            screen.query_one("#response-text-box").border_subtitle
        )


async def test_a_letter_in_the_filter_bar_reaches_the_status_from_the_code_field(
    study: Study,
) -> None:
    study.decisions.record("r1", "pay", 1, coder="tester")
    study.decisions.record("r1", "pay", 0, coder="other")
    app = make_app(study, coder="tester")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        bar = app.review.filter_bar
        assert bar.field == "code"  # the bar opens on the code; no code starts with c
        await pilot.press("c")
        await settle(pilot)
        assert (bar.field, bar.status) == ("status", "human")
        await pilot.press("c")
        await settle(pilot)
        assert bar.status == "disagreement"
        assert app.review.pair_queue.total == 1


async def test_d_says_why_nothing_is_delegated(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("d")  # the queue focused: the panel opens, and says what d does
        await settle(pilot)
        assert app.review.screening_shown
        assert any("delegation plan is in the screening panel" in m for m in notices(app))
        await pilot.press("d")  # no audit sample: says so, not a bare "nothing"
        await wait_for(pilot, lambda: any("No audit sample" in m for m in notices(app)))
        await pilot.press("tab", "d")  # the same from the focused panel
        await settle(pilot)
        said = [m for m in notices(app) if m.startswith("Nothing to delegate")]
        assert said
        assert all("audit" in m for m in said)
