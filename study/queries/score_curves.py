"""Read-side SQL for a study's stored curves: each code's entropies, a few whole curves.

A report draws the distribution of the model's hesitation per code and the surprisal
curves of a few responses; these two reads give it that without building the long
export (one float per pair, then only the chosen pairs' curves).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from study.codec import blob_to_floats
from study.handle import StudyHandle


@dataclass(frozen=True)
class CodeEntropies:
    """One code's scored pairs under a configuration.

    Attributes:
        code_id: The code.
        response_ids: The responses scored, in the study's order.
        norm_entropy: Their normalised entropy (H / ln K), in the same order.
    """

    code_id: str
    response_ids: tuple[str, ...]
    norm_entropy: npt.NDArray[np.float64]


def code_entropies(study: StudyHandle, config_id: int) -> dict[str, CodeEntropies]:
    """Per codable code with scores under ``config_id``, its pairs' normalised entropy."""
    index = study.index
    codable = set(index.codable_keys)
    with study.snapshot() as conn:
        rows = conn.execute(
            "SELECT cid, rid, norm_entropy FROM scores WHERE config_id = ? ORDER BY cid, rid",
            (config_id,),
        ).fetchall()
    grouped: dict[int, tuple[list[int], list[float]]] = {}
    for cid, rid, entropy in rows:
        if cid in codable:
            keys, values = grouped.setdefault(cid, ([], []))
            keys.append(rid)
            values.append(entropy)
    ids = index.response_ids_by_key()
    out = {}
    for code in index.codable_codes():
        found = grouped.get(index.code_key(code.id))
        if found is None:
            continue
        out[code.id] = CodeEntropies(
            code_id=code.id,
            response_ids=tuple(ids[r] for r in found[0]),
            norm_entropy=np.asarray(found[1], dtype=float),
        )
    return out


def surprisal_curves(
    study: StudyHandle, config_id: int, pairs: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], tuple[float, ...]]:
    """The stored surprisal curve (one value per scale option) of each (response, code)."""
    index = study.index
    out: dict[tuple[str, str], tuple[float, ...]] = {}
    with study.snapshot() as conn:
        for response_id, code_id in pairs:
            row = conn.execute(
                "SELECT surprisal FROM scores WHERE config_id = ? AND rid = ? AND cid = ?",
                (config_id, index.response_key(response_id), index.code_key(code_id)),
            ).fetchone()
            if row is not None:
                out[(response_id, code_id)] = blob_to_floats(row[0])
    return out
