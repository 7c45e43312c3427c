"""What the audit, the screen and the delegation lack after a new wave or a revision.

``codecurve add`` and ``codecurve codebook --revise`` print these lines, so that a user
learns at once which evidence no longer covers the study, and what to run about it
(with the commands and flags that exist).
"""

from __future__ import annotations

from collections.abc import Sequence

from codebooks.diff import CodebookDiff
from study.store import Study


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def after_wave(study: Study, *, added: int, wave: int, shown: str) -> list[str]:
    """Lines after ``added`` responses came in as ``wave`` (``shown``: the study's path)."""
    if not added:
        return []
    lines = []
    config = study.scores.active_config_id()
    if config is not None:
        pending = len(study.scores.pending_pairs(config))
        if pending:
            lines.append(
                f"{_plural(pending, 'pair')} to score under the active configuration: "
                f"codecurve score {shown}"
            )
    sample = study.audit.sample()
    if sample is None:
        lines.append(
            f"No audit sample yet: codecurve audit {shown} --draw draws one over all "
            f"{study.response_count():,} responses."
        )
        return lines
    lines.append(
        f"The new wave {wave} of {_plural(added, 'response')} is not in the audit sample "
        f"(drawn from the {sample.population:,} responses before it): the screen and any "
        "delegation describe those responses only, and codecurve delegate leaves the new "
        "wave's pairs for review; code them yourself (the audit cannot be extended over "
        "responses added after its draw)."
    )
    return lines


def after_revision(study: Study, diff: CodebookDiff, *, shown: str) -> list[str]:
    """Lines after a codebook revision recorded ``diff`` (``shown``: the study's path)."""
    lines = []
    sample = study.audit.sample()
    # Neither a colour nor the questions a code applies to change what a prompt shows.
    changed = [c for c in diff.of_kind("changed") if set(c.fields) - {"color", "questions"}]
    rescoped = [c for c in diff.of_kind("changed") if "questions" in c.fields]
    if rescoped:
        names = _names(study, [c.code_id for c in rescoped])
        lines.append(
            f"{names} now apply to other questions: pairs off their questions leave the "
            "queue, the counts, the screen and the exports; decisions on them stay in the "
            "file, uncounted, and count again if a later revision gives the questions back."
        )
    if changed:
        names = _names(study, [c.code_id for c in changed])
        lines.append(
            f"Changed definition of {names}: their scores are stale until scored again "
            f"(codecurve score {shown}), and codecurve delegate leaves their pairs out "
            "until then."
        )
        if sample is not None:
            lines.append(
                f"Their blind audit decisions were made under the earlier definition: check "
                f"that they still hold before the screen of {names} is read (codecurve "
                f"screen {shown} --code NAME)."
            )
    added = [c.code_id for c in diff.of_kind("added")]
    if added and sample is not None:
        size = max(sample.sizes.values(), default=0) or min(150, sample.population)
        for code_id in added:
            name = _names(study, [code_id])
            lines.append(
                f"New code {name} has no audit pairs: codecurve audit {shown} --extend "
                f"{size} --code {name}, then code them blind; until then it has no screen "
                "on the audit and no delegation."
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
