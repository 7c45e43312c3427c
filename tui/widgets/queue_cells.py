"""Cells of the queue (:mod:`tui.widgets.queue`): column widths, cell texts, one row drawn.

Pure of the widget: :func:`render_row` draws a row from the row, its column widths and a
style lookup, so the widget keeps only scrolling, paging and caching.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from codebooks.model import Scale
from tui.source import Row, is_hidden
from tui.text import cell_stable, middle_cut, one_line, printable
from tui.widgets.curve import spark


@dataclass(frozen=True)
class Columns:
    """Cell widths of one rendering width; the snippet takes what is left."""

    id: int
    snippet: int
    code: int
    curve: int
    pick: int
    entropy: int
    status: int
    #: The pair's note mark, then its response's memo mark.
    note: int = 2

    @property
    def widths(self) -> tuple[int, ...]:
        return (
            self.id,
            self.snippet,
            self.code,
            self.curve,
            self.pick,
            self.entropy,
            self.status,
            self.note,
        )


HEADERS = ("id", "response", "code", "curve", "pick", "H", "coded", "✎¶")

#: The note column's mark on a pair with a note.
NOTE_MARK = "✎"

#: The note column's mark (in its second cell) on a pair whose response has a memo.
MEMO_MARK = "¶"

#: The curve column of a pair whose model answer is hidden (blind coding).
HIDDEN_MARK = "blind"


def status_text(row: Row, label: str | None) -> str:
    """``·`` undecided, ``✓ 4`` coded by the coder, ``≈ 4`` accepted from the model."""
    if row.decision is None:
        return "·"
    mark = "≈" if row.source == "model" else "✓"
    return f"{mark} {label if label is not None else row.decision}"


def value_label(scale: Scale | None, value: int | None) -> str | None:
    """A stored value's name (:meth:`Scale.label_of`); None for no value, the digits
    where the scale is unknown."""
    if value is None:
        return None
    return scale.label_of(value) if scale is not None else str(value)


def snippet(text: str, search: str | None = None) -> str:
    """The response on one line, control characters shown as pictures (never sent to the
    terminal); whitespace runs (line breaks too) become one space. With ``search``, it
    starts a little before the first match, so the match is on screen."""
    # 400 cells are shown: a long response is cut before its whitespace is folded (a
    # search looks a little further in for its match).
    line = one_line(text[: 200_000 if search else 4_000])
    if search:
        folded = line.casefold()
        # An index into the folded text is one into the line only when folding kept its
        # length ("ß" folds to "ss"); match_spans makes the same check.
        at = folded.find(search.casefold()) if len(folded) == len(line) else -1
        if at > 12:
            line = "…" + line[at - 10 :]
    return line[:400]


def match_spans(text: str, search: str | None) -> list[tuple[int, int]]:
    """Where ``search`` occurs in ``text`` (case-insensitive), as (start, end) indexes."""
    if not search:
        return []
    folded, needle = text.casefold(), search.casefold()
    spans: list[tuple[int, int]] = []
    at = folded.find(needle)
    while at >= 0 and len(folded) == len(text):
        spans.append((at, at + len(needle)))
        at = folded.find(needle, at + len(needle))
    return spans


def layout_columns(width: int, *, id_width: int, curve_width: int, label_width: int) -> Columns:
    """The column widths at ``width`` cells: fixed columns, the snippet takes the rest."""
    wide = width >= 110
    code = 24 if wide else 14
    pick = max(4, label_width + 4)
    status = max(5, label_width + 2)
    fixed = id_width + code + curve_width + pick + 4 + status + 2 + 7
    return Columns(
        id=id_width,
        snippet=max(8, width - fixed),
        code=code,
        curve=curve_width,
        pick=pick,
        entropy=4,
        status=status,
    )


class StyleOf(Protocol):
    """The widget's style (``component`` None) or a component's (``PairQueue._style``)."""

    def __call__(self, component: str | None = None, *, partial: bool = False) -> Style: ...


def highlighted_cell(
    segments: list[Segment], text: str, search: str | None, size: int, base: Style, mark: Style
) -> None:
    """A cell of ``size`` cells showing ``text`` with each match of ``search`` in ``mark``."""
    text = set_cell_size(text, size)
    start = 0
    for lo, hi in match_spans(text, search):
        segments.append(Segment(text[start:lo], base))
        segments.append(Segment(text[lo:hi], mark))
        start = hi
    segments.append(Segment(text[start:], base))
    segments.append(Segment(" ", base))


def safe(text: str) -> str:
    """Text from a file (an id, a code's name, a label) for a one-line table cell: no
    control characters, every character in the cells Rich counts for it."""
    return cell_stable(printable(text, single_line=True))


def render_row(
    row: Row,
    *,
    width: int,
    columns: Columns,
    scale: Scale | None,
    search: str | None,
    stale: bool,
    label_width: int,
    selected: bool,
    style: StyleOf,
) -> Strip:
    """One line of the queue showing ``row``.

    Args:
        row: The pair.
        width: The line's width in cells.
        columns: The column widths at ``width``.
        scale: The code's scale (decisions shown by label), if known.
        search: The queue's search, marked in the snippet.
        stale: Grey the curve (a score from an older text of the code).
        label_width: Cells of the pick's label.
        selected: The cursor's row.
        style: The widget's styles.
    """
    base = style()
    if selected:
        base = base + style("pair-queue--cursor")

    def get(component: str, *, partial: bool = False) -> Style:
        return style(component, partial=partial)

    cols = columns
    segments: list[Segment] = []

    def cell(text: str, size: int, style: Style | None = None, right: bool = False) -> None:
        """A cell of ``text`` that is safe to draw (see :func:`safe`)."""
        if right and cell_len(text) < size:
            text = " " * (size - cell_len(text)) + text
        segments.append(Segment(set_cell_size(text, size), base + style if style else base))
        segments.append(Segment(" ", base))

    dim = get("pair-queue--dim", partial=True)
    cell(middle_cut(safe(row.response_id), cols.id), cols.id, dim)
    # At most two characters per cell of the snippet: the rest is cut off anyway.
    shown = cell_stable(snippet(row.text, search)[: 2 * cols.snippet])
    if match_spans(shown, search):
        mark = base + get("pair-queue--match")
        highlighted_cell(segments, shown, search, cols.snippet, base, mark)
    else:
        cell(shown, cols.snippet)
    cell(safe(row.code_name), cols.code)
    # The cells below are the app's own numbers and marks, except the labels.
    if is_hidden(row):
        # Blind: the model's answer stays hidden until the coder decides the pair.
        cell(HIDDEN_MARK, cols.curve, dim)
        cell("", cols.pick)
        cell("", cols.entropy)
    elif row.surprisal is None:
        cell("·" * (scale.k if scale else 1), cols.curve, dim)
        cell("", cols.pick)
        cell("", cols.entropy)
    else:
        cell(
            spark(row.surprisal),
            cols.curve,
            dim if stale else get("pair-queue--spark", partial=True),
        )
        pick = safe(row.pick_label or "")
        confidence = "" if row.confidence is None else f"{row.confidence:.2f}"[1:]
        if row.confidence is not None and row.confidence >= 0.995:
            confidence = "1.0"
        pick_text = f"{set_cell_size(pick, label_width)} {confidence}"
        cell(pick_text, cols.pick)
        entropy = "" if row.norm_entropy is None else f"{row.norm_entropy:.2f}"
        cell(entropy, cols.entropy, right=True)
    if row.decision is None:
        status_style = dim
    elif row.source == "model":
        status_style = get("pair-queue--model", partial=True)
    else:
        status_style = get("pair-queue--human", partial=True)
    cell(safe(status_text(row, value_label(scale, row.decision))), cols.status, status_style)
    marks = (NOTE_MARK if row.note else " ") + (MEMO_MARK if row.memo else "")
    cell(marks, cols.note, get("pair-queue--warn", partial=True))
    # Every cell was cut or padded to its size, and one space follows each but the last
    # (the line's last cell is its own).
    segments.pop()
    # One segment per run of one style (the spaces between cells join their neighbours):
    # every segment costs the compositor and the app's filters again on each paint.
    segments = list(Segment.simplify(segments))
    drawn = sum(cols.widths) + len(cols.widths) - 1
    if drawn == width:
        return Strip(segments, width)
    return Strip(segments, drawn).adjust_cell_length(width, base)
