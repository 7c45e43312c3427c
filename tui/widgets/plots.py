"""Plots in the terminal, in Unicode braille: the reliability diagram and the
risk-coverage curve of the screening panel.

Each character cell holds 2 x 4 braille dots, so a plot of ``width`` x ``height`` cells
has ``2 width`` x ``4 height`` dots. The data are the screen's own (phase B's calibration
bins and risk-coverage points, :mod:`screening.calibration`), the certified threshold the
delegation plan's. Marks are drawn over the braille: ``●`` a bin's observed accuracy,
``◆`` the certified threshold, ``┄`` the maximum error.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from screening.calibration import CalibrationBin, CoveragePoint

BRAILLE = 0x2800
#: The dot bits of a braille cell, by (column, row) of its 2 x 4 dots.
DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))

WIDTH = 40
HEIGHT = 8


class Canvas:
    """A grid of braille cells with marks over them, each cell with its own style."""

    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self.bits = [[0] * width for _ in range(height)]
        self.styles: list[list[str]] = [[""] * width for _ in range(height)]
        self.marks: dict[tuple[int, int], tuple[str, str]] = {}

    def dot(self, x: float, y: float, style: str = "") -> None:
        """Set the dot at ``(x, y)`` in [0, 1] x [0, 1] (y up)."""
        px = min(int(x * (2 * self.width - 1) + 0.5), 2 * self.width - 1)
        py = min(int((1 - y) * (4 * self.height - 1) + 0.5), 4 * self.height - 1)
        if px < 0 or py < 0:
            return
        row, col = py // 4, px // 2
        self.bits[row][col] |= DOTS[px % 2][py % 4]
        if style:
            self.styles[row][col] = style

    def line(self, x0: float, y0: float, x1: float, y1: float, style: str = "") -> None:
        steps = max(2, int(max(abs(x1 - x0) * 2 * self.width, abs(y1 - y0) * 4 * self.height)) + 1)
        for i in range(steps + 1):
            t = i / steps
            self.dot(x0 + (x1 - x0) * t, y0 + (y1 - y0) * t, style)

    def mark(self, x: float, y: float, char: str, style: str) -> None:
        col = min(max(int(x * (self.width - 1) + 0.5), 0), self.width - 1)
        row = min(max(int((1 - y) * (self.height - 1) + 0.5), 0), self.height - 1)
        self.marks[(row, col)] = (char, style)

    def rows(self) -> list[Text]:
        out = []
        for r in range(self.height):
            line = Text()
            for c in range(self.width):
                if (r, c) in self.marks:
                    char, style = self.marks[(r, c)]
                    line.append(char, style)
                elif self.bits[r][c]:
                    line.append(chr(BRAILLE + self.bits[r][c]), self.styles[r][c])
                else:
                    line.append(" ")
            out.append(line)
        return out


def _framed(
    canvas: Canvas, title: str, top: str, bottom: str, x_left: str, x_right: str, legend: Text
) -> Text:
    """The canvas with a y axis labelled at its top and bottom, an x axis and a legend."""
    pad = max(len(top), len(bottom))
    out = Text(title + "\n", style="bold dim")
    for r, row in enumerate(canvas.rows()):
        label = top if r == 0 else bottom if r == canvas.height - 1 else ""
        out.append(f"{label:>{pad}} ┤" if label else f"{'':>{pad}} │", style="dim")
        out.append_text(row)
        out.append("\n")
    out.append(f"{'':>{pad}} └" + "─" * canvas.width + "\n", style="dim")
    gap = max(1, canvas.width - len(x_left) - len(x_right))
    out.append(f"{'':>{pad}}  {x_left}{' ' * gap}{x_right}\n", style="dim")
    out.append_text(legend)
    return out


def reliability_plot(
    bins: Sequence[CalibrationBin], *, width: int = WIDTH, height: int = HEIGHT
) -> Text:
    """Observed accuracy per confidence bin (``●``, its interval in braille) against the
    diagonal of perfect calibration."""
    canvas = Canvas(width, height)
    canvas.line(0, 0, 1, 1, "dim")
    for b in bins:
        canvas.line(b.confidence, b.accuracy_low, b.confidence, b.accuracy_high, "cyan")
    for b in bins:
        canvas.mark(b.confidence, b.accuracy, "●", "bold cyan")
    counts = " ".join(str(b.n) for b in bins)
    legend = Text.assemble(
        ("● ", "bold cyan"),
        "accuracy per bin, 95% interval · ",
        ("⠑ ", "dim"),
        "calibrated\n",
        (f"pairs per bin: {counts}", "dim"),
    )
    return _framed(
        canvas, "Reliability (accuracy by confidence)", "1", "0", "0", "confidence 1", legend
    )


def risk_coverage_plot(
    points: Sequence[CoveragePoint],
    *,
    certified: tuple[float, float, float] | None = None,
    max_error: float | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> Text:
    """The error rate among the pairs kept against the share kept, thresholds from the
    highest down; ``certified`` is ``(coverage, risk, threshold)``."""
    canvas = Canvas(width, height)
    top = max([p.risk for p in points] + [max_error or 0.0, 0.01]) * 1.1
    if max_error is not None:
        for c in range(width):
            canvas.mark(c / max(1, width - 1), max_error / top, "┄", "red")
    previous: CoveragePoint | None = None
    for p in points:
        if previous is not None:
            canvas.line(
                previous.coverage, previous.risk / top, p.coverage, previous.risk / top, "cyan"
            )
            canvas.line(p.coverage, previous.risk / top, p.coverage, p.risk / top, "cyan")
        else:
            canvas.dot(p.coverage, p.risk / top, "cyan")
        previous = p
    parts: list[tuple[str, str] | str] = [("⠉ ", "cyan"), "error rate of the pairs kept"]
    if max_error is not None:
        parts += [" · ", ("┄ ", "red"), f"max {max_error:.0%}"]
    if certified is not None:
        coverage, risk, threshold = certified
        canvas.mark(coverage, risk / top, "◆", "bold yellow")
        parts += ["\n", ("◆ ", "bold yellow"), f"certified ≥ {threshold:.3f}: {coverage:.0%} kept"]
    return _framed(
        canvas,
        "Risk-coverage (delegating the confident pairs)",
        f"{top:.0%}",
        "0",
        "0",
        "share kept 1",
        Text.assemble(*parts),
    )
