"""The coders' links: a secret token per coder, of which only a hash is kept.

The hashes live in ``STUDY.access`` beside the study (a small SQLite file, readable by
its owner only), not in the study itself: a study copied to a colleague or archived
carries no means of signing in, and links can be added or revoked while coders have the
study open. A token is :func:`secrets.token_urlsafe` (32 bytes); the file keeps its
SHA-256, compared with :func:`hmac.compare_digest`. A revoked link stays in the file,
marked, so that a name's history is kept and the token can never be used again.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import sqlite3
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from codebooks.errors import InputError
from study.rows import CONSENSUS

#: The longest coder name a link may carry.
MAX_NAME = 64

_SCHEMA = """
CREATE TABLE IF NOT EXISTS links (
    id INTEGER PRIMARY KEY,
    coder TEXT NOT NULL,
    digest TEXT NOT NULL UNIQUE,
    created TEXT NOT NULL,
    revoked TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS one_live_link ON links (coder) WHERE revoked IS NULL;
"""


@dataclass(frozen=True)
class Grant:
    """What a valid token stands for: a coder, by the digest of their live link."""

    coder: str
    digest: str


def access_path(study_path: Path) -> Path:
    """``STUDY.access``: where a study's links are kept."""
    return study_path.with_name(study_path.name + ".access")


def check_coder_name(name: str) -> str:
    """A coder name a link may carry, or :class:`InputError` saying why not.

    Refused: an empty name, surrounding spaces, a leading ``-`` (an option, passed on),
    control or invisible format characters,
    more than :data:`MAX_NAME` characters, and ``consensus`` (the name reconciliation
    records under: a person codes under their own name and settles as consensus in the
    disagreements view).
    """
    if not name.strip():
        raise InputError("a coder name cannot be empty")
    bad = [c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp")]
    if bad:
        raise InputError(
            f"a coder name cannot hold control characters ({ascii(''.join(bad))[1:-1]})"
        )
    if name != name.strip():
        raise InputError(f"a coder name cannot start or end with spaces: {name!r}")
    if name.startswith("-"):
        # It would read as an option wherever the name is passed on (the coder's app).
        raise InputError(f"a coder name cannot start with '-': {name!r}")
    if len(name) > MAX_NAME:
        raise InputError(f"a coder name has at most {MAX_NAME} characters")
    if name.casefold() == CONSENSUS:
        raise InputError(
            f"{CONSENSUS!r} is the name reconciliation records under; give each person "
            "their own link (they settle disagreements as consensus in the app)"
        )
    return name


def digest_of(token: str) -> str:
    """The SHA-256 of a token, in hex: what the access file keeps."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class AccessList:
    """A study's links: add, revoke, and check a presented token."""

    def __init__(self, study_path: Path) -> None:
        self.study_path = study_path
        self.path = access_path(study_path)

    @contextlib.contextmanager
    def _connect(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        if not write and not self.path.exists():
            conn = sqlite3.connect(":memory:")
        else:
            try:
                if write and not self.path.exists():
                    os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
                conn = sqlite3.connect(self.path, timeout=10)
            except (OSError, sqlite3.Error) as exc:
                raise InputError(
                    f"cannot open the study's access list: {exc}", path=self.path
                ) from None
        try:
            if write:
                conn.executescript(_SCHEMA)
            with conn:
                yield conn
        except sqlite3.Error as exc:
            raise InputError(
                f"cannot read or write the access list: {exc}", path=self.path
            ) from None
        finally:
            conn.close()

    def add(self, coder: str) -> str:
        """A new link for ``coder``: the token, returned once and never stored.

        Raises:
            InputError: a bad name, or the coder already has a live link (revoke it
                first: a coder has one link at a time).
        """
        coder = check_coder_name(coder)
        token = secrets.token_urlsafe(32)
        with self._connect(write=True) as conn:
            live = conn.execute(
                "SELECT 1 FROM links WHERE coder = ? AND revoked IS NULL", (coder,)
            ).fetchone()
            if live:
                raise InputError(
                    f"{coder!r} already has a link; revoke it first (--revoke-coder) to "
                    "make a new one"
                )
            conn.execute(
                "INSERT INTO links (coder, digest, created) VALUES (?, ?, ?)",
                (coder, digest_of(token), _now()),
            )
        return token

    def revoke(self, coder: str) -> None:
        """End ``coder``'s link.

        Raises:
            InputError: the coder has no live link.
        """
        with self._connect(write=True) as conn:
            done = conn.execute(
                "UPDATE links SET revoked = ? WHERE coder = ? AND revoked IS NULL",
                (_now(), coder),
            ).rowcount
        if not done:
            known = ", ".join(repr(c) for c in self.coders()) or "none"
            raise InputError(f"{coder!r} has no link to revoke (coders with links: {known})")

    def coders(self) -> list[str]:
        """The coders with a live link, by name."""
        return sorted(g.coder for g in self.grants())

    def grants(self) -> frozenset[Grant]:
        """Every live link."""
        if not self.path.exists():
            return frozenset()
        with self._connect(write=False) as conn:
            try:
                rows = conn.execute(
                    "SELECT coder, digest FROM links WHERE revoked IS NULL"
                ).fetchall()
            except sqlite3.OperationalError:  # an empty file: no table yet
                return frozenset()
        return frozenset(Grant(str(c), str(d)) for c, d in rows)

    def check(self, token: str, grants: frozenset[Grant] | None = None) -> Grant | None:
        """The live link ``token`` opens, or None; every digest is compared in full."""
        if not token or len(token) > 256:
            return None
        presented = digest_of(token)
        found = None
        for grant in grants if grants is not None else self.grants():
            if hmac.compare_digest(grant.digest, presented):
                found = grant
        return found


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
