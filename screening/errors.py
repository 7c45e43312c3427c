"""Warnings and errors raised by :mod:`screening` (drawn with the rest in :mod:`codebooks.errors`).

``ScreeningWarning`` marks degenerate but well-formed input (an empty margin, one class):
the function still returns, with nan or a documented tier. Malformed input (wrong shape,
lengths that differ, values outside the allowed set) raises ``ValueError`` naming the
argument and its shape.

Degenerate input is normal while a coder is still annotating (no errors yet, every item
high-confidence), so it never raises: callers that want silence filter
``ScreeningWarning``.
"""

from __future__ import annotations

__all__ = ["ScreeningWarning"]


class ScreeningWarning(UserWarning):
    """A screening quantity is undefined for this input and was returned as nan."""
