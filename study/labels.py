"""Scoring configurations in words: one short label, the listing every error about a
configuration carries, and the check of a configuration id given on a command line.

Only the study's read face is used (:class:`study.view.StudyView`).
"""

from __future__ import annotations

import sqlite3
import weakref

from study.errors import StudyError
from study.rows import CONTEXTS, ConfigRow, Context
from study.view import StudyView

__all__ = [
    "active_context",
    "config_label",
    "config_listing",
    "off_scale_warning",
    "resolve_config",
]

#: The listing names at most this many configurations (the newest last).
LISTED = 12


def config_label(row: ConfigRow) -> str:
    """Short words for a configuration:
    ``"#2 SmolLM2-135M-Instruct (llama.cpp) · full · likert"``.

    The model's name is cut to its last path part (a Hugging Face id or a folder); the
    backend that ran it follows (:func:`backend_name`): one weights file run by
    transformers and by llama.cpp is two configurations, and reads as two.
    """
    name = row.model.name.rstrip("/").rsplit("/", 1)[-1] or row.model.name
    return f"#{row.id} {name} ({backend_name(row)}) · {row.context} · {row.template_id}"


def backend_name(row: ConfigRow) -> str:
    """The backend that scored a configuration, without its version: ``transformers``,
    ``llama.cpp``, ``openai``, ``fake`` (the version is in the ledger)."""
    return row.model.backend.split(" ", 1)[0] or "unknown backend"


def _config_ids(study: StudyView) -> list[int]:
    with study.snapshot() as conn:
        try:
            rows = conn.execute("SELECT id FROM configs ORDER BY id").fetchall()
        except sqlite3.DatabaseError:
            return []
    return [int(r[0]) for r in rows]


def config_listing(study: StudyView) -> str:
    """Every configuration of the study with its scored count, the active one marked.

    Returns:
        e.g. ``"configurations: #1 SmolLM2 · full · likert (150 of 150 scored, active);
        #2 ... (0 of 150 scored)"``, or ``"the study has no scoring configuration yet;
        score it first"``.
    """
    ids = _config_ids(study)
    if not ids:
        return "the study has no scoring configuration yet; score it first"
    active = study.scores.active_config_id()
    total = study.pair_count()
    parts = []
    for config_id in ids[-LISTED:]:
        mark = ", active" if config_id == active else ""
        label = config_label(study.scores.config_row(config_id))
        parts.append(f"{label} ({study.scores.scored_count(config_id)} of {total} scored{mark})")
    more = f" (and {len(ids) - LISTED} older)" if len(ids) > LISTED else ""
    return f"configurations{more}: " + "; ".join(parts)


def resolve_config(study: StudyView, config_id: int | str | None) -> int | None:
    """The configuration a command works on: ``"active"`` (or None) means the study's
    active one (None when nothing is scored yet), an integer must exist.

    Raises:
        StudyError: an unknown id or one that is not an integer, with the listing of
            the configurations that exist.
    """
    if config_id is None or config_id == "active":
        return study.scores.active_config_id()
    if isinstance(config_id, bool) or not isinstance(config_id, int):
        raise StudyError(
            f"a configuration id is an integer, not {config_id!r}; {config_listing(study)}",
            path=study.path,
        )
    if config_id not in _config_ids(study):
        raise StudyError(
            f"no scoring configuration {config_id} in this study; {config_listing(study)}",
            path=study.path,
        )
    return config_id


#: Above this share of scored pairs flagged off the scale, the study gets one warning.
OFF_SCALE_SHARE = 0.5

OFF_SCALE_ADVICE = (
    "the model is not answering in the scale's format: {off} of {n} scored pairs put most "
    "of their probability off the scale; try scoring without the chat template, "
    "another template or a larger model"
)
#: The same, for a configuration scored with plain completion prompts already.
OFF_SCALE_ADVICE_PLAIN = (
    "the model is not answering in the scale's format: {off} of {n} scored pairs put most "
    "of their probability off the scale under plain completion prompts (template {template}, "
    "the chat template left out); try a chat model with its chat template, another template or a "
    "larger model"
)


#: The last off-scale warning per study handle and configuration, with the score
#: generation it was read at: the app screens after every burst of decisions, and a scan
#: of 100,000 scores there made each decision wait for the study's connection.
_OFF_SCALE: weakref.WeakKeyDictionary[StudyView, dict[int, tuple[int, str | None]]] = (
    weakref.WeakKeyDictionary()
)


def off_scale_warning(study: StudyView, config_id: int | None) -> str | None:
    """One study-level warning when most scored pairs of a configuration fall off the
    scale (the model's probability mostly on tokens that are no option), else None.

    Read again only when the study handle has stored scores since the last call."""
    if config_id is None:
        return None
    known = _OFF_SCALE.setdefault(study, {})
    generation = study.scores.generation
    cached = known.get(config_id)
    if cached is not None and cached[0] == generation:
        return cached[1]
    warning = _read_off_scale(study, config_id)
    known[config_id] = (generation, warning)
    return warning


def _read_off_scale(study: StudyView, config_id: int) -> str | None:
    with study.snapshot() as conn:
        row = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(off_scale), 0) FROM scores WHERE config_id = ?",
            (config_id,),
        ).fetchone()
    n, off = int(row[0]), int(row[1])
    if n == 0 or off / n <= OFF_SCALE_SHARE:
        return None
    template = study.scores.config_row(config_id).template_id
    if not _chat_template(template):
        return OFF_SCALE_ADVICE_PLAIN.format(off=off, n=n, template=template)
    return OFF_SCALE_ADVICE.format(off=off, n=n)


def _chat_template(template_id: str) -> bool:
    """Whether a template renders through the model's chat template (an unknown id: not
    known to be plain, so the advice to try plain prompts stands)."""
    from scoring.templates import TEMPLATES

    known = TEMPLATES.get(template_id)
    return known.chat if known is not None else True


def active_context(study: StudyView, default: Context = "definition") -> Context:
    """The prompt context of the study's active configuration, else ``default``: what the
    app scores with when no ``--context`` is given, so that it opens on the scores made
    by ``codecurve score --context ...``."""
    active = study.scores.active_config_id()
    if active is None:
        return default
    context = study.scores.config_row(active).context
    for known in CONTEXTS:
        if context == known:
            return known
    return default
