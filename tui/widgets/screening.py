"""The screening panel: can the model's confidence be trusted, pooled and per code?

It opens with one headline (the verdict in words) and one next action, then the chosen
group's verdict and VRS table, each index glossed. Keys while it has focus: left/right
choose the code, t cycles the confidence threshold (the cut), F filters the queue to the
next action's pairs, b opens the blind audit, d applies the delegation plan shown below the verdict
(after a confirmation), l shows the pairs left for review.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.widgets import Select, Static

from screening.advice import GLOSSES
from screening.headline import pattern
from screening.report import TIER_STYLES
from screening.story import vrs_rows
from tui.keymap import bindings
from tui.messages import (
    AuditRequested,
    DelegationRequested,
    ReportRequested,
    ReviewLeftRequested,
    ScreeningCutChanged,
    ScreeningFilterRequested,
)
from tui.plans import nothing_to_delegate, plan_renderable
from tui.text import printable
from tui.verdicts import POOLED, GroupVerdict, ScreeningSummary
from tui.widgets.plots import reliability_plot, risk_coverage_plot

if TYPE_CHECKING:
    from screening.advice import Advice
    from study.analysis import Comparison
    from study.log import DelegationPlan

#: The comparison's pooled row (``study.compare.POOLED``; not imported at run time).
POOLED_ROW = "All codes"

_POOLED_KEY = "__pooled__"

#: The cuts ``t`` cycles through: each code's scale-aware cut, the sample median, and a
#: few fixed p_max values.
CUTS: tuple[float | str, ...] = ("scale", "median", 0.6, 0.75, 0.9)


def cut_words(cut: float | str) -> str:
    """A cut as the panel names it."""
    if cut == "scale":
        return "scale-aware"
    if cut == "median":
        return "sample median"
    return f"p_max ≥ {float(cut):.2f}"


def follow_hint(advice: Advice) -> str:
    """What F does for this advice, in the words shown beside it ("" when nothing)."""
    if advice.remaining == 0:
        return ""
    if advice.audit:
        return "  F codes them blind"
    return "  F shows them"


def advice_renderable(summary: ScreeningSummary, cut: float | str) -> Group:
    """The headline, the next action (with its key), the study's warning and the cut."""
    parts: list[RenderableType] = []
    advice = summary.advice
    if advice is not None:
        headline = advice.headline[:1].upper() + advice.headline[1:] + "."
        parts.append(Text(printable(headline), style="bold"))
        parts.append(
            Text.assemble(
                ("Next: ", "bold"), printable(advice.action) + ".", (follow_hint(advice), "dim")
            )
        )
    if summary.study_warning:
        parts.append(Text.assemble(("⚠ ", "bold yellow"), printable(summary.study_warning)))
    parts.append(
        Text.assemble(
            ("Confidence cut: ", "dim"),
            cut_words(cut),
            ("  t changes it · ←/→ choose the code", "dim"),
        )
    )
    parts.append(Text(""))
    return Group(*parts)


def comparison_renderable(
    comparison: Comparison | None, code_id: str | None, name: str, note: str
) -> Group:
    """The configurations side by side on one code (``None``: pooled): n, agreement,
    kappa with its interval, AUROC and the response pattern; empty with fewer than two."""
    if comparison is None:
        if not note:
            return Group()
        return Group(
            Text("\nConfigurations", style="bold dim"),
            Text(printable(note), style="dim italic"),
        )
    wanted = code_id if code_id is not None else POOLED_ROW
    rows = [r for r in comparison.rows if r.code == wanted]
    labels = dict(comparison.configs)
    out: list[RenderableType] = [
        Text(
            f"\nConfigurations on {printable(name, single_line=True)} "
            f"(your decisions, {comparison.coder})",
            style="bold dim",
        )
    ]
    if not rows:
        out.append(Text("No decided pair of this code is scored by every one.", style="dim"))
    for row in rows:
        kappa = row.kappa
        interval = (
            "n/a"
            if math.isnan(kappa.point)
            else f"{kappa.point:.2f} [{kappa.low:.2f}, {kappa.high:.2f}]"
        )
        agree = "n/a" if math.isnan(row.agreement) else f"{row.agreement:.0%}"
        label = f"#{row.config_id} " + printable(labels.get(row.config_id, ""), single_line=True)
        auroc = "n/a" if row.auroc is None or math.isnan(row.auroc) else f"{row.auroc:.2f}"
        out.append(
            Text.assemble(
                (label, "bold"),
                f"\n  n {row.n}  agree {agree}  κ {interval}  AUROC {auroc}  ",
                (
                    f"pattern: {row.verdict or pattern(row.tier)}",
                    "" if row.verdict == "adds nothing" else TIER_STYLES.get(row.tier, ""),
                ),
            )
        )
    clear = [
        d
        for d in comparison.differences
        if d.code == wanted and d.clear and not math.isnan(d.kappa.point)
    ]
    out.extend(
        Text(
            f"#{d.a} vs #{d.b}: κ differs by {d.kappa.point:+.2f} "
            f"[{d.kappa.low:+.2f}, {d.kappa.high:+.2f}], larger than its interval",
            style="dim",
        )
        for d in clear
    )
    return Group(*out)


def verdict_renderable(group: GroupVerdict) -> Group:
    """The figures and the verdict in words, the response pattern with AUROC and kappa
    beside it, then the VRS table itself (for reporting)."""
    name = printable(group.name, single_line=True)
    title = Text(f"{name} · {group.n} coded by you", style="dim")
    parts: list[RenderableType] = [title, Text(printable(group.headline), style="bold")]
    parts.append(Text(printable(group.pattern), style=TIER_STYLES.get(group.shown_tier, "")))
    parts += [Text("• " + printable(line)) for line in group.lines]
    if group.report is not None:
        table = Table.grid(padding=(0, 1))
        table.add_column(style="dim", no_wrap=True)
        table.add_column()
        for label, value in vrs_rows(group.report.rows(), group.figures):
            style = TIER_STYLES.get(value, "") if label == "Tier classification" else ""
            shown = Text(printable(label))
            if label in GLOSSES:
                shown.append(f" ({GLOSSES[label]})", style="italic")
            table.add_row(shown, Text(printable(value), style=style))
        parts += [Text("\nValidity report (VRS)", style="bold dim"), table]
    return Group(*parts)


class ScreeningPanel(VerticalScroll, can_focus=True):
    """The VRS verdict of the group chosen in its selector, refreshed after each decision."""

    BORDER_TITLE = "Screening"

    BINDINGS: ClassVar[list[BindingType]] = bindings(
        "screening.previous",
        "screening.next",
        "screening.cut",
        "screening.follow",
        "screening.audit",
        "screening.delegate",
        "screening.left",
        "screening.report",
    )

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._summary: ScreeningSummary | None = None
        self._stale = False
        self._comparison: Comparison | None = None
        self._comparison_note = ""
        #: The confidence cut the screen uses (the app screens again when it changes).
        self.cut: float | str = CUTS[0]
        #: The delegation plan shown (None: none yet, or none possible).
        self.plan: DelegationPlan | None = None
        #: Why there is no plan (with :attr:`plan` None); empty while it is worked out.
        self._plan_note = ""
        self._plots_text = ""

    def compose(self) -> ComposeResult:
        yield Select(
            [(POOLED, _POOLED_KEY)],
            value=_POOLED_KEY,
            allow_blank=False,
            compact=True,
            id="screening-group",
        )
        yield Static("", id="screening-advice")
        # The plan before the verdict's details: it is what the coder acts on.
        yield Static("", id="screening-delegation")
        yield Static("", id="screening-plots").set_styles("display: none;")
        yield Static(
            Text("Screening the decisions so far…", style="dim italic"), id="screening-body"
        )
        yield Static("", id="screening-overview")
        yield Static("", id="screening-comparison")

    @property
    def summary(self) -> ScreeningSummary | None:
        return self._summary

    @property
    def selected_code(self) -> str | None:
        value = self.query_one("#screening-group", Select).value
        return None if value in (_POOLED_KEY, Select.BLANK) else str(value)

    def select_code(self, code_id: str | None) -> None:
        self.query_one("#screening-group", Select).value = code_id or _POOLED_KEY

    def _step_code(self, step: int) -> None:
        if self._summary is None:
            return
        keys = [g.code_id for g in self._summary.groups]
        current = self.selected_code
        at = keys.index(current) if current in keys else 0
        self.select_code(keys[(at + step) % len(keys)])

    def action_previous_code(self) -> None:
        self._step_code(-1)

    def action_next_code(self) -> None:
        self._step_code(1)

    def action_cycle_cut(self) -> None:
        at = CUTS.index(self.cut) if self.cut in CUTS else -1
        self.cut = CUTS[(at + 1) % len(CUTS)]
        if self._summary is not None:
            self.query_one("#screening-advice", Static).update(
                advice_renderable(self._summary, self.cut)
            )
        self.notify(f"Confidence cut: {cut_words(self.cut)}", timeout=2)
        self.post_message(ScreeningCutChanged(self.cut))

    def action_follow_advice(self) -> None:
        summary = self._summary
        if summary is None or summary.advice is None:
            self.notify("Nothing to show yet.", timeout=2)
            return
        advice = summary.advice
        if advice.remaining == 0:
            # Never an empty list under a promise: say there is nothing left instead.
            self.notify(f"Nothing left to code: {advice.action}.", timeout=4)
            return
        if advice.audit:
            # The pairs asked for are the next blind audit pairs: code them blind.
            self.post_message(AuditRequested())
            return
        self.post_message(ScreeningFilterRequested(summary.advice_code_id))

    def action_blind_audit(self) -> None:
        self.post_message(AuditRequested())

    def action_left_for_review(self) -> None:
        self.post_message(ReviewLeftRequested())

    def action_write_report(self) -> None:
        self.post_message(ReportRequested())

    def action_delegate(self) -> None:
        plan = self.plan
        if plan is None or not plan.delegated:
            self.notify(nothing_to_delegate(plan, self._plan_note), severity="warning", timeout=6)
            return
        self.post_message(DelegationRequested(plan))

    def show_plan(self, plan: DelegationPlan | None, note: str, audit: str | None) -> None:
        """Show the delegation plan (or ``note``, why there is none) and the audit."""
        self.plan = plan
        self._plan_note = note
        self.query_one("#screening-delegation", Static).update(plan_renderable(plan, note, audit))
        if self._summary is not None:
            self._render_plots()

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
            (Text(f"{printable(g.name, single_line=True)} · {g.short}"), g.code_id)
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
        self.query_one("#screening-advice", Static).update(
            advice_renderable(self._summary, self.cut)
        )
        body.update(verdict_renderable(group))
        self._render_plots()
        rows = [
            Text.assemble(
                (f"{g.short:<22}", "bold" if g.figures and g.figures.adds_nothing else ""),
                f" {printable(g.name, single_line=True)} ",
                (f"({g.n}) ", "dim"),
                (printable(g.pattern), TIER_STYLES.get(g.shown_tier, "")),
            )
            for g in self._summary.groups[1:]
        ]
        overview.update(Group(Text("\nPer code", style="bold dim"), *rows) if rows else "")
        self._render_comparison()

    def _render_plots(self) -> None:
        """The chosen group's reliability diagram and risk-coverage curve, where the
        screen allows phase B; the certified threshold from the delegation plan."""
        shown = self.query_one("#screening-plots", Static)
        summary = self._summary
        group = None if summary is None else summary.group(self.selected_code) or summary.groups[0]
        phase_b = None if group is None or group.report is None else group.report.phase_b
        if group is None or phase_b is None or not phase_b.calibration:
            self._plots_text = ""
            shown.update("")
            shown.display = False  # no blank line where there is nothing to plot
            return
        certified = None
        max_error = None
        for code in self.plan.codes if self.plan is not None else ():
            if code.code_id == group.code_id:
                max_error = self.plan.max_error if self.plan is not None else None
                d = code.delegation
                if d.threshold is not None and d.n and d.n_audit:
                    certified = (d.n / d.n_audit, d.errors / d.n, d.threshold)
        plots = (
            reliability_plot(phase_b.calibration),
            risk_coverage_plot(phase_b.risk_coverage, certified=certified, max_error=max_error),
        )
        self._plots_text = "\n\n".join(p.plain for p in plots)
        shown.update(Group(Text(""), plots[0], Text(""), plots[1]))
        shown.display = True

    @property
    def plots_text(self) -> str:
        """The plots as plain text (for tests); empty when none is drawn."""
        return self._plots_text

    # -- the comparison of configurations (two or more scored) ----------------------------

    def show_comparison(self, comparison: Comparison | None, note: str = "") -> None:
        """Keep the comparison of configurations and draw the chosen code's rows."""
        self._comparison = comparison
        self._comparison_note = note
        if self.is_mounted:
            self._render_comparison()

    def _render_comparison(self) -> None:
        shown = self.query_one("#screening-comparison", Static)
        code = self.selected_code
        name = code or "every code"
        if self._summary is not None and code is not None:
            group = self._summary.group(code)
            name = group.name if group is not None else code
        shown.update(comparison_renderable(self._comparison, code, name, self._comparison_note))

    @property
    def comparison_text(self) -> str:
        """The comparison section as plain text (for tests)."""
        code = self.selected_code
        renderable = comparison_renderable(self._comparison, code, code or "every code", "")
        return "\n".join(t.plain for t in renderable.renderables if isinstance(t, Text))

    @property
    def tier(self) -> str | None:
        """The tier shown now (for tests and the status line)."""
        if self._summary is None:
            return None
        group = self._summary.group(self.selected_code) or self._summary.groups[0]
        return group.tier
