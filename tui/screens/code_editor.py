"""The code editor: revise one code's definition, criteria and examples in the app.

The dialog shows the highlighted code's definition, inclusion and exclusion criteria and
examples (one a line) in text areas. ``ctrl+s`` checks the edit against the study
(``study.versions.plan_revision``, nothing written) and shows the planned change;
a second ``ctrl+s`` returns it, and the caller records it as the next codebook version
exactly like ``codecurve codebook --revise``. ``esc`` goes back from the plan to the
text, and from the text closes the dialog with nothing changed. An unchanged text says
so and returns nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static, TextArea

from codebooks.errors import CodebookError, CodecurveError
from codebooks.mapping import slugify
from codebooks.model import Code, Codebook
from tui.keymap import bindings, key
from tui.text import kept_unless_edited, printable

__all__ = ["FIELDS", "CodeEdit", "CodeEditorScreen", "added_codebook", "edited_codebook"]

#: The editable fields: (attribute of :class:`~codebooks.model.Code`, label).
FIELDS: tuple[tuple[str, str], ...] = (
    ("definition", "Definition"),
    ("inclusion", "Inclusion criteria: when to apply it"),
    ("exclusion", "Exclusion criteria: when not to apply it"),
    ("examples", "Examples where it applies (one a line)"),
)

#: Plans the revision (``study.versions.plan_revision(codebook).lines()``); raises on refusal.
Planner = Callable[[Codebook], list[str]]


@dataclass(frozen=True)
class CodeEdit:
    """A checked edit of one code: the revised codebook and the change in words."""

    code_id: str
    codebook: Codebook
    lines: tuple[str, ...]
    #: A code added (an inductive code, met while reading), not one edited.
    added: bool = False


def edited_codebook(codebook: Codebook, code_id: str, texts: dict[str, str]) -> Codebook:
    """``codebook`` with code ``code_id``'s fields replaced by ``texts``.

    Text is stripped at both ends; examples are the non-blank lines.

    Raises:
        KeyError: no code ``code_id``.
    """
    code = next(c for c in codebook.codes if c.id == code_id)
    changes: dict[str, object] = {}
    for field, _ in FIELDS:
        value = texts.get(field)
        if value is None:
            continue
        if field == "examples":
            changes[field] = tuple(line.strip() for line in value.splitlines() if line.strip())
        else:
            changes[field] = value.strip()
    revised = replace(code, **changes)  # type: ignore[arg-type]
    return replace(codebook, codes=tuple(revised if c.id == code_id else c for c in codebook.codes))


def added_codebook(codebook: Codebook, name: str, texts: dict[str, str]) -> Codebook:
    """``codebook`` with a new codable code ``name`` at its end, its fields from
    ``texts`` (as :func:`edited_codebook`), on the codebook's own scale; its id is the
    name's slug, made unique (``staff-2``).

    Raises:
        CodebookError: no name, or a code of that name already.
    """
    name = " ".join(name.split())
    if not name:
        raise CodebookError("give the new code a name")
    if any(c.name.casefold() == name.casefold() for c in codebook.codes):
        raise CodebookError(f"the codebook has a code named {name!r} already")
    taken = {c.id for c in codebook.codes}
    base = code_id = slugify(name)
    number = 2
    while code_id in taken:
        code_id, number = f"{base}-{number}", number + 1
    grown = replace(codebook, codes=(*codebook.codes, Code(code_id, name)))
    return edited_codebook(grown, code_id, texts)


def _field_text(code: Code, field: str) -> str:
    if field == "examples":
        return "\n".join(code.examples)
    return str(getattr(code, field))


class CodeEditorScreen(ModalScreen[CodeEdit | None]):
    """Returns the checked edit once confirmed, or None (cancelled or unchanged)."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("code_editor.save", "dialog.cancel")

    def __init__(self, codebook: Codebook, code_id: str | None, *, planner: Planner) -> None:
        """
        Args:
            codebook: The study's current codebook.
            code_id: The code to edit (a code of ``codebook``); None adds a new code
                (a name field comes first).
            planner: Checks a revised codebook against the study and describes it.
        """
        super().__init__()
        self._codebook = codebook
        self._adding = code_id is None
        self._code = (
            Code("new-code", "New code")
            if code_id is None
            else next(c for c in codebook.codes if c.id == code_id)
        )
        self._planner = planner
        self._planned: CodeEdit | None = None
        # A definition from a file may hold escape sequences: the text areas show them
        # as stand-ins, and a field left as shown saves the stored text unchanged.
        self._stored = {field: _field_text(self._code, field) for field, _ in FIELDS}
        self._shown = {field: printable(text) for field, text in self._stored.items()}

    @property
    def planned(self) -> CodeEdit | None:
        """The edit shown for confirmation, if the plan is on screen."""
        return self._planned

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="code-editor") as box:
            box.border_title = (
                "Add a code"
                if self._adding
                else f"Edit code: {printable(self._code.name, single_line=True)}"
            )
            box.border_subtitle = (
                f"{key('code_editor.save')} saves · {key('dialog.cancel')} cancels"
            )
            with VerticalScroll(id="code-editor-fields"):
                if self._adding:
                    yield Label("Name of the new code (its pairs are then scored)")
                    yield Input(id="edit-name")
                for field, label in FIELDS:
                    yield Label(label)
                    yield TextArea(
                        self._shown[field],
                        id=f"edit-{field}",
                        soft_wrap=True,
                        show_line_numbers=False,
                        tab_behavior="focus",
                    )
            yield Static("", id="code-editor-plan")
            yield Static("", id="code-editor-message")

    def on_mount(self) -> None:
        self.query_one("#code-editor-plan", Static).display = False
        self._first_field().focus()

    def _first_field(self) -> Input | TextArea:
        if self._adding:
            return self.query_one("#edit-name", Input)
        return self.query_one("#edit-definition", TextArea)

    def texts(self) -> dict[str, str]:
        """What saving would record, by field: the text areas' contents, or the stored
        text where a field is as it was shown."""
        return {
            field: kept_unless_edited(
                self.query_one(f"#edit-{field}", TextArea).text,
                self._shown[field],
                self._stored[field],
            )
            for field, _ in FIELDS
        }

    def _say(self, text: str, style: str = "") -> None:
        self.query_one("#code-editor-message", Static).update(Text(text, style=style))

    def action_save(self) -> None:
        if self._planned is not None:
            self.dismiss(self._planned)
            return
        try:
            if self._adding:
                name = self.query_one("#edit-name", Input).value
                revised = added_codebook(self._codebook, name, self.texts())
            else:
                revised = edited_codebook(self._codebook, self._code.id, self.texts())
        except CodebookError as exc:
            self._say(printable(str(exc)), "bold red")
            return
        if revised == self._codebook:
            self.notify("The code's text is unchanged: nothing recorded.", timeout=4)
            self.dismiss(None)
            return
        try:
            lines = self._planner(revised)
        except CodecurveError as exc:  # a refused revision: say why, stay in the editor
            self._say(f"Cannot record this: {printable(str(exc))}", "bold red")
            return
        code_id = revised.codes[-1].id if self._adding else self._code.id
        self._planned = CodeEdit(code_id, revised, tuple(lines), added=self._adding)
        plan = Text("The new codebook version would change:\n", style="bold")
        for line in lines:
            plan.append("  " + printable(line, single_line=True) + "\n", style="")
        plan.append(
            f"{key('code_editor.save')} records it and rescores the code's pairs · "
            f"{key('dialog.cancel')} edits again",
            "dim",
        )
        shown = self.query_one("#code-editor-plan", Static)
        shown.update(plan)
        shown.display = True
        self.query_one("#code-editor-fields").display = False
        self._say("")

    def action_cancel(self) -> None:
        if self._planned is not None:
            self._planned = None
            self.query_one("#code-editor-plan", Static).display = False
            self.query_one("#code-editor-fields").display = True
            self._first_field().focus()
            return
        self.dismiss(None)
