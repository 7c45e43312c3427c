"""The response list: a virtual list of responses, read from the study a page at a time.

One line per response: its id, the start of its text, the highest normalised entropy
across its codes (its least sure code) as a bar and a number, how many of its codes are
decided, and marks for a note on one of its pairs (``✎``) and a memo on it (``¶``). Like
the pair queue (:mod:`tui.widgets.queue`) it is a line-API
:class:`~textual.scroll_view.ScrollView` whose virtual height is the row count: it asks
its :class:`ResponseSource` for the pages on screen only, so 10,000 responses paint as
fast as 10.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, Protocol

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.binding import BindingType
from textual.geometry import Size
from textual.strip import Strip

from study.rows import RESPONSE_ORDERS, ResponseOrder, ResponseRow
from tui.keymap import LIST, bindings
from tui.text import cell_stable, middle_cut, one_line, printable
from tui.widgets.curve import bar
from tui.widgets.paged import PagedList
from tui.widgets.queue_cells import HIDDEN_MARK, MEMO_MARK, NOTE_MARK
from tui.widgets.scrolling import set_virtual_size

#: The column titles: id, response, entropy, coded, marks.
HEADERS = ("id", "response", "H max", "coded", "✎¶")

#: Cells of the entropy column: a bar, a space, the value.
BAR_WIDTH = 4
ENTROPY_WIDTH = BAR_WIDTH + 5


@dataclass(frozen=True)
class ResponseQuery:
    """The order of the response list.

    Attributes:
        order: One of :data:`~study.rows.RESPONSE_ORDERS`.
        reverse: The order backwards.
    """

    order: ResponseOrder = "entropy"
    reverse: bool = False

    def next_order(self, *, skip: Collection[str] = ()) -> ResponseQuery:
        """The next order, forwards, passing over ``skip`` (orders not offered now)."""
        offered = [o for o in RESPONSE_ORDERS if o not in skip or o == self.order]
        index = offered.index(self.order) if self.order in offered else -1
        return ResponseQuery(order=offered[(index + 1) % len(offered)])

    def reversed(self) -> ResponseQuery:
        """The same order backwards (or forwards again)."""
        return replace(self, reverse=not self.reverse)


class ResponseSource(Protocol):
    """Counts, pages and places of responses under a :class:`ResponseQuery`."""

    def blind(self, query: ResponseQuery) -> bool:
        """Whether the model's entropy stays hidden until every code is decided."""
        ...

    def count(self, query: ResponseQuery) -> int:
        """How many responses the list holds."""
        ...

    def page(self, query: ResponseQuery, offset: int, limit: int) -> Sequence[ResponseRow]:
        """Rows ``offset .. offset + limit`` in the query's order."""
        ...

    def position(self, query: ResponseQuery, response_id: str) -> int:
        """The index of a response in the query's order."""
        ...


def coded_text(row: ResponseRow) -> str:
    """``2/3``: codes decided of the codes to decide."""
    return f"{row.decided}/{row.codes}"


def entropy_text(row: ResponseRow, *, hidden: bool) -> str:
    """The least sure code's entropy as a bar and a value (``███▌ 0.87``); ``blind``
    while it is hidden, ``·`` when no code is scored."""
    if hidden:
        return HIDDEN_MARK
    if row.max_entropy is None:
        return "·"
    return f"{bar(row.max_entropy, BAR_WIDTH)} {row.max_entropy:.2f}"


class ResponseList(PagedList[ResponseRow], can_focus=True):
    """A virtual, keyboard-driven list of responses.

    The first line is a fixed header; line ``y >= 1`` shows row ``scroll_y + y - 1``.
    """

    DEFAULT_CSS = """
    ResponseList {
        background: $surface;
        overflow-x: hidden;
        overflow-y: scroll;
        scrollbar-size-vertical: 1;
        & > .response-list--header { text-style: bold; background: $panel; color: $foreground; }
        & > .response-list--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .response-list--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
        & > .response-list--dim { color: $text-muted; }
        & > .response-list--bar { color: $accent; }
        & > .response-list--done { color: $success; text-style: bold; }
        & > .response-list--warn { color: $warning; }
        & > .response-list--empty { color: $text-muted; text-style: italic; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "response-list--header",
        "response-list--cursor",
        "response-list--dim",
        "response-list--bar",
        "response-list--done",
        "response-list--warn",
        "response-list--empty",
    }

    BINDINGS: ClassVar[list[BindingType]] = bindings(*LIST)

    def __init__(
        self,
        source: ResponseSource,
        *,
        query: ResponseQuery | None = None,
        on_highlight: Callable[[int, ResponseRow | None], None] | None = None,
        id: str | None = None,
    ) -> None:
        """
        Args:
            source: Where rows come from.
            query: The initial order.
            on_highlight: Called when the highlighted row changes (moved or reloaded).
        """
        super().__init__(pages=32, lines=256, id=id)
        self._source = source
        self._query = query or ResponseQuery()
        self._on_highlight = on_highlight
        self._blind = source.blind(self._query)
        self._id_width = 8

    # -- public API -------------------------------------------------------------------

    @property
    def response_query(self) -> ResponseQuery:
        return self._query

    @property
    def blind(self) -> bool:
        """Whether entropy is hidden on responses not decided across every code."""
        return self._blind

    def read_rows(self, offset: int, limit: int) -> Sequence[ResponseRow]:
        return self._source.page(self._query, offset, limit)

    def set_query(self, query: ResponseQuery, *, at: str | None = None) -> None:
        """Show another order, from the top or (``at``) on that response."""
        self._query = query
        self._cursor = 0
        self.scroll_to(y=0, animate=False, immediate=True)
        self.reload(at=at)

    def reload(self, *, at: str | None = None) -> None:
        """Read the rows again (decided counts, marks) and repaint; the cursor goes to
        the response ``at`` (by default it stays on its line)."""
        self._pages.clear()
        self._lines.clear()
        self._blind = self._source.blind(self._query)
        self._total = self._source.count(self._query)
        set_virtual_size(self, Size(0, self._total + 1))
        first = self.row_at(0)
        if first is not None:
            page = self._pages.get(0) or []
            self._id_width = max(
                2, min(16, max(cell_len(cell_stable(one_line(r.response_id))) for r in page))
            )
        if at is not None:
            self._cursor = self._source.position(self._query, at)
        self._cursor = max(0, min(self._cursor, self._total - 1))
        self._scroll_cursor_into_view()
        self.refresh()
        self._highlighted()

    def move_to(self, index: int, *, scroll: bool = True) -> None:
        """Highlight row ``index`` (clamped) and bring it into view."""
        index = max(0, min(index, self._total - 1))
        if index != self._cursor:
            self.refresh_line(self._cursor + 1)
            self._cursor = index
            self.refresh_line(index + 1)
        if scroll:
            self._scroll_cursor_into_view()
        self._highlighted()

    def _highlighted(self) -> None:
        if self._on_highlight is not None:
            self._on_highlight(self._cursor, self.current)

    # -- rendering --------------------------------------------------------------------

    def _widths(self, width: int) -> tuple[int, int, int, int, int]:
        """Cells of id, response, entropy, coded and marks at ``width``."""
        codes = self.row_at(0)
        coded = max(5, len(f"{codes.codes}/{codes.codes}") if codes else 5)
        fixed = self._id_width + ENTROPY_WIDTH + coded + 2 + 5  # five gaps
        return (self._id_width, max(8, width - fixed), ENTROPY_WIDTH, coded, 2)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y == 0:
            style = self._style() + self._style("response-list--header")
            segments = [
                Segment(set_cell_size(title, cells) + " ", style)
                for title, cells in zip(HEADERS, self._widths(width), strict=True)
            ]
            return Strip(segments).adjust_cell_length(width, style)
        index = int(self.scroll_offset.y) + y - 1
        if index >= self._total:
            if index == 0 and y == 1:
                style = self._style() + self._style("response-list--empty")
                return Strip([Segment(set_cell_size(" The study is empty.", width), style)], width)
            return Strip.blank(width, self._style())
        row = self.row_at(index)
        if row is None:
            return Strip.blank(width, self._style())
        selected = index == self._cursor
        key = (row.response_id, index, selected, width)
        strip = self._lines.get(key)
        if strip is None:
            strip = self._render_row(row, width, selected=selected)
            self._lines.set(key, strip)
        return strip

    def _render_row(self, row: ResponseRow, width: int, *, selected: bool) -> Strip:
        base = self._style()
        if selected:
            base = base + self._style("response-list--cursor")
        segments: list[Segment] = []

        def cell(text: str, size: int, style: Style | None = None) -> None:
            text = cell_stable(printable(text, single_line=True))
            segments.append(Segment(set_cell_size(text, size), base + style if style else base))
            segments.append(Segment(" ", base))

        dim = self._style("response-list--dim", partial=True)
        id_cells, text_cells, entropy_cells, coded_cells, mark_cells = self._widths(width)
        safe_id = cell_stable(printable(row.response_id, single_line=True))
        cell(middle_cut(safe_id, id_cells), id_cells, dim)
        cell(one_line(row.text[:4_000]), text_cells)  # shown on one line: its start
        hidden = self._blind and not row.complete
        shown = entropy_text(row, hidden=hidden)
        scored = not hidden and row.max_entropy is not None
        bar_style = self._style("response-list--bar", partial=True)
        cell(shown, entropy_cells, bar_style if scored else dim)
        coded_style: Style | None = dim if row.decided == 0 else None
        if row.complete:
            coded_style = self._style("response-list--done", partial=True)
        cell(coded_text(row).rjust(coded_cells), coded_cells, coded_style)
        marks = (NOTE_MARK if row.noted else " ") + (MEMO_MARK if row.memo else "")
        cell(marks, mark_cells, self._style("response-list--warn", partial=True))
        return Strip(segments).adjust_cell_length(width, base)
