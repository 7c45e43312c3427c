"""The study handle and its namespaces: a namespace's caches follow the handle's
transactions and its codebook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codebooks.model import Codebook
from study.scores import configurations
from tests.factories import build_study, synthetic_config, synthetic_scores


def test_scores_a_rolled_back_batch_stored_are_stored_again_with_their_token_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    study = build_study(tmp_path / "s.codecurve", n=3, scored=False)
    config = synthetic_config()
    config_id = study.scores.ensure_config(config)
    scores = synthetic_scores(study, config)
    original = configurations.insert_scores

    def then_fail(*args: Any, **kwargs: Any) -> int:
        original(*args, **kwargs)  # the token sets are written (and cached), then lost
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(configurations, "insert_scores", then_fail)
    with pytest.raises(RuntimeError):
        study.scores.store(config_id, scores)
    monkeypatch.undo()
    assert study.scores.scored_count(config_id) == 0
    assert study.scores.generation == 0

    assert study.scores.store(config_id, scores) == len(scores)
    first = scores[0]
    stored = study.scores.token_ids(config_id, first.response_id, first.code_id)
    assert stored == json.loads(json.dumps(first.token_ids))
    assert study.scores.generation == 1
    study.close()


def test_a_revision_is_what_every_namespace_reads_next(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=4)
    before = study.pair_count()
    data = study.codebook.to_dict()
    data["codes"] = data["codes"][:-1]
    revised = Codebook.from_dict(data)
    dropped = study.codebook.codes[-1].id

    assert study.versions.revise(revised) == 2
    assert study.codebook is revised
    assert dropped not in {c.id for c in study.codes}
    config_id = study.scores.active_config_id()
    assert config_id is not None
    assert study.queries.count(config_id) == study.pair_count() < before
    assert {r.code_id for r in study.queries.page(config_id, limit=100)} == {
        c.id for c in study.codes
    }
    study.close()
