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


async def test_the_checklist_records_ticked_codes_yes_and_the_rest_no(tmp_path: Path) -> None:
    study = yes_no_study(tmp_path / "s.codecurve")
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResponseScreen)
        first = screen.response_id
        codes = [r.code_id for r in screen.rows]
        await pilot.press("down", "space")  # tick the second code; the cursor stays on it
        assert screen.ticked == {codes[1]}
        assert screen.current().code_id == codes[1]  # type: ignore[union-attr]
        assert "☑ tick" in str(screen.codes_table.get_row(codes[1])[5])
        await pilot.press("down", "space")  # the third: arrows move, space ticks
        assert screen.ticked == {codes[1], codes[2]}
        await pilot.press("space")  # and untick it: a toggle, on the same code
        assert screen.ticked == {codes[1]}
        assert screen.current().code_id == codes[2]  # type: ignore[union-attr]
        await pilot.press("enter")
        await settle(pilot)
        decided = {code: study.decisions.decision(first, code, coder="tester") for code in codes}
        assert {code: d.value for code, d in decided.items() if d is not None} == {
            codes[0]: 0,
            codes[1]: 1,
            codes[2]: 0,
        }
        assert screen.response_id != first  # on to the next response
        assert screen.ticked == set()
        await pilot.press("u")  # one decision taken back at a time
        await settle(pilot)
        assert (
            sum(study.decisions.decision(first, code, coder="tester") is not None for code in codes)
            == 2
        )


async def test_the_checklist_leaves_ordinal_codes_to_their_digits(study: Study) -> None:
    app = make_app(study, coder="tester")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResponseScreen)
        first = screen.response_id
        ordinal = next(r for r in screen.rows if not app.session.is_yes_no(r.code_id))
        screen.codes_table.move_cursor(row=screen.rows.index(ordinal))
        await pilot.press("space")
        assert screen.ticked == set()
        assert any("checklist is for yes/no codes" in m for m in notices(app))
        await pilot.press("enter")
        await settle(pilot)
        assert screen.response_id == first  # ordinal codes are left: it stays
        values = {
            r.code_id: study.decisions.decision(first, r.code_id, coder="tester")
            for r in screen.rows
        }
        assert ordinal.code_id == "team"  # Team support, on a 1-5 scale
        assert values["team"] is None
        for code in ("pay", "workload"):  # yes/no, not ticked: No
            decided = values[code]
            assert decided is not None
            assert decided.value == 0
        assert any("Still to decide with their digits: Team support" in m for m in notices(app))
        assert screen.current().code_id == "team"  # type: ignore[union-attr]
