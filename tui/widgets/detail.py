"""The detail pane: everything about the highlighted pair, scrollable and wrapped."""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.text import Text
from textual import events
from textual.binding import BindingType
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from codebooks.model import DEFAULT_QUESTION, Code, Scale
from scoring.curves import OFF_SCALE_WARNING
from tui.keymap import DECIDE, bindings, key, key_range
from tui.source import Row, is_hidden
from tui.text import markup_safe, printable, shown_part
from tui.widgets.curve import NOT_SCORED, curve_table
from tui.widgets.queue import value_label
from tui.widgets.scrolling import set_virtual_size

#: What the detail pane and the response view say instead of the model's answer.
HIDDEN_TEXT = (
    "Coding blind: the model's answer is hidden until you decide this pair; "
    "it is shown once you have."
)


def off_scale_mass(row: Row) -> float | None:
    """The row's off-scale mass (1 - on-scale mass), when the study reports it."""
    mass = getattr(row, "on_scale_mass", None)
    return None if mass is None else max(0.0, 1.0 - float(mass))


def off_scale_flag(row: Row) -> bool:
    value = getattr(row, "off_scale", None)
    if isinstance(value, bool):
        return value
    mass = off_scale_mass(row)
    return mass is not None and mass > OFF_SCALE_WARNING


def response_text(text: str, search: str | None = None) -> Text:
    """The response, printable, each match of ``search`` marked."""
    shown = Text(printable(shown_part(text)))
    if search:
        shown.highlight_words([search], style="bold reverse", case_sensitive=False)
    return shown


def question_text(question: str, code_name: str) -> Text:
    """The codebook's question about one code, the code's name in bold (``{code}`` marks
    where it goes; a question without it is followed by the name)."""
    name = printable(code_name, single_line=True)
    before, marker, after = printable(question, single_line=True).partition("{code}")
    if not marker:
        return Text.assemble((name, "bold"), ("  " + before, "dim"))
    return Text.assemble((before, "dim"), (name, "bold"), (after, "dim"))


def code_text(code: Code, path: tuple[str, ...] = ()) -> Text:
    """A code's name, place in the hierarchy, definition and criteria."""
    text = Text()
    text.append(printable(code.name, single_line=True), style="bold")
    if len(path) > 1:
        text.append("  in " + printable(" › ".join(path[:-1]), single_line=True), style="dim")
    for title, body in (
        ("Definition", code.definition),
        ("Use when", code.inclusion),
        ("Do not use when", code.exclusion),
    ):
        if body:
            text.append(f"\n{title}: ", style="bold dim")
            text.append(printable(body))
    if code.examples:
        text.append("\nExamples: ", style="bold dim")
        text.append(printable("; ".join(f"“{e}”" for e in code.examples)))
    return text


def decided_by(row: Row, me: str | None) -> str:
    """Who decided the pair, as the panes say it: ``you`` for ``me``, else the coder's
    name (an imported gold label, a second coder, the consensus)."""
    if row.coder is None or row.coder == me:
        return "you"
    return printable(row.coder, single_line=True)


def decision_text(row: Row, scale: Scale, me: str | None = None) -> Text:
    """The pair's decision in words; another coder's (an imported gold label) by name."""
    label = printable(value_label(scale, row.decision) or "", single_line=True)
    text = Text()
    who = decided_by(row, me)
    if row.decision is None:
        text.append("Not decided yet. ", style="dim")
        accept = "" if is_hidden(row) else f", {key('review.accept')} to accept"
        if scale.k == 2:
            yes, no = (printable(o.label, single_line=True) for o in scale.options[::-1])
            one, zero = key("decide.1"), key("decide.0")
            text.append(f"Press {one} for {yes}, {zero} for {no}{accept}.", style="dim")
        else:
            digits = key_range(DECIDE[: scale.k])
            choose = "a digit" if digits == f"1-{scale.k}" else digits
            not_apply = key("review.not_apply")
            text.append(f"Press {choose}{accept}, {not_apply} for does not apply.", style="dim")
    elif row.source == "model":
        text.append(f"≈ {label}", style="bold")
        text.append(" model's pick, accepted by ")
        text.append(who, style="bold" if who != "you" else "")
    else:
        text.append(f"✓ {label}", style="bold green")
        text.append(" coded by ")
        text.append(who, style="bold" if who != "you" else "")
    if row.note:
        text.append("\nNote: ", style="bold dim")
        text.append(printable(row.note))
    return text


def stats_text(row: Row) -> RenderableType:
    text = Text()
    parts: list[tuple[str, str]] = []
    if row.norm_entropy is not None:
        parts.append(("uncertainty (normalised entropy) ", f"{row.norm_entropy:.2f}"))
    if row.confidence is not None:
        parts.append(("confidence ", f"{row.confidence:.0%}"))
    mass = off_scale_mass(row)
    if mass is not None:
        parts.append(("off-scale mass ", f"{mass:.0%}"))
    for i, (label, value) in enumerate(parts):
        text.append(" · " if i else "", style="dim")
        text.append(label, style="dim")
        text.append(value, style="bold")
    if off_scale_flag(row):
        text.append(
            "\n⚠ The answer format failed: most of the model's probability went to tokens "
            "outside the scale, so these numbers are not to be trusted.",
            style="bold yellow",
        )
    return text


class DetailPane(ScrollView, can_focus=True):
    """Response text, code, curve and decision of one pair.

    A line-API view: :meth:`show` renders the content to strips once (and again only
    when the width changes), so moving through the queue repaints this pane without a
    layout of the screen, which a tree of auto-height widgets would cost on every move.
    """

    BORDER_TITLE = "Detail"

    BINDINGS: ClassVar[list[BindingType]] = bindings(
        "detail.down", "detail.up", "detail.page_down", "detail.page_up"
    )

    def __init__(
        self,
        *,
        coder: str | None = None,
        question: str | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """
        Args:
            coder: The session's coder: their decisions read "coded by you", another
                coder's are named.
            question: The codebook's question (``{code}`` stands for the code's name),
                asked above the curve; by default the codebook model's own.
        """
        super().__init__(name=name, id=id, classes=classes)
        self._coder = coder
        self._question = question or DEFAULT_QUESTION
        self._shown: tuple[Row | None, Code | None, Scale | None, tuple[str, ...]] = (
            None,
            None,
            None,
            (),
        )
        #: The lines of the part that scrolls, of the part pinned below it, of the
        #: decision, and what is drawn of each (see :meth:`_place_pinned`).
        self._lines: list[list[Strip]] = [[]]
        self._pinned: list[Strip] = []
        self._extras: list[list[Strip]] = []
        self._body: list[Strip] = []
        self._shown_pinned: list[Strip] = []
        self._response_count = 0
        self._rendered_width = -1
        self._blank: Strip | None = None
        self._search: str | None = None
        self._stale: frozenset[tuple[str, str]] = frozenset()
        self.row: Row | None = None

    def set_stale(self, keys: frozenset[tuple[str, str]]) -> None:
        """Draw the curve greyed when the pair shown is one of ``keys``."""
        was = self.row is not None and (self.row.response_id, self.row.code_id) in self._stale
        self._stale = keys
        now = self.row is not None and (self.row.response_id, self.row.code_id) in keys
        if was != now:
            self._rendered_width = -1
            if self.is_mounted:
                self._render_content()
                self.refresh()

    def set_search(self, search: str | None) -> None:
        """Mark each occurrence of ``search`` in the response (None: no marks)."""
        if search != self._search:
            self._search = search
            self._rendered_width = -1
            if self.is_mounted:
                self._render_content()
                self.refresh()

    @property
    def plain_text(self) -> str:
        """What the pane holds, as plain text (for tests): the part that scrolls, then
        the pinned part."""
        self._render_content()
        lines = self._body + self._shown_pinned
        return "\n".join(strip.text.rstrip() for strip in lines)

    def show(
        self, row: Row | None, code: Code | None, scale: Scale | None, path: tuple[str, ...] = ()
    ) -> None:
        """Show ``row`` (or an empty pane when there is none)."""
        same_pair = (
            row is not None
            and self.row is not None
            and (row.response_id, row.code_id) == (self.row.response_id, self.row.code_id)
        )
        self.row = row
        self._shown = (row, code, scale, path)
        self.border_title = "Detail" if row is None else f"Response {markup_safe(row.response_id)}"
        self._rendered_width = -1
        if not same_pair and self.scroll_y:
            self.scroll_to(y=0, animate=False, immediate=True)
        self._render_content()
        self.refresh()

    def _build(
        self, width: int
    ) -> tuple[tuple[RenderableType, ...], RenderableType, tuple[RenderableType, ...]]:
        """The pane's content for a width (the curve's bars scale with it): the part that
        scrolls (the response, the code's criteria), the part pinned below it (the
        question and the curve), and the decision and the model's numbers, pinned too
        where the pane has room (else they follow the response)."""
        row, code, scale, path = self._shown
        if row is None or code is None or scale is None:
            return (Text("Nothing to show.", style="dim italic"),), Text(), ()
        curve: RenderableType = Text(NOT_SCORED.format(key("review.score")), style="dim italic")
        if is_hidden(row):
            curve = Text(HIDDEN_TEXT, style="dim italic")
        elif row.surprisal is not None and row.probs is not None:
            longest = max(cell_len(printable(o.label, single_line=True)) for o in scale.options)
            curve = curve_table(
                scale=scale,
                surprisal=row.surprisal,
                probs=row.probs,
                pick=row.pick,
                decision=row.decision,
                bar_width=max(6, min(30, width - longest - 40)),
                stale=(row.response_id, row.code_id) in self._stale,
                decided_by=decided_by(row, self._coder),
            )
        # The question and the curve stay on screen below the response however long it
        # is (at 80x24 they are what the coder must see); the response scrolls above.
        body = (response_text(row.text, self._search), Group(Text(), code_text(code, path)))
        pinned = Group(question_text(self._question, code.name), curve)
        return body, pinned, (decision_text(row, scale, self._coder), stats_text(row))

    def _render_content(self) -> None:
        width = self.scrollable_content_region.width
        if width <= 0 or width == self._rendered_width:
            return
        console = self.app.console
        options = console.options.update(width=width, height=None, highlight=False)
        style = self.rich_style

        def strips(renderable: RenderableType) -> list[Strip]:
            lines = console.render_lines(renderable, options, style=style, pad=True)
            return [Strip(line, width).simplify() for line in lines]

        body, pinned, extras = self._build(width)
        self._lines = [strips(part) for part in body]
        shown = self._shown[0] is not None
        self._pinned = strips(pinned) if shown else []
        self._extras = [strips(extra) for extra in extras]
        self._rendered_width = width
        self._place_pinned()

    def _place_pinned(self) -> None:
        """Pin each extra (the decision, then the model's numbers) while three lines of
        the response still show beside the pinned block; the others follow it, then the
        code's criteria. Size the scroll range to the whole."""
        room = self.scrollable_content_region.height - 3
        pinned = list(self._pinned)
        unpinned: list[Strip] = []
        for extra in self._extras:
            if not unpinned and len(pinned) + len(extra) <= room:
                pinned += extra
            else:
                unpinned += extra
        response, *rest = self._lines
        self._response_count = len(response)
        self._shown_pinned = pinned
        self._body = response + unpinned + [line for part in rest for line in part]
        size = Size(self._rendered_width, len(self._body) + len(pinned))
        if set_virtual_size(self, size):
            self.scroll_to(y=min(self.scroll_y, self.max_scroll_y), animate=False, immediate=True)

    def on_resize(self, event: events.Resize) -> None:
        if self.scrollable_content_region.width != self._rendered_width:
            self._render_content()
        else:
            self._place_pinned()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._rendered_width = -1
        self._blank = None
        if self.is_mounted:
            self._render_content()

    def render_lines(self, crop: Region) -> list[Strip]:
        # Once per paint, not per line: wrap again if the pane's width changed (a resize
        # of the terminal, or the layout switching to side by side).
        if self.scrollable_content_region.width != self._rendered_width:
            self._render_content()
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        # The pinned block (question, curve) sits where it falls after the response,
        # but never below the pane's foot nor above its top: a long response scrolls
        # above it, the criteria below it; the other lines flow around it.
        pinned = self._shown_pinned
        scroll = int(self.scroll_offset.y)
        height = self.scrollable_content_region.height
        top = max(0, min(self._response_count - scroll, height - len(pinned)))
        if pinned and top <= y < top + len(pinned):
            return pinned[y - top]
        index = scroll + y - (len(pinned) if pinned and y >= top else 0)
        if 0 <= index < len(self._body):
            return self._body[index]
        return self._blank_line()

    def _blank_line(self) -> Strip:
        if self._blank is None or self._blank.cell_length != self._rendered_width:
            self._blank = Strip.blank(max(0, self._rendered_width), self.rich_style)
        return self._blank
