"""The status line above the key bar: progress, agreement, filters, the configuration
shown (model, context, template), where the highlighted code's learned curve stands, and
the queue's order.

While the filter bar is open, the line draws it instead (see :mod:`tui.screens.filter`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.widget import Widget

from tui.text import printable
from tui.widgets.frames import paint_with_key

if TYPE_CHECKING:
    from tui.screens.filter import FilterBar


class StatusLine(Widget):
    """One line: decided / total, agreement so far, the queue's order and filters."""

    DEFAULT_CSS = """
    StatusLine {
        height: 1;
        background: $panel;
        color: $text;
        padding: 0 1;
        & > .status-line--label { color: $text-muted; }
        & > .status-line--value { text-style: bold; }
        & > .status-line--active { background: $accent; color: $text; text-style: bold; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "status-line--label",
        "status-line--value",
        "status-line--active",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        #: The line's forms, longest first: the one drawn is the first that fits.
        self._forms: tuple[Text, ...] = (Text(),)
        self._facts: dict[str, Any] | None = None
        self._learning = ("", "")
        #: Drawn instead of the status while it is open.
        self.filter_bar: FilterBar | None = None

    def show(
        self,
        *,
        decided: int,
        total: int,
        agreement: tuple[float, int, float] | None,
        order: str,
        filters: str,
        model: str,
        mode: str = "",
        learning: tuple[str, str] = ("", ""),
    ) -> None:
        """Update the line.

        Args:
            decided: Pairs with a decision.
            total: All pairs.
            agreement: Share of decisions matching the model's pick, on how many, and
                kappa (nan: not defined): agreement alone flatters a constant model.
            order: The queue's order, in words.
            filters: The active filters, in words ("" for none).
            model: The configuration shown and the model's state, short (``#1 SmolLM2
                · full · chat-v1 · loading model…``).
            mode: Blind work under way (``audit 37/150 blind``, ``blind coding``), shown
                first.
            learning: Where the highlighted code's learned curve stands, in full and
                short (:meth:`show_learning`).
        """
        self._facts = {
            "mode": mode,
            "decided": decided,
            "total": total,
            "agreement": agreement,
            "filters": filters,
            "model": model,
            "order": order,
        }
        self._learning = learning
        self._update()

    def show_learning(self, learning: tuple[str, str]) -> None:
        """Say where the highlighted code's learned curve stands (in full and short;
        empty: nothing), the rest of the line as it was."""
        if learning != self._learning:
            self._learning = learning
            self._update()

    def _update(self) -> None:
        if self._facts is None:
            return
        # In full; the learned curve in short; every fact in short. The last two leave
        # the learned curve out, so that a figure is never cut off from what it is not
        # ("CV AUROC 0.84" without "not the audit's"); the very last names the
        # configuration by its number alone.
        full, short = self._learning
        facts = self._facts
        forms = [self._line(**facts, learning=full, compact=False)]
        if short:
            forms.append(self._line(**facts, learning=short, compact=False))
            forms.append(self._line(**facts, learning=short, compact=True))
        forms.append(self._line(**facts, learning="", compact=True))
        forms.append(self._line(**facts, learning="", compact=True, tight=True))
        if tuple(forms) != self._forms:
            self._forms = tuple(forms)
            self.refresh()
            paint_with_key(self)

    def redraw(self) -> None:
        """Draw the line again (the filter bar it shows changed), in the key's frame."""
        self.refresh()
        paint_with_key(self)

    @staticmethod
    def _line(
        mode: str,
        decided: int,
        total: int,
        agreement: tuple[float, int, float] | None,
        filters: str,
        model: str,
        order: str,
        learning: str,
        *,
        compact: bool,
        tight: bool = False,
    ) -> Text:
        """The line in full, or ``compact`` for a narrow terminal: the same facts in
        fewer words; the configuration keeps its number, model and state (``#1 SmolLM2 ·
        no model``) and leaves out context and template; ``tight``, its number and state
        only (``#1 · no model``)."""
        text = Text(no_wrap=True, overflow="ellipsis")
        gap = " " if compact else "  "
        if mode:
            text.append(printable(mode, single_line=True), style="bold magenta")
            text.append(gap)
        share = decided / total if total else 0.0
        text.append(f"{decided:,}/{total:,}", style="bold")
        text.append(f" ({share:.0%})" if compact else f" decided ({share:.0%})")
        if agreement is not None and agreement[1] > 0:
            text.append(f"{gap}agree " if compact else "  agreement ", style="dim")
            text.append(f"{agreement[0]:.0%}", style="bold")
            kappa = agreement[2]
            text.append(" κ ", style="dim")
            text.append("n/a" if kappa != kappa else f"{kappa:.2f}", style="bold")
            if not compact:  # the count: in the full line only
                text.append(f" on {agreement[1]:,}", style="dim")
        if filters:
            text.append(f"{gap}filter: ", style="dim")
            text.append(printable(filters, single_line=True), style="bold yellow")
        # The configuration before the order: on a narrow terminal the end is cut off,
        # and which scores are shown matters more than the order (the queue shows it).
        if model:
            parts = model.split(" · ")
            shown = " · ".join([parts[0], parts[-1]]) if compact and len(parts) > 2 else model
            if tight and len(parts) > 1:
                shown = " · ".join([parts[0].split(" ")[0], parts[-1]])
            text.append(gap, style="dim")
            text.append(printable(shown, single_line=True), style="italic")
        # The learned curve before the order too (the order matters least: the queue shows it).
        if learning:
            text.append(gap, style="dim")
            text.append(printable(learning, single_line=True), style="cyan")
        text.append(f"{gap}▸ ", style="dim")
        text.append(printable(order, single_line=True))
        return text

    def render(self) -> Text:
        bar = self.filter_bar
        if bar is not None and bar.is_open:
            return bar.text(
                label=self.get_component_rich_style("status-line--label"),
                value=self.get_component_rich_style("status-line--value"),
                active=self.get_component_rich_style("status-line--active"),
            )
        # The longest form that fits, else the shortest (cut at its end if need be).
        width = self.content_size.width
        return next((form for form in self._forms if form.cell_len <= width), self._forms[-1])
