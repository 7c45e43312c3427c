"""Draw a report's figures with matplotlib (the Agg backend, imported here only).

Each :class:`study.report._figure.Figure` is drawn from its ``data`` alone, in the
Okabe-Ito colour-blind-safe palette, and given as SVG text (for inlining: no XML prolog,
no metadata, ids salted by the figure's name so that several figures share a page) or
written as SVG and PNG files.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from study.report._figure import Figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure as MplFigure

#: Okabe & Ito's palette, safe for the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
#: A sequential colour map readable in grey and by colour-blind readers.
SEQUENTIAL = "cividis"
PNG_DPI = 300
SIZE = (6.4, 4.2)

_PROLOG = re.compile(r"^.*?(?=<svg)", re.DOTALL)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)


def _mpl() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def draw(figure: Figure) -> MplFigure:
    """The figure as a matplotlib figure (closed from pyplot: the caller owns it)."""
    from matplotlib.figure import Figure as MplFigure

    _mpl()
    height = SIZE[1]
    if figure.kind in ("forest", "entropy"):
        count = len(figure.data["rows"] if figure.kind == "forest" else figure.data["codes"])
        height = max(2.6, 1.2 + 0.45 * count) + (0.3 if figure.kind == "forest" else 0.0)
    fig = MplFigure(figsize=(SIZE[0], height))
    ax = fig.add_subplot()
    DRAWERS[figure.kind](ax, figure.data)
    # At a fixed height: placed automatically, the title measures every tick label.
    ax.set_title(figure.title, loc="left", fontsize=11, y=1.0)
    ax.set_xlabel(figure.xlabel)
    ax.set_ylabel(figure.ylabel)
    ax.spines[["top", "right"]].set_visible(False)
    _margins(fig, ax, height, rotated=figure.kind in ROTATED, legend=figure.kind == "forest")
    return fig


#: The kinds whose x tick labels are turned (scale labels).
ROTATED = frozenset({"confusion", "curves"})


def ytick_labels(ax: Axes) -> list[str]:
    """The y tick labels of the axes (as ``Axes.get_yticklabels`` gives them), from its
    locator and formatter alone: asking the axes makes and lays out every tick once more."""
    axis = ax.yaxis
    return [
        str(t) for t in axis.get_major_formatter().format_ticks(list(axis.get_major_locator()()))
    ]


def _margins(
    fig: MplFigure, ax: Axes, height: float, *, rotated: bool, legend: bool = False
) -> None:
    """Fixed margins wide enough for the tick labels (and a legend under the axis): a
    layout engine would measure every text twice, and doubles the time to draw a
    figure."""
    widest = max((len(text) for text in ytick_labels(ax)), default=4)
    left = min(0.45, (0.45 + 0.075 * max(widest, 4)) / SIZE[0])
    bottom = 0.75 / height
    if rotated:
        bottom += 0.25 / height
    if legend:
        bottom += 0.3 / height
    fig.subplots_adjust(left=left, right=0.97, bottom=bottom, top=1 - 0.45 / height)


def svg_text(figure: Figure) -> str:
    """The figure as an ``<svg>`` element to inline in HTML."""
    import matplotlib

    fig = draw(figure)
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": figure.name, "svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return inline(buffer.getvalue())


def inline(svg: str) -> str:
    """An SVG file's text as an element for HTML: no XML prolog, no doctype, no metadata."""
    return _METADATA.sub("", _PROLOG.sub("", svg, count=1), count=1).strip()


def save(figure: Figure, folder: Path) -> list[Path]:
    """Write ``<name>.svg`` and ``<name>.png`` (300 dpi) into ``folder``."""
    import matplotlib

    fig = draw(figure)
    out = []
    with matplotlib.rc_context({"svg.hashsalt": figure.name, "svg.fonttype": "none"}):
        svg = folder / f"{figure.name}.svg"
        fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
        out.append(svg)
    png = folder / f"{figure.name}.png"
    fig.savefig(png, format="png", dpi=PNG_DPI, metadata={"Software": None})
    out.append(png)
    return out


def save_in(folder: Path, figure: Figure) -> list[Path]:
    """:func:`save` with the folder first: a ``functools.partial`` of it, picklable,
    draws in another process (:func:`study.report._parallel.draw_all`)."""
    return save(figure, folder)


# -- the drawings ----------------------------------------------------------------------


def _reliability(ax: Axes, data: dict[str, Any]) -> None:
    bins = data["bins"]
    ax.plot(
        [0, 1], [0, 1], linestyle="--", color="#777777", linewidth=1, label="perfect calibration"
    )
    x = [b["confidence"] for b in bins]
    y = [b["accuracy"] for b in bins]
    low = [b["accuracy"] - b["accuracy_low"] for b in bins]
    high = [b["accuracy_high"] - b["accuracy"] for b in bins]
    ax.errorbar(
        x,
        y,
        yerr=[low, high],
        fmt="o",
        color=PALETTE[0],
        ecolor=PALETTE[0],
        capsize=3,
        label="observed accuracy (95% interval)",
    )
    for b in bins:
        ax.annotate(
            f"n={b['n']}",
            (b["confidence"], b["accuracy_high"]),
            textcoords="offset points",
            xytext=(0, 4),
            ha="center",
            fontsize=7,
            color="#333333",
        )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.08)
    ax.legend(loc="upper left", fontsize=8, frameon=False)


def _risk_coverage(ax: Axes, data: dict[str, Any]) -> None:
    points = data["points"]
    ax.step(
        [p["coverage"] for p in points],
        [p["risk"] for p in points],
        where="post",
        color=PALETTE[0],
        label="error rate above the threshold",
    )
    if data["max_error"] is not None:
        ax.axhline(
            data["max_error"],
            linestyle="--",
            color=PALETTE[3],
            linewidth=1,
            label=f"maximum error {data['max_error']:.1%}",
        )
    certified = data["certified"]
    if certified is not None:
        ax.vlines(
            certified["coverage"],
            certified["risk"],
            certified["upper_bound"],
            color=PALETTE[1],
            linewidth=2,
        )
        ax.plot(
            [certified["coverage"]],
            [certified["risk"]],
            marker="D",
            color=PALETTE[1],
            linestyle="none",
            label=(
                f"certified ≥ {certified['threshold']:.3f} (bound {certified['upper_bound']:.1%})"
            ),
        )
    ax.set_xlim(0, 1.02)
    top = max([p["risk"] for p in points] + [data["max_error"] or 0.0])
    if certified is not None:
        top = max(top, certified["upper_bound"])
    ax.set_ylim(0, max(0.05, top * 1.15))
    ax.legend(loc="upper left", fontsize=8, frameon=False)


def _forest(ax: Axes, data: dict[str, Any]) -> None:
    rows = data["rows"]
    positions = list(range(len(rows)))[::-1]
    drawn = False
    for offset, key, colour, marker in (
        (0.15, "kappa", PALETTE[0], "o"),
        (-0.15, "alpha", PALETTE[1], "s"),
    ):
        xs, ys, lows, highs = [], [], [], []
        for y, row in zip(positions, rows, strict=True):
            e = row[key]
            if e is None or e["value"] is None:
                continue
            xs.append(e["value"])
            ys.append(y + offset)
            lows.append(e["value"] - (e["low"] if e["low"] is not None else e["value"]))
            highs.append((e["high"] if e["high"] is not None else e["value"]) - e["value"])
        if xs:
            drawn = True
            ax.errorbar(
                xs,
                ys,
                xerr=[lows, highs],
                fmt=marker,
                color=colour,
                capsize=3,
                label="Cohen's kappa" if key == "kappa" else "Krippendorff's alpha",
            )
    ax.axvline(0, color="#777777", linewidth=1, linestyle=":")
    ax.axvline(1, color="#777777", linewidth=1, linestyle=":")
    ax.set_yticks(positions, [r["code"] for r in rows])
    ax.set_xlim(min(-0.1, ax.get_xlim()[0]), 1.05)
    if drawn:
        # Below the axis, under its label: a legend among the rows read as one more
        # estimate (its markers sat at x = -0.05, an estimate below zero).
        ax.legend(
            loc="upper center",
            bbox_to_anchor=(0.5, -0.32),
            ncol=2,
            fontsize=8,
            frameon=False,
            borderaxespad=0.2,
            handletextpad=0.3,
            columnspacing=1.0,
        )


def _confusion(ax: Axes, data: dict[str, Any]) -> None:
    counts = data["counts"]
    labels = data["labels"]
    import numpy as np

    edges = np.arange(len(labels) + 1) - 0.5
    # A mesh, not an image: the SVG stays vector, with no embedded raster.
    ax.pcolormesh(edges, edges, np.asarray(counts), cmap=SEQUENTIAL, vmin=0)
    ax.invert_yaxis()
    ax.set_aspect("equal")
    top = max((max(row) for row in counts), default=0)
    for i, row in enumerate(counts):
        for j, value in enumerate(row):
            ax.text(
                j,
                i,
                str(value),
                ha="center",
                va="center",
                fontsize=8,
                color="black" if top and value > top * 0.6 else "white",
            )
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    # Each cell shows its count: no colour bar to read.
    ax.spines[:].set_visible(False)


def _entropy(ax: Axes, data: dict[str, Any]) -> None:
    codes = data["codes"]
    names = list(codes)
    stats = [
        {
            "label": name,
            "whislo": c["quartiles"][0],
            "q1": c["quartiles"][1],
            "med": c["quartiles"][2],
            "q3": c["quartiles"][3],
            "whishi": c["quartiles"][4],
            "mean": c["mean"],
        }
        for name, c in codes.items()
    ]
    positions = list(range(len(names), 0, -1))
    ax.bxp(
        stats,
        positions=positions,
        orientation="horizontal",
        showfliers=False,
        showmeans=True,
        patch_artist=True,
        boxprops={"facecolor": PALETTE[5], "edgecolor": PALETTE[0]},
        medianprops={"color": PALETTE[3], "linewidth": 2},
        meanprops={"marker": "D", "markerfacecolor": PALETTE[1], "markeredgecolor": "black"},
    )
    ax.set_xlim(0, 1)


def _curves(ax: Axes, data: dict[str, Any]) -> None:
    examples = data["examples"]
    markers = ("o", "s", "^", "D", "v")
    labels: list[str] = []
    for i, e in enumerate(examples):
        labels = e["labels"]
        ax.plot(
            range(len(e["surprisal"])),
            e["surprisal"],
            marker=markers[i % len(markers)],
            color=PALETTE[i % len(PALETTE)],
            label=f"{e['which']}: {e['response_id']} (H {e['norm_entropy']:.2f})",
        )
    ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, frameon=False)


DRAWERS = {
    "reliability": _reliability,
    "risk_coverage": _risk_coverage,
    "forest": _forest,
    "confusion": _confusion,
    "entropy": _entropy,
    "curves": _curves,
}
