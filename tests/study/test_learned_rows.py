"""The rows a rescoring writes: each pair's own curve, an update's least sure first."""

from __future__ import annotations

import numpy as np

from scoring.curves import curve_from_logprobs, curve_table
from study.scores.learned import CodeScores, learned_rows


def _scores(n: int, seed: int = 0) -> CodeScores:
    rng = np.random.default_rng(seed)
    return CodeScores(
        rids=np.arange(10, 10 + n, dtype=np.int64),
        logprobs=np.log(rng.dirichlet([1.0, 1.0, 1.0], size=n)),
        text_hash=tuple(f"t{i}" for i in range(n)),
        code_hash=("c",) * n,
        prompt_hash=tuple(f"p{i}" for i in range(n)),
        truncated=np.zeros(n, dtype=bool),
        token_set=(None,) * n,
        features=None,
        missing_features=0,
    )


def test_curve_table_take_gives_the_rows_in_the_order_asked() -> None:
    lp = np.log(np.random.default_rng(1).dirichlet([1.0, 1.0, 1.0, 1.0], size=9))
    order = [4, 0, 8, 4]
    taken = curve_table(lp, [1, 2, 3, 4]).take(order)
    again = curve_table(lp[order], [1, 2, 3, 4])
    for name in ("probs", "norm_entropy", "mode", "confidence", "expected", "off_scale"):
        assert np.array_equal(getattr(taken, name), getattr(again, name)), name


def test_an_update_writes_each_pairs_own_curve_least_sure_first() -> None:
    base = _scores(40)
    new = np.log(np.random.default_rng(2).dirichlet([0.5, 0.5, 0.5], size=25))
    rows = learned_rows(7, 3, base, new, [0, 1, 2], in_place=True, start=10, stamp="s")
    # (..., norm_entropy at 4, ..., config_id, rid, cid at the end)
    entropies = [row[4] for row in rows]
    assert entropies == sorted(entropies, reverse=True)
    assert sorted(row[-2] for row in rows) == base.rids[10:35].tolist()
    by_rid = {int(rid): i for i, rid in enumerate(base.rids[10:35])}
    for row in rows:
        curve = curve_from_logprobs(new[by_rid[row[-2]]], values=[0.0, 1.0, 2.0])
        assert np.allclose(np.frombuffer(row[1], "<f8"), curve.probs)
        assert row[4] == curve.norm_entropy
        assert row[-3:] == (7, row[-2], 3)


def test_an_insert_keeps_the_tables_rid_order_and_the_base_identity() -> None:
    base = _scores(12)
    new = np.log(np.random.default_rng(3).dirichlet([0.5, 0.5, 0.5], size=12))
    rows = learned_rows(7, 3, base, new, [0, 1, 2], in_place=False, stamp="s")
    assert [row[14] for row in rows] == base.rids.tolist()
    assert [row[17] for row in rows] == list(base.prompt_hash)
