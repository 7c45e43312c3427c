"""Summaries of a study's decisions: progress counts and the input to screening.

Methods of :class:`study.store.Study` (a mixin, like :class:`study.queries.pairs.PairQueries`),
using only the study's public face (:class:`study.index.StudyView`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from study.codec import blob_to_floats
from study.index import StudyView
from study.queries.pairs import pair_scale

if TYPE_CHECKING:
    import pandas as pd

#: Columns of :meth:`StudySummaries.annotated_pairs`, in order.
ANNOTATED_COLUMNS = (
    "response_id",
    "code_id",
    "code_name",
    "coder",
    "value",
    "source",
    "decided_at",
    "applies",
    "scored",
    "pick",
    "pick_applies",
    "probs",
    "p_max",
    "p_applies",
    "norm_entropy",
    "entropy",
    "expected",
    "spread",
    "on_scale_mass",
    "off_scale",
    "truncated",
    "scale_values",
    "applies_from",
)


class StudySummaries:
    """Progress and screening input, as methods of :class:`study.store.Study`."""

    def progress(
        self: StudyView, config_id: int | None = None, *, coder: str | None = None
    ) -> dict[str, Any]:
        """Decided (and, with a configuration, scored) counts, overall and per code.

        Returns:
            ``{"total", "decided", "undecided", "human", "model", "scored", "by_code"}``
            where ``by_code`` maps each codable code id to the same keys (plus ``name``) for
            that code. ``scored`` is ``None`` without a configuration. A pair decided by
            several coders counts once in ``decided``; ``human``/``model`` count pairs with
            at least one decision of that source.
        """
        if config_id is not None:
            self.config_row(config_id)
        n = self.response_count()
        where, params = ("WHERE coder = ?", [coder]) if coder is not None else ("", [])
        with self.snapshot() as conn:
            decided = dict(
                conn.execute(
                    "SELECT cid, COUNT(*) FROM (SELECT DISTINCT rid, cid FROM annotations "
                    f"{where}) GROUP BY cid",
                    params,
                ).fetchall()
            )
            by_source: dict[tuple[int, str], int] = {
                (int(cid), str(source)): int(count)
                for cid, source, count in conn.execute(
                    "SELECT cid, source, COUNT(*) FROM (SELECT DISTINCT rid, cid, source FROM "
                    f"annotations {where}) GROUP BY cid, source",
                    params,
                )
            }
            scored: dict[int, int] = {}
            if config_id is not None:
                scored = dict(
                    conn.execute(
                        "SELECT cid, COUNT(*) FROM scores WHERE config_id = ? GROUP BY cid",
                        (config_id,),
                    ).fetchall()
                )
        by_code: dict[str, dict[str, Any]] = {}
        for cid in self.index.codable_keys:
            code = self.index.code_at(cid)
            d = int(decided.get(cid, 0))
            by_code[code.id] = {
                "name": code.name,
                "total": n,
                "decided": d,
                "undecided": n - d,
                "human": by_source.get((cid, "human"), 0),
                "model": by_source.get((cid, "model"), 0),
                "scored": None if config_id is None else int(scored.get(cid, 0)),
            }
        total = n * len(self.index.codable_keys)
        decided_total = sum(c["decided"] for c in by_code.values())
        return {
            "total": total,
            "decided": decided_total,
            "undecided": total - decided_total,
            "human": sum(c["human"] for c in by_code.values()),
            "model": sum(c["model"] for c in by_code.values()),
            "scored": None if config_id is None else sum(c["scored"] for c in by_code.values()),
            "by_code": by_code,
        }

    def annotated_pairs(
        self: StudyView, config_id: int | None, *, coder: str | None = None
    ) -> pd.DataFrame:
        """Every decision with the model's score of its pair: the input to screening.

        One row per (response, code, coder) decision, ordered by response id, code, coder.
        ``source`` tells a coder's own decision (``human``) from an accepted model pick
        (``model``); screening should normally keep only ``human`` rows, since an accepted
        pick is not independent evidence. Score columns are missing (``NaN``/``None``,
        ``scored`` False) for a pair not scored under ``config_id``.

        Columns: ``ANNOTATED_COLUMNS``. ``applies``/``pick_applies`` reduce the decision and
        the pick to applies / does not apply (value >= the scale's ``applies_from``);
        ``p_applies`` is the model's probability mass on those values; ``scale_values`` are
        the option values matching ``probs``.
        """
        import pandas as pd  # here, not at the top: the queue's pages must not pay for it

        if config_id is not None:
            self.config_row(config_id)
        where, params = ("WHERE a.coder = ?", [coder]) if coder is not None else ("", [])
        with self.snapshot() as conn:
            rows = conn.execute(
                "SELECT a.rid, a.cid, a.coder, a.value, a.source, a.decided_at, s.pick, s.probs, "
                "s.confidence, s.norm_entropy, s.entropy, s.expected, s.spread, s.on_scale_mass, "
                "s.off_scale, s.truncated FROM annotations a LEFT JOIN scores s "
                "ON s.config_id = ? AND s.rid = a.rid AND s.cid = a.cid "
                f"{where} ORDER BY a.rid, a.cid, a.coder",
                [config_id if config_id is not None else -1, *params],
            ).fetchall()
        records = []
        for (
            rid,
            cid,
            who,
            value,
            source,
            at,
            pick,
            probs,
            conf,
            nent,
            ent,
            exp,
            spread,
            mass,
            off,
            trunc,
        ) in rows:
            code = self.index.code_at(cid)
            scale = pair_scale(self, config_id, code)
            p = None if probs is None else blob_to_floats(probs)
            records.append(
                {
                    "response_id": self.index.response_id(rid),
                    "code_id": code.id,
                    "code_name": code.name,
                    "coder": who,
                    "value": int(value),
                    "source": source,
                    "decided_at": at,
                    "applies": bool(scale.applies(int(value))),
                    "scored": p is not None,
                    "pick": None if pick is None else int(pick),
                    "pick_applies": None if pick is None else bool(scale.applies(int(pick))),
                    "probs": p,
                    "p_max": conf,
                    "p_applies": None
                    if p is None
                    else float(
                        sum(
                            pk
                            for pk, v in zip(p, scale.values, strict=False)
                            if v >= scale.threshold
                        )
                    ),
                    "norm_entropy": nent,
                    "entropy": ent,
                    "expected": exp,
                    "spread": spread,
                    "on_scale_mass": mass,
                    "off_scale": None if off is None else bool(off),
                    "truncated": None if trunc is None else bool(trunc),
                    "scale_values": scale.values,
                    "applies_from": scale.threshold,
                }
            )
        return pd.DataFrame.from_records(records, columns=list(ANNOTATED_COLUMNS))
