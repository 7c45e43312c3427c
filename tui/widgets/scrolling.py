"""Changing a scrolling widget's virtual size without laying out the whole screen.

``Widget.virtual_size`` is a layout reactive: assigning it lays out and repaints every
widget on the screen, which a queue that changes its row count on each filter, or a
pane that rewraps on each move, cannot afford. A widget whose own box is fixed by the
CSS only needs its scroll range and scrollbar updated; if the scrollbar appears or
disappears, the scrollbar's own display change still asks for the layout it needs.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.widget import Widget


def set_virtual_size(widget: Widget, size: Size) -> bool:
    """Give ``widget`` the scroll range ``size``; returns whether it changed."""
    if size == widget.virtual_size:
        return False
    widget.set_reactive(Widget.virtual_size, size)
    widget._scroll_update(size)  # the scroll range, the scrollbars and a clamped offset
    return True
