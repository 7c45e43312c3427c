"""The screening panel opens with the honest headline: a model that answers No to every
pair "adds nothing here", and no tier is shown without AUROC and kappa beside it."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot

from study import Study
from tests.cli.test_headline_cli import TIERS, bare_tier, constant_study
from tests.tui.waiting import settle
from tui.app import CodecurveApp, make_app
from tui.widgets.screening import ScreeningPanel

SnapCompare = Callable[..., bool]


def constant_app(tmp_path: Path, **kwargs: object) -> CodecurveApp:
    path = constant_study(tmp_path / "constant.codecurve", n=75, coder="tester", **kwargs)  # type: ignore[arg-type]
    return make_app(Study.open(path), coder="tester", close_study=True)


def panel_text(panel: ScreeningPanel, part: str | None = None) -> str:
    """What the panel shows (one part of it: ``advice``, ``body``...), one line a line."""
    from rich.console import Console
    from textual.widgets import Static

    console = Console(width=400, record=True, file=io.StringIO())
    shown = panel.query(Static) if part is None else [panel.query_one(f"#screening-{part}", Static)]
    for static in shown:
        console.print(static.content)
    return console.export_text()


async def open_panel(pilot: Pilot[None]) -> None:
    await settle(pilot)
    await pilot.press("s")
    await settle(pilot)


async def test_a_constant_model_adds_nothing_in_the_panel(tmp_path: Path) -> None:
    app = constant_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await open_panel(pilot)
        panel = app.review.screening
        text = panel_text(panel)
        headline = "The model answered No to all 375 pairs across all codes: it adds nothing here."
        assert headline in text
        assert "kappa 0.00 [0.00, 0.00]" in text
        # No tier stands alone: wherever one is named, AUROC and kappa are on its line
        # (the VRS table keeps the seed's rows, AUROC and kappa right after its tier).
        words = [panel_text(panel, one) for one in ("advice", "delegation", "overview")]
        words.append(panel_text(panel, "body").split("Validity report (VRS)")[0])
        for line in "\n".join(words).splitlines():
            assert not bare_tier(line), line
        table = panel_text(panel, "body").split("Validity report (VRS)")[1].splitlines()
        tier = next(i for i, line in enumerate(table) if line.startswith("Tier classification"))
        assert table[tier + 1].startswith("AUROC")
        assert table[tier + 2].startswith("Kappa, model vs coder")
        # Each code says so too, and the selector never names a bare tier.
        for code in ("pay", "staff"):
            panel.select_code(code)
            await pilot.pause()
            text = panel_text(panel)
            assert (
                "The model answered No to all 75 pairs of this code: it adds nothing here." in text
            )
        select = panel.query_one("#screening-group")
        labels = [str(prompt) for prompt, _ in select._options]  # type: ignore[attr-defined]
        assert any("adds nothing" in label for label in labels)
        assert not any(re.search(rf"\b{t}\b", label) for t in TIERS for label in labels)
        # The status line gives kappa beside the agreement.
        from tui.widgets.status import StatusLine

        status = app.review.query_one(StatusLine).render()
        # Every pair is coded: F says so instead of showing an empty list.
        summary = app.screening_summary
        assert summary is not None
        assert summary.advice is not None
        assert summary.advice.remaining == 0
        assert summary.advice.action.startswith("keep your own decisions for every code")
        query = app.review.pair_queue.pair_query
        panel.focus()
        await pilot.press("F")
        await pilot.pause()
        assert app.review.pair_queue.pair_query == query
        assert any("Nothing left to code" in n.message for n in app._notifications)
        assert "agreement 86% κ 0.00 on 375" in status.plain


def constant_snapshot_app(tmp_path: Path) -> CodecurveApp:
    path = constant_study(tmp_path / "snap.codecurve", n=40, codes=("Pay", "Staff"), coder="tester")
    return make_app(Study.open(path), coder="tester", close_study=True)


def test_constant_model_headline_80x24(snap_compare: SnapCompare, tmp_path: Path) -> None:
    assert snap_compare(constant_snapshot_app(tmp_path), run_before=open_panel)


def test_constant_model_headline_140x40(snap_compare: SnapCompare, tmp_path: Path) -> None:
    assert snap_compare(
        constant_snapshot_app(tmp_path), terminal_size=(140, 40), run_before=open_panel
    )
