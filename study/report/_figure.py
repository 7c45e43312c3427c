"""One figure of a report: what it draws, from which values, and how it is labelled.

Its own module, light to import: the processes that draw figures unpickle it without
the analyses the report's content is gathered from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

FigureKind = Literal["reliability", "risk_coverage", "forest", "confusion", "entropy", "curves"]


@dataclass(frozen=True)
class Figure:
    """One figure: what it draws and how it is labelled.

    Attributes:
        name: File stem, by figure and code (``reliability-pay``).
        kind: Which drawing.
        code: The code's name, :data:`study.report._data.POOLED`, or None for a figure of
            all codes.
        title: Its title.
        xlabel: The x axis's label.
        ylabel: The y axis's label.
        caption: What it shows and on which sample.
        alt: Alt text: the figure in words.
        data: The values drawn, as the JSON output gives them.
    """

    name: str
    kind: FigureKind
    code: str | None
    title: str
    xlabel: str
    ylabel: str
    caption: str
    alt: str
    data: dict[str, Any]
