"""What ``codecurve score`` shows while and after it scores: progress on stderr, a table.

Every text from a file is shown with its control characters made visible and is never
read as Rich markup.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tui.text import one_line, printable

if TYPE_CHECKING:
    from scoring.engine import BatchResult, ScoringEngine
    from scoring.score import Score


def score_with_progress(engine: ScoringEngine, pairs: list[Any]) -> list[Score]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    with Progress(
        TextColumn("scoring"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as bar:
        task = bar.add_task("scoring", total=len(pairs), rate="")

        def report(batch: BatchResult) -> None:
            bar.update(task, completed=batch.done, rate=rate(batch).lstrip(", "))

        return engine.score(pairs, progress=report)


#: Below this terminal width the score table leaves out the response's text.
NARROW_TABLE = 100


def print_table(scores: Iterable[Score], names: dict[str, str], texts: dict[str, str]) -> None:
    """The scores as a table; every text from a file is shown with its control characters
    made visible and is never read as Rich markup."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from scoring.curves import sparkline

    console = Console(highlight=False)
    # On a narrow terminal the response's text goes first (then the code's name is cut):
    # the pick, p and H/lnK columns are what the table is for.
    narrow = console.width < NARROW_TABLE
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("response", overflow="ellipsis", no_wrap=True, max_width=16)
    if not narrow:
        table.add_column("text", overflow="ellipsis", no_wrap=True, max_width=40, ratio=1)
    table.add_column("code", overflow="ellipsis", no_wrap=True, max_width=20 if narrow else 24)
    table.add_column("curve", no_wrap=True, min_width=5)
    table.add_column("pick", justify="right", no_wrap=True, min_width=4)
    table.add_column("p", justify="right", no_wrap=True, min_width=4)
    table.add_column("H/lnK", justify="right", no_wrap=True, min_width=5)
    table.add_column("flags", overflow="fold")
    for s in scores:
        flags = ", ".join(
            f for f, on in (("off-scale", s.curve.off_scale), ("truncated", s.truncated)) if on
        )
        cells = [Text(one_line(s.response_id))]
        if not narrow:
            cells.append(Text(one_line(texts.get(s.response_id, ""))))
        table.add_row(
            *cells,
            Text(one_line(names.get(s.code_id, s.code_id))),
            sparkline(s.curve.surprisal),
            Text(one_line(s.prediction_label)),
            f"{s.curve.confidence:.2f}",
            f"{s.curve.norm_entropy:.2f}",
            flags,
        )
    console.print(table)


def say(message: str) -> None:
    sys.stderr.write(printable(message) + "\n")


def eta(batch: BatchResult) -> str:
    """``, eta 0:12:05``: the time left at the run's rate so far; empty while unknown."""
    if math.isnan(batch.eta) or math.isinf(batch.eta):
        return ""
    seconds = round(max(batch.eta, 0.0))
    return f", eta {seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def rate(batch: BatchResult) -> str:
    """The rate to show: pairs per second, and tokens per second while pairs take longer
    than a second each (long prompts), so a slow run never reads "0.0 pairs/s"."""
    parts = []
    if batch.rate >= 1 or (batch.rate > 0 and not batch.token_rate):
        parts.append(f"{batch.rate:.1f} pairs/s")
    if batch.token_rate and batch.rate < 1:
        parts.append(f"{batch.token_rate:,.0f} tokens/s")
    return "".join(f", {p}" for p in parts)
