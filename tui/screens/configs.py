"""The configuration picker: choose the scoring configuration the queue shows.

Every configuration of the study is listed with its label and scored count (the same
words as :func:`study.labels.config_listing`); the active one is marked and highlighted.
Choosing one returns its id; the caller makes it the study's active configuration
(:meth:`study.scores.ledger.Scores.set_active`), so the queue, the status line, the
screening panel and the exports follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from study import config_label
from tui.keymap import bindings, key
from tui.messages import ComparisonReady
from tui.text import printable

if TYPE_CHECKING:
    from study import Study

__all__ = ["ComparisonReady", "ConfigChoice", "ConfigPicker", "config_choices"]


@dataclass(frozen=True)
class ConfigChoice:
    """One configuration as the picker lists it."""

    config_id: int
    label: str
    scored: int
    total: int
    active: bool

    def words(self) -> str:
        mark = ", active" if self.active else ""
        return f"{self.label} ({self.scored:,} of {self.total:,} scored{mark})"


def config_choices(study: Study) -> list[ConfigChoice]:
    """Every configuration of ``study``, oldest first, with its scored count."""
    active = study.scores.active_config_id()
    total = study.pair_count()
    return [
        ConfigChoice(
            config_id=row.id,
            label=config_label(row),
            scored=study.scores.scored_count(row.id),
            total=total,
            active=row.id == active,
        )
        for row in study.scores.configs()
    ]


class ConfigPicker(ModalScreen[int | None]):
    """Returns the chosen configuration's id, or None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("dialog.cancel")

    def __init__(self, choices: list[ConfigChoice]) -> None:
        super().__init__()
        self._choices = choices

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="config-picker") as box:
            box.border_title = "Scoring configurations"
            box.border_subtitle = f"enter chooses · {key('dialog.cancel')} cancels"
            yield Label(
                "The queue, the status line, the screening panel and the exports show "
                "the active one."
            )
            yield OptionList(
                *(
                    Option(Text(printable(c.words(), single_line=True)), id=str(c.config_id))
                    for c in self._choices
                ),
                id="config-options",
            )

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        active = [i for i, c in enumerate(self._choices) if c.active]
        options.highlighted = active[0] if active else 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(int(event.option.id or 0))

    def action_cancel(self) -> None:
        self.dismiss(None)
