"""A :class:`~codebooks.errors.Remedy` as the app says it: the key that does it.

The core's errors carry what to do as data; the command line words it as a command
(:mod:`tui.commands.remedies`), the app as the key bound now (:func:`tui.keymap.key`)
where one of its keys takes that step, and as the remedy's plain words where none does
(drawing an audit sample, importing a coder's codes, options of the command line).
"""

from __future__ import annotations

from collections.abc import Iterable

from codebooks.errors import CodecurveError, Remedy
from tui.keymap import key

#: The app's key for each step it can take itself, by the remedy's action. A remedy
#: with options (drawing or extending the audit sample, scoring with worked examples)
#: asks for more than the key does, so it is said in words.
KEYS = {
    "score": "review.score",
    "learn": "review.learn",
    "audit": "screening.audit",
    "screen": "review.screening",
    "delegate": "screening.delegate",
    "findings": "review.findings",
}


def key_for(remedy: Remedy) -> str | None:
    """The key that takes the remedy's step as it is asked, None where no key does."""
    action = KEYS.get(remedy.action)
    if action is None or remedy.options:
        return None
    return key(action)


def in_words(remedy: Remedy) -> str:
    """``press r to score the study``; the plain words where no key does it."""
    pressed = key_for(remedy)
    return remedy.words if pressed is None else f"press {pressed} to {remedy.words}"


def keys_hint(remedies: Iterable[Remedy]) -> str:
    """The remedies the app has a key for, to put after a message (``"; press r to
    score the study"``; ``""`` where no key does any). The others are in the message
    already, in its plain words."""
    keyed = [in_words(r) for r in remedies if key_for(r) is not None]
    return "; " + ", or ".join(keyed) if keyed else ""


def said(error: BaseException | None) -> str:
    """What the app says of ``error``: a codecurve error's message and the keys that
    remedy it, any other error's own words."""
    if isinstance(error, CodecurveError):
        return str(error) + keys_hint(error.remedies)
    return str(error)
