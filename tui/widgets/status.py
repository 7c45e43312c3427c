"""The status line above the footer: progress, agreement, order and filters."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class StatusLine(Static):
    """One line: decided / total, agreement so far, the queue's order and filters."""

    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def show(
        self,
        *,
        decided: int,
        total: int,
        agreement: tuple[float, int] | None,
        order: str,
        filters: str,
        model: str,
    ) -> None:
        """Update the line.

        Args:
            decided: Pairs with a decision.
            total: All pairs.
            agreement: Share of decisions matching the model's pick, and on how many.
            order: The queue's order, in words.
            filters: The active filters, in words ("" for none).
            model: The model's state ("loading…", the model name, "no model").
        """
        text = Text()
        share = decided / total if total else 0.0
        text.append(f"{decided:,}/{total:,}", style="bold")
        text.append(f" decided ({share:.0%})")
        if agreement is not None and agreement[1] > 0:
            text.append("  agreement ", style="dim")
            text.append(f"{agreement[0]:.0%}", style="bold")
            text.append(f" on {agreement[1]:,}", style="dim")
        text.append("  ▸ ", style="dim")
        text.append(order)
        if filters:
            text.append("  filter: ", style="dim")
            text.append(filters, style="bold yellow")
        if model:
            text.append("  ", style="dim")
            text.append(model, style="dim italic")
        self.update(text, layout=False)
