"""What a study still has to code, per code: the ceiling of every "code N more".

On the blind audit sample, a code can still gain every response of the audit order not
yet coded blind (the sample can be extended up to the responses it was drawn from),
less those decided while seeing the model (they can never be blind). On all decisions,
the pairs of the code the coder has not decided. No advice may ask for more than this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from study.store import Study


def remaining_pairs(
    study: Study,
    decisions: pd.DataFrame,
    *,
    coder: str | None,
    code_ids: Sequence[str],
    names: Mapping[str, str],
    audit: bool,
) -> dict[str, int]:
    """Code name -> pairs left to code for the screen.

    Args:
        study: The open study.
        decisions: The coder's decisions (:meth:`study.queries.annotated_pairs` rows),
            every source; delegated ones do not count as coded.
        coder: Whose decisions.
        code_ids: The codes screened.
        names: Code id -> name.
        audit: Count what the blind audit can still gain rather than undecided pairs.
    """
    out: dict[str, int] = {}
    sample = study.audit.sample() if audit else None
    if sample is not None:
        progress = study.audit.progress(coder=coder)
        for code_id in code_ids:
            p = progress.get(code_id)
            if p is None:
                continue
            # A code scoped to survey questions: only the answers to them are left.
            left = sample.population_of(code_id) - p.progress.coded - p.unblind
            out[names.get(code_id, code_id)] = max(0, left)
        return out
    scope = study.index.scope
    kept = decisions[decisions["source"] != "delegated"] if len(decisions) else decisions
    for code_id in code_ids:
        done = kept.loc[kept["code_id"] == code_id, "response_id"].nunique() if len(kept) else 0
        total = scope.count(study.index.code_key(code_id))
        out[names.get(code_id, code_id)] = max(0, total - int(done))
    return out
