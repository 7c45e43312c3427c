"""The review queue and counts against straightforward Python over the same data."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebooks.model import Codebook
from scoring.score import ScoreConfig
from study import ResponseTable, Study, StudyError
from study.store import natural_key
from tests.factories import synthetic_score


@pytest.fixture
def scored(tmp_path: Path, codebook: Codebook, config: ScoreConfig) -> Iterator[tuple[Study, int]]:
    texts = {f"q{i}": ("apple pie" if i % 4 == 0 else "Banana split") + f" #{i}" for i in range(30)}
    study = Study.create(
        tmp_path / "q.codecurve", responses=ResponseTable.from_texts(texts), codebook=codebook
    )
    config_id = study.scores.ensure_config(config)
    pending = study.scores.pending_pairs(config_id)
    # leave the last responses unscored, to test the scored/unscored boundary
    study.scores.store(config_id, [synthetic_score(p, config) for p in pending[:75]])
    yield study, config_id
    study.close()


def all_rows(study: Study, config_id: int | None, **kwargs: object) -> list:  # type: ignore[type-arg]
    rows, offset = [], 0
    while True:
        page = study.queries.page(config_id, offset=offset, limit=7, **kwargs)  # type: ignore[arg-type]
        rows += page
        if len(page) < 7:
            return rows
        offset += 7


def code_order(study: Study) -> dict[str, int]:
    return {c.id: i for i, c in enumerate(study.codes)}


def test_entropy_order_with_ties_and_unscored_last(scored: tuple[Study, int]) -> None:
    study, config_id = scored
    rows = all_rows(study, config_id)
    assert len(rows) == study.pair_count() == study.queries.count(config_id) == 90
    scored_rows = [r for r in rows if r.scored]
    assert len(scored_rows) == 75
    order = code_order(study)
    key = [(-r.norm_entropy, natural_key(r.response_id), order[r.code_id]) for r in scored_rows]
    assert key == sorted(key)
    unscored = rows[75:]
    assert all(not r.scored for r in unscored)
    assert [(natural_key(r.response_id), order[r.code_id]) for r in unscored] == sorted(
        (natural_key(r.response_id), order[r.code_id]) for r in unscored
    )
    assert len({(r.response_id, r.code_id) for r in rows}) == 90


def test_other_orders(scored: tuple[Study, int]) -> None:
    study, config_id = scored
    order = code_order(study)
    conf = [r for r in all_rows(study, config_id, order="confidence") if r.scored]
    assert [r.confidence for r in conf] == sorted(r.confidence for r in conf)
    pick = [r for r in all_rows(study, config_id, order="pick") if r.scored]
    assert [(-r.pick, -r.confidence) for r in pick] == sorted(
        (-r.pick, -r.confidence) for r in pick
    )
    by_id = all_rows(study, config_id, order="id")
    assert [(natural_key(r.response_id), order[r.code_id]) for r in by_id] == sorted(
        (natural_key(r.response_id), order[r.code_id]) for r in by_id
    )
    assert sum(r.scored for r in by_id) == 75
    assert len(all_rows(study, None)) == 90
    with pytest.raises(StudyError, match="unknown order"):
        study.queries.page(config_id, order="random")
    with pytest.raises(StudyError, match="unknown status"):
        study.queries.page(config_id, status="maybe")


def test_filters_and_counts(scored: tuple[Study, int]) -> None:
    study, config_id = scored
    study.decisions.record("q0", "pay", 5, coder="ann", note="sure")
    study.decisions.record("q1", "pay", 1, coder="ann", source="model")
    study.decisions.record("q2", "team", 1, coder="bob")
    study.decisions.record("q0", "pay", 4, coder="bob")
    for status, expected in [("decided", 3), ("human", 2), ("model", 1), ("undecided", 87)]:
        rows = all_rows(study, config_id, status=status)
        assert len(rows) == expected == study.queries.count(config_id, status=status), status
    assert len(all_rows(study, config_id, status="decided", coder="ann")) == 2
    assert study.queries.count(config_id, status="undecided", coder="bob") == 88
    pay = all_rows(study, config_id, code_id="Pay")
    assert {r.code_id for r in pay} == {"pay"}
    assert len(pay) == 30 == study.queries.count(config_id, code_id="pay")
    apple = all_rows(study, config_id, search="APPLE")
    assert {r.response_id for r in apple} == {f"q{i}" for i in range(0, 30, 4)}
    assert len(apple) == study.queries.count(config_id, search="apple") == 8 * 3
    assert study.queries.count(config_id, search="apple", status="decided") == 1
    assert study.queries.count(config_id, search="q2", code_id="team", status="decided") == 1
    # the latest decision of any coder is shown, with its coder's note
    row = next(r for r in all_rows(study, config_id, status="decided") if r.response_id == "q0")
    assert (row.decision, row.coder, row.note) == (4, "bob", None)
    row = study.queries.page(config_id, order="id", coder="ann", status="decided", limit=1)[0]
    assert (row.response_id, row.decision, row.note) == ("q0", 5, "sure")


def test_progress_and_annotated_pairs(scored: tuple[Study, int]) -> None:
    study, config_id = scored
    study.decisions.record("q0", "pay", 5, coder="ann")
    study.decisions.record("q1", "pay", 1, coder="ann", source="model")
    study.decisions.record("q0", "pay", 2, coder="bob")
    study.decisions.record("q29", "team", 1, coder="ann")  # not scored
    progress = study.queries.progress(config_id)
    assert (progress["total"], progress["decided"], progress["scored"]) == (90, 3, 75)
    assert progress["by_code"]["pay"]["decided"] == 2
    assert progress["by_code"]["pay"]["model"] == 1
    assert progress["by_code"]["pay"]["human"] == 1
    assert study.queries.progress(None, coder="bob")["decided"] == 1
    frame = study.queries.annotated_pairs(config_id)
    assert len(frame) == 4
    assert list(frame["coder"]) == ["ann", "bob", "ann", "ann"]
    q0 = frame.iloc[0]
    assert q0["applies"]  # 5 >= 4 on 1-5
    assert q0["scored"]
    assert q0["p_max"] == pytest.approx(max(q0["probs"]))
    assert q0["scale_values"] == (1, 2, 3, 4, 5)
    assert q0["pick_applies"] == (q0["pick"] >= 4)
    unscored = frame[frame["response_id"] == "q29"].iloc[0]
    assert not unscored["scored"]
    assert unscored["applies_from"] == 1  # binary scale
    assert len(study.queries.annotated_pairs(config_id, coder="bob")) == 1


def test_queue_uses_indexes(scored: tuple[Study, int]) -> None:
    study, _config_id = scored
    con = sqlite3.connect(study.path)
    for order in ("norm_entropy DESC, s.rid, s.cid", "confidence, s.rid, s.cid"):
        plan = " ".join(
            str(r[3])
            for r in con.execute(
                f"EXPLAIN QUERY PLAN SELECT s.rid, s.cid FROM scores s WHERE s.config_id = 1 "
                f"ORDER BY s.{order} LIMIT 100"
            )
        )
        assert "TEMP B-TREE" not in plan, plan
    con.close()


def test_pair_row_fields(scored: tuple[Study, int]) -> None:
    study, config_id = scored
    row = study.queries.page(config_id, limit=1)[0]
    assert row.probs is not None
    assert sum(row.probs) == pytest.approx(1.0)
    scale = study.code(row.code_id).scale or study.scores.config_row(config_id).scale
    assert row.pick in scale.values
    assert row.pick_label == scale.option_for_value(row.pick).label
    assert row.decision is None
    assert row.text.startswith(("apple", "Banana"))


def test_queue_page_does_not_load_pandas(scored: tuple[Study, int]) -> None:
    # The app draws its first page through these calls; pandas costs a second to import.
    study, config_id = scored
    study.close()
    script = (
        "import sys\n"
        "from study import Study\n"
        f"with Study.open({str(study.path)!r}) as s:\n"
        f"    rows = s.queries.page({config_id}, limit=10)\n"
        f"    n = s.queries.count({config_id}, status='undecided')\n"
        f"    s.queries.page({config_id}, order='id', search='apple', status='undecided')\n"
        "assert rows and n, (rows, n)\n"
        "assert 'pandas' not in sys.modules, 'pandas was imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_response_pairs(scored: tuple[Study, int]) -> None:
    study, config_id = scored
    study.decisions.record("q3", "pay", 2, coder="ann", note="low")
    study.decisions.record("q3", "team", 1, coder="bob", source="model")
    study.decisions.set_note("q3", "workload", "maybe", coder="cid")
    rows = study.queries.of_response(config_id, "q3")
    assert [r.code_id for r in rows] == [c.id for c in study.codes if c.codable]
    assert all(r.response_id == "q3" and r.scored for r in rows)
    # the same rows as the queue shows for these pairs
    queue = {(r.response_id, r.code_id): r for r in all_rows(study, config_id, search="q3")}
    assert rows == [queue["q3", r.code_id] for r in rows]
    by_code = {r.code_id: r for r in rows}
    assert (by_code["pay"].decision, by_code["pay"].coder, by_code["pay"].note) == (2, "ann", "low")
    assert (by_code["team"].source, by_code["team"].coder) == ("model", "bob")
    assert (by_code["workload"].decision, by_code["workload"].note) == (None, "maybe")
    ann = study.queries.of_response(config_id, "q3", coder="ann")
    assert [r.decision for r in ann] == [None, 2, None]
    assert [r.note for r in ann] == [None, "low", None]
    unscored = study.queries.of_response(config_id, "q29")
    assert len(unscored) == 3
    assert not any(r.scored for r in unscored)
    assert all(r.pick_label is None for r in unscored)
    assert [r.probs is None for r in study.queries.of_response(None, "q3")] == [True] * 3
    with pytest.raises(StudyError, match="no response"):
        study.queries.of_response(config_id, "nope")


@pytest.mark.parametrize("order", ["entropy", "confidence", "pick", "id"])
@pytest.mark.parametrize(
    "filters",
    [{}, {"status": "undecided"}, {"status": "decided"}, {"code_filter": "pay", "search": "apple"}],
    ids=["all", "undecided", "decided", "code-and-search"],
)
def test_pair_position_is_the_offset_in_the_listing(
    scored: tuple[Study, int], order: str, filters: dict[str, str]
) -> None:
    study, config_id = scored
    study.decisions.record("q0", "pay", 5, coder="ann")
    study.decisions.record("q7", "team", 1, coder="ann", source="model")
    study.decisions.record("q29", "pay", 1, coder="ann")  # an unscored pair
    listing_filters = {("code_id" if k == "code_filter" else k): v for k, v in filters.items()}
    listed = all_rows(study, config_id, order=order, **listing_filters)
    assert listed  # every case lists something
    where = {(r.response_id, r.code_id): i for i, r in enumerate(listed)}
    for pair in all_rows(study, None):
        key = (pair.response_id, pair.code_id)
        position = study.queries.position(config_id, *key, order=order, **filters)  # type: ignore[arg-type]
        assert position == where.get(key), (key, order, filters)


def test_pair_position_without_scores_is_the_id_order(scored: tuple[Study, int]) -> None:
    study, _ = scored
    listed = all_rows(study, None)
    for i in (0, 13, len(listed) - 1):
        row = listed[i]
        assert study.queries.position(None, row.response_id, row.code_id) == i


def _every_page(
    study: Study, config_id: int | None, **kwargs: object
) -> list[tuple[str, str, object]]:
    return [(r.response_id, r.code_id, r.decision) for r in all_rows(study, config_id, **kwargs)]


def test_a_decided_status_reads_its_few_decisions_first_with_the_same_pages(
    scored: tuple[Study, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a status only decided pairs pass, with few decisions, a page starts from the
    decisions (the walk past every undecided pair took seconds on a million pairs): the
    pages are those of the index walk, in every order, filter and direction."""
    import study.queries.pairs as pairs

    study, config_id = scored
    study.decisions.record("q0", "pay", 5, coder="ann")
    study.decisions.record("q0", "pay", 2, coder="bob")  # a disagreement
    study.decisions.record("q1", "pay", 1, coder="ann", source="model")
    study.decisions.record("q3", "team", 1, coder="bob")
    study.decisions.record("q28", "team", 0, coder="ann")  # not scored
    study.decisions.record("q29", "pay", 3, coder="bob", source="model")  # not scored
    cases = [
        {"order": order, "status": status, "code_id": code, "coder": coder, "reverse": reverse}
        for order in ("entropy", "confidence", "pick", "id")
        for status in ("decided", "human", "model", "disagreement")
        for code in (None, "pay")
        for coder in (None, "bob")
        for reverse in (False, True)
    ]
    driven = [_every_page(study, config_id, **case) for case in cases]
    unscored = _every_page(study, None, status="decided")
    used: list[bool] = []
    real = pairs.decided_driver  # type: ignore[attr-defined]

    def walk(*args: object, **kwargs: object) -> None:
        used.append(real(*args, **kwargs) is not None)  # type: ignore[arg-type]

    monkeypatch.setattr(pairs, "decided_driver", walk)
    walked = [_every_page(study, config_id, **case) for case in cases]
    assert all(used)
    assert len(used) >= len(cases)
    for case, a, b in zip(cases, driven, walked, strict=True):
        assert a == b, case
    assert _every_page(study, None, status="decided") == unscored
    assert len(driven[0]) == 5 == study.queries.count(config_id, status="decided")
    assert {(r, c) for r, c, _ in driven[0][-2:]} == {("q28", "team"), ("q29", "pay")}


def test_many_decisions_keep_the_index_walk(scored: tuple[Study, int]) -> None:
    """The decisions are counted only up to the bound where walking the index is the
    cheaper way (a page of 40 on 90 pairs: 256 decisions), and only those of the filter."""
    from study.queries._filters import decided_driver

    study, config_id = scored
    for coder in ("ann", "bob", "cy"):
        for i in range(30):
            for code in ("workload", "pay"):
                study.decisions.record(f"q{i}", code, 2, coder=coder)
            study.decisions.record(f"q{i}", "team", 1, coder=coder)
    with study.query() as conn:

        def driver(**kwargs: object) -> object:
            given = {"code_id": None, "coder": None, "rows": 40, **kwargs}
            return decided_driver(study, conn, **given)  # type: ignore[arg-type]

        assert driver(status="undecided") is None  # no decision needed to pass
        assert driver(status="decided") is None  # 270 decisions: walk
        assert driver(status="decided", code_id="pay") is not None  # 90 of that code
        assert driver(status="human", coder="ann") is not None  # 90 of that coder
        assert driver(status="model") is not None  # none
    assert len(all_rows(study, config_id, status="decided")) == 90
    assert len(all_rows(study, config_id, status="disagreement")) == 0
