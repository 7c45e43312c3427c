"""Time stamps and the software version that a study and its exports record."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> str:
    """The current time as ISO 8601 UTC with microseconds (the study's time stamps)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def software_version() -> str:
    """The installed codecurve's version (``0+unknown`` when run from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("codecurve")
    except PackageNotFoundError:
        return "0+unknown"
