"""The response walk (``response_step``, ``response_tally``): the responses the queue's
filters select, in a response order, checked against the queue's own pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from study.intake.responses import ResponseTable
from tests.factories import build_study, synthetic_scores


@pytest.mark.parametrize(
    "filters",
    [
        {"status": "undecided"},
        {"status": "undecided", "code_id": "pay"},
        {"status": "undecided", "coder": "ann"},
        {"status": "undecided", "wave": 2},
        {"status": "undecided", "search": "pay"},
        {"status": "decided"},
        {"code_id": "team", "wave": 1},
    ],
)
def test_the_walk_visits_exactly_the_responses_the_queue_shows(
    tmp_path: Path, filters: dict[str, object]
) -> None:
    study = build_study(tmp_path / "s.codecurve", n=40)
    study.versions.add_responses(
        ResponseTable.from_texts({f"w{i}": f"pay and team {i}" for i in range(8)})
    )
    config = study.scores.active_config_id()
    assert config is not None
    row = study.scores.config_row(config)
    study.scores.store(config, synthetic_scores(study, row.config))
    ids = study.response_ids()
    # Some responses decided on every code, some on one, by two coders.
    for n, rid in enumerate(ids[:20]):
        codes = [c.id for c in study.codebook.codable]
        for code in codes if n % 2 else codes[:1]:
            value = study.codebook.scale_for(study.code(code)).lowest.value
            study.decisions.record(rid, code, value, coder="ann" if n % 3 else "bob")
    pairs = study.queries.page(config, limit=10_000, **filters)  # type: ignore[arg-type]
    expected = {p.response_id for p in pairs}
    order = study.queries.response_page(config, order="entropy", limit=10_000)
    walked: list[str] = []
    current = study.queries.response_step(config, None, order="entropy", **filters)  # type: ignore[arg-type]
    while current is not None:
        walked.append(current)
        current = study.queries.response_step(config, current, order="entropy", **filters)  # type: ignore[arg-type]
    assert walked == [rid for rid in order if rid in expected]
    # Backwards from past the end, and the tally, agree.
    place, total = study.queries.response_tally(config, walked[-1], order="entropy", **filters)  # type: ignore[arg-type]
    assert (place, total) == (len(walked) - 1, len(expected))
    back = study.queries.response_step(config, walked[-1], step=-1, order="entropy", **filters)  # type: ignore[arg-type]
    assert back == (walked[-2] if len(walked) > 1 else None)
    study.close()
