"""Codebook versions of a study: revise the codebook without losing a decision.

A revision is checked against the study first (:func:`plan_revision`), then recorded in
one transaction (:func:`apply_revision`): a ``codebook`` event, a new row of
``codebook_versions`` with the changes, the ``codes`` rows updated (a new code is added,
a renamed one keeps its key and so its decisions and scores, a removed one is
``archived``: out of the queue, its decisions kept and exported), and the current
snapshot in ``meta``. Decisions record the version they were made under
(``codebook_version``, stamped by the schema's triggers).

Scores are keyed by the code's content: a pair whose stored score was computed from
another version of its code's text (or another text of its response) is *stale*;
:func:`stale_pairs` lists them, so that scoring again computes only those, and
:func:`drop_replaced` removes a stale score in the transaction that stores its
replacement. The stale score is shown until then.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from codebooks.diff import CodebookDiff, CodeChange, diff_codebooks
from codebooks.errors import CodebookError
from codebooks.model import Code, Codebook
from scoring.score import Pair, text_hash
from study.errors import StudyError
from study.file import events, scoped_pairs
from study.index import StudyIndex
from study.scope import attrs_of, check_scope
from study.stamps import now


@dataclass(frozen=True)
class CodebookVersion:
    """One codebook a study has had.

    Attributes:
        version: 1 for the codebook the study was created with, then 2, 3, ...
        codebook: The codebook as it was.
        hash: Its content hash.
        at: When it became current (ISO time).
        source: The file it was read from ('created' for the first).
        changes: What changed from the version before (empty for the first).
    """

    version: int
    codebook: Codebook
    hash: str
    at: str
    source: str
    changes: tuple[CodeChange, ...]


def current_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT MAX(version) FROM codebook_versions").fetchone()
    return 1 if row is None or row[0] is None else int(row[0])


def definition_versions(conn: sqlite3.Connection) -> dict[str, int]:
    """code id -> the codebook version from which its current definition holds: the
    latest version that added the code or changed its content (a rename or a move keeps
    it). A code not listed has held since version 1.

    A blind decision made under an older version than its code's is *stale evidence*: it
    judged another definition (:meth:`study.audit.sample.Audit.stale_pairs`).
    """
    try:
        rows = conn.execute(
            "SELECT version, changes FROM codebook_versions ORDER BY version"
        ).fetchall()
    except sqlite3.OperationalError:  # a file at a schema without versions
        return {}
    since: dict[str, int] = {}
    for version, blob in rows:
        try:
            changes = [c for c in json.loads(blob or "[]") if isinstance(c, dict)]
        except ValueError:
            continue
        for change in changes:  # renames first: a change in the same version wins
            old, new = change.get("old_id"), change.get("code_id")
            if change.get("kind") == "renamed" and old in since and isinstance(new, str):
                since[new] = since.pop(str(old))
        for change in changes:
            if change.get("kind") in ("added", "changed") and isinstance(
                change.get("code_id"), str
            ):
                since[str(change["code_id"])] = int(version)
    return since


def read_versions(conn: sqlite3.Connection, *, path: Path) -> list[CodebookVersion]:
    """Every codebook version, oldest first.

    Raises:
        StudyError: a stored version cannot be read (a damaged file).
    """
    rows = conn.execute(
        "SELECT version, codebook, hash, at, source, changes FROM codebook_versions "
        "ORDER BY version"
    ).fetchall()
    out = []
    for version, blob, digest, at, source, changes in rows:
        try:
            out.append(
                CodebookVersion(
                    version=int(version),
                    codebook=Codebook.from_dict(json.loads(blob)),
                    hash=str(digest),
                    at=str(at),
                    source=str(source),
                    changes=tuple(CodeChange.from_dict(c) for c in json.loads(changes)),
                )
            )
        except (ValueError, TypeError, KeyError) as exc:
            raise StudyError(
                f"the study file is damaged: codebook version {version} cannot be read "
                f"({exc}) (restore it from a copy)",
                path=path,
            ) from None
    return out


def index_codebook(conn: sqlite3.Connection, codebook: Codebook, *, path: Path) -> Codebook:
    """``codebook`` with the archived codes appended as categories (never decided again).

    The index needs every code a table row names; an archived code keeps its last
    version's content (its scale above all, so that its decisions still read) but is not
    codable, so it leaves the queue, the pending pairs and the pair count.
    """
    try:
        archived = conn.execute("SELECT id FROM codes WHERE archived = 1 ORDER BY cid").fetchall()
    except sqlite3.OperationalError:  # a file still at an older schema, opened by its tests
        return codebook
    if not archived:
        return codebook
    last: dict[str, tuple[Code, Codebook]] = {}
    for version in read_versions(conn, path=path):
        for code in version.codebook.codes:
            last[code.id] = (code, version.codebook)
    names = {c.name.strip().casefold() for c in codebook.codes}
    extra = []
    for (code_id,) in archived:
        code, book = last.get(code_id, (Code(code_id, code_id), codebook))
        name = code.name
        while name.strip().casefold() in names:
            name = f"{name} (archived)"
        names.add(name.strip().casefold())
        # An archived code has no pairs; its questions stay only where the codebook
        # still names a question column (a codebook without one refuses scoped codes).
        questions = code.questions if codebook.question_column is not None else ()
        extra.append(
            replace(
                code,
                name=name,
                parent=None,
                codable=False,
                scale=code.scale or book.scale,
                questions=questions,
            )
        )
    return replace(codebook, codes=(*codebook.codes, *extra))


def load_index(path: Path, conn: sqlite3.Connection, codebook: Codebook) -> StudyIndex:
    """The study's index: its responses, and its codes with the archived ones."""
    questions = scoped_pairs.read_questions(conn, codebook)
    return StudyIndex(
        path=path,
        codebook=index_codebook(conn, codebook, path=path),
        responses=conn.execute("SELECT rid, id FROM responses"),
        codes=conn.execute("SELECT cid, id FROM codes ORDER BY cid"),
        questions=questions,
    )


def _decided(conn: sqlite3.Connection, code_id: str) -> int:
    row = conn.execute(
        "SELECT COUNT(*) FROM annotations a JOIN codes c ON c.cid = a.cid WHERE c.id = ?",
        (code_id,),
    ).fetchone()
    return int(row[0])


def plan_revision(
    conn: sqlite3.Connection, current: Codebook, revised: Codebook, *, path: Path
) -> CodebookDiff:
    """The changes ``revised`` makes, checked against the study's decisions.

    Raises:
        StudyError: nothing changed; two old codes would become one; a code with
            decisions changes its scale or stops being codable; no codable code is left;
            a new id is that of an archived code under another name.
    """
    try:
        diff = diff_codebooks(current, revised)
    except CodebookError as exc:
        raise StudyError(f"cannot revise the codebook: {exc}", path=path) from None
    if diff.empty:
        raise StudyError("the revised codebook is the same as the current one", path=path)
    if not revised.codable:
        raise StudyError("cannot revise the codebook: it has no codable codes", path=path)
    try:
        check_scope(revised, (attrs_of(r[0]) for r in conn.execute("SELECT attrs FROM responses")))
    except StudyError as exc:
        raise StudyError(f"cannot revise the codebook: {exc.message}", path=path) from None
    for change in diff.of_kind("changed"):
        assert change.old_id is not None
        decided = _decided(conn, change.old_id)
        if not decided:
            continue
        if "scale" in change.fields:
            raise StudyError(
                f"cannot revise the codebook: code {change.code_id!r} has {decided} "
                "decision(s) on its old scale, and the revision changes its scale; give the "
                "code on the new scale a new id (the old one is then archived with its "
                "decisions), or keep its scale",
                path=path,
            )
        if "codable" in change.fields:
            raise StudyError(
                f"cannot revise the codebook: code {change.code_id!r} has {decided} "
                "decision(s) and the revision makes it a category that cannot be decided; "
                "remove it instead (its decisions are archived)",
                path=path,
            )
    archived = {
        str(r[0]): str(r[1])
        for r in conn.execute("SELECT id, name FROM codes WHERE archived = 1").fetchall()
    }
    for change in diff.of_kind("renamed"):
        if change.code_id in archived:
            raise StudyError(
                f"cannot revise the codebook: the new id {change.code_id!r} is that of an "
                "archived code; choose another id",
                path=path,
            )
    return diff


def apply_revision(
    conn: sqlite3.Connection,
    current: Codebook,
    revised: Codebook,
    diff: CodebookDiff,
    *,
    source: str,
) -> int:
    """Record ``revised`` as the next codebook version (inside the caller's transaction).

    Returns:
        The new version number.
    """
    version = current_version(conn) + 1
    at = now()
    changes = json.dumps([c.to_dict() for c in diff.changes], ensure_ascii=False)
    event_id = events.append(
        conn,
        "codebook",
        at=at,
        detail=json.dumps({"version": version, "source": source, "changes": json.loads(changes)}),
        codebook_version=version,
    )
    cids = {str(r[0]): int(r[1]) for r in conn.execute("SELECT id, cid FROM codes")}
    new_cid = max(cids.values(), default=0) + 1
    old_of = {new: old for old, new in diff.matches}
    for code in revised.codes:
        old_id = old_of.get(code.id)
        if old_id is not None:
            conn.execute(
                "UPDATE codes SET id = ?, name = ?, codable = ?, archived = 0 WHERE cid = ?",
                (code.id, code.name, int(code.codable), cids[old_id]),
            )
        elif code.id in cids:  # an archived code comes back, with its decisions
            conn.execute(
                "UPDATE codes SET name = ?, codable = ?, archived = 0 WHERE cid = ?",
                (code.name, int(code.codable), cids[code.id]),
            )
        else:
            conn.execute(
                "INSERT INTO codes (cid, id, name, codable) VALUES (?, ?, ?, ?)",
                (new_cid, code.id, code.name, int(code.codable)),
            )
            new_cid += 1
    for change in diff.of_kind("removed"):
        conn.execute("UPDATE codes SET archived = 1 WHERE id = ?", (change.code_id,))
    snapshot = json.dumps(revised.to_dict(), ensure_ascii=False)
    conn.execute(
        "INSERT INTO codebook_versions (version, codebook, hash, at, source, changes, event_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (version, snapshot, revised.content_hash(), at, source, changes, event_id),
    )
    for key, value in (("codebook", snapshot), ("codebook_hash", revised.content_hash())):
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
    return version


def stale_keys(conn: sqlite3.Connection, index: StudyIndex, config_id: int, cid: int) -> set[int]:
    """The ``rid`` of one code's pairs scored from another version of the code or text.

    A study never revised has one version of each code: its scores' code hashes are
    not looked at (scores imported or made by other tools may carry none).
    """
    rids: set[int] = set()
    if conn.execute("SELECT COUNT(*) FROM codebook_versions").fetchone()[0] > 1:
        digest = index.code_at(cid).content_hash()
        rids.update(
            int(r[0])
            for r in conn.execute(
                "SELECT rid FROM scores WHERE config_id = ? AND cid = ? AND code_hash != ?",
                (config_id, cid, digest),
            )
        )
    for rid, stored_hash, text in conn.execute(
        "SELECT s.rid, s.text_hash, r.text FROM scores s JOIN responses r ON r.rid = s.rid "
        "WHERE s.config_id = ? AND s.cid = ? AND s.rid IN "
        "(SELECT rid FROM events WHERE kind = 'update')",
        (config_id, cid),
    ).fetchall():
        if stored_hash != text_hash(text):
            rids.add(int(rid))
    return rids


def stale_pairs(conn: sqlite3.Connection, index: StudyIndex, config_id: int) -> list[Pair]:
    """Pairs scored under ``config_id`` from another version of the code or the text.

    Codes are compared by :meth:`Code.content_hash`; texts only for responses whose
    text was replaced (an ``update`` event), so this stays one indexed scan per code.
    """
    pairs: list[tuple[int, int]] = []
    for cid in index.codable_keys:
        digest = index.code_at(cid).content_hash()
        pairs.extend(
            (int(r[0]), cid)
            for r in conn.execute(
                "SELECT rid FROM scores WHERE config_id = ? AND cid = ? AND code_hash != ?",
                (config_id, cid, digest),
            )
        )
    codable = set(index.codable_keys)
    for rid, cid, stored_hash, text in conn.execute(
        "SELECT s.rid, s.cid, s.text_hash, r.text FROM scores s JOIN responses r "
        "ON r.rid = s.rid WHERE s.config_id = ? AND s.rid IN "
        "(SELECT rid FROM events WHERE kind = 'update')",
        (config_id,),
    ).fetchall():
        if int(cid) in codable and stored_hash != text_hash(text):
            pairs.append((int(rid), int(cid)))
    keys = ",".join(str(rid) for rid in {p[0] for p in pairs} or {-1})
    texts = dict(conn.execute(f"SELECT rid, text FROM responses WHERE rid IN ({keys})").fetchall())
    return [
        Pair(index.response_id(rid), texts[rid], index.code_at(cid))
        for rid, cid in sorted(set(pairs))
    ]


def drop_replaced(conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """Delete the stale scores that ``rows`` replace.

    ``rows`` come from :func:`study.scores.configurations.score_rows`.

    A stored score of the same pair under the same configuration from another code or
    text hash is removed, so that the new one is stored; an identical one is kept.
    """
    conn.executemany(
        "DELETE FROM scores WHERE config_id = ? AND rid = ? AND cid = ? "
        "AND (code_hash != ? OR text_hash != ?)",
        [(row[0], row[1], row[2], row[18], row[17]) for row in rows],
    )
