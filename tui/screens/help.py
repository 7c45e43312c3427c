"""The help screen: the keys the current screen offers, from the keymap, and how to read it.

One help serves every screen (``?`` runs the app's ``help`` action): it lists the
screen's own keys and the app's, then those of each widget inside the screen that has
keys of its own (the queue's moves, the screening panel's), each under its title, with
the keys the user rebound. A screen says how to read it in ``HELP_LEGEND`` (under
``HELP_HEADING``). The command palette lists the same actions (:func:`key_sections`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Static

from tui.keymap import GROUP_TITLES, bindings, declared, described, key
from tui.widgets.keys import KeyHelp, key_help

#: How to read the queue: (term, explanation); a table, so a long explanation wraps
#: within its column at any width instead of under the term.
LEGEND: tuple[tuple[str, str], ...] = (
    (
        "curve",
        "One bar per scale option, lowest option first. A tall bar means low surprisal: "
        "the option the model finds most likely. One tall bar = a clear preference; a flat "
        "curve = the model is torn.",
    ),
    ("pick", "The model's pick (the curve's minimum) and its confidence (p of that option)."),
    ("H", "Normalised entropy, 0 (sure) to 1 (torn). The queue puts high H first."),
    ("coded", "· undecided   ✓ coded by hand   ≈ the model's pick, accepted."),
    ("✎¶", "✎ a note on the pair   ¶ a memo on its whole response (m in the response view)."),
    ("yes/no", "On a yes/no code 1 records Yes (present) and 0 No."),
)


#: The help's line for the palette, which has no binding of the keymap's (Textual's own).
PALETTE = ("ctrl+p", "Command palette: every action by name")


@dataclass(frozen=True)
class KeySection:
    """The keys of one node: the screen, the app, or a widget inside the screen.

    Attributes:
        title: Its heading in the help ("" for the screen's and the app's own).
        node: Where its actions run.
        bindings: Its bindings, from the keymap.
    """

    title: str
    node: Widget | App[Any]
    bindings: list[BindingType]

    def items(self, keys: Mapping[str, str]) -> list[KeyHelp]:
        """Its keys as the help shows them, ``keys`` rebound (binding id -> keys)."""
        return key_help(self.node.app, self.bindings, keys)


def key_sections(screen: Screen[Any]) -> list[KeySection]:
    """The keys ``screen`` offers: its own, the app's (which do not reach past a
    dialog), then those of each kind of widget inside it that has keys of its own."""
    sections = [KeySection("", screen, _bindings(type(screen)))]
    if not screen.is_modal:
        sections.append(KeySection("", screen.app, _bindings(type(screen.app))))
    seen: set[type] = {type(screen)}
    for widget in screen.query("*"):
        kind = type(widget)
        if kind in seen:
            continue
        seen.add(kind)
        actions = declared(kind)
        if actions:
            title = described(GROUP_TITLES.get(actions[0].group, kind.__name__))
            sections.append(KeySection(title, widget, [a.binding() for a in actions]))
    return sections


def _bindings(kind: type) -> list[BindingType]:
    return [action.binding() for action in declared(kind)]


def bindings_table(bindings: Iterable[tuple[str, str]]) -> Table:
    """Key, name and what it does, in columns: the text wraps inside its own column."""
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold cyan", no_wrap=True, justify="right")
    table.add_column(style="bold", no_wrap=True)
    table.add_column(ratio=1)
    for shown, description in bindings:
        title, sep, rest = description.partition(": ")
        table.add_row(shown, title if sep else "", rest if sep else description)
    return table


def legend_table(legend: Iterable[tuple[str, str]] = LEGEND) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True, justify="right")
    table.add_column(ratio=1)
    for term, text in legend:
        table.add_row(term, text)
    return table


class HelpScreen(ModalScreen[None]):
    """Lists ``(key, description)`` pairs collected from the screen that opened it (more
    under headings: ``sections``), and how to read what that screen shows (``legend``,
    under ``heading``; none when empty)."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("help.close")

    def __init__(
        self,
        keys: list[tuple[str, str]],
        *,
        sections: Sequence[tuple[str, list[tuple[str, str]]]] = (),
        legend: Iterable[tuple[str, str]] = LEGEND,
        heading: str = "Reading the queue",
    ) -> None:
        super().__init__()
        self._sections = [(title, list(items)) for title, items in sections if items]
        #: Every key listed, the sections' too.
        self._keys = [*keys, *(item for _, items in self._sections for item in items)]
        self._own = keys
        self._legend = tuple(legend)
        self._heading = heading

    @classmethod
    def of(cls, screen: Screen[Any], keys: Mapping[str, str]) -> HelpScreen:
        """The help of ``screen``: the keys it offers (``keys``: those the user rebound)
        and its ``HELP_LEGEND`` under its ``HELP_HEADING``."""
        own: list[tuple[str, str]] = []
        sections: list[tuple[str, list[tuple[str, str]]]] = []
        for section in key_sections(screen):
            items = [(item.keys, item.text) for item in section.items(keys)]
            if section.title:
                sections.append((section.title, items))
            else:
                own += items
        if not screen.is_modal:
            own.append(PALETTE)
        legend: tuple[tuple[str, str], ...] = getattr(screen, "HELP_LEGEND", ())
        heading: str = getattr(screen, "HELP_HEADING", "")
        return cls(own, sections=sections, legend=legend, heading=heading)

    @property
    def keys(self) -> list[tuple[str, str]]:
        """Every ``(key, description)`` listed."""
        return list(self._keys)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body", classes="dialog") as body:
            body.border_title = "Keys"
            body.border_subtitle = f"{key('help.close')} closes"
            yield Static(bindings_table(self._own), id="help-keys")
            for title, items in self._sections:
                yield Static(
                    Group(Text(title, style="bold"), bindings_table(items)),
                    classes="help-section",
                )
            if self._legend:
                parts: list[RenderableType] = [
                    Text(self._heading, style="bold"),
                    legend_table(self._legend),
                ]
                parts.append(Text("Every decision is saved the moment you make it.", style="dim"))
                yield Static(Group(*parts), id="help-legend")

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
