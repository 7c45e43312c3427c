"""The filter bar: which code and which decision status the queue shows.

A one-line, keyboard-driven bar over the queue's last line: ``←``/``→`` change the
value of the highlighted field (code or status) and apply it at once, ``↑``/``↓`` or
``tab`` switch fields, typing a letter jumps to the next value that starts with it,
``home`` goes back to every code (or any status), ``enter`` or ``esc`` closes the bar
and keeps the filter.

It takes no focus: the review screen hands it the keys while it is open. Moving focus
restyles the queue and the key bar and a dropdown (``Select``) repainted the whole
screen each time its list closed; here a change repaints the queue, this line and the
status line only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from tui.source import STATUS_LABELS, STATUSES, Query

#: The fields of the bar, in the order ``↓`` visits them.
FIELDS = ("code", "status")

#: What the key bar shows while the filter bar is open: (key, display, description).
KEYS = (
    ("right", "←→", "Change"),
    ("down", "↑↓", "Code/status"),
    ("a", "a-z", "Jump"),
    ("home", "home", "Every"),
    ("enter", "enter", "Close"),
)


class FilterBar(Widget):
    """Two choices, applied as soon as one changes (``on_change``)."""

    DEFAULT_CSS = """
    FilterBar {
        height: 1;
        & > .filter-bar--label { color: $text-muted; }
        & > .filter-bar--value { text-style: bold; }
        & > .filter-bar--active { background: $accent; color: $text; text-style: bold; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "filter-bar--label",
        "filter-bar--value",
        "filter-bar--active",
    }

    def __init__(
        self,
        codes: Sequence[tuple[str, str]],
        *,
        on_change: Callable[[str | None, str | None], None],
        on_close: Callable[[], None],
        id: str | None = None,
    ) -> None:
        """
        Args:
            codes: ``(code id, code name)`` of the codable codes.
            on_change: Called at once with ``(code id, status)`` when either changes, so
                the queue repaints in the same frame as the bar.
            on_close: Called when the coder closes the bar (the filter stays).
        """
        super().__init__(id=id)
        self._on_change = on_change
        self._on_close = on_close
        self._choices: dict[str, list[tuple[str | None, str]]] = {
            "code": [(None, "every code"), *((cid, name) for cid, name in codes)],
            "status": [(status, STATUS_LABELS[status]) for status in STATUSES],
        }
        self._index = {"code": 0, "status": 0}
        self._field = "code"

    # -- state ---------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    @property
    def field(self) -> str:
        """The highlighted field, ``"code"`` or ``"status"``."""
        return self._field

    @property
    def code_id(self) -> str | None:
        return self._value("code")

    @property
    def status(self) -> str | None:
        return self._value("status")

    def _value(self, field: str) -> str | None:
        return self._choices[field][self._index[field]][0]

    def open(self, query: Query) -> None:
        """Show the bar on the choices of ``query`` (the queue already shows them)."""
        for field, wanted in (("code", query.code_id), ("status", query.status)):
            values = [value for value, _ in self._choices[field]]
            self._index[field] = values.index(wanted) if wanted in values else 0
        self._field = "code"
        self.add_class("-open")
        self.refresh()

    def close(self) -> None:
        self.remove_class("-open")

    def _set(self, field: str, index: int) -> None:
        index %= len(self._choices[field])
        if index == self._index[field]:
            return
        self._index[field] = index
        self.refresh()
        self._on_change(self.code_id, self.status)

    # -- keys ----------------------------------------------------------------------

    def take_key(self, key: str, character: str | None) -> bool:
        """Act on a key pressed while the bar is open; False for keys it leaves alone."""
        field = self._field
        if key in ("left", "right"):
            self._set(field, self._index[field] + (1 if key == "right" else -1))
        elif key in ("up", "down", "tab", "shift+tab"):
            step = 1 if key in ("down", "tab") else -1
            self._field = FIELDS[(FIELDS.index(field) + step) % len(FIELDS)]
            self.refresh()
        elif key == "home":
            self._set(field, 0)
        elif key in ("enter", "escape"):
            self._on_close()
        elif character is not None and character.isprintable() and not character.isspace():
            self._jump(character)
        else:
            return False
        return True

    def _jump(self, char: str) -> None:
        """Type-ahead: the next value of the field that starts with ``char``."""
        choices = self._choices[self._field]
        start = self._index[self._field]
        for step in range(1, len(choices) + 1):
            index = (start + step) % len(choices)
            if choices[index][1].casefold().startswith(char.casefold()):
                self._set(self._field, index)
                return
        self.app.bell()

    # -- rendering -----------------------------------------------------------------

    def render(self) -> Text:
        label = self.get_component_rich_style("filter-bar--label")
        value = self.get_component_rich_style("filter-bar--value")
        active = self.get_component_rich_style("filter-bar--active")
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("Filter ", style=value)
        for field in FIELDS:
            name = self._choices[field][self._index[field]][1]
            text.append(f" {field} ", style=label)
            text.append(f"◂ {name} ▸", style=active if field == self._field else value)
            text.append(" ")
        return text
