"""Blind double coding: each coder's setting, and the shared-sample order it comes with.

Under blind coding a coder sees no other coder's decisions, nor the model's answer, on a
pair they have not decided yet (the app enforces it; METHOD.md section 3). The setting
is a ``setting`` event whose ``detail`` JSON is::

    {"blind_coding": true, "seed": S}

Each coder's own latest such event says whether *they* code blind (turning it off is one
more event, so the log says when it held): one coder's choice never carries over to the
next coder's session. The seed is the study's, the latest set by anyone, so that every
coder's shared sample comes in one order. ``seed`` orders the "shared sample": the pairs
another coder already decided, in a random order a keyed hash of the seed gives
(:func:`shared_order`), so the overlap that reliability needs is built on purpose and the
order can be drawn again later.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from study.file import events
from study.handle import StudyHandle
from study.rows import check_coder


@dataclass(frozen=True)
class BlindSetting:
    """The study's blind double coding setting.

    Attributes:
        enabled: Whether coders code blind to each other and to the model.
        seed: The shared sample order's seed.
        event_id: The ``setting`` event (0: never set).
        coder: Who set it.
        at: When (ISO 8601 UTC).
    """

    enabled: bool
    seed: int
    event_id: int = 0
    coder: str | None = None
    at: str | None = None


def read_blind_setting(conn: sqlite3.Connection, *, coder: str | None = None) -> BlindSetting:
    """The latest blind coding setting (off, seed 0, when it was never set): ``coder``'s
    own (with the study's seed), or anyone's latest when no coder is given."""
    rows = events.of_kind(conn, "setting", ("id", "at", "coder", "detail"), newest_first=True)
    found: BlindSetting | None = None
    for event_id, at, who, detail in rows:
        try:
            data: Any = json.loads(detail or "")
        except ValueError:
            continue
        if isinstance(data, dict) and "blind_coding" in data:
            setting = BlindSetting(
                enabled=bool(data["blind_coding"]),
                seed=int(data.get("seed", 0)),
                event_id=int(event_id),
                coder=None if who is None else str(who),
                at=str(at),
            )
            if found is None:
                found = setting  # the study's seed
            if coder is None or setting.coder == coder:
                return replace(setting, seed=found.seed)
    return BlindSetting(enabled=False, seed=0 if found is None else found.seed)


def blind_setting(study: StudyHandle, *, coder: str | None = None) -> BlindSetting:
    """``coder``'s blind coding setting, or the study's latest (see
    :func:`read_blind_setting`)."""
    with study.snapshot() as conn:
        return read_blind_setting(conn, coder=coder)


def set_blind_coding(
    study: StudyHandle, enabled: bool, *, coder: str, seed: int | None = None
) -> BlindSetting:
    """Turn blind double coding on or off (one ``setting`` event).

    Args:
        enabled: On or off.
        coder: Whose setting it is (it holds for their sessions only).
        seed: The shared sample order's seed; by default the current one, or a fresh
            random one the first time.

    Raises:
        StudyError: a bad coder or a read-only study.
    """
    coder = check_coder(coder)
    if seed is None:
        current = blind_setting(study)
        seed = current.seed if current.event_id else secrets.randbits(63)
    detail = {"blind_coding": bool(enabled), "seed": int(seed)}
    with study.transaction() as conn:
        events.append(conn, "setting", coder=coder, detail=json.dumps(detail))
    return blind_setting(study, coder=coder)


def shared_key(seed: int, response_id: str, code_id: str) -> bytes:
    """The sort key of a pair in the shared sample order (a keyed BLAKE2b hash)."""
    text = f"{response_id}\x1f{code_id}".encode()
    return hashlib.blake2b(text, key=str(seed).encode(), digest_size=8).digest()


def shared_order(pairs: Iterable[tuple[str, str]], *, seed: int) -> list[tuple[str, str]]:
    """``(response_id, code_id)`` pairs in the shared sample's random order.

    Each pair's place depends only on the seed and the pair, so pairs decided later slot
    in without moving the others: the order is a random permutation of any subset.
    """
    return sorted(set(pairs), key=lambda p: shared_key(seed, p[0], p[1]))
