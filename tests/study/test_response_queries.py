"""The response list's query against the response order and plain Python over the rows."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from study.queries._responses import RESPONSE_ORDERS
from study.rows import ResponseRow
from study.store import Study
from tests.factories import CODEBOOK, build_study, synthetic_config, synthetic_scores


@pytest.fixture
def study(tmp_path: Path) -> Iterator[Study]:
    """40 responses x 3 codes, 100 of the 120 pairs scored, an audit sample, decisions
    of two coders, a note and memos."""
    s = build_study(tmp_path / "r.codecurve", n=40, scored=100)
    s.audit.draw(per_code=4, seed=3)
    s.decisions.record("r1", "workload", 1, coder="ana")
    s.decisions.record("r1", "pay", 0, coder="ana")
    s.decisions.record("r1", "team", 3, coder="ana")
    s.decisions.record("r2", "pay", 1, coder="ben")
    s.decisions.record("r2", "team", 2, coder="ana")
    s.decisions.set_note("r3", "team", "unclear", coder="ben")
    s.decisions.set_memo("r4", "sarcastic", coder="ana")
    s.decisions.set_memo("r5", "about the ward", coder="ben")
    yield s
    s.close()


def every_page(study: Study, size: int = 7, **kwargs: object) -> list[ResponseRow]:
    rows: list[ResponseRow] = []
    while True:
        page = study.queries.responses(
            study.scores.active_config_id(),
            offset=len(rows),
            limit=size,
            **kwargs,  # type: ignore[arg-type]
        )
        rows += page
        if len(page) < size:
            return rows


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("order", RESPONSE_ORDERS)
def test_the_list_pages_the_response_order(study: Study, order: str, reverse: bool) -> None:
    config_id = study.scores.active_config_id()
    ids = study.queries.response_page(config_id, order=order, reverse=reverse, limit=1000)
    rows = every_page(study, order=order, reverse=reverse)
    assert [r.response_id for r in rows] == ids
    assert len(ids) == study.response_count() == 40
    for index in (0, 6, 7, 39):
        page = study.queries.responses(
            config_id, order=order, reverse=reverse, offset=index, limit=1
        )
        assert [r.response_id for r in page] == [ids[index]]
        assert (
            study.queries.response_position(config_id, ids[index], order=order, reverse=reverse)
            == index
        )
    assert study.queries.responses(config_id, order=order, offset=40) == []


def test_each_row_sums_up_its_codes(study: Study) -> None:
    config_id = study.scores.active_config_id()
    for row in every_page(study, order="id"):
        pairs = study.queries.of_response(config_id, row.response_id)
        entropies = [p.norm_entropy for p in pairs if p.norm_entropy is not None]
        assert row.max_entropy == (max(entropies) if entropies else None)
        assert row.scored == len(entropies)
        assert row.decided == len([p for p in pairs if p.decided])
        assert row.codes == 3
        assert row.complete == (row.decided == 3)
        assert row.noted == any(p.note for p in pairs)
        assert row.memo == (study.decisions.memo(row.response_id) is not None)
        assert row.text == study.response(row.response_id).text
    rows = {r.response_id: r for r in every_page(study, order="id")}
    assert (rows["r1"].decided, rows["r1"].complete) == (3, True)
    assert rows["r2"].decided == 2
    assert rows["r3"].noted
    assert rows["r4"].memo
    assert rows["r5"].memo


def test_the_entropy_order_puts_the_least_sure_first_and_unscored_last(study: Study) -> None:
    rows = every_page(study, order="entropy")
    keys = [r.max_entropy for r in rows if r.max_entropy is not None]
    assert keys == sorted(keys, reverse=True)
    assert all(r.max_entropy is None for r in rows[len(keys) :])
    assert 0 < len(keys) < len(rows)  # the last pairs are not scored


def test_a_coder_sees_their_own_decisions_notes_and_memo(study: Study) -> None:
    ana = {r.response_id: r for r in every_page(study, order="id", coder="ana")}
    ben = {r.response_id: r for r in every_page(study, order="id", coder="ben")}
    assert (ana["r1"].decided, ben["r1"].decided) == (3, 0)
    assert (ana["r2"].decided, ben["r2"].decided) == (1, 1)
    assert (ana["r3"].noted, ben["r3"].noted) == (False, True)
    assert (ana["r4"].memo, ben["r4"].memo) == (True, False)
    assert (ana["r5"].memo, ben["r5"].memo) == (False, True)


def test_the_audit_order_lists_the_sample_first(study: Study) -> None:
    sample = study.audit.sample()
    assert sample is not None
    audited: list[str] = []
    for response_id, _ in sample.queue():
        if response_id not in audited:
            audited.append(response_id)
    rows = every_page(study, order="audit")
    assert [r.response_id for r in rows[: len(audited)]] == audited


def test_the_order_follows_new_scores(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=12, scored=False)
    try:
        config = synthetic_config()
        config_id = study.scores.ensure_config(config)
        assert study.queries.response_page(config_id, limit=3) == ["r1", "r2", "r3"]  # none scored
        study.scores.store(config_id, synthetic_scores(study, config))
        rows = study.queries.responses(config_id, limit=100)
        assert all(r.max_entropy is not None for r in rows)
        assert [r.max_entropy for r in rows] == sorted(
            [r.max_entropy or 0.0 for r in rows], reverse=True
        )
        assert [r.response_id for r in rows] == study.queries.response_page(config_id, limit=100)
    finally:
        study.close()


def test_a_reader_sees_what_another_connection_stored(tmp_path: Path) -> None:
    path = tmp_path / "s.codecurve"
    build_study(path, n=12, scored=False).close()
    reader = Study.open(path, read_only=True)
    try:
        config = synthetic_config()
        with Study.open(path) as writer:
            config_id = writer.scores.ensure_config(config)
            assert reader.queries.response_page(config_id, limit=2) == ["r1", "r2"]
            writer.scores.store(config_id, synthetic_scores(writer, config))
            expected = writer.queries.response_page(config_id, limit=100)
        assert reader.queries.response_page(config_id, limit=100) == expected
    finally:
        reader.close()


def test_a_removed_code_no_longer_orders_the_responses(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=20)
    try:
        config_id = study.scores.active_config_id()
        study.versions.revise(replace(CODEBOOK, codes=CODEBOOK.codes[:2]))  # team removed
        rows = study.queries.responses(config_id, limit=100)
        for row in rows:
            pairs = study.queries.of_response(config_id, row.response_id)
            assert {p.code_id for p in pairs} == {"workload", "pay"}
            assert row.codes == 2
            assert row.max_entropy == max(p.norm_entropy or 0.0 for p in pairs)
        assert [r.response_id for r in rows] == study.queries.response_page(config_id, limit=100)
        assert [r.max_entropy for r in rows] == sorted(
            [r.max_entropy or 0.0 for r in rows], reverse=True
        )
    finally:
        study.close()


def test_pair_rows_mark_a_memo_on_their_response(study: Study) -> None:
    config_id = study.scores.active_config_id()
    rows = study.queries.page(config_id, order="id", limit=1000)
    marked = {r.response_id for r in rows if r.memo}
    assert marked == {"r4", "r5"}
    mine = study.queries.page(config_id, order="id", limit=1000, coder="ana")
    assert {r.response_id for r in mine if r.memo} == {"r4"}
    assert all(r.memo for r in study.queries.of_response(config_id, "r4"))
