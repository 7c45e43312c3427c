"""The headline figures of a study's screen, per code and pooled (:mod:`screening.headline`).

:func:`study_headlines` reads the decided, scored pairs the screen uses and returns one
:class:`~screening.headline.Headline` per code (by name) and one for all codes pooled
(key None): agreement, kappa with its interval, AUROC and the share of each pick, on the
code's own option labels.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from screening.headline import Headline, make_headline
from study.queries.page_rows import pair_scale
from study.store import Study


def study_headlines(
    study: Study, config_id: int, frame: pd.DataFrame, names: Mapping[str, str]
) -> dict[str | None, Headline]:
    """Headlines of the screened rows ``frame`` (one coder's decisions on scored pairs).

    Args:
        study: The open study (for each code's scale).
        config_id: The configuration the picks are from.
        frame: Rows of :meth:`study.queries.annotated_pairs`, scored, one coder.
        names: Code id -> name, in the order to report.

    Returns:
        Code name -> headline for every code with rows, and None -> the pooled one.
    """

    def one(name: str | None, rows: pd.DataFrame, labels: dict[float, str] | None) -> Headline:
        return make_headline(
            name,
            picks=rows["pick"].to_numpy(float),
            decisions=rows["value"].to_numpy(float),
            pick_applies=rows["pick_applies"].to_numpy(bool),
            decision_applies=rows["applies"].to_numpy(bool),
            confidence=rows["p_max"].to_numpy(float),
            labels=labels,
        )

    out: dict[str | None, Headline] = {}
    if not len(frame):
        out[None] = one(None, _empty(), None)
        return out
    scales = {}
    for code_id, name in names.items():
        rows = frame[frame["code_id"] == code_id]
        if not len(rows):
            continue
        scale = pair_scale(study, config_id, study.code(code_id))
        scales[code_id] = scale
        out[name] = one(name, rows, {float(o.value): o.label for o in scale.options})
    # Pooled on the options' own labels where every code shares one scale.
    shared = {s.options for s in scales.values()}
    pooled_labels = (
        {float(o.value): o.label for o in next(iter(shared))} if len(shared) == 1 else None
    )
    out[None] = one(None, frame, pooled_labels)
    return out


def _empty() -> pd.DataFrame:
    return pd.DataFrame({"pick": [], "value": [], "pick_applies": [], "applies": [], "p_max": []})
