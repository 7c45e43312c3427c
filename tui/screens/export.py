"""The export dialog: it collects options; the study's exporters write the file.

It opens on the format, which the arrow keys change at once (as radio buttons do
everywhere); tab moves on to the layout, the file and the buttons, and enter on a choice
moves on too, so that only enter in the file box, or the Export button, exports. Each
format and layout has its own default name (``coded_long.csv``, ``coded_wide.csv``,
``coded.qdpx``); a name the coder typed keeps its stem.

With several coders the dialog also asks whose decisions: the reconciled ones (the
default once there are consensus decisions), one coder's, or every coder apart (a
column per coder in the wide layout, a row per coder in the long one, a user per coder
in a project). Without consensus decisions nothing is chosen for the coder: the export
waits for a choice, so that coders are never mixed (:mod:`study.exchange.coders`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Static

from study.rows import CONSENSUS, Layout
from tui.keymap import bindings, key, keys_of
from tui.text import printable

if TYPE_CHECKING:
    from study import Study

#: The REFI-QDA project, for QDA programs (NVivo, ATLAS.ti, MAXQDA, QualCoder ...).
PROJECT = "qdpx"
FORMATS = (
    ("CSV", "csv"),
    ("Excel (xlsx)", "xlsx"),
    ("Parquet", "parquet"),
    ("JSON lines", "jsonl"),
    ("QDA project (.qdpx)", PROJECT),
)
LAYOUTS: tuple[tuple[str, Layout], ...] = (
    ("Long: a row per pair", "long"),
    ("Wide: a row per response", "wide"),
)
_HINTS = {
    "long": "A row per response and code: curve, decisions and their source.",
    "wide": "A row per response, a column per code (empty where none decided).",
    PROJECT: "For QDA programs: each coder's decisions credited to a user of their own.",
}


@dataclass(frozen=True)
class ExportOptions:
    """What to export, where: written by :func:`write_export`.

    Attributes:
        path: The file.
        format: ``csv``, ``xlsx``, ``parquet``, ``jsonl`` or ``qdpx`` (a REFI-QDA project).
        layout: ``long`` or ``wide`` (tables only).
        coder: Whose decisions (``consensus``: the reconciled ones); None: the only
            coder's, or every coder's with ``all_coders``.
        all_coders: Keep every coder apart.
    """

    path: Path
    format: str
    layout: Layout
    coder: str | None = None
    all_coders: bool = False


#: The coder choice that keeps every coder apart.
EVERY_CODER = "*every*"


def coder_choices(coders: Sequence[str]) -> list[tuple[str, str]]:
    """The dialog's coder choices as ``(label, value)``; none with one coder or none."""
    if len(coders) <= 1:
        return []
    people = [c for c in coders if c != CONSENSUS]
    choices = [(f"Reconciled ({CONSENSUS})", CONSENSUS)] if CONSENSUS in coders else []
    choices += [(printable(c, single_line=True), c) for c in people]
    choices.append(("Every coder apart", EVERY_CODER))
    return choices


def default_name(stem: str, *, format: str, layout: Layout) -> str:
    """The dialog's file name for a format and layout: ``coded_wide.csv``, ``coded.qdpx``."""
    if format == PROJECT:
        return f"{stem}.{PROJECT}"
    return f"{stem}_{layout}.{format}"


def write_export(study: Study, options: ExportOptions) -> Path:
    """Write what the dialog chose (a table, or a project of every coder's decisions).

    Raises:
        StudyError, ProjectFileError: a refused or unwritable target, a damaged study.
    """
    if options.format != PROJECT:
        from study.exchange import export_study

        return export_study(
            study,
            options.path,
            format=options.format,
            layout=options.layout,
            coder=options.coder,
            all_coders=options.all_coders,
        )
    from study import Study
    from study.refi import export_project

    every = options.coder is None
    if study.read_only:
        return export_project(study, options.path, coder=options.coder, all_coders=every)
    # A handle of its own, as the table export does: the coder's stays free meanwhile.
    with Study.open(study.path, read_only=True) as reader:
        return export_project(reader, options.path, coder=options.coder, all_coders=every)


class ChoiceSet(RadioSet):
    """Radio buttons whose arrow keys choose at once; enter moves to the next field."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(
        "choice.next", "choice.previous", "choice.toggle", "choice.next_field"
    )

    def action_choose_next(self) -> None:
        self.action_next_button()
        self.action_toggle_button()

    def action_choose_previous(self) -> None:
        self.action_previous_button()
        self.action_toggle_button()

    @property
    def value(self) -> str:
        """The chosen button's name."""
        pressed = self.pressed_button
        return "" if pressed is None else str(pressed.name)

    def choose(self, value: str) -> None:
        """Press the button named ``value``."""
        for button in self.query(RadioButton):
            if button.name == value:
                button.value = True


def _choose_keys() -> str:
    """The keys that choose an option, in words: ``arrows`` while they are."""
    arrows = {"up", "down", "left", "right"}
    if set(keys_of("choice.next") + keys_of("choice.previous")) <= arrows:
        return "arrows"
    return f"{key('choice.previous')} {key('choice.next')}"


class ExportScreen(ModalScreen[ExportOptions | None]):
    """Returns the chosen options, or None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("dialog.cancel")

    def __init__(
        self, default_path: Path, *, coders: Sequence[str] = (), own: str | None = None
    ) -> None:
        """
        Args:
            default_path: The default file (its name a stem the format completes).
            coders: The study's coders with decisions.
            own: A served coder: only their own decisions, or the reconciled ones, may
                be exported (the dialog says so), never another coder's.
        """
        super().__init__()
        self._default = default_path
        # The field shows the default path with its control characters as stand-ins (a
        # study's name may carry them); left as shown, the real path is the one used.
        self._named_path = self._default_path("csv", "long")
        self._named = printable(str(self._named_path), single_line=True)
        self._own = own
        if own is None:
            self._coders = coder_choices(coders)
        else:
            self._coders = [(f"Yours ({printable(own, single_line=True)})", own)]
            if CONSENSUS in coders:
                self._coders.insert(0, (f"Reconciled ({CONSENSUS})", CONSENSUS))

    def _default_path(self, format: str, layout: Layout) -> Path:
        return self._default.with_name(
            default_name(self._default.name, format=format, layout=layout)
        )

    def compose(self) -> ComposeResult:
        # Scrolls in a terminal too short for it (the focused field scrolls into view).
        with VerticalScroll(classes="dialog", id="export-dialog") as box:
            box.border_title = "Export"
            box.border_subtitle = (
                f"{_choose_keys()} choose · tab moves · enter in File exports · "
                f"{key('dialog.cancel')}"
            )
            with Horizontal(id="export-choices"):
                with Vertical():
                    yield Label("Format")
                    with ChoiceSet(id="export-format"):
                        for i, (label, value) in enumerate(FORMATS):
                            yield RadioButton(label, value=i == 0, name=value)
                with Vertical(id="export-layout-box"):
                    yield Label("Layout")
                    with ChoiceSet(id="export-layout"):
                        for i, (label, value) in enumerate(LAYOUTS):
                            yield RadioButton(label, value=i == 0, name=value)
            if self._own is not None:
                yield Static(
                    "You may export your own decisions"
                    + (" or the reconciled ones" if len(self._coders) > 1 else "")
                    + ", into your own folder on the server; the file is then downloaded "
                    "to this browser.",
                    id="export-own",
                    markup=False,
                )
            if len(self._coders) > 1 or (self._coders and self._own is None):
                yield Label("Whose decisions", id="export-coder-label")
                with ChoiceSet(id="export-coder"):
                    for label, value in self._coders:
                        yield RadioButton(label, value=value == CONSENSUS, name=value)
            yield Static(_HINTS["long"], id="export-hint")
            yield Label("File")
            yield Input(self._named, id="export-path")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Export", variant="primary", id="export-ok")
                yield Button("Cancel", id="export-cancel")

    def on_mount(self) -> None:
        self.query_one("#export-format", ChoiceSet).focus()

    @property
    def chosen_format(self) -> str:
        """The chosen format."""
        return self.query_one("#export-format", ChoiceSet).value or "csv"

    @property
    def chosen_layout(self) -> Layout:
        """The chosen layout."""
        return cast(Layout, self.query_one("#export-layout", ChoiceSet).value or "long")

    @property
    def chosen_coder(self) -> str | None:
        """The coder choice (a coder, ``consensus`` or :data:`EVERY_CODER`); None when
        the study has one coder, ``""`` while several coders wait for a choice."""
        if not self._coders:
            return None
        if self._own is not None and len(self._coders) == 1:
            return self._own
        return self.query_one("#export-coder", ChoiceSet).value

    def choose(
        self, *, format: str | None = None, layout: Layout | None = None, coder: str | None = None
    ) -> None:
        """Choose a format, layout or coder as the keys would (for scripts and tests)."""
        if format is not None:
            self.query_one("#export-format", ChoiceSet).choose(format)
        if layout is not None:
            self.query_one("#export-layout", ChoiceSet).choose(layout)
        if coder is not None:
            self.query_one("#export-coder", ChoiceSet).choose(coder)

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        event.stop()
        if event.radio_set.id == "export-coder":
            return
        fmt, layout = self.chosen_format, self.chosen_layout
        layouts = self.query_one("#export-layout", ChoiceSet)
        layouts.disabled = fmt == PROJECT
        self.query_one("#export-hint", Static).update(_HINTS[PROJECT if fmt == PROJECT else layout])
        path_input = self.query_one("#export-path", Input)
        wanted = self._default_path(fmt, layout)
        shown = printable(str(wanted), single_line=True)
        if path_input.value.strip() == self._named or not path_input.value.strip():
            path_input.value = shown  # still the default: the new default
        else:
            path_input.value = str(Path(path_input.value).with_suffix(wanted.suffix))
        self._named, self._named_path = shown, wanted

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
        coder = self.chosen_coder
        if coder == "":
            self.notify(
                "Several coders decided: choose whose decisions to export, or every coder apart.",
                severity="warning",
            )
            self.query_one("#export-coder", ChoiceSet).focus()
            return
        self.dismiss(
            ExportOptions(
                path=self._named_path if value == self._named else Path(value).expanduser(),
                format=self.chosen_format,
                layout=self.chosen_layout,
                coder=None if coder == EVERY_CODER else coder,
                all_coders=coder == EVERY_CODER,
            )
        )

    def action_cancel(self) -> None:
        self.dismiss(None)
