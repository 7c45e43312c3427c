"""The detail pane: everything about the highlighted pair, scrollable and wrapped."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from codebooks.model import Code, Scale
from scoring.curves import OFF_SCALE_WARNING
from tui.source import Row
from tui.widgets.curve import CurveChart
from tui.widgets.queue import value_label


def off_scale_mass(row: Row) -> float | None:
    """The row's off-scale mass (1 - on-scale mass), when the study reports it."""
    mass = getattr(row, "on_scale_mass", None)
    return None if mass is None else max(0.0, 1.0 - float(mass))


def off_scale_flag(row: Row) -> bool:
    value = getattr(row, "off_scale", None)
    if isinstance(value, bool):
        return value
    mass = off_scale_mass(row)
    return mass is not None and mass > OFF_SCALE_WARNING


def code_text(code: Code, path: tuple[str, ...] = ()) -> Text:
    """A code's name, place in the hierarchy, definition and criteria."""
    text = Text()
    text.append(code.name, style="bold")
    if len(path) > 1:
        text.append("  (" + " › ".join(path[:-1]) + ")", style="dim")
    for title, body in (
        ("Definition", code.definition),
        ("Use when", code.inclusion),
        ("Do not use when", code.exclusion),
    ):
        if body:
            text.append(f"\n{title}: ", style="bold dim")
            text.append(body)
    if code.examples:
        text.append("\nExamples: ", style="bold dim")
        text.append("; ".join(f"“{e}”" for e in code.examples))
    return text


def decision_text(row: Row, scale: Scale) -> Text:
    label = value_label(scale, row.decision)
    text = Text()
    if row.decision is None:
        text.append("Not decided yet. ", style="dim")
        text.append("Press a digit, a to accept, x for does not apply.", style="dim")
    elif row.source == "model":
        text.append(f"≈ {label}", style="bold")
        text.append(" accepted from the model")
    else:
        text.append(f"✓ {label}", style="bold green")
        text.append(" coded by you")
    if row.note:
        text.append("\nNote: ", style="bold dim")
        text.append(row.note)
    return text


def stats_text(row: Row) -> RenderableType:
    text = Text()
    if row.norm_entropy is not None:
        text.append("Uncertainty (normalised entropy) ", style="dim")
        text.append(f"{row.norm_entropy:.2f}", style="bold")
    if row.confidence is not None:
        text.append("   confidence ", style="dim")
        text.append(f"{row.confidence:.0%}", style="bold")
    mass = off_scale_mass(row)
    if mass is not None:
        text.append("   off-scale mass ", style="dim")
        text.append(f"{mass:.0%}", style="bold")
    if off_scale_flag(row):
        text.append(
            "\n⚠ The answer format failed: most of the model's probability went to tokens "
            "outside the scale, so these numbers are not to be trusted.",
            style="bold yellow",
        )
    return text


class DetailPane(VerticalScroll, can_focus=True):
    """Response text, code, curve and decision of one pair."""

    BORDER_TITLE = "Detail"

    def compose(self) -> ComposeResult:
        yield Static(id="detail-text", classes="detail-text")
        yield Static(id="detail-code", classes="detail-code")
        yield CurveChart(id="detail-curve")
        yield Static(id="detail-stats")
        yield Static(id="detail-decision", classes="detail-decision")

    def show(
        self, row: Row | None, code: Code | None, scale: Scale | None, path: tuple[str, ...] = ()
    ) -> None:
        """Show ``row`` (or an empty pane when there is none)."""
        text = self.query_one("#detail-text", Static)
        code_view = self.query_one("#detail-code", Static)
        curve = self.query_one("#detail-curve", CurveChart)
        stats = self.query_one("#detail-stats", Static)
        decision = self.query_one("#detail-decision", Static)
        if row is None or code is None or scale is None:
            self.border_title = "Detail"
            for widget in (text, code_view, curve, stats, decision):
                widget.update("")
            text.update(Text("Nothing to show.", style="dim italic"))
            return
        self.border_title = f"Response {row.response_id}"
        text.update(Text(row.text))
        code_view.update(code_text(code, path))
        curve.show(
            scale=scale,
            surprisal=row.surprisal,
            probs=row.probs,
            pick=row.pick,
            decision=row.decision,
        )
        stats.update(stats_text(row))
        decision.update(decision_text(row, scale))
