"""Surprisal curves drawn small (a sparkline cell) and large (a labelled bar chart).

Both draw the renormalised probability of each option, so low surprisal is a tall (or
long) bar: the model's preferred option stands out, a flat curve means the model is torn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.cells import cell_len, set_cell_size
from rich.console import Group, RenderableType
from rich.text import Text
from textual.widgets import Static

from codebooks.model import Scale
from scoring.curves import sparkline
from tui.keymap import key
from tui.text import printable

#: In place of a curve not scored yet (with the key that scores).
NOT_SCORED = "Not scored yet: press {} to score pending pairs."

#: Under a greyed curve: why it is grey.
STALE_NOTE = "Old curve: the code's text changed; its new score is on the way."

#: Eighth blocks for bars with sub-cell resolution.
_EIGHTHS = " ▏▎▍▌▋▊▉"


def spark(surprisal: Sequence[float]) -> str:
    """One glyph per option; low surprisal is a tall bar."""
    return sparkline(list(surprisal))


def bar(fraction: float, width: int) -> str:
    """A horizontal bar ``fraction`` of ``width`` cells long, in eighths of a cell."""
    fraction = min(1.0, max(0.0, fraction))
    eighths = round(fraction * width * 8)
    full, rest = divmod(eighths, 8)
    text = "█" * full + (_EIGHTHS[rest] if rest else "")
    return text.ljust(width)


def bits(nats: float) -> float:
    return nats / math.log(2)


def curve_table(
    *,
    scale: Scale,
    surprisal: Sequence[float],
    probs: Sequence[float],
    pick: int | None,
    decision: int | None,
    bar_width: int = 24,
    stale: bool = False,
    decided_by: str = "you",
) -> Text:
    """The curve drawn large: one line per option with its bar, probability and surprisal.

    Plain :class:`~rich.text.Text` lines (no table to measure), so drawing it on every
    move through the queue stays cheap.

    Args:
        scale: The scale asked.
        surprisal: shape (K,), nats.
        probs: shape (K,), renormalised probabilities.
        pick: The model's pick (a value of the scale).
        decision: The pair's decision (a value), if any.
        bar_width: Cells of the longest bar.
        stale: Drawn greyed: a score from an older text of the code, shown until the
            new one arrives.
        decided_by: Who decided: ``you`` for the session's coder, else their name.
    """
    top = max(probs) if len(probs) else 1.0
    labels = [printable(o.label, single_line=True) for o in scale.options]
    label_width = max(cell_len(label) for label in labels)
    text = Text(no_wrap=True, overflow="ellipsis")
    rows = zip(scale.options, labels, surprisal, probs, strict=False)
    for index, (option, label, s, p) in enumerate(rows):
        if index:
            text.append("\n")
        pad = " " * (label_width - cell_len(label))
        text.append(pad + set_cell_size(label, label_width - len(pad)), style="bold")
        text.append(" ")
        text.append(bar(p / top if top > 0 else 0.0, bar_width), style="dim" if stale else "cyan")
        text.append(f" {p:4.0%} ")
        text.append(f"{bits(s):5.2f} bits ", style="dim")
        if option.value == pick:
            text.append("◀ model ", style="bold")
        if option.value == decision:
            text.append(f"✓ {printable(decided_by, single_line=True)} ", style="bold green")
        text.append(printable(option.anchor, single_line=True), style="dim")
    if stale:
        text.stylize("dim")
        text.append("\n")
        text.append(STALE_NOTE, style="dim italic")
    return text


class CurveChart(Static):
    """The highlighted pair's curve drawn large."""

    DEFAULT_CSS = """
    CurveChart { height: auto; }
    """

    def show(
        self,
        *,
        scale: Scale,
        surprisal: Sequence[float] | None,
        probs: Sequence[float] | None,
        pick: int | None,
        decision: int | None,
        notes: Sequence[RenderableType] = (),
        decided_by: str = "you",
    ) -> None:
        """Draw a curve, or say that the pair is not scored yet."""
        if surprisal is None or probs is None:
            self.update(Text(NOT_SCORED.format(key("review.score")), style="dim italic"))
            return
        width = max(8, min(30, self.size.width - 30)) if self.size.width else 20
        chart = curve_table(
            scale=scale,
            surprisal=surprisal,
            probs=probs,
            pick=pick,
            decision=decision,
            bar_width=width,
            decided_by=decided_by,
        )
        self.update(Group(chart, *notes) if notes else chart)
