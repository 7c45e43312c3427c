"""What the audit, the screen and the delegation lack after a new wave or a revision.

``codecurve add`` and ``codecurve codebook --revise`` print these lines, so that a user
learns at once which evidence no longer covers the study, and what to do about it. Each
line is a :class:`~codebooks.errors.Note`: plain words, and the step to take as its
remedy, which the command line prints as the command (with the study's path and the
options that exist).
"""

from __future__ import annotations

from collections.abc import Sequence

from codebooks.diff import CodebookDiff
from codebooks.errors import Note, Remedy
from study.errors import DRAW_AUDIT, SCORE
from study.store import Study


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def after_wave(study: Study, *, added: int, wave: int) -> list[Note]:
    """Lines after ``added`` responses came in as ``wave``."""
    if not added:
        return []
    lines: list[Note] = []
    config = study.scores.active_config_id()
    if config is not None:
        pending = len(study.scores.pending_pairs(config))
        if pending:
            lines.append(
                Note(
                    f"{_plural(pending, 'pair')} to score under the active configuration",
                    remedy=SCORE,
                )
            )
    sample = study.audit.sample()
    if sample is None:
        lines.append(
            Note(
                f"No audit sample yet: draw one over all {study.response_count():,} responses.",
                remedy=DRAW_AUDIT,
            )
        )
        return lines
    lines.append(
        Note(
            f"The new wave {wave} of {_plural(added, 'response')} is not in the audit sample "
            f"(drawn from the {sample.population:,} responses before it): the screen and any "
            "delegation describe those responses only, and delegating leaves the new "
            "wave's pairs for review; code them yourself (the audit cannot be extended over "
            "responses added after its draw)."
        )
    )
    return lines


def after_revision(study: Study, diff: CodebookDiff) -> list[Note]:
    """Lines after a codebook revision recorded ``diff``."""
    lines: list[Note] = []
    sample = study.audit.sample()
    # Neither a colour nor the questions a code applies to change what a prompt shows.
    changed = [c for c in diff.of_kind("changed") if set(c.fields) - {"color", "questions"}]
    rescoped = [c for c in diff.of_kind("changed") if "questions" in c.fields]
    if rescoped:
        names = _names(study, [c.code_id for c in rescoped])
        lines.append(
            Note(
                f"{names} now apply to other questions: pairs off their questions leave the "
                "queue, the counts, the screen and the exports; decisions on them stay in the "
                "file, uncounted, and count again if a later revision gives the questions back."
            )
        )
    if changed:
        names = _names(study, [c.code_id for c in changed])
        lines.append(
            Note(
                f"Changed definition of {names}: their scores are stale until scored again, "
                "and delegating leaves their pairs out until then.",
                remedy=SCORE,
            )
        )
        if sample is not None:
            code = names if len(changed) == 1 else "NAME"
            lines.append(
                Note(
                    "Their blind audit decisions were made under the earlier definition: "
                    f"check that they still hold before the screen of {names} is read.",
                    remedy=Remedy("screen", "read the screen of a changed code", {"code": code}),
                )
            )
    added = [c.code_id for c in diff.of_kind("added")]
    if added and sample is not None:
        size = max(sample.sizes.values(), default=0) or min(150, sample.population)
        for code_id in added:
            name = _names(study, [code_id])
            lines.append(
                Note(
                    f"New code {name} has no audit pairs: extend the audit sample by {size} "
                    "responses for it, then code them blind; until then it has no screen on "
                    "the audit and no delegation.",
                    remedy=Remedy(
                        "audit",
                        f"extend the audit sample for {name}",
                        {"extend": size, "code": name},
                    ),
                )
            )
    return lines


def _names(study: Study, code_ids: Sequence[str]) -> str:
    out = []
    for code_id in code_ids:
        try:
            out.append(study.code(code_id).name)
        except (KeyError, ValueError):
            out.append(code_id)
    return ", ".join(out)
