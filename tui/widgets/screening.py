"""The screening panel: can the model's confidence be trusted, pooled and per code?"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Select, Static

from screening.report import TIER_STYLES
from tui.text import printable
from tui.verdicts import POOLED, GroupVerdict, ScreeningSummary

_POOLED_KEY = "__pooled__"


def verdict_renderable(group: GroupVerdict) -> Group:
    """The verdict in words, then the VRS table itself (for reporting)."""
    tier = Text(group.tier, style=TIER_STYLES.get(group.tier, "bold"))
    name = printable(group.name, single_line=True)
    title = Text.assemble(tier, "  ", (f"{name} · {group.n} coded by you", "dim"))
    parts: list[RenderableType] = [title, Text(printable(group.headline), style="bold")]
    parts += [Text("• " + printable(line)) for line in group.lines]
    if group.report is not None:
        table = Table.grid(padding=(0, 1))
        table.add_column(style="dim", no_wrap=True)
        table.add_column()
        for label, value in group.report.rows():
            style = TIER_STYLES.get(value, "") if label == "Tier classification" else ""
            table.add_row(Text(printable(label)), Text(printable(value), style=style))
        parts += [Text("\nValidity report (VRS)", style="bold dim"), table]
    return Group(*parts)


class ScreeningPanel(VerticalScroll, can_focus=True):
    """The VRS verdict of the group chosen in its selector, refreshed after each decision."""

    BORDER_TITLE = "Screening"

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._summary: ScreeningSummary | None = None
        self._stale = False

    def compose(self) -> ComposeResult:
        yield Select(
            [(POOLED, _POOLED_KEY)],
            value=_POOLED_KEY,
            allow_blank=False,
            compact=True,
            id="screening-group",
        )
        yield Static(
            Text("Screening the decisions so far…", style="dim italic"), id="screening-body"
        )
        yield Static("", id="screening-overview")

    @property
    def summary(self) -> ScreeningSummary | None:
        return self._summary

    @property
    def selected_code(self) -> str | None:
        value = self.query_one("#screening-group", Select).value
        return None if value in (_POOLED_KEY, Select.BLANK) else str(value)

    def select_code(self, code_id: str | None) -> None:
        self.query_one("#screening-group", Select).value = code_id or _POOLED_KEY

    def show(self, summary: ScreeningSummary) -> None:
        """Keep ``summary``; draw it now if the panel is on screen, else when it is shown.

        Drawing a hidden panel would lay out the screen after every decision for nothing.
        """
        self._summary = summary
        self._stale = True
        if self.display and self.is_mounted:
            self._draw()

    def on_show(self) -> None:
        if self._stale:
            self._draw()

    def _draw(self) -> None:
        summary = self._summary
        if summary is None:
            return
        self._stale = False
        select = self.query_one("#screening-group", Select)
        current = self.selected_code
        options = [(POOLED, _POOLED_KEY)] + [
            (Text(f"{printable(g.name, single_line=True)} · {g.tier}"), g.code_id)
            for g in summary.groups
            if g.code_id is not None
        ]
        with self.prevent(Select.Changed):
            select.set_options(options)
            known = {g.code_id for g in summary.groups}
            select.value = current if current in known and current is not None else _POOLED_KEY
        self._render_selected()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        self._render_selected()

    def _render_selected(self) -> None:
        body = self.query_one("#screening-body", Static)
        overview = self.query_one("#screening-overview", Static)
        if self._summary is None:
            return
        group = self._summary.group(self.selected_code) or self._summary.groups[0]
        body.update(verdict_renderable(group))
        rows = [
            Text.assemble(
                (f"{g.tier:<18}", TIER_STYLES.get(g.tier, "")),
                f" {printable(g.name, single_line=True)} ",
                (f"({g.n})", "dim"),
            )
            for g in self._summary.groups[1:]
        ]
        overview.update(Group(Text("\nPer code", style="bold dim"), *rows) if rows else "")

    @property
    def tier(self) -> str | None:
        """The tier shown now (for tests and the status line)."""
        if self._summary is None:
            return None
        group = self._summary.group(self.selected_code) or self._summary.groups[0]
        return group.tier
