"""The study file's SQLite schema and its forward migrations.

A study is one SQLite file (suffix ``.codecurve``), ``PRAGMA application_id`` set to
:data:`APPLICATION_ID` so that another SQLite file is recognised as not a study, and
``PRAGMA user_version`` the schema version. :func:`migrate` brings an older file up to
:data:`SCHEMA_VERSION` in one transaction; a newer file is refused.

Keys are small integers so that 200,000 scored pairs stay compact and the queue's orders
are index walks: ``responses.rid`` is the rank of the response id in natural order
(``r2`` before ``r10``), so ordering by ``rid`` is ordering by response id; ``codes.cid``
is the code's position in the codebook.

Tables (version 1):

``meta``         key/value text: the codebook snapshot (``Codebook.to_dict()`` as JSON),
                 its hash, the active configuration, creation details.
``responses``    rid, id (text, unique), text, attrs (JSON object), pos (file order).
``codes``        cid, id, name, codable: the codebook's codes in order.
``configs``      one row per scoring configuration (model identity, template id and
                 hash, context, scale JSON, strict, key = ``ScoreConfig.key()``).
``token_sets``   distinct ``Score.token_ids`` JSON, shared by the scores that use them.
``scores``       one row per (config, response, code): the curve (``surprisal`` and
                 ``probs`` as little-endian float64 BLOBs, so that ``inf`` survives),
                 its summaries, the pick's value, missing options (JSON, NULL when none),
                 prompt/text/code hashes and the truncation flag. The prompt text itself
                 is not stored: the template (id and hash), the code and the text
                 rebuild it, and ``prompt_hash`` checks the rebuild.
``annotations``  the current decision per (response, code, coder): value, source
                 (``human`` or ``model`` = the model's pick accepted), the event that
                 set it and when.
``notes``        the current note per (response, code, coder).
``events``       the append-only log: every decision, clearing, note, import, undo and
                 configuration, with the state it replaced (``prev_*``, including the
                 events that had set it), so that undo and the audit trail derive from
                 it. Rows are never updated or deleted.

Version 2 widens what the log and the decisions can say, for the audit sample, certified
delegation, study settings, codebook revisions and new waves of responses:

- ``events.kind`` also takes ``audit`` (a draw of the audit sample), ``delegate`` (a
  delegation applied: one event that the records it made point to through ``batch``),
  ``setting`` (a recorded study setting), ``codebook`` (a new codebook version),
  ``wave`` (responses added), ``update`` (a response's text replaced) and ``activate``
  (the active scoring configuration chosen);
- ``events.blind`` and ``annotations.blind``: 1 when the coder decided without seeing the
  model's answer (or the decision was imported, which is independent of the model);
- ``events.batch``: the event a record belongs to when one action made many (undone
  together);
- ``events.codebook_version`` and ``annotations.codebook_version``: the codebook version
  under which a decision was made (NULL: the study's first codebook);
- ``annotations.source`` also takes ``delegated``: the model's pick recorded by a
  certified delegation.

Version 3 adds ``memos``: a coder's note on a whole response (not one code), set by a
``note`` event whose ``cid`` is NULL.

Version 4 adds codebook iteration (:mod:`study.iteration.revisions`, :mod:`study.iteration._waves`):

- ``codebook_versions``: every codebook the study has had (version 1: the one it was
  created with), its JSON snapshot, hash, time, source file and the changes from the
  version before (JSON); ``meta.codebook`` stays the current version's snapshot;
- ``codes.archived``: 1 for a code a revision removed (its decisions are kept, out of the
  queue, still exported);
- ``waves`` and ``responses.wave``: each batch of responses added (wave 1: the ones the
  study was created with), its source file, time and count;
- triggers stamp ``events.codebook_version`` (decisions, clearings, imports) and
  ``annotations.codebook_version`` with the version current when the decision was made.

Version 5 adds learning from the coder (:mod:`study.scores.learned`):

- ``features``: per (config, response, code), what the model computed for the pair in
  the scoring pass (a float16 vector, ``configs.feature_layout`` says what), with the
  text and code hashes of the score it came with; a rowid table, since its rows (up to
  2 KB) are too wide for ``WITHOUT ROWID``, and apart from ``scores`` so that the queue's
  reads never touch it;
- ``configs.feature_layout``: the layout of the configuration's features (NULL: none);
- ``learned``: per learned configuration and code, what its curve was fitted on and
  with: the base configuration, the coder, the codebook version, the decisions of each
  value, the regularisation chosen, the cross-validated AUROC and the parameters' hash.

Version 6 adds ``segments``: the spans of a response's text (start and end, Unicode code
points) that came with a coder's decision, as a QDA program codes segments. Each names
the event of the decision it came with: a segment belongs to the pair's current decision
only while ``annotations.event_id`` is that event (a decision made again leaves it
behind, an undo back to it brings it back), so nothing ever edits or deletes one.

Version 7 adds ``evidence`` (:mod:`study.scores.evidence`): per (config, response, code),
the sentences of the response and what leaving each out did to the pair's P(applies)
and expected value (JSON), with the text and code hashes it was measured on, so that a
changed text or definition makes it invalid (it is read only while both match the
study's current ones). Derived data, not a record: computing it again replaces it. The
``effects`` of a learned code's evidence is an object ``{"fit": params_hash, "sentences":
[...]}`` (the bare list otherwise), so that a refit leaves it behind without a column of
its own.

Version 8 adds ``scoped_pairs`` (:mod:`study.file.scoped_pairs`): ``(cid, rid)`` of every
pair of a code scoped to survey questions (:mod:`study.scope`), so that the queue's SQL
tests such a pair with one index seek. A copy of what the codebook and the responses'
question column say, written in the transaction of every change to either; the upgrade
fills it from the study's current codebook.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from study.file import scoped_pairs

#: ``PRAGMA application_id`` of a study file ("ccrv").
APPLICATION_ID = 0x63637276

#: The schema version this code reads and writes.
SCHEMA_VERSION = 8

_V1 = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE responses (
    rid   INTEGER PRIMARY KEY,
    id    TEXT NOT NULL UNIQUE,
    text  TEXT NOT NULL,
    attrs TEXT NOT NULL DEFAULT '{}',
    pos   INTEGER NOT NULL
);

CREATE TABLE codes (
    cid     INTEGER PRIMARY KEY,
    id      TEXT NOT NULL UNIQUE,
    name    TEXT NOT NULL,
    codable INTEGER NOT NULL
);

CREATE TABLE configs (
    id             INTEGER PRIMARY KEY,
    key            TEXT NOT NULL UNIQUE,
    model_name     TEXT NOT NULL,
    model_revision TEXT NOT NULL,
    model_dtype    TEXT NOT NULL,
    model_device   TEXT NOT NULL,
    model_backend  TEXT NOT NULL,
    template_id    TEXT NOT NULL,
    template_hash  TEXT NOT NULL,
    context        TEXT NOT NULL,
    scale          TEXT NOT NULL,
    strict         INTEGER NOT NULL,
    created_at     TEXT NOT NULL
);

CREATE TABLE token_sets (
    id        INTEGER PRIMARY KEY,
    token_ids TEXT NOT NULL UNIQUE
);

CREATE TABLE scores (
    config_id     INTEGER NOT NULL REFERENCES configs(id),
    rid           INTEGER NOT NULL REFERENCES responses(rid),
    cid           INTEGER NOT NULL REFERENCES codes(cid),
    surprisal     BLOB NOT NULL,
    probs         BLOB NOT NULL,
    on_scale_mass REAL NOT NULL,
    entropy       REAL NOT NULL,
    norm_entropy  REAL NOT NULL,
    mode          INTEGER NOT NULL,
    pick          INTEGER NOT NULL,
    expected      REAL NOT NULL,
    spread        REAL NOT NULL,
    confidence    REAL NOT NULL,
    off_scale     INTEGER NOT NULL,
    token_set     INTEGER REFERENCES token_sets(id),
    missing       TEXT,
    prompt_hash   TEXT NOT NULL,
    text_hash     TEXT NOT NULL,
    code_hash     TEXT NOT NULL,
    truncated     INTEGER NOT NULL,
    scored_at     TEXT NOT NULL,
    PRIMARY KEY (config_id, rid, cid)
) WITHOUT ROWID;

-- The queue's orders: each is an index walk that stops after one page.
CREATE INDEX scores_by_entropy ON scores (config_id, norm_entropy DESC, rid, cid);
CREATE INDEX scores_by_code_entropy ON scores (config_id, cid, norm_entropy DESC, rid);
CREATE INDEX scores_by_confidence ON scores (config_id, confidence, rid, cid);
CREATE INDEX scores_by_pick ON scores (config_id, pick DESC, confidence DESC, rid, cid);

CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN
                    ('create', 'config', 'record', 'clear', 'note', 'import', 'undo')),
    coder       TEXT,
    rid         INTEGER REFERENCES responses(rid),
    cid         INTEGER REFERENCES codes(cid),
    value       INTEGER,
    source      TEXT,
    note        TEXT,
    config_id   INTEGER REFERENCES configs(id),
    sets_note   INTEGER NOT NULL DEFAULT 0,
    prev_value  INTEGER,
    prev_source TEXT,
    prev_event  INTEGER REFERENCES events(id),
    prev_note   TEXT,
    prev_note_event INTEGER REFERENCES events(id),
    undoes      INTEGER UNIQUE REFERENCES events(id),
    detail      TEXT
);
CREATE INDEX events_by_coder ON events (coder, id);
CREATE INDEX events_by_pair ON events (rid, cid, id);

CREATE TABLE annotations (
    rid        INTEGER NOT NULL REFERENCES responses(rid),
    cid        INTEGER NOT NULL REFERENCES codes(cid),
    coder      TEXT NOT NULL,
    value      INTEGER NOT NULL,
    source     TEXT NOT NULL CHECK (source IN ('human', 'model')),
    config_id  INTEGER REFERENCES configs(id),
    event_id   INTEGER NOT NULL REFERENCES events(id),
    decided_at TEXT NOT NULL,
    PRIMARY KEY (rid, cid, coder)
) WITHOUT ROWID;
CREATE INDEX annotations_by_code ON annotations (cid, source);
CREATE INDEX annotations_by_coder ON annotations (coder, rid, cid);

CREATE TABLE notes (
    rid      INTEGER NOT NULL REFERENCES responses(rid),
    cid      INTEGER NOT NULL REFERENCES codes(cid),
    coder    TEXT NOT NULL,
    note     TEXT NOT NULL,
    event_id INTEGER NOT NULL REFERENCES events(id),
    PRIMARY KEY (rid, cid, coder)
) WITHOUT ROWID;
"""

#: ``MIGRATIONS[v]`` turns a version ``v - 1`` file into version ``v``.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {}


def _to_v1(conn: sqlite3.Connection) -> None:
    for statement in _V1.split(";\n"):
        if statement.strip():
            conn.execute(statement)


MIGRATIONS[1] = _to_v1

#: The kinds of event the log holds, and the sources of a decision (checked by SQLite).
EVENT_KINDS = (
    "create",
    "config",
    "record",
    "clear",
    "note",
    "import",
    "undo",
    "audit",
    "delegate",
    "setting",
    "codebook",
    "wave",
    "update",
    "activate",
)
DECISION_SOURCES = ("human", "model", "delegated")


def _listed(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{value}'" for value in values)


_V2_EVENTS = f"""
CREATE TABLE events_v2 (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ({_listed(EVENT_KINDS)})),
    coder       TEXT,
    rid         INTEGER REFERENCES responses(rid),
    cid         INTEGER REFERENCES codes(cid),
    value       INTEGER,
    source      TEXT,
    note        TEXT,
    config_id   INTEGER REFERENCES configs(id),
    sets_note   INTEGER NOT NULL DEFAULT 0,
    prev_value  INTEGER,
    prev_source TEXT,
    prev_event  INTEGER REFERENCES events(id),
    prev_note   TEXT,
    prev_note_event INTEGER REFERENCES events(id),
    undoes      INTEGER UNIQUE REFERENCES events(id),
    detail      TEXT,
    blind       INTEGER NOT NULL DEFAULT 0,
    batch       INTEGER REFERENCES events(id),
    codebook_version INTEGER
)"""

_V2_ANNOTATIONS = f"""
CREATE TABLE annotations_v2 (
    rid        INTEGER NOT NULL REFERENCES responses(rid),
    cid        INTEGER NOT NULL REFERENCES codes(cid),
    coder      TEXT NOT NULL,
    value      INTEGER NOT NULL,
    source     TEXT NOT NULL CHECK (source IN ({_listed(DECISION_SOURCES)})),
    config_id  INTEGER REFERENCES configs(id),
    event_id   INTEGER NOT NULL REFERENCES events(id),
    decided_at TEXT NOT NULL,
    blind      INTEGER NOT NULL DEFAULT 0,
    codebook_version INTEGER,
    PRIMARY KEY (rid, cid, coder)
) WITHOUT ROWID"""

_V1_EVENT_COLUMNS = (
    "id, at, kind, coder, rid, cid, value, source, note, config_id, sets_note, prev_value, "
    "prev_source, prev_event, prev_note, prev_note_event, undoes, detail"
)
_V1_ANNOTATION_COLUMNS = "rid, cid, coder, value, source, config_id, event_id, decided_at"


def _rebuild(conn: sqlite3.Connection, table: str, create: str, columns: str) -> None:
    """Replace ``table`` by the one ``create`` makes (named ``{table}_v2``), rows kept.

    SQLite cannot change a CHECK constraint in place; this is its documented way (create,
    copy, drop, rename), run with foreign keys off by :func:`migrate` and checked after.
    """
    conn.execute(create)
    conn.execute(f"INSERT INTO {table}_v2 ({columns}) SELECT {columns} FROM {table}")
    conn.execute(f"DROP TABLE {table}")
    conn.execute(f"ALTER TABLE {table}_v2 RENAME TO {table}")


def _to_v2(conn: sqlite3.Connection) -> None:
    _rebuild(conn, "events", _V2_EVENTS, _V1_EVENT_COLUMNS)
    conn.execute("CREATE INDEX events_by_coder ON events (coder, id)")
    conn.execute("CREATE INDEX events_by_pair ON events (rid, cid, id)")
    conn.execute("CREATE INDEX events_by_batch ON events (batch) WHERE batch IS NOT NULL")
    _rebuild(conn, "annotations", _V2_ANNOTATIONS, _V1_ANNOTATION_COLUMNS)
    conn.execute("CREATE INDEX annotations_by_code ON annotations (cid, source)")
    conn.execute("CREATE INDEX annotations_by_coder ON annotations (coder, rid, cid)")


MIGRATIONS[2] = _to_v2


def _memos_ddl(conn: sqlite3.Connection) -> None:
    """Version 3: ``memos``, the current note per (response, coder) on a whole response.

    A memo is set and undone by ``note`` events whose ``cid`` is NULL (the event's
    ``prev_note``/``prev_note_event`` hold the memo it replaced, as for a pair's note).
    """
    conn.execute(
        "CREATE TABLE memos ("
        "rid INTEGER NOT NULL REFERENCES responses(rid), "
        "coder TEXT NOT NULL, "
        "note TEXT NOT NULL, "
        "event_id INTEGER NOT NULL REFERENCES events(id), "
        "PRIMARY KEY (rid, coder)) WITHOUT ROWID"
    )


MIGRATIONS[3] = _memos_ddl


#: The codebook version current in the study (1: the codebook it was created with).
CURRENT_CODEBOOK_VERSION = "(SELECT COALESCE(MAX(version), 1) FROM codebook_versions)"

_V4 = f"""
CREATE TABLE codebook_versions (
    version  INTEGER PRIMARY KEY,
    codebook TEXT NOT NULL,
    hash     TEXT NOT NULL,
    at       TEXT NOT NULL,
    source   TEXT NOT NULL DEFAULT '',
    changes  TEXT NOT NULL DEFAULT '[]',
    event_id INTEGER REFERENCES events(id)
);
CREATE TABLE waves (
    wave     INTEGER PRIMARY KEY,
    source   TEXT NOT NULL DEFAULT '',
    at       TEXT NOT NULL,
    count    INTEGER NOT NULL,
    event_id INTEGER REFERENCES events(id)
);
ALTER TABLE codes ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
ALTER TABLE responses ADD COLUMN wave INTEGER NOT NULL DEFAULT 1;
CREATE TRIGGER events_codebook_version AFTER INSERT ON events
    WHEN NEW.codebook_version IS NULL AND NEW.kind IN ('record', 'import', 'clear')
    BEGIN UPDATE events SET codebook_version = {CURRENT_CODEBOOK_VERSION} WHERE id = NEW.id; END;
CREATE TRIGGER annotations_codebook_version AFTER INSERT ON annotations
    WHEN NEW.codebook_version IS NULL
    BEGIN UPDATE annotations SET codebook_version = {CURRENT_CODEBOOK_VERSION}
    WHERE rid = NEW.rid AND cid = NEW.cid AND coder = NEW.coder; END;
CREATE TRIGGER annotations_codebook_version_update AFTER UPDATE OF event_id ON annotations
    BEGIN UPDATE annotations SET codebook_version = {CURRENT_CODEBOOK_VERSION}
    WHERE rid = NEW.rid AND cid = NEW.cid AND coder = NEW.coder; END
"""


_SEED_V4 = (
    "INSERT INTO codebook_versions (version, codebook, hash, at, source) "
    "SELECT 1, c.value, COALESCE(h.value, ''), COALESCE(t.value, ''), 'created' "
    "FROM meta c LEFT JOIN meta h ON h.key = 'codebook_hash' "
    "LEFT JOIN meta t ON t.key = 'created_at' WHERE c.key = 'codebook' "
    "AND NOT EXISTS (SELECT 1 FROM codebook_versions)",
    "INSERT INTO waves (wave, source, at, count) "
    "SELECT 1, COALESCE((SELECT value FROM meta WHERE key = 'responses_source'), ''), "
    "COALESCE((SELECT value FROM meta WHERE key = 'created_at'), ''), "
    "(SELECT COUNT(*) FROM responses) WHERE NOT EXISTS (SELECT 1 FROM waves) "
    "AND EXISTS (SELECT 1 FROM meta WHERE key = 'codebook')",
)


def seed_iteration(conn: sqlite3.Connection) -> None:
    """Record a study's first codebook version and first wave (once its meta is written)."""
    exists = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'codebook_versions'"
    if conn.execute(exists).fetchone() is None:
        return  # a file built at an older schema (tests of the upgrade do this)
    for statement in _SEED_V4:
        conn.execute(statement)


def _to_v4(conn: sqlite3.Connection) -> None:
    """Codebook versions, waves of responses, archived codes (see the module docstring)."""
    for statement in _V4.split(";\n"):
        if statement.strip():
            conn.execute(statement)
    seed_iteration(conn)


MIGRATIONS[4] = _to_v4

_V5 = """
ALTER TABLE configs ADD COLUMN feature_layout TEXT;
CREATE TABLE features (
    config_id INTEGER NOT NULL REFERENCES configs(id),
    cid       INTEGER NOT NULL REFERENCES codes(cid),
    rid       INTEGER NOT NULL REFERENCES responses(rid),
    text_hash TEXT NOT NULL,
    code_hash TEXT NOT NULL,
    vec       BLOB NOT NULL
);
CREATE UNIQUE INDEX features_by_pair ON features (config_id, cid, rid);
CREATE TABLE learned (
    config_id        INTEGER NOT NULL REFERENCES configs(id),
    cid              INTEGER NOT NULL REFERENCES codes(cid),
    base_config_id   INTEGER NOT NULL REFERENCES configs(id),
    coder            TEXT NOT NULL,
    codebook_version INTEGER NOT NULL,
    counts           TEXT NOT NULL,
    inputs           TEXT NOT NULL,
    penalty          REAL,
    cv_auroc         REAL,
    params_hash      TEXT NOT NULL,
    fitted_at        TEXT NOT NULL,
    event_id         INTEGER REFERENCES events(id),
    PRIMARY KEY (config_id, cid)
) WITHOUT ROWID
"""


def _to_v5(conn: sqlite3.Connection) -> None:
    """Features of scored pairs and learned configurations (see the module docstring)."""
    for statement in _V5.split(";\n"):
        if statement.strip():
            conn.execute(statement)


MIGRATIONS[5] = _to_v5

_V6 = """
CREATE TABLE segments (
    rid      INTEGER NOT NULL REFERENCES responses(rid),
    cid      INTEGER NOT NULL REFERENCES codes(cid),
    coder    TEXT NOT NULL,
    event_id INTEGER NOT NULL REFERENCES events(id),
    start    INTEGER NOT NULL CHECK (start >= 0),
    "end"    INTEGER NOT NULL CHECK ("end" >= start),
    PRIMARY KEY (rid, cid, coder, event_id, start, "end")
) WITHOUT ROWID
"""


def _to_v6(conn: sqlite3.Connection) -> None:
    """Segments of decisions (see the module docstring)."""
    conn.execute(_V6)


MIGRATIONS[6] = _to_v6

_V7 = """
CREATE TABLE evidence (
    config_id   INTEGER NOT NULL REFERENCES configs(id),
    cid         INTEGER NOT NULL REFERENCES codes(cid),
    rid         INTEGER NOT NULL REFERENCES responses(rid),
    text_hash   TEXT NOT NULL,
    code_hash   TEXT NOT NULL,
    applies     REAL NOT NULL,
    expected    REAL,
    sentences   INTEGER NOT NULL CHECK (sentences >= 0),
    effects     TEXT NOT NULL,
    computed_at TEXT NOT NULL,
    PRIMARY KEY (config_id, cid, rid)
) WITHOUT ROWID
"""


def _to_v7(conn: sqlite3.Connection) -> None:
    """Evidence of scored pairs (see the module docstring)."""
    conn.execute(_V7)


MIGRATIONS[7] = _to_v7

_V8 = """
CREATE TABLE scoped_pairs (
    cid INTEGER NOT NULL REFERENCES codes(cid),
    rid INTEGER NOT NULL REFERENCES responses(rid),
    PRIMARY KEY (cid, rid)
) WITHOUT ROWID
"""


def _to_v8(conn: sqlite3.Connection) -> None:
    """The pairs of scoped codes (see the module docstring), filled from the study's
    current codebook and responses (none yet when a new study is being built)."""
    conn.execute(_V8)
    scoped_pairs.sync(conn, scoped_pairs.file_scope(conn))


MIGRATIONS[8] = _to_v8


#: ``durability`` choices of :func:`configure` and ``PRAGMA synchronous`` for each.
DURABILITY = {"full": "FULL", "normal": "NORMAL"}


#: How long a write waits for another coder's transaction before giving up (each is a few
#: milliseconds; a large import or a revision may take longer).
BUSY_TIMEOUT_MS = 10_000


def configure(
    conn: sqlite3.Connection, *, durability: str = "normal", read_only: bool = False
) -> None:
    """Per-connection settings.

    WAL lets readers (an export, a second window) run while writers work, and writers
    (several coders at once) queue for the write lock for up to :data:`BUSY_TIMEOUT_MS`.

    Durability of a committed decision (every decision is its own transaction,
    committed before the call returns):

    ``normal`` (default, ``synchronous=NORMAL``): the commit is in the WAL when the call
    returns, so a killed or crashed *process* loses nothing (the crash test kills a
    writer with SIGKILL at random moments). The WAL is fsynced by the checkpoint that a
    writer runs every second in the background (:mod:`study.file.checkpoint`), so a power
    cut or OS crash loses at most about the last second of decisions; the file is never
    corrupted. A decision costs about 0.2 ms (p99 about 5 ms on the benchmark's disk).

    ``full`` (``synchronous=FULL``): every commit is fsynced before the call returns, so
    even a power cut loses nothing shown as saved. The cost is one fsync per decision:
    0.1-1 ms on a local SSD, but about 4 ms median and 12-15 ms p99 on the benchmark's
    virtual disk, above the 10 ms p99 target, which is why it is not the default.
    """
    try:
        synchronous = DURABILITY[durability]
    except KeyError:
        raise ValueError(f"durability must be one of {', '.join(DURABILITY)}") from None
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if not read_only:  # a reader takes the file as it is
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            # e.g. a file system without shared memory; rollback journal is still durable.
            conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA cache_size = -32768")  # 32 MiB: a whole 200k-pair study's indexes


def journal_mode(conn: sqlite3.Connection) -> str:
    return str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()


def version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def application_id(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA application_id").fetchone()[0])


def initialise(conn: sqlite3.Connection) -> None:
    """Mark an empty database as a study and create the current schema (one transaction)."""
    _run_migrations(conn, range(1, SCHEMA_VERSION + 1), first=True)


def _run_migrations(conn: sqlite3.Connection, targets: range, *, first: bool = False) -> None:
    """Apply ``targets`` in one transaction with foreign keys off, checked before commit.

    A migration may rebuild a table that others reference (SQLite's documented way to
    change a constraint), which foreign key enforcement would forbid mid-way; the
    ``foreign_key_check`` before the commit makes sure no reference was broken.
    """
    enforced = bool(conn.execute("PRAGMA foreign_keys").fetchone()[0])
    conn.execute("PRAGMA foreign_keys = OFF")  # a no-op inside a transaction: set it first
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if first:
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            for target in targets:
                MIGRATIONS[target](conn)
            broken = conn.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise sqlite3.IntegrityError(f"migration broke {len(broken)} references")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            # SQLite may have rolled back already (a full disk does): a second ROLLBACK
            # would raise and hide the reason.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    finally:
        if enforced:
            conn.execute("PRAGMA foreign_keys = ON")


def migrate(conn: sqlite3.Connection) -> list[int]:
    """Apply the pending forward migrations in one transaction; return the versions applied.

    The caller checks first that the file is a study no newer than :data:`SCHEMA_VERSION`.
    """
    current = version(conn)
    applied = range(current + 1, SCHEMA_VERSION + 1)
    if applied:
        _run_migrations(conn, applied)
    return list(applied)
