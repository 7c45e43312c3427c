"""Choosing the configuration (C), the wave filter, and the screening panel's comparison
of configurations for the chosen code."""

from __future__ import annotations

import time
from pathlib import Path

from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import OptionList

from scoring import FakeBackend
from scoring.engine import ScoringEngine
from screening.headline import pattern
from study.analysis.compare import POOLED
from study.intake.responses import ResponseTable
from study.score_run import score_study
from study.store import Study
from tests.factories import build_study, texts
from tui.app import make_app
from tui.screens.configs import ComparisonReady, ConfigPicker, config_choices
from tui.widgets.screening import POOLED_ROW

SIZE = (120, 30)


async def wait_for(pilot: Pilot[None], condition: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.02)


def two_configs(path: Path, n: int = 40) -> tuple[Study, int, int]:
    """The synthetic configuration (#1), then the fake model with full context (#2,
    active)."""
    study = build_study(path, n=n)
    first = study.scores.active_config_id()
    assert first is not None
    run = score_study(study, ScoringEngine(FakeBackend(), study.codebook, context="full"))
    assert study.scores.active_config_id() == run.config_id
    return study, first, run.config_id


def test_choices_list_every_configuration_with_its_scored_count(tmp_path: Path) -> None:
    study, first, second = two_configs(tmp_path / "s.codecurve", n=10)
    choices = config_choices(study)
    assert [c.config_id for c in choices] == [first, second]
    assert [c.active for c in choices] == [False, True]
    assert choices[1].label.startswith(f"#{second} fake (fake) · full · ")
    assert choices[1].words() == f"{choices[1].label} (30 of 30 scored, active)"
    assert choices[0].words().endswith("(30 of 30 scored)")
    study.close()


async def test_the_picker_switches_the_active_configuration(tmp_path: Path) -> None:
    study, first, second = two_configs(tmp_path / "s.codecurve", n=10)
    app = make_app(study, coder="tester", close_study=False)
    async with app.run_test(size=SIZE) as pilot:
        assert app.session.config_id == second
        await pilot.press("C")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfigPicker))
        await pilot.pause()
        options = app.screen.query_one(OptionList)
        assert options.option_count == 2
        assert options.highlighted == 1  # the active one
        assert "active" in str(options.get_option_at_index(1).prompt)
        await pilot.press("up", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, ConfigPicker)
        assert study.scores.active_config_id() == first
        assert app.session.config_id == first
        status = str(app.review.status_line.render())
        assert f"#{first} synthetic" in status
        row = app.review.pair_queue.current
        assert row is not None
        assert row.pick is not None
        # Esc leaves it as it is.
        await pilot.press("C")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfigPicker))
        await pilot.press("down", "escape")
        await pilot.pause()
        assert study.scores.active_config_id() == first
    # The choice is the study's: an 'activate' event, kept after the app.
    with study.snapshot() as conn:
        kinds = [r[0] for r in conn.execute("SELECT kind FROM events WHERE kind = 'activate'")]
    assert kinds == ["activate"]
    study.close()


async def test_the_picker_says_when_nothing_is_scored(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=5, scored=False)
    app = make_app(study, coder="tester", close_study=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("C")
        await pilot.pause()
        assert not isinstance(app.screen, ConfigPicker)
        assert any("No scoring configuration" in n.message for n in app._notifications)
    study.close()


async def test_the_filter_bar_has_a_wave_field_with_two_waves(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=6)
    extra = {f"w{i}": text for i, text in enumerate(texts(4, seed=3).values())}
    study.versions.add_responses(ResponseTable.from_texts(extra))
    assert len(study.versions.waves()) == 2
    app = make_app(study, coder="tester", close_study=False)
    async with app.run_test(size=SIZE) as pilot:
        review = app.review
        assert review.filter_bar.fields == ("code", "status", "wave")
        await pilot.press("f", "down", "down", "right", "right")
        await pilot.pause()
        assert review.pair_queue.pair_query.wave == 2
        assert review.pair_queue.total == 4 * 3
        row = review.pair_queue.current
        assert row is not None
        assert row.response_id.startswith("w")
        await pilot.press("enter")
        await pilot.pause()
        assert "wave 2" in str(review.status_line.render())
        # esc clears the filters, the wave too.
        await pilot.press("escape")
        await pilot.pause()
        assert review.pair_queue.pair_query.wave is None
        assert review.pair_queue.total == 10 * 3
    study.close()


async def test_one_wave_has_no_wave_field(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=4)
    app = make_app(study, coder="tester", close_study=False)
    async with app.run_test(size=SIZE):
        assert app.review.filter_bar.fields == ("code", "status")
    study.close()


def test_the_panel_names_the_pooled_row_as_the_comparison_does() -> None:
    assert POOLED_ROW == POOLED


async def test_the_panel_compares_the_configurations_on_the_chosen_code(tmp_path: Path) -> None:
    study, first, second = two_configs(tmp_path / "s.codecurve", n=40)
    for i in range(40):
        study.decisions.record(f"r{i + 1}", "workload", i % 2, coder="tester")
        study.decisions.record(f"r{i + 1}", "pay", (i // 3) % 2, coder="tester")
    seen: list[Message] = []
    app = make_app(study, coder="tester", close_study=False)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await pilot.press("s")  # the comparison is computed for the panel on show
        await wait_for(
            pilot,
            lambda: any(isinstance(m, ComparisonReady) and m.comparison for m in seen),
        )
        await pilot.pause()
        panel = app.review.screening
        pooled = panel.comparison_text
        assert "Configurations on every code" in pooled
        assert f"#{first} synthetic" in pooled
        assert f"#{second} fake (fake) [full]" in pooled
        assert "n 80" in pooled
        assert "κ" in pooled
        panel.select_code("workload")
        await pilot.pause()
        text = panel.comparison_text
        assert "n 40" in text
        comparison = app.comparison
        assert comparison is not None
        row = next(r for r in comparison.rows if r.code == "workload" and r.config_id == first)
        assert f"agree {row.agreement:.0%}" in text
        assert f"κ {row.kappa.point:.2f} [{row.kappa.low:.2f}, {row.kappa.high:.2f}]" in text
        # The screen's story in words ("adds nothing", or the tier's), never a bare tier.
        assert f"pattern: {row.verdict or pattern(row.tier)}" in text
        assert row.verdict
    study.close()


async def test_one_configuration_shows_no_comparison(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=10)
    for i in range(10):
        study.decisions.record(f"r{i + 1}", "workload", i % 2, coder="tester")
    seen: list[Message] = []
    app = make_app(study, coder="tester", close_study=False)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await pilot.press("s")
        await wait_for(pilot, lambda: any(isinstance(m, ComparisonReady) for m in seen))
        await pilot.pause()
        assert app.comparison is None
        assert app.review.screening.comparison_text == ""
    study.close()


async def test_a_hidden_panel_costs_no_comparison_or_plan(tmp_path: Path) -> None:
    """While the screening panel is hidden, decisions recompute only the screen's summary:
    the comparison and the delegation plan wait until the panel is shown."""
    from tui.messages import DelegationPlanned, ScreeningUpdated

    study, _, _ = two_configs(tmp_path / "s.codecurve", n=20)
    seen: list[Message] = []
    app = make_app(study, coder="tester", close_study=False)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await pilot.press("1", "1", "1")
        await wait_for(pilot, lambda: sum(isinstance(m, ScreeningUpdated) for m in seen) >= 2)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not any(isinstance(m, ComparisonReady | DelegationPlanned) for m in seen)
        await pilot.press("s")
        await wait_for(pilot, lambda: any(isinstance(m, ComparisonReady) for m in seen))
        await wait_for(pilot, lambda: any(isinstance(m, DelegationPlanned) for m in seen))
    study.close()
