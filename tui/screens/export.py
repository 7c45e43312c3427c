"""The export dialog: it only collects options; the study's exporter writes the file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, cast

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select

from study.rows import Layout

FORMATS = (
    ("CSV", "csv"),
    ("Excel (xlsx)", "xlsx"),
    ("Parquet", "parquet"),
    ("JSON lines", "jsonl"),
)
LAYOUTS: tuple[tuple[str, Layout], ...] = (
    ("Long: one row per response and code", "long"),
    ("Wide: one row per response", "wide"),
)


@dataclass(frozen=True)
class ExportOptions:
    """What to export, where: handed to ``study.export.export_study``."""

    path: Path
    format: str
    layout: Layout


class ExportScreen(ModalScreen[ExportOptions | None]):
    """Returns the chosen options, or None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="export.cancel")
    ]

    def __init__(self, default_path: Path) -> None:
        super().__init__()
        self._default = default_path

    def compose(self) -> ComposeResult:
        # Scrolls in a terminal too short for it (the focused field scrolls into view).
        with VerticalScroll(classes="dialog", id="export-dialog") as box:
            box.border_title = "Export"
            box.border_subtitle = "tab moves · enter exports · esc cancels"
            yield Label("Format")
            yield Select(FORMATS, value="csv", allow_blank=False, id="export-format")
            yield Label("Layout")
            yield Select(LAYOUTS, value="long", allow_blank=False, id="export-layout")
            yield Label("File")
            yield Input(str(self._default.with_suffix(".csv")), id="export-path")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Export", variant="primary", id="export-ok")
                yield Button("Cancel", id="export-cancel")

    def on_mount(self) -> None:
        path = self.query_one("#export-path", Input)
        path.focus()
        self.call_after_refresh(path.scroll_visible, animate=False)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != "export-format" or event.value is Select.BLANK:
            return
        path_input = self.query_one("#export-path", Input)
        path = Path(path_input.value or str(self._default))
        path_input.value = str(path.with_suffix(f".{event.value}"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._finish()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "export-ok":
            self._finish()
        else:
            self.dismiss(None)

    def _finish(self) -> None:
        value = self.query_one("#export-path", Input).value.strip()
        if not value:
            self.notify("Give a file to export to.", severity="warning")
            return
        fmt = self.query_one("#export-format", Select).value
        layout = self.query_one("#export-layout", Select).value
        self.dismiss(
            ExportOptions(
                path=Path(value).expanduser(), format=str(fmt), layout=cast(Layout, layout)
            )
        )

    def action_cancel(self) -> None:
        self.dismiss(None)
