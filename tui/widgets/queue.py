"""The queue: a virtual table of (response, code) pairs, read from the study a page at a time.

A ``DataTable`` holding every row of a 100,000-pair study takes tens of seconds to first
paint. This widget is a line-API :class:`~textual.scroll_view.ScrollView` (as toolong
shows million-line logs): its virtual height is the row count, and :meth:`render_line`
asks the :class:`~tui.source.PairSource` only for the pages that are on screen. Pages
and rendered lines are cached; :meth:`PairQueue.reload` drops the pages after a decision
or when scores arrive, and the next paint replaces the old lines in place (no flicker).
Rendered lines are keyed by what they show (the row's content, the cursor, the width),
not by their place, so they outlive a reload: going back to an order or a filter seen
before draws its rows from the cache.
What a row shows, cell by cell, is drawn by :mod:`tui.widgets.queue_cells`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from textual.binding import BindingType
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from codebooks.model import Scale
from tui.keymap import LIST, bindings
from tui.source import PairSource, Query, Row, row_key
from tui.text import cell_stable, one_line
from tui.widgets.paged import PAGE_SIZE, SCAN_PAGES, PagedList
from tui.widgets.queue_cells import (
    HEADERS,
    HIDDEN_MARK,
    Columns,
    layout_columns,
    render_row,
    value_label,
)
from tui.widgets.scrolling import set_virtual_size

# Re-exported: callers imported these from here before the cut.
__all__ = [
    "FOLLOW_PAGES_AFTER",
    "FOLLOW_PAGES_BEFORE",
    "HIDDEN_MARK",
    "PAGE_SIZE",
    "SCAN_PAGES",
    "PairQueue",
    "value_label",
]


#: How far a reload that follows the highlighted pair looks for it, in pages after its
#: old row (scores arriving insert rows above it) and before it.
FOLLOW_PAGES_AFTER = 4
FOLLOW_PAGES_BEFORE = 1


class PairQueue(PagedList[Row], can_focus=True):
    """A virtual, keyboard-driven table of pairs.

    The first line is a fixed header; line ``y >= 1`` shows row ``scroll_y + y - 1``.
    """

    DEFAULT_CSS = """
    PairQueue {
        background: $surface;
        overflow-x: hidden;
        overflow-y: scroll;  /* always: a scrollbar appearing would relayout the screen */
        scrollbar-size-vertical: 1;
        & > .pair-queue--header { text-style: bold; background: $panel; color: $foreground; }
        & > .pair-queue--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .pair-queue--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
        & > .pair-queue--dim { color: $text-muted; }
        & > .pair-queue--spark { color: $accent; }
        & > .pair-queue--human { color: $success; text-style: bold; }
        & > .pair-queue--model { color: $primary; }
        & > .pair-queue--warn { color: $warning; }
        & > .pair-queue--empty { color: $text-muted; text-style: italic; }
        & > .pair-queue--match { background: $warning 40%; text-style: bold; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "pair-queue--header",
        "pair-queue--cursor",
        "pair-queue--dim",
        "pair-queue--spark",
        "pair-queue--human",
        "pair-queue--model",
        "pair-queue--warn",
        "pair-queue--empty",
        "pair-queue--match",
    }

    BINDINGS: ClassVar[list[BindingType]] = bindings(*LIST)

    class Highlighted(Message):
        """The highlighted row changed (moved, or its content was reloaded)."""

        def __init__(self, queue: PairQueue, index: int, row: Row | None) -> None:
            super().__init__()
            self.queue = queue
            self.index = index
            self.row = row

        @property
        def control(self) -> PairQueue:
            return self.queue

    def __init__(
        self,
        source: PairSource,
        *,
        query: Query | None = None,
        scales: Mapping[str, Scale] | None = None,
        id_width: int | None = None,
        on_highlight: Callable[[int, Row | None], None] | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """
        Args:
            source: Where rows come from.
            query: The initial order and filters.
            scales: The scale of each code id, to show decisions by their labels.
            id_width: Width of the response id column; by default the longest id of the
                first page.
            on_highlight: Called at once, before the ``Highlighted`` message, when the
                highlighted row changes: a pane that follows the cursor then repaints in
                the same frame as the queue instead of one frame later.
        """
        super().__init__(pages=64, lines=512, name=name, id=id, classes=classes)
        self._source = source
        self._on_highlight = on_highlight
        self._query = query or Query()
        self._scales = dict(scales or {})
        self._id_width = 8 if id_width is None else max(2, min(id_width, 16))
        self._auto_id_width = id_width is None
        self._curve_width = max([5, *(s.k for s in self._scales.values())])
        longest = max([1, *(cell_len(x) for s in self._scales.values() for x in s.labels)])
        self._label_width = min(longest, 6)
        self._columns: dict[int, Columns] = {}
        self._headers: dict[int, Strip] = {}
        self._stale: frozenset[tuple[str, str]] = frozenset()
        #: Queries read ahead (:meth:`read_ahead`): their row count and first page.
        self._ahead: dict[Query, tuple[int, list[Row]]] = {}

    # -- public API -------------------------------------------------------------------

    @property
    def stale_keys(self) -> frozenset[tuple[str, str]]:
        """Pairs whose curve is drawn greyed (a score from an older text of the code)."""
        return self._stale

    @stale_keys.setter
    def stale_keys(self, keys: frozenset[tuple[str, str]]) -> None:
        self._stale = keys
        self._lines.clear()
        self._ahead.clear()

    @property
    def source(self) -> PairSource:
        return self._source

    @property
    def pair_query(self) -> Query:
        return self._query

    def read_rows(self, offset: int, limit: int) -> Sequence[Row]:
        return self._source.page(self._query, offset, limit)

    def set_source(self, source: PairSource, *, follow: bool = False) -> None:
        """Read from another source (another scoring configuration), keeping the query;
        ``follow``: keep the highlighted pair highlighted where the new order puts it."""
        self._source = source
        self.reload(follow=follow)

    def set_query(self, query: Query) -> None:
        """Show another order or filter, from the top (from what :meth:`read_ahead`
        read, if it read this query since the last change)."""
        ahead = self._ahead.get(query)
        self._query = query
        self._cursor = 0
        self.scroll_to(y=0, animate=False, immediate=True)
        self.reload(ahead=ahead)

    def read_ahead(self, query: Query) -> Row | None:
        """Read the count and first page of ``query``, and render the lines it shows
        first, while the coder reads: if :meth:`set_query` asks for it next (before any
        other reload or row change, which drop what was read ahead), it costs no query
        and no rendering. The row it would highlight, if any."""
        if query not in self._ahead:
            total = self._source.count(query)
            rows = list(self._source.page(query, 0, PAGE_SIZE)) if total else []
            self._ahead[query] = (total, rows)
            width = self.scrollable_content_region.width
            if width > 0:
                for index, row in enumerate(rows[: self._body_height]):
                    self._line(row, width, selected=index == 0, search=query.search)
        _, rows = self._ahead[query]
        return rows[0] if rows else None

    def reload(
        self,
        *,
        recount: bool = True,
        follow: bool = False,
        ahead: tuple[int, Sequence[Row]] | None = None,
    ) -> None:
        """Drop cached pages (and what was read ahead), and repaint what is on screen.

        Args:
            recount: Count the rows again (needed when the row set may have changed,
                e.g. a decision under a status filter, or new scores).
            follow: Keep the highlighted pair highlighted even if its row moved (scores
                arriving reorder the queue under the coder); the view scrolls with it
                so it stays on the same screen line.
            ahead: The count and first page of the query, read ahead.
        """
        key = self._cached_key(self._cursor) if follow else None
        old = self._cursor
        self._pages.clear()
        self._ahead.clear()  # read before this change
        if ahead is not None:
            self._total, first = ahead
            set_virtual_size(self, Size(0, self._total + 1))
            self._pages.set(0, list(first))
            recount = False
        # Rendered lines are kept: they are keyed by what they show, and a row seen
        # before (another order or filter, and back) is drawn from them again.
        if recount:
            self._total = self._source.count(self._query)
            set_virtual_size(self, Size(0, self._total + 1))
        if self._auto_id_width and self._total:
            first = self._source.page(self._query, 0, PAGE_SIZE)
            self._pages.set(0, list(first))
            self._id_width = max(
                2, min(16, max(cell_len(cell_stable(one_line(r.response_id))) for r in first))
            )
            self._columns.clear()
            self._lines.clear()
            self._auto_id_width = False
        self._cursor = max(0, min(self._cursor, self._total - 1))
        if key is not None:
            self._follow(key, old)
        self.refresh()
        self._post_highlight()
        self.paint_with_key()

    def _cached_key(self, index: int) -> tuple[str, str] | None:
        """The key of row ``index`` if its page is cached (no query)."""
        number, offset = divmod(index, PAGE_SIZE)
        page = self._pages.get(number)
        if page is None or offset >= len(page):
            return None
        return row_key(page[offset])

    def _follow(self, key: tuple[str, str], old: int) -> None:
        """Move the cursor to the row of ``key`` (it was at ``old``), keeping its screen line."""
        row = self.row_at(old)
        if row is not None and row_key(row) == key:
            return
        index = self._find_after(key, old)
        if index is None:
            # A source may know where a pair went (a far jump: scored while highlighted).
            locate = getattr(self._source, "position", None)
            found = locate(self._query, key) if locate is not None else None
            index = None if found is None else int(found)
        if index is None or not 0 <= index < self._total:
            return
        self._cursor = index
        top = int(self.scroll_offset.y) + index - old
        self.scroll_to(y=max(0, top), animate=False, immediate=True)
        self._scroll_cursor_into_view()

    def _find_after(self, key: tuple[str, str], old: int) -> int | None:
        """Index of ``key`` near ``old``: looking down first (where arriving rows push
        it), then a little up; a bounded number of pages."""
        hi = min(self._total, old + FOLLOW_PAGES_AFTER * PAGE_SIZE)
        lo = max(0, old - FOLLOW_PAGES_BEFORE * PAGE_SIZE)
        for index in chain(range(old + 1, hi), range(old - 1, lo - 1, -1)):
            row = self.row_at(index)
            if row is not None and row_key(row) == key:
                return index
        return None

    def refresh_row(self, index: int, *, highlight: bool = True) -> Row | None:
        """Read row ``index`` again (after its decision or note changed) and repaint it.

        Cheaper than :meth:`reload` when the set and order of rows cannot have changed:
        a decision moves no row unless the queue is filtered by status. ``highlight``
        False leaves telling the detail pane to a :meth:`move_to` that follows.
        """
        if not 0 <= index < self._total:
            return None
        self._ahead.clear()  # a row changed: pages read ahead may show it as it was
        fresh = self.reread_row(index)
        if highlight and index == self._cursor:
            self._post_highlight()
        self.paint_with_key()
        return fresh

    def move_to(self, index: int, *, scroll: bool = True) -> None:
        """Highlight row ``index`` (clamped) and bring it into view."""
        index = max(0, min(index, self._total - 1))
        if index != self._cursor:
            self._refresh_row(self._cursor)
            self._cursor = index
            self._refresh_row(index)
        if scroll:
            self._scroll_cursor_into_view()
        self._post_highlight()
        self.paint_with_key()

    def next_undecided(self, start: int) -> int | None:
        """Index of the first undecided row at or after ``start``, wrapping to the top.

        Looks at most :data:`SCAN_PAGES` pages each way, so a huge, mostly decided study
        costs a bounded number of queries.
        """
        if self._query.status == "undecided":
            if self._total == 0:
                return None
            return start if start < self._total else 0
        return self.next_where(start, lambda row: row.decision is None)

    def index_of(self, key: tuple[str, str], near: int, *, span: int = PAGE_SIZE) -> int | None:
        """Index of the row with ``key`` within ``span`` rows of ``near``, if it is there."""
        lo, hi = max(0, near - span), min(self._total, near + span + 1)
        order = sorted(range(lo, hi), key=lambda i: abs(i - near))
        for index in order:
            row = self.row_at(index)
            if row is not None and row_key(row) == key:
                return index
        return None

    # -- rendering --------------------------------------------------------------------

    def _forget_styles(self) -> None:
        super()._forget_styles()
        self._headers.clear()

    def _refresh_row(self, index: int) -> None:
        self.refresh_line(index + 1)

    def _forget_lines_of(self, index: int) -> None:
        """Nothing to drop: a line is keyed by the row's content, and a row read again
        with other content is another key."""

    def _post_highlight(self) -> None:
        row = self.current
        if self._on_highlight is not None:
            self._on_highlight(self._cursor, row)
        self.post_message(self.Highlighted(self, self._cursor, row))

    def _layout(self, width: int) -> Columns:
        columns = self._columns.get(width)
        if columns is None:
            columns = layout_columns(
                width,
                id_width=self._id_width,
                curve_width=self._curve_width,
                label_width=self._label_width,
            )
            self._columns[width] = columns
        return columns

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y == 0:
            return self._header(width)
        index = int(self.scroll_offset.y) + y - 1
        if index >= self._total:
            if index == 0 and y == 1:
                message = "No pairs match." if self._query.filtered else "The study is empty."
                style = self._style() + self._style("pair-queue--empty")
                return Strip([Segment(set_cell_size(f" {message}", width), style)], width)
            return Strip.blank(width, self._style())
        row = self.row_at(index)
        if row is None:
            return Strip.blank(width, self._style())
        return self._line(row, width, selected=index == self._cursor, search=self._query.search)

    def _header(self, width: int) -> Strip:
        strip = self._headers.get(width)
        if strip is None:
            style = self._style() + self._style("pair-queue--header")
            cols = self._layout(width)
            segments = [
                Segment(set_cell_size(title, cell) + " ", style)
                for title, cell in zip(HEADERS, cols.widths, strict=True)
            ]
            strip = self._headers[width] = Strip(segments).adjust_cell_length(width, style)
        return strip

    def _line(self, row: Row, width: int, *, selected: bool, search: str | None) -> Strip:
        """The line showing ``row``, from the cache or drawn (:mod:`tui.widgets.queue_cells`)."""
        stale = row_key(row) in self._stale
        # What the line shows, all of it: the row's content, the cursor, the width, the
        # search marked in it and whether its curve is greyed.
        key = (row, selected, width, search, stale)
        strip = self._lines.get(key)
        if strip is None:
            strip = render_row(
                row,
                width=width,
                columns=self._layout(width),
                scale=self._scales.get(row.code_id),
                search=search,
                stale=stale,
                label_width=self._label_width,
                selected=selected,
                style=self._style,
            )
            self._lines.set(key, strip)
        return strip
