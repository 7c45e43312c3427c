"""Painting all that a key changed in one frame.

Textual paints at most one frame per 1/60 s. A widget asks for a repaint with
``refresh()``; the request reaches its screen only when the widget's own message loop
next goes idle, and the screen paints what has reached it when it goes idle itself. A key
that changes the queue, the detail pane and the status line can so be painted in two
frames: the widgets whose request came late wait for the next tick, up to 1/60 s more.

:func:`paint_with_key` hands a widget's request to the screen at once, in the key's own
handler, so every request of the key is on the screen's queue before it paints. That is
what the widget's idle would do a moment later (its request is then already taken).

The hand-over is Textual's private ``Widget._check_refresh`` (as of textual 8); should a
release drop it, requests go the usual way (correct, one frame later at worst).
"""

from __future__ import annotations

from textual.widget import Widget

#: Textual's private method that posts a widget's pending refresh to its screen.
CHECK_REFRESH = "_check_refresh"


def paint_with_key(*widgets: Widget | None) -> None:
    """Hand each widget's pending repaint (and layout) to its screen now."""
    for widget in widgets:
        if widget is None or not widget.is_mounted:
            continue
        check = getattr(widget, CHECK_REFRESH, None)
        if check is not None:
            check()
