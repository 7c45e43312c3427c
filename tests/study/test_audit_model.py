"""The embedded model on a sample study: a small blind audit is no ground for delegation.

24 responses of the work survey sample on one code, scored by the embedded model, the
whole study drawn as the audit sample and coded blind by a keyword rule: the screen on
the audit sample is not Valid, so nothing is delegated and applying refuses.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from codebooks.readers import load_codebook
from codebooks.samples import sample_paths
from study import ResponseTable, Study, StudyError
from study.analysis.delegation_plan import plan_delegation
from study.analysis.screen import screen_study

WORDS = ("work", "hours", "staff", "short", "overtime", "busy", "people", "shift", "cover")


@pytest.mark.model
def test_the_embedded_model_is_not_delegated_on_a_small_audit(tmp_path: Path) -> None:
    from scoring import load_backend
    from scoring.engine import ScoringEngine
    from study.score_run import score_study

    responses_path, codebook_path = sample_paths("work_survey")
    full = load_codebook(codebook_path)
    workload = dataclasses.replace(full.code("Workload"), parent=None)
    codebook = dataclasses.replace(full, codes=(workload,), sets=())
    table = pd.read_csv(responses_path).head(24)
    texts = dict(zip(table["id"].astype(str), table["text"].astype(str), strict=True))
    path = tmp_path / "survey.codecurve"
    with Study.create(path, responses=ResponseTable.from_texts(texts), codebook=codebook) as study:
        engine = ScoringEngine(load_backend(None), study.codebook)
        run = score_study(study, engine)
        assert run.stored == 24
        sample = study.audit.draw(seed=1)
        assert sample.size(workload.id) == 24  # the default, capped by the population
        scale = study.codebook.scale_for(workload)
        for rid in sample.pairs(workload.id):
            text = texts[rid].lower()
            value = scale.values[-1] if any(w in text for w in WORDS) else scale.values[0]
            study.decisions.record(rid, workload.id, value, coder="ana", blind=True)
        screened = screen_study(study)
        assert screened.sample == "audit"
        assert screened.per_code["Workload"].tier != "Valid"
        plan = plan_delegation(study)
        assert plan.delegated == 0
        assert not plan.codes[0].certified
        assert "Nothing delegated for Workload pairs" in plan.codes[0].guarantee()
        events = len(study.decisions.events())
        with pytest.raises(StudyError, match="nothing to delegate"):
            study.delegations.apply(plan, coder="ana")
        assert len(study.decisions.events()) == events
