"""The detail pane: everything about the highlighted pair, scrollable and wrapped."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from itertools import pairwise, zip_longest
from typing import ClassVar, Self

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.text import Text
from textual import events
from textual.binding import BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from codebooks.model import DEFAULT_QUESTION, Code, Scale
from scoring.curves import OFF_SCALE_WARNING
from scoring.evidence import Evidence
from tui.keymap import DECIDE, bindings, key, key_range
from tui.source import Row, is_hidden
from tui.text import markup_safe, one_line, printable, shown_part
from tui.widgets.curve import NOT_SCORED, curve_table
from tui.widgets.evidence import EVIDENCE_STYLE, Mark, evidence_marks, evidence_text
from tui.widgets.frames import paint_with_key
from tui.widgets.queue import value_label
from tui.widgets.scrolling import set_virtual_size

#: What the detail pane and the response view say instead of the model's answer.
#: Rendered parts the detail pane keeps (five a pair): the pairs around the cursor and
#: the last ones shown.
PARTS_KEPT = 160

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


#: How a coded segment of the response is drawn.
SEGMENT_STYLE = "underline on #3a3a00"


def response_text(
    text: str,
    search: str | None = None,
    segments: tuple[tuple[int, int], ...] = (),
    evidence: tuple[Mark, ...] = (),
) -> Text:
    """The response, printable, each match of ``search`` marked, the ``segments`` (start
    and end of the spans a QDA program coded) highlighted and listed below it, and the
    ``evidence`` sentences (those that moved the model) marked."""
    part = shown_part(text)
    shown = Text()
    whole = part == text
    coded = _merged(sorted(segments)) if whole else []
    moved = _merged(sorted((a, b) for a, b, _ in evidence)) if whole else []
    cuts = sorted({0, len(part), *(i for span in coded + moved for i in span)})
    # Piece by piece: a stand-in of a control character may be longer than it, so the
    # offsets are applied to the text, not to its printable form.
    for start, end in pairwise(cuts):
        styles = [
            style
            for style, spans in ((SEGMENT_STYLE, coded), (EVIDENCE_STYLE, moved))
            if any(a <= start and end <= b for a, b in spans)
        ]
        shown.append(printable(part[start:end]), style=" ".join(styles) or None)
    if search:
        shown.highlight_words([search], style="bold reverse", case_sensitive=False)
    if segments:
        listed = "; ".join(
            f"{a}-{b} “{one_line(text[a:b])[:40]}{'…' if b - a > 40 else ''}”"
            for a, b in sorted(segments)
        )
        shown.append(f"\nCoded segments ({len(segments)}): ", style="bold dim")
        shown.append(listed, style="dim")
    return shown


def _with_evidence(
    text: str,
    search: str | None,
    segments: tuple[tuple[int, int], ...],
    evidence: Evidence | None,
) -> Text:
    """The response with the sentences that moved the model marked, and their effects
    said below it."""
    shown = response_text(text, search, segments, evidence_marks(evidence))
    said = evidence_text(text, evidence, key("review.evidence"))
    if said is not None:
        shown.append_text(said)
    return shown


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping spans as one, in order."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


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


def curve_part(row: Row, scale: Scale, width: int, stale: bool, coder: str | None) -> Text:
    """The pair's curve at a pane ``width``, or why there is none (not scored, blind)."""
    if is_hidden(row):
        return Text(HIDDEN_TEXT, style="dim italic")
    if row.surprisal is None or row.probs is None:
        return Text(NOT_SCORED.format(key("review.score")), style="dim italic")
    longest = max(cell_len(printable(o.label, single_line=True)) for o in scale.options)
    return curve_table(
        scale=scale,
        surprisal=row.surprisal,
        probs=row.probs,
        pick=row.pick,
        decision=row.decision,
        bar_width=max(6, min(30, width - longest - 40)),
        stale=stale,
        decided_by=decided_by(row, coder),
    )


#: What the pane shows: the row, its code, scale, place in the hierarchy, segments and
#: evidence.
_Shown = tuple[
    Row | None,
    Code | None,
    Scale | None,
    tuple[str, ...],
    tuple[tuple[int, int], ...],
    Evidence | None,
]


def shown_evidence(row: Row, evidence: Evidence | None, on: bool) -> Evidence | None:
    """The evidence the pane shows for ``row``: none while it is toggled off or the
    row's model answer is hidden (blind coding, the blind audit)."""
    return evidence if on and not is_hidden(row) else None


class DetailPane(ScrollView, can_focus=True):
    """Response text, code, curve and decision of one pair.

    A line-API view: :meth:`show` renders the content to strips once (and again only
    when the width changes), so moving through the queue repaints this pane without a
    layout of the screen, which a tree of auto-height widgets would cost on every move.

    Each part (the response, the code's criteria, the question and curve, the decision,
    the model's numbers) is rendered from the values it shows and kept by them: a pair
    seen again, another code of the same response or an undone decision renders only
    what differs, and :meth:`prepare` renders a pair ahead (the rows beside the cursor,
    while the coder reads). Only the lines that differ from what the pane showed are
    repainted.
    """

    BORDER_TITLE = "Detail"

    #: The regions a refresh repaints while :meth:`show` swaps the content (None: the
    #: whole pane, as Textual does).
    _narrow: list[Region] | None = None

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
        self._shown: _Shown = (None, None, None, (), (), None)
        #: Whether the sentences that moved the model are marked (toggled by a key).
        self._evidence_on = True
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
        #: Rendered parts by what they show (see :meth:`_part`).
        self._parts: LRUCache[Hashable, list[Strip]] = LRUCache(PARTS_KEPT)

    def set_stale(self, keys: frozenset[tuple[str, str]]) -> None:
        """Draw the curve greyed when the pair shown is one of ``keys``."""
        was = self.row is not None and (self.row.response_id, self.row.code_id) in self._stale
        self._stale = keys
        now = self.row is not None and (self.row.response_id, self.row.code_id) in keys
        if was != now:
            self._rendered_width = -1
            if self.is_mounted:
                self._fit_to_width()
                self.refresh()

    @property
    def evidence_shown(self) -> bool:
        """Whether the sentences that moved the model are marked."""
        return self._evidence_on

    def set_evidence_shown(self, on: bool) -> None:
        """Mark the sentences that moved the model, or not."""
        if on != self._evidence_on:
            self._evidence_on = on
            self._rendered_width = -1
            if self.is_mounted:
                self._fit_to_width()
                self.refresh()

    def set_search(self, search: str | None) -> None:
        """Mark each occurrence of ``search`` in the response (None: no marks)."""
        if search != self._search:
            self._search = search
            self._rendered_width = -1
            if self.is_mounted:
                self._fit_to_width()
                self.refresh()

    @property
    def plain_text(self) -> str:
        """What the pane holds, as plain text (for tests): the part that scrolls, then
        the pinned part."""
        self._fit_to_width()
        lines = self._body + self._shown_pinned
        return "\n".join(strip.text.rstrip() for strip in lines)

    def show(
        self,
        row: Row | None,
        code: Code | None,
        scale: Scale | None,
        path: tuple[str, ...] = (),
        segments: tuple[tuple[int, int], ...] = (),
        evidence: Evidence | None = None,
    ) -> None:
        """Show ``row`` (or an empty pane when there is none), its response's coded
        ``segments`` highlighted and the sentences that moved the model (``evidence``)
        marked."""
        same_pair = (
            row is not None
            and self.row is not None
            and (row.response_id, row.code_id) == (self.row.response_id, self.row.code_id)
        )
        before = self._screen_lines() if self._rendered_width > 0 else None
        self.row = row
        self._shown = (row, code, scale, path, segments, evidence)
        self._rendered_width = -1
        if not same_pair and self.scroll_y:
            self.scroll_to(y=0, animate=False, immediate=True)
            before = None  # every line moves
        self._fit_to_width()
        title = "Detail" if row is None else f"Response {markup_safe(row.response_id)}"
        self._repaint(before, title)

    def prepare(
        self,
        row: Row,
        code: Code | None,
        scale: Scale | None,
        path: tuple[str, ...] = (),
        segments: tuple[tuple[int, int], ...] = (),
        evidence: Evidence | None = None,
    ) -> None:
        """Render ``row``'s parts ahead, so that showing it later costs no rendering
        (nothing on screen changes)."""
        width = self.scrollable_content_region.width
        if width > 0 and code is not None and scale is not None and self.is_mounted:
            self._render_parts(width, (row, code, scale, path, segments, evidence))

    def _screen_lines(self) -> list[Strip]:
        """The lines the pane draws now, top to bottom."""
        scroll, height = int(self.scroll_offset.y), self.scrollable_content_region.height
        return [self._line(y, scroll, height) for y in range(height)]

    def _repaint(self, before: list[Strip] | None, title: str) -> None:
        """Repaint the lines that differ from ``before`` (all of them without it) and the
        border's title if it changed."""
        if before is None:
            self.border_title = title
            self.refresh()
        else:
            self._repaint_lines(before, title)
        paint_with_key(self, self.vertical_scrollbar if self.show_vertical_scrollbar else None)

    def _repaint_lines(self, before: list[Strip], title: str) -> None:
        width = self.scrollable_content_region.width
        regions = [
            Region(0, y, width, 1)
            for y, (old, new) in enumerate(zip_longest(before, self._screen_lines()))
            if old is not new and old != new
        ]
        if title != self.border_title:
            # The title sits on the border, the line above the content.
            left, top = self.content_offset
            regions.append(Region(-left, -top, self.outer_size.width, 1))
            self._narrow = regions
            try:
                self.border_title = title  # Textual repaints the whole pane for it...
            finally:
                self._narrow = None  # ...narrowed to the lines that changed
        elif regions:
            self.refresh(*regions)

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> Self:
        if self._narrow is not None and not regions and repaint and not layout and not recompose:
            regions = tuple(self._narrow)
            if not regions:
                return self
        super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)
        return self

    def _part(self, key: Hashable, width: int, build: Callable[[], RenderableType]) -> list[Strip]:
        """The strips of one part of the content at ``width``, rendered by ``build``
        unless the part with the same ``key`` (every value it shows) is kept."""
        try:
            strips = self._parts.get((key, width))
        except TypeError:  # a row that cannot be hashed: rendered every time
            return self._strips(build(), width)
        if strips is None:
            strips = self._strips(build(), width)
            self._parts.set((key, width), strips)
        return strips

    def _strips(self, renderable: RenderableType, width: int) -> list[Strip]:
        console = self.app.console
        options = console.options.update(width=width, height=None, highlight=False)
        lines = console.render_lines(renderable, options, style=self.rich_style, pad=True)
        return [Strip(line, width).simplify() for line in lines]

    def _render_parts(
        self, width: int, shown: _Shown
    ) -> tuple[list[list[Strip]], list[Strip], list[list[Strip]]]:
        """The pane's content for a width (the curve's bars scale with it): the part that
        scrolls (the response, the code's criteria), the part pinned below it (the
        question and the curve), and the decision and the model's numbers, pinned too
        where the pane has room (else they follow the response). Each part is kept by
        the values it shows (:meth:`_part`)."""
        row, code, scale, path, segments, evidence = shown
        if row is None or code is None or scale is None:
            empty = self._part("empty", width, lambda: Text("Nothing to show.", style="dim italic"))
            return [empty], [], []
        stale = (row.response_id, row.code_id) in self._stale
        search, coder, question = self._search, self._coder, self._question
        moved = shown_evidence(row, evidence, self._evidence_on)
        body = [
            self._part(
                ("response", row.text, search, segments, moved),
                width,
                lambda: _with_evidence(row.text, search, segments, moved),
            ),
            self._part(("code", code, path), width, lambda: Group(Text(), code_text(code, path))),
        ]
        # The question and the curve stay on screen below the response however long it
        # is (at 80x24 they are what the coder must see); the response scrolls above.
        pinned = self._part(
            ("pinned", row, code.name, scale, stale),
            width,
            lambda: Group(
                question_text(question, code.name), curve_part(row, scale, width, stale, coder)
            ),
        )
        extras = [
            self._part(("decision", row, scale), width, lambda: decision_text(row, scale, coder)),
            self._part(("stats", row), width, lambda: stats_text(row)),
        ]
        return body, pinned, extras

    def _fit_to_width(self) -> None:
        width = self.scrollable_content_region.width
        if width <= 0 or width == self._rendered_width:
            return
        self._lines, self._pinned, self._extras = self._render_parts(width, self._shown)
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
            self._fit_to_width()
        else:
            self._place_pinned()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._rendered_width = -1
        self._blank = None
        self._parts.clear()  # drawn in the old styles
        if self.is_mounted:
            self._fit_to_width()

    def render_lines(self, crop: Region) -> list[Strip]:
        # Once per paint, not per line: wrap again if the pane's width changed (a resize
        # of the terminal, or the layout switching to side by side).
        if self.scrollable_content_region.width != self._rendered_width:
            self._fit_to_width()
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        return self._line(y, int(self.scroll_offset.y), self.scrollable_content_region.height)

    def _line(self, y: int, scroll: int, height: int) -> Strip:
        """Line ``y`` of the pane scrolled to ``scroll``, ``height`` lines high."""
        # The pinned block (question, curve) sits where it falls after the response,
        # but never below the pane's foot nor above its top: a long response scrolls
        # above it, the criteria below it; the other lines flow around it.
        pinned = self._shown_pinned
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
