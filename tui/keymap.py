"""Every key of the app, named once: the bindings, the help screen and the palette.

Each :class:`Action` has a stable id (``review.note``), its default key(s), a short label
for the key bar and a help text ("Title: what it does"). Screens and widgets say which
actions they offer by id (``BINDINGS = keymap.bindings("review.accept", ...)``); an id
offered on several screens is one action there, bound to one key everywhere, so that a
key means the same thing wherever it is pressed (``c`` a note, ``n`` No).

Users rebind keys by id in ``keys.toml`` (:mod:`tui.keyconfig`); the app hands the
result to Textual's ``App.set_keymap``, which swaps the key of every binding with that id,
and to :func:`rebind`, so that the words of hints, titles and messages name the key the
user bound (:func:`key`: ``f"press {key('review.score')} to score"``) and never a default
written out by hand.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from textual.binding import Binding, BindingType
from textual.keys import format_key


@dataclass(frozen=True)
class Action:
    """One action and its default keys.

    Attributes:
        id: Stable name, ``group.name``; what ``keys.toml`` rebinds.
        keys: The default keys, comma-separated (``"u,backspace"``).
        action: The Textual action it runs (``"undo"``, ``"decide(1)"``, ``"app.score"``).
        label: Its name in the key bar.
        help: "Title: what it does", for the help screen and the command palette; empty:
            left out of both (a key explained by another, like ``2``-``9``). Another
            action's key is named by its id in braces (``{review.undo}``), a numbered
            group's by ``{digits:decide}``: :func:`described` puts in the keys bound now.
        show: Whether the key bar shows it.
        key_display: How the key bar shows the key (``"1-9"``), if not the key itself.
        priority: Whether it runs before the focused widget's own keys.
    """

    id: str
    keys: str
    action: str
    label: str
    help: str = ""
    show: bool = True
    key_display: str | None = None
    priority: bool = False

    @property
    def group(self) -> str:
        """The id's first part (``review`` of ``review.note``)."""
        return self.id.partition(".")[0]

    def binding(self) -> Binding:
        return Binding(
            self.keys,
            self.action,
            self.label,
            show=self.show,
            key_display=self.key_display,
            priority=self.priority,
            id=self.id,
            tooltip=self.help,
        )


def _digits(group: str, action: str, label: str, first: Action) -> tuple[Action, ...]:
    """``first`` (key ``1``, shown as ``1-9``) and the hidden keys ``2``-``9``."""
    rest = (
        Action(f"{group}.{i}", str(i), f"{action}({i})", f"{label} {i}", show=False)
        for i in range(2, 10)
    )
    return (first, *rest)


ACTIONS: tuple[Action, ...] = (
    # -- the app ----------------------------------------------------------------------
    Action(
        "app.theme",
        "ctrl+t",
        "toggle_theme",
        "Light/dark",
        "Light/dark: switch the theme",
        show=False,
    ),
    Action(
        "app.help",
        "question_mark",
        "app.help",
        "Help",
        "Keys: every key of this view and how to read it",
        key_display="?",
    ),
    # -- deciding (the queue and the response view) -------------------------------------
    *_digits(
        "decide",
        "decide",
        "Record scale value",
        Action(
            "decide.1",
            "1",
            "decide(1)",
            "Code",
            "Record a value: {digits:decide} the scale's options, lowest first; yes/no: "
            "{decide.1} Yes, {decide.0} No (or {decide.yes}, {decide.no})",
            key_display="1-9",
        ),
    ),
    Action("decide.0", "0", "decide(0)", "No", show=False),
    Action("decide.yes", "y", "yes_no(True)", "Yes", "Yes: on a yes/no code", show=False),
    Action("decide.no", "n", "yes_no(False)", "No", "No: on a yes/no code", show=False),
    Action(
        "review.accept",
        "a",
        "accept",
        "Accept",
        "Accept the model's pick: record it for the highlighted pair",
    ),
    Action(
        "review.not_apply",
        "x",
        "not_apply",
        "Not apply",
        "Does not apply: record the scale's lowest option (or No)",
    ),
    Action(
        "review.undo",
        "u,backspace",
        "undo",
        "Undo",
        "Undo: take back your last decision (repeatable)",
        key_display="u",
    ),
    Action("review.note", "c", "note", "Note", "Note: add or edit a note on the pair"),
    # -- the queue of pairs -------------------------------------------------------------
    Action(
        "review.skip",
        "space",
        "skip",
        "Skip",
        "Skip: go to the next undecided pair (nothing is saved)",
    ),
    Action(
        "review.screening",
        "s",
        "toggle_screening",
        "Screening",
        "Screening panel: can the model's confidence be trusted?",
    ),
    Action(
        "review.score",
        "r",
        "app.score",
        "Score",
        "Score pending pairs: run the model over the unscored pairs",
    ),
    Action(
        "review.filter",
        "f",
        "filter",
        "Filter",
        "Filter: by code and status; ←→ change, ↑↓ field, a letter jumps, ⏎ closes",
    ),
    Action(
        "review.search", "slash", "search", "Search", "Search: the response text", key_display="/"
    ),
    Action(
        "review.order",
        "o",
        "cycle_order",
        "Order",
        "Cycle order: uncertainty, id, model's pick, confidence, blind audit, shared sample",
    ),
    Action(
        "review.blind_coding",
        "B",
        "toggle_blind_coding",
        "Blind coding",
        "Blind coding: hide other coders' decisions and the model until you decide",
        show=False,
    ),
    Action(
        "review.reverse_order",
        "O",
        "reverse_order",
        "Reverse",
        "Reverse order: the same order backwards (most certain first)",
        show=False,
    ),
    Action(
        "review.open_response",
        "enter",
        "open_response",
        "Response",
        "Open response: every code's curve and decision",
    ),
    Action(
        "review.response_mode",
        "v",
        "response_mode",
        "By response",
        "By response: code whole responses, least sure first; {response.next} next, "
        "{response.previous} previous",
    ),
    Action(
        "review.response_list",
        "V",
        "response_list",
        "Responses",
        "Responses: every response, one a line, least sure first; {responses.open} codes it",
        show=False,
    ),
    Action(
        "review.disagreements",
        "D",
        "disagreements",
        "Disagreements",
        "Disagreements: pairs coders decided differently; settle them as consensus",
        show=False,
    ),
    Action("review.export", "e", "app.export", "Export", "Export: write the coded data to a file"),
    Action("review.progress", "p", "progress", "Progress", "Progress per code: decided / total"),
    Action(
        "review.findings",
        "P",
        "findings",
        "Findings",
        "Findings: how often each code applies, with intervals (audit and model)",
        show=False,
    ),
    Action(
        "review.edit_code",
        "E",
        "app.edit_code",
        "Edit code",
        "Edit code: its definition, criteria and examples (a new codebook version)",
        show=False,
    ),
    Action(
        "code.add",
        "A",
        "app.add_code",
        "Add code",
        "Add code: a new (inductive) code while reading; a new codebook version, its "
        "pairs then scored",
        show=False,
    ),
    Action(
        "review.choose_config",
        "C",
        "app.choose_config",
        "Configurations",
        "Configurations: choose the scoring configuration the queue shows",
        show=False,
    ),
    Action(
        "review.learn",
        "L",
        "app.learn",
        "Learn",
        "Learn now: refit the highlighted pair's code's curve on your decisions (it also "
        "refits by itself as you decide); the queue then follows it. The audit never "
        "teaches it",
        show=False,
    ),
    # Not in the key bar (it is full): the pane says it beside what it marks.
    Action(
        "review.evidence",
        "w",
        "toggle_evidence",
        "Why",
        "Why: mark in the response the sentence that moved the model most (how far "
        "P(applies) falls without it), or hide the marks",
        show=False,
    ),
    # Not in the key bar: the app's own tab binding would put it first.
    Action(
        "review.switch_pane",
        "tab",
        "switch_pane",
        "Pane",
        "Switch pane: between the queue and the detail pane",
        show=False,
    ),
    Action(
        "review.cancel",
        "escape",
        "cancel",
        "Cancel scoring",
        "Cancel: stop scoring after this batch; close the search; clear filters",
        show=False,
    ),
    Action("review.quit", "q", "app.quit", "Quit", "Quit: everything is already saved"),
    # -- moving in a list (the queue of pairs, the list of responses) -------------------
    Action("list.down", "down,j", "cursor_down", "Next", "Next: the line below", show=False),
    Action("list.up", "up,k", "cursor_up", "Previous", "Previous: the line above", show=False),
    Action("list.page_down", "pagedown", "page_down", "Page down", "Page down", show=False),
    Action("list.page_up", "pageup", "page_up", "Page up", "Page up", show=False),
    Action("list.first", "home,g", "first", "First", "First: the first line", show=False),
    Action("list.last", "end,G", "last", "Last", "Last: the last line", show=False),
    # -- the detail pane ----------------------------------------------------------------
    Action("detail.down", "down,j", "scroll_down", "Scroll down", show=False),
    Action("detail.up", "up,k", "scroll_up", "Scroll up", show=False),
    Action("detail.page_down", "pagedown", "page_down", "Page down", show=False),
    Action("detail.page_up", "pageup", "page_up", "Page up", show=False),
    # -- the screening panel ------------------------------------------------------------
    Action(
        "screening.previous",
        "left",
        "previous_code",
        "Previous code",
        "Previous code: show the screen of the code before",
    ),
    Action(
        "screening.next",
        "right",
        "next_code",
        "Next code",
        "Next code: show the screen of the code after",
    ),
    Action(
        "screening.cut",
        "t",
        "cycle_cut",
        "Cut",
        "Cut: the confidence threshold; scale-aware, sample median or a fixed p_max",
    ),
    Action(
        "screening.follow",
        "F",
        "follow_advice",
        "Show them",
        "Show them: filter the queue to the next action's pairs",
    ),
    Action(
        "screening.audit",
        "b",
        "blind_audit",
        "Blind audit",
        "Blind audit: code the audit pairs in their random order, the model hidden",
    ),
    Action(
        "screening.delegate",
        "d",
        "delegate",
        "Delegate",
        "Delegate: apply the certified delegation plan (asks first; {review.undo} undoes)",
    ),
    Action(
        "screening.left",
        "l",
        "left_for_review",
        "Left for review",
        "Left for review: the undecided pairs no delegation covers",
    ),
    Action(
        "screening.report",
        "R",
        "write_report",
        "Report",
        "Report: write the study's report (HTML with its figures) beside the study",
    ),
    # -- the response view and the list of responses ------------------------------------
    Action(
        "response.next",
        "right_square_bracket",
        "response(1)",
        "Next resp.",
        "Next response: in the order shown at the top",
        key_display="]",
    ),
    Action(
        "response.previous",
        "left_square_bracket",
        "response(-1)",
        "Prev. resp.",
        "Previous response",
        key_display="[",
    ),
    Action("response.memo", "m", "memo", "Memo", "Memo: add or edit a note on the whole response"),
    Action(
        "response.reverse",
        "O",
        "reverse",
        "Reverse",
        "Reverse: go through the responses in the opposite order",
        show=False,
    ),
    Action(
        "responses.reverse",
        "O",
        "reverse",
        "Reverse",
        "Reverse order: the same order backwards",
    ),
    Action(
        "response.tick",
        "space",
        "tick",
        "Tick",
        "Tick: the checklist; mark the highlighted yes/no code as applying (again: "
        "untick); the cursor stays, arrows move it",
        show=False,
    ),
    Action(
        "response.record_ticks",
        "enter",
        "record_ticks",
        "Record ticks",
        "Record the checklist: ticked codes Yes, the other undecided yes/no codes No, "
        "then the next response (ordinal codes are left to their digits)",
        key_display="⏎",
        show=False,  # the detail pane's hint line names it, with space
        priority=True,
    ),
    Action("response.next_code", "down,j", "cursor(1)", "Next code", "Next code", show=False),
    Action(
        "response.previous_code", "up,k", "cursor(-1)", "Previous code", "Previous code", show=False
    ),
    Action(
        "response.back", "escape,q", "back", "Back", "Back: to the screen before", key_display="esc"
    ),
    Action(
        "responses.open",
        "enter",
        "open",
        "Open",
        "Open: the response with every code; {response.next} and {response.previous} go on "
        "in this order",
    ),
    Action(
        "responses.order",
        "o",
        "cycle_order",
        "Order",
        "Cycle order: least sure code first, response id, blind audit",
    ),
    # -- reconciling disagreements ------------------------------------------------------
    *_digits(
        "reconcile.take",
        "take",
        "Take coder",
        Action(
            "reconcile.take.1",
            "1",
            "take(1)",
            "Take coder",
            "Take coder N's decision as the consensus (N as numbered in the header)",
            key_display="1-9",
        ),
    ),
    Action(
        "reconcile.value",
        "v",
        "set_value",
        "New value",
        "Record another value as the consensus, with a note",
    ),
    Action("reconcile.coders", "w", "coders", "Coders", "Coders: choose the coders compared"),
    Action("reconcile.close", "escape,q", "close", "Back", "Back: to the queue", key_display="esc"),
    # -- dialogs ------------------------------------------------------------------------
    Action("dialog.cancel", "escape", "cancel", "Cancel", "Cancel: close without saving"),
    Action("confirm.yes", "y,enter", "answer(True)", "Yes", "Yes: go ahead"),
    Action("confirm.no", "n,escape", "answer(False)", "No", "No: leave everything as it is"),
    Action(
        "code_editor.save",
        "ctrl+s",
        "save",
        "Save",
        "Save: check the edit and confirm it",
        priority=True,
    ),
    Action("progress.close", "escape,p,q", "close", "Close", "Close"),
    Action("findings.close", "escape,P,q", "close", "Close", "Close"),
    Action("help.close", "escape,question_mark,q", "dismiss", "Close", "Close"),
    Action("choice.next", "down,right", "choose_next", "Next option", show=False),
    Action("choice.previous", "up,left", "choose_previous", "Previous option", show=False),
    Action("choice.toggle", "space", "toggle_button", "Choose", show=False),
    Action("choice.next_field", "enter", "app.focus_next", "Next field", show=False),
)

#: Every action by id.
REGISTRY: dict[str, Action] = {action.id: action for action in ACTIONS}

#: The decision keys, the same on the queue and in the response view.
DECIDE: tuple[str, ...] = (
    *(f"decide.{i}" for i in range(1, 10)),
    "decide.0",
    "decide.yes",
    "decide.no",
)

#: The coders' keys in the reconciliation view.
TAKE: tuple[str, ...] = tuple(f"reconcile.take.{i}" for i in range(1, 10))

#: The moves of a virtual list (the queue of pairs, the list of responses).
LIST: tuple[str, ...] = (
    "list.down",
    "list.up",
    "list.page_down",
    "list.page_up",
    "list.first",
    "list.last",
)

#: Keys Textual binds for every screen, ahead of the app's own (``priority``).
RESERVED: dict[str, str] = {
    "ctrl+q": "quit",
    "ctrl+c": "copy",
    "ctrl+p": "the command palette",
}

#: What the help screen calls the keys of a widget inside a screen, by action group.
GROUP_TITLES: dict[str, str] = {
    "list": "Moving",
    "detail": "Detail pane",
    "screening": "Screening panel ({review.screening}, then {review.switch_pane})",
    "choice": "Choices",
}


def bindings(*ids: str) -> list[BindingType]:
    """The bindings of these actions, in this order (the key bar's)."""
    return [REGISTRY[action_id].binding() for action_id in ids]


def hidden(*ids: str) -> list[BindingType]:
    """The bindings of these actions, left out of the key bar (a panel's key that also
    works, with a word of feedback, while the panel is not focused)."""
    return [replace(REGISTRY[action_id].binding(), show=False) for action_id in ids]


def offered(bindings: Iterable[BindingType]) -> list[Action]:
    """The keymap's actions among ``bindings`` (Textual's own, without an id, left out)."""
    return [REGISTRY[b.id] for b in bindings if isinstance(b, Binding) and b.id in REGISTRY]


def declared(cls: type) -> list[Action]:
    """The keymap's actions a screen or widget class offers, its bases' included."""
    actions: dict[str, Action] = {}
    for base in reversed(cls.__mro__):
        for action in offered(base.__dict__.get("BINDINGS", ())):
            actions[action.id] = action
    return list(actions.values())


# -- keys in words ------------------------------------------------------------------------

#: The keys the user rebound, by action id: one app runs in a process, and it sets them.
_rebound: dict[str, str] = {}

#: How a sentence names a key where Textual's key bar shows a symbol.
_WORDS = {"escape": "esc", "enter": "enter", "backspace": "backspace", "tab": "tab"}


def rebind(keys: Mapping[str, str]) -> None:
    """Name these keys (action id -> keys, comma-separated) in the words of hints and
    messages from now on; the app calls it as it starts and, with none, as it ends."""
    _rebound.clear()
    _rebound.update(keys)


def keys_of(action_id: str) -> list[str]:
    """The action's keys, as bound now (the user's, else the defaults)."""
    keys = _rebound.get(action_id, REGISTRY[action_id].keys)
    return [k.strip() for k in keys.split(",") if k.strip()]


def key_word(key: str) -> str:
    """A key as a sentence names it: ``esc``, ``enter``, ``ctrl+s``, ``?``, ``]``."""
    *modifiers, base = key.split("+")
    return "+".join([*modifiers, _WORDS.get(base) or format_key(base)])


def key(action_id: str, *, every: bool = False) -> str:
    """How a sentence names the action's key: its first (``"r"``, ``"esc"``), or with
    ``every`` all of them (``"y or enter"``)."""
    keys = keys_of(action_id)
    return " or ".join(key_word(k) for k in (keys if every else keys[:1]))


def key_range(action_ids: Iterable[str]) -> str:
    """The first keys of numbered actions (``decide.1`` ... ``decide.5``) in words:
    ``"1-5"`` while they are the digits in order, else listed (``"1, 2, z, 4, 5"``)."""
    words = [key(action_id) for action_id in action_ids]
    digits = [str(i) for i in range(1, len(words) + 1)]
    if len(words) > 2 and words == digits:
        return f"1-{len(words)}"
    return ", ".join(words)


_PLACEHOLDER = re.compile(r"\{(digits:)?([a-z_.0-9]+)\}")


def described(text: str) -> str:
    """A help text with its ``{action.id}`` and ``{digits:group}`` put in words
    (``"u undoes"``, ``"1-9"``), as bound now."""

    def words(match: re.Match[str]) -> str:
        digits, name = match.groups()
        if digits:
            return key_range(f"{name}.{i}" for i in range(1, 10))
        return key(name) if name in REGISTRY else match.group(0)

    return _PLACEHOLDER.sub(words, text)
