"""A response cut into sentences, as survey text is written: pure Python.

Survey answers are not edited prose. They run on without a final full stop, put one
point per line, list points with bullets or numbers, and sometimes are one long
sentence of commas. :func:`split_sentences` returns spans ``(start, end)`` of the
original text (Python string indices), so a sentence can be shown, removed or exported
exactly where it stands:

1. Line breaks end a sentence: a line is a point of its own in survey text.
2. A list marker at the start of a line (``-``, ``*``, ``•``, ``1.``, ``2)``, ``a)``) is
   not part of the sentence that follows it.
3. Within a line, ``.``, ``!``, ``?`` or ``…`` (runs of them, closing quotes and brackets
   after them) followed by a space end a sentence, whatever the case of the next word
   (survey answers often start sentences in lower case), except after a common
   abbreviation (``e.g.``, ``Dr.``, ``etc.``) or a single letter (an initial).
4. A sentence longer than ``max_chars`` is cut at its clauses: at ``;`` or ``:`` first,
   then at a comma before a conjunction (``, but``), then at any comma, and as a last
   resort at the space nearest the middle, until every piece fits.
5. Spans are trimmed of surrounding spaces; a span without a letter or a digit
   (``---``, ``...``) is dropped.

:func:`bounded` keeps at most N sentences of a very long response by a documented rule
(the longest, in text order), so that explaining one pair costs a bounded number of
model passes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: A sentence longer than this many characters is cut at its clauses.
MAX_SENTENCE_CHARS = 300

#: Most sentences of one response that are explained (:func:`bounded`).
MAX_SENTENCES = 40

Span = tuple[int, int]

_BULLET = re.compile(r"[ \t]*(?:[-*•·‣▪◦–—>]+|\(?(?:\d{1,3}|[A-Za-z])[.)])[ \t]+")
_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)")
# "no" is left out: "I said no." ends a sentence far more often in survey text than "No. 5".
_ABBREVIATIONS = frozenset(
    {"e.g", "i.e", "etc", "vs", "dr", "mr", "mrs", "ms", "prof", "st", "approx", "dept"}
    | {"inc", "ltd", "jr", "sr", "cf", "al", "fig"}
)
_CONJUNCTION = re.compile(
    r",\s+(?=(?:but|and|or|so|because|although|though|however|whereas|while|which|"
    r"yet|then|as|since|unless)\b)",
    re.IGNORECASE,
)
_HAS_WORD = re.compile(r"\w")


def split_sentences(text: str, *, max_chars: int = MAX_SENTENCE_CHARS) -> list[Span]:
    """The sentences of ``text`` as ``(start, end)`` spans, in text order (module rules).

    Args:
        text: A response, as stored.
        max_chars: Longest sentence before it is cut at its clauses (at least 20).

    Returns:
        Non-overlapping spans; ``text[start:end]`` is a sentence without surrounding
        spaces. Empty for a text without a letter or digit.
    """
    if max_chars < 20:
        raise ValueError(f"max_chars must be at least 20, got {max_chars}")
    spans: list[Span] = []
    for line_start, line_end in _lines(text):
        marker = _BULLET.match(text, line_start, line_end)
        # A bullet only where something follows it ("-5 degrees" is no list).
        start = marker.end() if marker and marker.end() < line_end else line_start
        for sentence in _sentences(text, start, line_end):
            spans.extend(_fit(text, sentence, max_chars))
    return [s for s in (_trim(text, a, b) for a, b in spans) if s is not None]


def bounded(spans: Sequence[Span], limit: int = MAX_SENTENCES) -> list[Span]:
    """At most ``limit`` spans: the longest ones (ties: the earlier), back in text order.

    A sentence's effect is measured by leaving it out, and a long sentence carries more
    of a response than a short one, so a response of thousands of sentences is
    explained by its ``limit`` longest.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    if len(spans) <= limit:
        return list(spans)
    ranked = sorted(range(len(spans)), key=lambda i: (-(spans[i][1] - spans[i][0]), i))
    return [spans[i] for i in sorted(ranked[:limit])]


def without(text: str, span: Span) -> str:
    """``text`` with the sentence at ``span`` left out, the two sides joined by one space
    (or one line break where the sentence stood on lines of its own)."""
    start, end = span
    before, after = text[:start].rstrip(), text[end:].lstrip()
    if not before or not after:
        return before + after
    gap = text[len(before) : len(text) - len(after)]
    return before + ("\n" if "\n" in gap else " ") + after


# -- inside ----------------------------------------------------------------------------


def _lines(text: str) -> list[Span]:
    out = []
    start = 0
    for match in re.finditer(r"\r\n|[\n\r\u2028\u2029]", text):
        out.append((start, match.start()))
        start = match.end()
    out.append((start, len(text)))
    return out


def _sentences(text: str, start: int, end: int) -> list[Span]:
    out = []
    begin = start
    for match in _END.finditer(text, start, end):
        if _abbreviation(text, begin, match.start(), match.group()):
            continue
        out.append((begin, match.end()))
        begin = match.end()
    out.append((begin, end))
    return out


def _abbreviation(text: str, begin: int, stop: int, mark: str) -> bool:
    """Whether the full stop at ``stop`` ends an abbreviation or an initial, not a sentence."""
    if not mark.startswith(".") or len(mark.rstrip("\"'”’)]")) != 1:
        return False
    word = re.search(r"[\w.]+$", text[begin:stop])
    if word is None:
        return False
    token = word.group().lower()
    return token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha())


def _fit(text: str, span: Span, max_chars: int) -> list[Span]:
    """``span`` cut at its clauses until every piece is at most ``max_chars`` long."""
    start, end = span
    if end - start <= max_chars:
        return [span]
    piece = text[start:end]
    for cuts in (re.compile(r"[;:]\s+"), _CONJUNCTION, re.compile(r",\s+")):
        points = [m.end() for m in cuts.finditer(piece) if 0 < m.end() < len(piece)]
        if points:
            pieces = _cut_near_middle(start, end, [start + p for p in points])
            return [s for part in pieces for s in _fit(text, part, max_chars)]
    spaces = [start + m.end() for m in re.finditer(r"\s+", piece) if 0 < m.end() < len(piece)]
    if not spaces:
        return [span]  # one unbroken word: nothing to cut at
    pieces = _cut_near_middle(start, end, spaces)
    return [s for part in pieces for s in _fit(text, part, max_chars)]


def _cut_near_middle(start: int, end: int, points: list[int]) -> list[Span]:
    """Two spans cut at the point nearest the middle (balanced pieces, few cuts)."""
    middle = (start + end) / 2
    point = min(points, key=lambda p: abs(p - middle))
    return [(start, point), (point, end)]


def _trim(text: str, start: int, end: int) -> Span | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if not _HAS_WORD.search(text, start, end):
        return None
    return start, end
