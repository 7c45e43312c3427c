"""The review screen's keys (:class:`tui.screens.review.ReviewScreen`).

Each key's long text is its tooltip, "Title: what it does": the help screen and the
command palette are generated from these (:func:`tui.widgets.keys.key_help`).
"""

from __future__ import annotations

from textual.binding import Binding, BindingType

#: The keys that record a scale value (1-9, and 0 for No).
DECIDE_BINDINGS: list[BindingType] = [
    Binding(
        "1",
        "decide(1)",
        "Code",
        key_display="1-9",
        id="decide.1",
        tooltip="Record a value: 1-9 the scale's options, lowest first; yes/no: 1 Yes, 0 No",
    ),
    *(
        Binding(str(i), f"decide({i})", f"Record scale value {i}", show=False, id=f"decide.{i}")
        for i in range(2, 10)
    ),
    Binding("0", "decide(0)", "No", show=False, id="decide.0"),
]


#: The review screen's keys, in the order the key bar shows them; where the line is too
#: short it leaves out keys from the end of the list, but always shows help and quit.
REVIEW_BINDINGS: list[BindingType] = [
    *DECIDE_BINDINGS,
    Binding(
        "a",
        "accept",
        "Accept",
        id="accept",
        tooltip="Accept the model's pick: record it for the highlighted pair",
    ),
    Binding(
        "x",
        "not_apply",
        "Not apply",
        id="not_apply",
        tooltip="Does not apply: record the scale's lowest option (or No)",
    ),
    Binding(
        "space",
        "skip",
        "Skip",
        id="skip",
        tooltip="Skip: go to the next undecided pair (nothing is saved)",
    ),
    Binding(
        "u,backspace",
        "undo",
        "Undo",
        key_display="u",
        id="undo",
        tooltip="Undo: take back your last decision (repeatable)",
    ),
    Binding(
        "s",
        "toggle_screening",
        "Screening",
        id="screening",
        tooltip="Screening panel: can the model's confidence be trusted?",
    ),
    Binding(
        "r",
        "app.score",
        "Score",
        id="score",
        tooltip="Score pending pairs: run the model over the unscored pairs",
    ),
    Binding(
        "f",
        "filter",
        "Filter",
        id="filter",
        tooltip="Filter: by code and status; ←→ change, ↑↓ field, a letter jumps, ⏎ closes",
    ),
    Binding(
        "slash",
        "search",
        "Search",
        key_display="/",
        id="search",
        tooltip="Search: the response text",
    ),
    Binding(
        "o",
        "cycle_order",
        "Order",
        id="order",
        tooltip="Cycle order: uncertainty, id, model's pick, confidence, blind audit, "
        "shared sample",
    ),
    Binding(
        "B",
        "toggle_blind_coding",
        "Blind coding",
        show=False,
        id="blind_coding",
        tooltip="Blind coding: hide other coders' decisions and the model until you decide",
    ),
    Binding(
        "O",
        "reverse_order",
        "Reverse",
        show=False,
        id="reverse_order",
        tooltip="Reverse order: the same order backwards (most certain first)",
    ),
    Binding("n", "note", "Note", id="note", tooltip="Note: add or edit a note on the pair"),
    Binding(
        "enter",
        "open_response",
        "Response",
        id="open_response",
        tooltip="Open response: every code's curve and decision",
    ),
    Binding(
        "v",
        "response_mode",
        "By response",
        id="response_mode",
        tooltip="By response: code whole responses, least sure first; ] next, [ previous",
    ),
    Binding(
        "V",
        "response_list",
        "Responses",
        show=False,
        id="response_list",
        tooltip="Responses: every response, one a line, least sure first; enter codes it",
    ),
    Binding(
        "D",
        "disagreements",
        "Disagreements",
        show=False,
        id="disagreements",
        tooltip="Disagreements: pairs coders decided differently; settle them as consensus",
    ),
    Binding(
        "e",
        "app.export",
        "Export",
        id="export",
        tooltip="Export: write the coded data to a file",
    ),
    Binding(
        "p", "progress", "Progress", id="progress", tooltip="Progress per code: decided / total"
    ),
    Binding(
        "F",
        "findings",
        "Findings",
        show=False,
        id="findings",
        tooltip="Findings: how often each code applies, with intervals (audit and model)",
    ),
    Binding(
        "E",
        "app.edit_code",
        "Edit code",
        show=False,
        id="edit_code",
        tooltip="Edit code: its definition, criteria and examples (a new codebook version)",
    ),
    Binding(
        "C",
        "app.choose_config",
        "Configurations",
        show=False,
        id="choose_config",
        tooltip="Configurations: choose the scoring configuration the queue shows",
    ),
    # Not in the key bar: the app's own tab binding would put it first.
    Binding(
        "tab",
        "switch_pane",
        "Pane",
        show=False,
        id="switch_pane",
        tooltip="Switch pane: between the queue and the detail pane",
    ),
    Binding(
        "escape",
        "cancel",
        "Cancel scoring",
        show=False,
        id="cancel",
        tooltip="Cancel: stop scoring after this batch; close the search; clear filters",
    ),
    Binding(
        "question_mark",
        "help",
        "Help",
        key_display="?",
        id="help",
        tooltip="Keys: every key and how to read the table",
    ),
    Binding("q", "app.quit", "Quit", id="quit", tooltip="Quit: everything is already saved"),
]
