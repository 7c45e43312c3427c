"""Text from files, made safe to show on a terminal.

Responses, attributes, code names, notes and ids come from files a user did not
necessarily write. Written to a terminal as they are, an escape sequence in a response
sets the window's title, clears the screen or colours what follows, and a
right-to-left override reorders the rest of the line. :func:`printable` is applied to
every such text wherever the app or the command line shows it, the editors' initial
values included (:func:`kept_unless_edited` saves an untouched one unchanged).

No textual here, and rich only when markup is escaped: the command line imports this
module, and ``codecurve --help`` must stay fast.
"""

from __future__ import annotations

import json
import re
from typing import TextIO

#: Bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069): they
#: reorder what follows them up to the end of the line, so a text reads otherwise than it
#: is and a table's later columns move. The marks (U+200E, U+200F, U+061C) only steer the
#: neutral characters beside them and belong to ordinary right-to-left text: kept.
_BIDI = "\u202a-\u202e\u2066-\u2069"

#: C0 controls other than tab and line feed, DEL, C1 controls and the bidirectional
#: controls; lone surrogates too (text read with ``surrogateescape`` would make the
#: terminal's encoder raise).
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")
_UNSAFE_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")


def _picture(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode control pictures: ␛ for ESC, ␇ for BEL
    if code == 0x7F:
        return "\u2421"  # ␡
    if code <= 0x9F:
        return f"\\x{code:02x}"  # C1 controls have no pictures: \x9b
    if 0x202A <= code <= 0x2069:
        return f"\\u{code:04x}"  # bidirectional controls likewise: \u202e
    return "\ufffd"


def printable(text: str, *, single_line: bool = False) -> str:
    """``text`` with every control character replaced by a visible stand-in.

    C0 controls become the Unicode control pictures (ESC shows as ``␛``, one cell like
    any letter), DEL ``␡``, C1 controls a ``\\x9b``-style escape, the bidirectional
    embeddings, overrides and isolates a ``\\u202e``-style one, a lone surrogate ``�``.
    Line feed and tab are kept unless ``single_line``, when they become pictures too (a
    table cell that must stay on one line).

    Args:
        text: Text that came from a file.
        single_line: Replace line feeds and tabs as well.
    """
    return (_UNSAFE_LINE if single_line else _UNSAFE).sub(_picture, text)


def for_stream(text: str, stream: TextIO) -> str:
    """``text`` as data written to ``stream``: unchanged down a pipe or into a file (the
    bytes are the data: a CSV keeps its cells as they are), made :func:`printable` on a
    terminal, which would run an escape sequence in a cell instead of showing it."""
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        terminal = False
    return printable(text) if terminal else text


#: Characters of a response shown from its start and its end: a 5 MB response would
#: otherwise be wrapped into tens of thousands of lines on every key (far more than
#: anyone reads on screen; the export holds the whole text).
SHOWN_HEAD = 20_000
SHOWN_TAIL = 5_000


def shown_part(text: str) -> str:
    """``text``, or for a very long one its first :data:`SHOWN_HEAD` and last
    :data:`SHOWN_TAIL` characters around a line saying how much is left out."""
    if len(text) <= SHOWN_HEAD + SHOWN_TAIL + 200:
        return text
    left_out = len(text) - SHOWN_HEAD - SHOWN_TAIL
    return (
        f"{text[:SHOWN_HEAD]}\n\n[… {left_out:,} characters not shown here; the export "
        f"holds the whole text …]\n\n{text[-SHOWN_TAIL:]}"
    )


def kept_unless_edited(typed: str, shown: str, stored: str) -> str:
    """What an editor prefilled with ``printable(stored)`` saves: ``stored`` itself while
    the coder left the shown text as it was (saving without an edit changes nothing),
    else what was typed, stand-ins included (they are ordinary characters by then)."""
    return stored if typed == shown else typed


def one_line(text: str) -> str:
    """``text`` on one line: whitespace runs (line breaks too) become one space."""
    return printable(" ".join(text.split()), single_line=True)


#: Code points that join or restyle the character before them: a terminal draws the
#: cluster in fewer cells than Rich counts (Rich measures code point by code point), so a
#: table's later columns would shift. Zero-width joiner, variation selectors, skin tones.
_JOINERS = re.compile("[\u200d\ufe0e\ufe0f\U0001f3fb-\U0001f3ff]")
#: Regional indicators (a flag is a pair of them): shown as their letters.
_REGIONAL = re.compile("[\U0001f1e6-\U0001f1ff]")


def cell_stable(text: str) -> str:
    """``text`` for a fixed-width table cell: every character is drawn in the cells Rich
    counts for it.

    An emoji sequence (👨‍👩‍👧, 👍🏽, ❤️) shows as its parts, a flag (🇫🇷) as its letters
    (``FR``); other text is unchanged.
    """
    text = _JOINERS.sub("", text)
    return _REGIONAL.sub(lambda m: chr(ord(m.group()) - 0x1F1E6 + ord("A")), text)


def middle_cut(text: str, cells: int) -> str:
    """``text`` in at most ``cells`` cells, cut in the middle when too long.

    Ids often share a long start and differ at the end (``NEAS S&C 2692 - Q1`` and
    ``... - Q2``): ``NEAS S&C…92 - Q2`` keeps both ends.
    """
    from rich.cells import cell_len, set_cell_size

    if cell_len(text) <= cells:
        return text
    if cells < 5:
        return set_cell_size(text, cells)
    tail_cells = (cells - 1) // 2
    tail = ""
    for char in reversed(text):
        if cell_len(char + tail) > tail_cells:
            break
        tail = char + tail
    head = set_cell_size(text, cells - 1 - cell_len(tail))
    return f"{head}…{tail}"


def markup_safe(text: str) -> str:
    """``text`` made printable and escaped for Rich markup (a border title, a label)."""
    from rich.markup import escape

    return escape(printable(text, single_line=True))


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 response``, ``2 responses``, ``1,000 pairs`` (thousands separated)."""
    word = noun if count == 1 else (plural_form or f"{noun}s")
    return f"{count:,} {word}"


def json_text(payload: object) -> str:
    """JSON with non-ASCII text kept, but every control character escaped (json.dumps
    escapes C0 controls only; C1 controls, DEL and the bidirectional controls are written
    raw). The escapes are JSON's own: the values read back unchanged."""
    text = json.dumps(payload, indent=2, ensure_ascii=False)
    return re.sub(
        f"[\x7f-\x9f\u2028\u2029{_BIDI}\ud800-\udfff]",
        lambda m: f"\\u{ord(m.group()):04x}",
        text,
    )


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h12m``."""
    if seconds != seconds or seconds < 0:  # nan
        return "?"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"
