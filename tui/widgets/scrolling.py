"""Changing a scrolling widget's virtual size without laying out the whole screen.

``Widget.virtual_size`` is a layout reactive: assigning it lays out and repaints every
widget on the screen, which a queue that changes its row count on each filter, or a
pane that rewraps on each move, cannot afford. A widget whose own box is fixed by the
CSS only needs its scroll range and scrollbar updated; if the scrollbar appears or
disappears, the scrollbar's own display change still asks for the layout it needs.

That update is Textual's private ``Widget._scroll_update`` (as of textual 8): the one
private call of the app, kept here. Should a release drop it, the public (slower)
assignment of ``virtual_size`` takes over instead of the app failing.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.widget import Widget

#: Textual's private method that updates the scroll range and scrollbars.
SCROLL_UPDATE = "_scroll_update"


def set_virtual_size(widget: Widget, size: Size) -> bool:
    """Give ``widget`` the scroll range ``size``; returns whether it changed."""
    if size == widget.virtual_size:
        return False
    scroll_update = getattr(widget, SCROLL_UPDATE, None)
    if scroll_update is None:
        widget.virtual_size = size
        return True
    widget.set_reactive(Widget.virtual_size, size)
    scroll_update(size)  # the scroll range, the scrollbars and a clamped offset
    return True
