"""How the detail pane shows which sentence moved the model (:mod:`scoring.evidence`).

The marked sentences are the one whose absence lowers P(applies) most and, when it
moves the model at least half as far, the next one; the pane marks them in the
response and says below it how far P(applies) falls without each.
"""

from __future__ import annotations

from rich.text import Text

from scoring.evidence import Evidence
from tui.text import one_line

#: How a sentence that moved the model is drawn in the response.
EVIDENCE_STYLE = "bold on #16385c"

#: Sentences marked at most.
SHOWN = 2

#: A marked sentence: its start, end and applies effect (how far P(applies) falls
#: without it).
Mark = tuple[int, int, float]

#: Characters of a marked sentence quoted below the response.
QUOTED = 48


def evidence_marks(evidence: Evidence | None) -> tuple[Mark, ...]:
    """The sentences to mark: the top one and the next while it moves the model at
    least half as far; none when no sentence raised P(applies)."""
    if evidence is None:
        return ()
    ranked = [s for s in evidence.ranked() if s.applies_effect > 0]
    if not ranked:
        return ()
    top = ranked[0].applies_effect
    return tuple(
        (s.start, s.end, s.applies_effect) for s in ranked[:SHOWN] if s.applies_effect >= top / 2
    )


def effect_words(effect: float) -> str:
    """``−0.31 P(applies) without it``: how far P(applies) falls without a sentence."""
    return f"−{effect:.2f} P(applies) without it"


def evidence_text(text: str, evidence: Evidence | None, toggle_key: str) -> Text | None:
    """The lines below the response: each marked sentence quoted with its effect, or
    that no sentence raised P(applies); None when there is nothing to say (no evidence,
    a response of one sentence)."""
    if evidence is None or not evidence.sentences:
        return None
    lines = Text()
    lines.append(f"\nMoved the model ({toggle_key} hides): ", style="bold dim")
    marks = evidence_marks(evidence)
    if not marks:
        lines.append("no sentence; leaving any one out does not lower P(applies).", style="dim")
        return lines
    for i, (start, end, effect) in enumerate(marks):
        quoted = one_line(text[start:end])
        cut = quoted[:QUOTED] + ("…" if len(quoted) > QUOTED else "")
        lines.append("; " if i else "", style="dim")
        lines.append(f"“{cut}” ", style="dim")
        lines.append(effect_words(effect), style="bold")
    if evidence.bounded:
        lines.append(
            f" (the {len(evidence.sentences)} longest of {evidence.total_sentences} "
            "sentences measured)",
            style="dim",
        )
    return lines
