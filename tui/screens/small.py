"""What a screen shows in a terminal too small to draw it: how large it needs to be."""

from __future__ import annotations

from textual.widgets import Static


class TooSmall(Static):
    """A centred "enlarge the terminal" line, shown instead of the screen's content
    while the terminal is smaller than ``minimum`` (columns, lines).

    The screen gets the class ``-too-small`` then; the stylesheet hides its other
    children.
    """

    def __init__(self, minimum: tuple[int, int]) -> None:
        super().__init__(id="too-small")
        self.minimum = minimum

    def on_mount(self) -> None:
        self.check(self.app.size.width, self.app.size.height)

    def check(self, width: int, height: int) -> bool:
        """Show or hide the message for a terminal of ``width`` x ``height`` (the
        screen calls it on each resize); True when it is too small."""
        min_width, min_height = self.minimum
        small = width < min_width or height < min_height
        self.screen.set_class(small, "-too-small")
        if small:
            self.update(
                f"Enlarge the terminal to at least {min_width}x{min_height}\n"
                f"(it is {width}x{height})."
            )
        return small
