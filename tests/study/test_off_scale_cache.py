"""The off-scale warning scans every score of a configuration: it is read again only
after the study handle has stored scores, not on every screen."""

from __future__ import annotations

from pathlib import Path

import pytest

from study import Study
from study import labels as configs
from study.view import StudyView
from tests.factories import build_study, synthetic_config, synthetic_scores


def test_the_warning_is_read_again_only_after_scores_are_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    study = build_study(tmp_path / "s.codecurve", n=6, scored=4)
    reads: list[int] = []
    original = configs._read_off_scale

    def counting(view: StudyView, config_id: int) -> str | None:
        reads.append(config_id)
        return original(view, config_id)

    monkeypatch.setattr(configs, "_read_off_scale", counting)
    config_id = study.scores.active_config_id()
    assert config_id is not None
    first = configs.off_scale_warning(study, config_id)
    assert configs.off_scale_warning(study, config_id) == first
    assert reads == [config_id]  # the second screen read nothing
    before = study.scores.generation
    config = synthetic_config()
    assert study.scores.store(config_id, synthetic_scores(study, config)) > 0
    assert study.scores.generation == before + 1
    configs.off_scale_warning(study, config_id)
    assert reads == [config_id, config_id]  # new scores: read again
    study.close()


@pytest.mark.parametrize(
    ("template", "advice", "not_said"),
    [
        ("chat-v1", "try scoring without the chat template", "plain completion prompts"),
        ("base-v1", "plain completion prompts (template base-v1", "without the chat template"),
    ],
)
def test_the_advice_fits_the_prompts_the_study_was_scored_with(
    tmp_path: Path, template: str, advice: str, not_said: str
) -> None:
    import dataclasses
    import sqlite3

    study = build_study(tmp_path / "s.codecurve", n=6, scored=False)
    config = dataclasses.replace(synthetic_config(), template_id=template)
    config_id = study.scores.ensure_config(config)
    study.scores.store(config_id, synthetic_scores(study, config))
    study.close()
    conn = sqlite3.connect(tmp_path / "s.codecurve")
    conn.execute("UPDATE scores SET off_scale = 1")
    conn.commit()
    conn.close()
    study = Study.open(tmp_path / "s.codecurve", read_only=True)
    warning = configs.off_scale_warning(study, config_id)
    study.close()
    assert warning is not None
    assert advice in warning
    assert not_said not in warning
