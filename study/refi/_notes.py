"""A coder's notes on one response as one REFI-QDA note, and that note's text back.

QDA programs keep one annotation per selection and owner (QualCoder refuses a second on
the same span by the same user), so codecurve writes one note per response and coder:
the coder's memo on the response first, then each note on a (response, code) pair under
a heading line naming its code::

    the memo on the whole response

    ── Timeliness ──
    the note on Timeliness

Parts are joined by one blank line. :func:`split_note` reads such a text back, given
the code names it may name; a text without headings is one memo. A text a QDA program
changed still reads: whatever stands before the first heading is the memo, and each
heading of a known code starts that code's note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

#: The characters around a code's name on its heading line.
_OPEN, _CLOSE = "── ", " ──"
_HEADING = re.compile(r"^── (.+?) ──$", re.MULTILINE)
_GAP = "\n\n"

#: One part of a note: the code it is about (None: the memo on the whole response) and
#: its text.
Part = tuple[str | None, str]


def join_note(memo: str | None, notes: Iterable[tuple[str, str]]) -> str:
    """The memo, then each ``(code name, text)`` under its heading, one blank line apart."""
    parts = [memo] if memo else []
    parts += [f"{_OPEN}{name}{_CLOSE}\n{text}" for name, text in notes]
    return _GAP.join(parts)


def split_note(text: str, codes: Mapping[str, str]) -> list[Part]:
    """The parts of a note written by :func:`join_note`.

    Args:
        text: The note's text.
        codes: Code name (case-folded) -> the id it stands for; a heading naming no code
            of these is text of the part before it.

    Returns:
        ``(code id or None, text)`` in the note's order; the memo (None) first when
        there is text before the first heading. Empty parts are dropped.
    """
    starts: list[tuple[int, int, str]] = []
    for match in _HEADING.finditer(text):
        code_id = codes.get(match.group(1).strip().casefold())
        if code_id is None:
            continue
        if match.start() != 0 and not text[: match.start()].endswith(_GAP):
            continue
        starts.append((match.start(), match.end(), code_id))
    if not starts:
        return [(None, text)] if text.strip() else []
    parts: list[Part] = []
    memo = _without_gap(text[: starts[0][0]])
    if memo.strip():
        parts.append((None, memo))
    for i, (_start, end, code_id) in enumerate(starts):
        stop = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        body = text[end + 1 : stop] if text[end : end + 1] == "\n" else text[end:stop]
        if i + 1 < len(starts):
            body = _without_gap(body)
        if body.strip():
            parts.append((code_id, body))
    return parts


def _without_gap(text: str) -> str:
    return text[: -len(_GAP)] if text.endswith(_GAP) else text


def parts_match(parts: Sequence[Sequence[object]], text: str, names: Mapping[str, str]) -> bool:
    """Whether ``parts`` (``[code id or None, text]`` as a record keeps them) still make
    ``text`` (the note was not changed in the QDA program); ``names``: code id -> name."""
    try:
        memo = next((str(p[1]) for p in parts if p[0] is None), None)
        notes = [(names[str(p[0])], str(p[1])) for p in parts if p[0] is not None]
    except (KeyError, IndexError, TypeError):
        return False
    return join_note(memo, notes) == text
