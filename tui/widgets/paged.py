"""What the app's line-API lists share: a cursor over rows read a page at a time.

:class:`~tui.widgets.queue.PairQueue` (pairs) and
:class:`~tui.widgets.response_list.ResponseList` (responses) are both a header line over
a virtual list whose height is the row count. This base holds what they do alike: the
cursor's keys and clicks, keeping the cursor in view, and the cached component styles
(dropped with the rendered lines when the theme or the focus changes). Each list keeps
its own pages, rows and drawing, and its own :meth:`move_to`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import ceil
from typing import Any, Generic, TypeVar

from rich.style import Style
from textual import events
from textual.cache import LRUCache
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip

from tui.widgets.frames import paint_with_key

#: Rows read from the study per query: about one screenful, so a repaint after a change
#: reads one or two pages.
PAGE_SIZE = 40

#: How far a search for the next row of a kind looks, in pages each way, before giving
#: up (a huge, mostly done study costs a bounded number of queries).
SCAN_PAGES = 100

#: Rows kept in view beyond the cursor when it moves near the top or bottom edge.
SCROLL_MARGIN = 2

RowT = TypeVar("RowT")


class PagedList(ScrollView, Generic[RowT]):
    """A header line over ``total`` rows with a cursor (see the module)."""

    def __init__(self, *, pages: int = 64, lines: int = 256, **kwargs: Any) -> None:
        """
        Args:
            pages: Pages of rows kept.
            lines: Rendered lines kept.
            kwargs: For :class:`~textual.scroll_view.ScrollView` (``name``, ``id``, ...).
        """
        super().__init__(**kwargs)
        self._total = 0
        self._cursor = 0
        self._pages: LRUCache[int, list[RowT]] = LRUCache(pages)
        self._lines: LRUCache[Any, Strip] = LRUCache(lines)
        self._styles: dict[str, Style] = {}

    def read_rows(self, offset: int, limit: int) -> Sequence[RowT]:
        """Rows ``offset .. offset + limit`` of what the list shows, from its source."""
        raise NotImplementedError

    @property
    def current(self) -> RowT | None:
        """The highlighted row, if any."""
        return self.row_at(self._cursor)

    def row_at(self, index: int) -> RowT | None:
        """Row ``index``, reading its page if it is not kept."""
        if not 0 <= index < self._total:
            return None
        number, offset = divmod(index, PAGE_SIZE)
        page = self._pages.get(number)
        if page is None:
            page = list(self.read_rows(number * PAGE_SIZE, PAGE_SIZE))
            self._pages.set(number, page)
        return page[offset] if offset < len(page) else None

    @property
    def total(self) -> int:
        return self._total

    @property
    def cursor(self) -> int:
        return self._cursor

    def move_to(self, index: int, *, scroll: bool = True) -> None:
        """Highlight row ``index`` (clamped) and, with ``scroll``, bring it into view."""
        raise NotImplementedError

    def reread_row(self, index: int) -> RowT | None:
        """Read row ``index`` again from the source (its decision, note or memo changed)
        and repaint its line; the row as read now (None outside the list)."""
        if not 0 <= index < self._total:
            return None
        number, offset = divmod(index, PAGE_SIZE)
        fresh = list(self.read_rows(index, 1))
        page = self._pages.get(number)
        if page is not None and offset < len(page) and fresh:
            page[offset] = fresh[0]
        self._forget_lines_of(index)
        self.refresh_line(index + 1)  # below the header
        return fresh[0] if fresh else None

    def _forget_lines_of(self, index: int) -> None:
        """Drop the rendered lines of row ``index`` (selected or not, any width): its
        content changed. Here the lines are keyed ``(id, index, ...)``; a list whose keys
        are the rows' content has nothing to drop."""
        # An LRUCache has no items(), only keys().
        for key in [k for k in self._lines.keys() if k[1] == index]:  # noqa: SIM118
            self._lines.discard(key)

    def paint_with_key(self) -> None:
        """Hand the list's repaint (and its scrollbar's) to the screen now: what a key
        changed here is painted in the frame of the rest (:mod:`tui.widgets.frames`)."""
        paint_with_key(self, self.vertical_scrollbar if self.show_vertical_scrollbar else None)

    def next_where(self, start: int, wanted: Callable[[RowT], bool]) -> int | None:
        """Index of the first ``wanted`` row at or after ``start``, wrapping to the top;
        at most :data:`SCAN_PAGES` pages each way."""
        limit = SCAN_PAGES * PAGE_SIZE
        for lo, hi in ((start, min(self._total, start + limit)), (0, min(start, limit))):
            for index in range(lo, hi):
                row = self.row_at(index)
                if row is not None and wanted(row):
                    return index
        return None

    # -- actions ----------------------------------------------------------------------

    def action_cursor_down(self) -> None:
        self.move_to(self._cursor + 1)

    def action_cursor_up(self) -> None:
        self.move_to(self._cursor - 1)

    def action_page_down(self) -> None:
        self.move_to(self._cursor + max(1, self._body_height - 1))

    def action_page_up(self) -> None:
        self.move_to(self._cursor - max(1, self._body_height - 1))

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(self._total - 1)

    async def on_click(self, event: events.Click) -> None:
        y = event.get_content_offset_capture(self).y
        if y >= 1:  # below the header
            self.move_to(int(self.scroll_offset.y) + y - 1, scroll=False)

    # -- styles -----------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._forget_styles()

    def on_focus(self, event: events.Focus) -> None:
        self._forget_styles()
        self.refresh()

    def on_blur(self, event: events.Blur) -> None:
        self._forget_styles()
        self.refresh()

    def _forget_styles(self) -> None:
        self._lines.clear()
        self._styles.clear()

    def _style(self, component: str | None = None, *, partial: bool = False) -> Style:
        """The widget's style (``component`` None) or a component's, cached."""
        key = f"{component}:{partial}"
        style = self._styles.get(key)
        if style is None:
            if component is None:
                style = self.rich_style
            elif partial:
                # A partial component style keeps theme colours with alpha unblended
                # ($text-muted renders white); take the blended colour of the full style
                # and leave the background to the row.
                full = self.get_component_rich_style(component)
                style = Style(color=full.color, bold=full.bold, italic=full.italic)
            else:
                style = self.get_component_rich_style(component)
            self._styles[key] = style
        return style

    # -- scrolling --------------------------------------------------------------------

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        # As ScrollView's, but the scrollbar is repainted only when its thumb moves: on
        # a long list a key that scrolls one row moves it by less than an eighth of a
        # cell, and its repaint was a tenth of the key's work.
        if self.show_vertical_scrollbar:
            bar = self.vertical_scrollbar
            if _thumb(bar, old_value) != _thumb(bar, new_value):
                bar.position = new_value
            else:
                bar.set_reactive(ScrollBar.position, bar.validate_position(new_value))
        if round(old_value) != round(new_value):
            self.refresh(self.size.region)

    @property
    def _body_height(self) -> int:
        """Rows on screen below the header."""
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_cursor_into_view(self) -> None:
        """Scroll so that the cursor's row shows with :data:`SCROLL_MARGIN` rows beyond
        it on either side (fewer on a short list), so the next rows are in view."""
        top = int(self.scroll_offset.y)
        height = self._body_height
        margin = min(SCROLL_MARGIN, max(0, (height - 1) // 2))
        if self._cursor < top + margin:
            self.scroll_to(y=max(0, self._cursor - margin), animate=False, immediate=True)
        elif self._cursor >= top + height - margin:
            y = self._cursor - height + 1 + margin
            self.scroll_to(y=min(y, max(0, self._total - height)), animate=False, immediate=True)


def _thumb(bar: ScrollBar, position: float) -> tuple[int, int] | None:
    """Where ``bar`` draws its thumb at ``position``, in eighths of a cell (as Textual's
    ``ScrollBarRender.render_bar`` places it); None when it draws none."""
    size = bar.size.height
    virtual = ceil(bar.window_virtual_size)
    window = ceil(bar.window_size if bar.window_size < bar.window_virtual_size else 0)
    if not (window and size and virtual and size != virtual):
        return None
    thumb = max(1, window / (virtual / size))
    start = int((size - thumb) * (bar.validate_position(position) / (virtual - window)) * 8)
    return start, start + ceil(thumb * 8)
