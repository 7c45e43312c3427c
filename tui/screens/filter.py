"""The filter bar: which code and which decision status the queue shows.

While open it takes the status line's place: ``←``/``→`` change the value of the
highlighted field (code or status) and apply it at once, ``↑``/``↓`` or ``tab`` switch
fields, typing a letter jumps to the next value that starts with it (in the highlighted
field, else in the next field that has one), ``home`` goes back
to every code (or any status), ``enter`` or ``esc`` closes the bar and keeps the filter.

It is not a widget of its own and takes no focus: the review screen hands it the keys
while it is open and the status line draws it. Showing a widget, or moving focus to
one, lays out and restyles the screen; a dropdown (``Select``) repainted all of it each
time its list closed. Here opening the bar repaints one line, and a change repaints the
queue, that line and the detail pane.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from rich.style import Style
from rich.text import Text

from study.rows import Status
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


class FilterBar:
    """Two choices, applied as soon as one changes (``on_change``)."""

    def __init__(
        self,
        codes: Sequence[tuple[str, str]],
        *,
        on_change: Callable[[str | None, Status | None], None],
        on_close: Callable[[], None],
        on_redraw: Callable[[], None],
        on_miss: Callable[[], None] = lambda: None,
        waves: Sequence[int] = (),
        on_wave: Callable[[int | None], None] | None = None,
    ) -> None:
        """
        Args:
            codes: ``(code id, code name)`` of the codable codes.
            on_change: Called at once with ``(code id, status)`` when either changes, so
                the queue repaints in the same frame as the bar.
            on_close: Called when the coder closes the bar (the filter stays).
            on_redraw: Called when the bar's look changed (the line that draws it
                repaints).
            on_miss: Called when a typed letter matches no value (a bell).
            waves: The study's wave numbers; with more than one the bar has a third
                field, the wave.
            on_wave: Called at once with the wave (None: every wave) when it changes.
        """
        self._on_change = on_change
        self._on_close = on_close
        self._on_redraw = on_redraw
        self._on_miss = on_miss
        self._choices: dict[str, list[tuple[str | None, str]]] = {
            "code": [(None, "every code"), *((cid, name) for cid, name in codes)],
            "status": [(status, STATUS_LABELS[status]) for status in STATUSES],
        }
        self._index = {"code": 0, "status": 0}
        self._on_wave = on_wave
        self._fields: tuple[str, ...] = FIELDS
        if len(waves) > 1:
            self._fields = (*FIELDS, "wave")
            self._choices["wave"] = [
                (None, "every wave"),
                *((str(n), f"wave {n}") for n in waves),
            ]
            self._index["wave"] = 0
        self._field = "code"
        self._open = False

    def set_codes(self, codes: Sequence[tuple[str, str]]) -> None:
        """The codable codes changed (a code added or renamed): offer these, keeping the
        code chosen where it is still there."""
        chosen = self.code_id
        self._choices["code"] = [(None, "every code"), *((cid, name) for cid, name in codes)]
        values = [value for value, _ in self._choices["code"]]
        self._index["code"] = values.index(chosen) if chosen in values else 0

    # -- state ---------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._open

    @property
    def field(self) -> str:
        """The highlighted field, ``"code"`` or ``"status"``."""
        return self._field

    @property
    def code_id(self) -> str | None:
        return self._value("code")

    @property
    def status(self) -> Status | None:
        return cast("Status | None", self._value("status"))

    @property
    def wave(self) -> int | None:
        """The wave chosen (None: every wave, or a study of one wave)."""
        if "wave" not in self._choices:
            return None
        value = self._value("wave")
        return None if value is None else int(value)

    @property
    def fields(self) -> tuple[str, ...]:
        """The bar's fields, in the order ``↓`` visits them."""
        return self._fields

    def neighbours(self) -> list[tuple[str | None, Status | None]]:
        """The ``(code id, status)`` one ``→`` and one ``←`` away in the highlighted field
        (nothing for the wave field): what the next arrow key may show."""
        field = self._field
        if field == "wave" or not self._open:
            return []
        out: list[tuple[str | None, Status | None]] = []
        for step in (1, -1):
            index = (self._index[field] + step) % len(self._choices[field])
            if index == self._index[field]:
                continue
            value = self._choices[field][index][0]
            pair = (value, self.status) if field == "code" else (self.code_id, value)
            pair = cast("tuple[str | None, Status | None]", pair)
            if pair not in out:
                out.append(pair)
        return out

    def _value(self, field: str) -> str | None:
        return self._choices[field][self._index[field]][0]

    def open(self, query: Query) -> None:
        """Show the bar on the choices of ``query`` (the queue already shows them)."""
        for field, wanted in (("code", query.code_id), ("status", query.status)):
            values = [value for value, _ in self._choices[field]]
            self._index[field] = values.index(wanted) if wanted in values else 0
        if "wave" in self._choices:
            wanted_wave = None if query.wave is None else str(query.wave)
            values = [value for value, _ in self._choices["wave"]]
            self._index["wave"] = values.index(wanted_wave) if wanted_wave in values else 0
        self._field = "code"
        self._open = True
        self._on_redraw()

    def close(self) -> None:
        self._open = False
        self._on_redraw()

    def _set(self, field: str, index: int) -> None:
        index %= len(self._choices[field])
        if index == self._index[field]:
            return
        self._index[field] = index
        self._on_redraw()
        if field == "wave":
            if self._on_wave is not None:
                self._on_wave(self.wave)
            return
        self._on_change(self.code_id, self.status)

    # -- keys ----------------------------------------------------------------------

    def take_key(self, key: str, character: str | None) -> bool:
        """Act on a key pressed while the bar is open; False for keys it leaves alone."""
        field = self._field
        if key in ("left", "right"):
            self._set(field, self._index[field] + (1 if key == "right" else -1))
        elif key in ("up", "down", "tab", "shift+tab"):
            step = 1 if key in ("down", "tab") else -1
            fields = self._fields
            self._field = fields[(fields.index(field) + step) % len(fields)]
            self._on_redraw()
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
        """Type-ahead: the next value that starts with ``char``, in the highlighted field
        first, else in the next field that has one (which is then highlighted): the bar
        opens on the code, and ``c`` still reaches "coders disagree"."""
        fields = self._fields
        at = fields.index(self._field)
        for field in (*fields[at:], *fields[:at]):
            choices = self._choices[field]
            start = self._index[field]
            for step in range(1, len(choices)):  # the value shown is not a jump
                index = (start + step) % len(choices)
                if choices[index][1].casefold().startswith(char.casefold()):
                    if field != self._field:
                        self._field = field
                        self._on_redraw()
                    self._set(field, index)
                    return
        self._on_miss()

    # -- drawing -------------------------------------------------------------------

    def text(self, *, label: Style, value: Style, active: Style) -> Text:
        """The bar as one line: the highlighted field in ``active``."""
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("Filter ", style=value)
        for field in self._fields:
            name = self._choices[field][self._index[field]][1]
            text.append(f" {field} ", style=label)
            text.append(f"◂ {name} ▸", style=active if field == self._field else value)
            text.append(" ")
        return text
