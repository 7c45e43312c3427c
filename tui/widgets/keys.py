"""The key bar: the keys that work now, on one line, each clickable.

Textual's ``Footer`` rebuilds one child widget per key whenever the active bindings
change, which they do on every focus change (opening the filter bar, ``tab`` to the
detail pane): that rebuild cost more than the rest of the screen update together. This
bar is one widget that draws one line of text, and only when the keys it shows change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.strip import Strip
from textual.widget import Widget

from tui.keymap import described
from tui.widgets.frames import paint_with_key

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen

    from codebooks.model import Scale

#: What the bar shows per key: (key to simulate, key display, description, enabled).
KeyItem = tuple[str, str, str, bool]


@dataclass(frozen=True)
class KeyHelp:
    """One key as the help screen and the command palette describe it.

    Attributes:
        keys: Every key that runs it, as displayed (``"u, backspace"``).
        title: What it is called: the tooltip up to its first ``": "``.
        text: The binding's whole tooltip.
        action: The action it runs.
    """

    keys: str
    title: str
    text: str
    action: str

    @property
    def explanation(self) -> str:
        """The tooltip after its title (the title itself when there is nothing after)."""
        _, sep, rest = self.text.partition(": ")
        return rest if sep else self.text


def key_help(
    app: App[Any], bindings: Iterable[BindingType], keymap: Mapping[str, str] | None = None
) -> list[KeyHelp]:
    """The bindings that carry a tooltip (each key's long text), first of each action.

    A binding with one key shows its ``key_display`` (``"1-9"``); one with several lists
    them all (``"u, backspace"``). ``keymap`` holds the keys the user rebound, by binding
    id (what the app handed to ``App.set_keymap``): those are shown instead.
    """
    rebound = keymap or {}
    items: list[KeyHelp] = []
    seen: set[str] = set()
    for binding in bindings:
        if not isinstance(binding, Binding) or not binding.tooltip or binding.action in seen:
            continue
        seen.add(binding.action)
        if binding.id is not None and binding.id in rebound:
            binding = replace(binding, key=rebound[binding.id], key_display=None)
        keys = [k.strip() for k in binding.key.split(",")]
        if len(keys) == 1:
            display = app.get_key_display(binding)
        else:
            display = ", ".join(
                app.get_key_display(replace(binding, key=k, key_display=None)) for k in keys
            )
        text = described(binding.tooltip)
        items.append(KeyHelp(display, text.partition(": ")[0], text, binding.action))
    return items


def decide_label(scales: Iterable[Scale]) -> tuple[str, str]:
    """How the key bar shows the digits: ``1/0 Yes/No`` when every code is yes/no, else
    ``1-9 Code`` (the detail pane says 1 Yes, 0 No on a yes/no code)."""
    if {scale.k for scale in scales} == {2}:
        return ("1/0", "Yes/No")
    return ("1-9", "Code")


def fit(items: Sequence[KeyItem], width: int) -> tuple[Sequence[KeyItem], bool]:
    """The items that fit in ``width`` cells, and whether they fit with room to spare.

    Roomy (``" a Accept "``) when everything fits; else compact (``"aAccept "``, the
    key's colour sets it apart); else compact without keys from the end of the list,
    except the last two (help and quit).
    """
    if sum(len(d) + len(t) + 3 for _, d, t, _ in items) <= width:
        return items, True
    kept = list(items)
    while len(kept) > 2 and sum(len(d) + len(t) + 1 for _, d, t, _ in kept) > width:
        del kept[-3]
    return kept, False


class KeyBar(Widget):
    """The shown bindings of the focused widget, its ancestors and the app."""

    DEFAULT_CSS = """
    KeyBar {
        height: 1;
        dock: bottom;
        background: $footer-background;
        & > .key-bar--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .key-bar--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .key-bar--disabled { color: $text-disabled; }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "key-bar--key",
        "key-bar--description",
        "key-bar--disabled",
    }

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._bound: tuple[KeyItem, ...] = ()
        self._override: tuple[KeyItem, ...] | None = None
        self._labels: dict[str, tuple[str, str]] = {}

    @property
    def items(self) -> tuple[KeyItem, ...]:
        """The keys shown now."""
        return self._bound if self._override is None else self._override

    def show_keys(self, keys: Sequence[tuple[str, str, str]] | None) -> None:
        """Show ``(key, display, description)`` instead of the bindings (a mode that
        takes its keys without focus, like the filter bar); ``None`` goes back."""
        override = None if keys is None else tuple((k, d, t, True) for k, d, t in keys)
        if override != self._override:
            self._override = override
            self.refresh()
            paint_with_key(self)

    def relabel(self, labels: dict[str, tuple[str, str]]) -> None:
        """Show the keys of these actions as ``(display, description)`` instead of the
        binding's own (``{"decide(1)": ("1/0", "Yes/No")}`` on a yes/no codebook)."""
        self._labels = dict(labels)
        if self.is_attached:
            self._bindings_changed(self.screen)

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if not self.is_attached or screen is not self.screen:
            return
        items: list[KeyItem] = []
        seen: set[str] = set()
        for _node, binding, enabled, _tooltip in screen.active_bindings.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            key = binding.key.split(",")[0].strip()
            display, description = self._labels.get(
                binding.action, (self.app.get_key_display(binding), binding.description)
            )
            items.append((key, display, description, enabled))
        if tuple(items) != self._bound:
            self._bound = tuple(items)
            if self._override is None:
                self.refresh()

    def render_line(self, y: int) -> Strip:
        # Drawn as segments, not as a renderable: Textual styles a renderable's clickable
        # text as a link (underlined, in the link colour), and these are keys.
        base = self.rich_style
        width = self.size.width
        if y != 0:
            return Strip.blank(width, base)
        key_style = base + self.get_component_rich_style("key-bar--key")
        description_style = base + self.get_component_rich_style("key-bar--description")
        disabled_style = base + self.get_component_rich_style("key-bar--disabled")
        # Roomy when everything fits; else compact (the key's colour sets it apart from
        # its description), so that help and quit stay on screen at 80 columns.
        items, roomy = fit(self.items, width)
        gap, pad = (" ", " ") if roomy else ("", "")
        segments: list[Segment] = []
        for key, display, description, enabled in items:
            if enabled:
                click = Style.on(click=f"app.simulate_key({key!r})")
                segments.append(Segment(f"{pad}{display}{gap}", key_style + click))
                segments.append(Segment(f"{description}{pad}", description_style + click))
            else:
                segments.append(Segment(f"{pad}{display}{gap}{description}{pad}", disabled_style))
            if not roomy:
                segments.append(Segment(" ", base))
        return Strip(segments).crop_extend(0, width, base)
