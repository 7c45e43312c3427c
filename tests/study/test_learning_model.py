"""The embedded model learns from a coder: real features, a real labelled sample.

160 NHS patient comments on one category ("Positive experience & gratitude"), scored by
the embedded model with its features kept; 60 of them drawn as the blind audit and coded
with the published labels, 100 others decided with the same labels. The model's zero-shot
curve is near chance on this category; the curve learned from the 100 decisions must
rank the audit's comments far better, and it must do so without the audit: the same fit
whether or not the audit is decided.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from codebooks.model import BINARY, Code, Codebook
from study import ResponseTable, Study
from study.analysis._learning import learn
from tests.factories import NHS_RESPONSES

CATEGORY = "Positive experience & gratitude"
N = 160
AUDIT = 60

pytestmark = pytest.mark.model


def audit_auroc(study: Study, config_id: int, audit: list[str]) -> float:
    rows = study.queries.annotated_pairs(config_id, coder="ana")
    rows = rows[rows.response_id.isin(audit)]
    assert len(rows) == AUDIT
    return float(roc_auc_score(rows.applies, rows.p_applies))


def test_a_curve_learned_from_real_decisions_beats_the_zero_shot_curve(tmp_path: Path) -> None:
    from scoring import load_backend
    from scoring.engine import ScoringEngine
    from study.score_run import score_study

    table = pd.read_csv(NHS_RESPONSES).head(N)
    texts = dict(zip(table["id"].astype(str), table["text"].astype(str), strict=True))
    labels = {
        rid: int(CATEGORY in str(label).split(";"))
        for rid, label in zip(table["id"].astype(str), table["label"], strict=True)
    }
    code = Code("gratitude", CATEGORY, "The patient thanks staff or says the care was good.")
    codebook = Codebook(name="NHS", codes=(code,), scale=BINARY)
    path = tmp_path / "nhs.codecurve"
    with Study.create(path, responses=ResponseTable.from_texts(texts), codebook=codebook) as study:
        engine = ScoringEngine(load_backend(None, device="cpu"), study.codebook)
        assert engine.feature_layout is not None
        score_study(study, engine)
        zero_shot = study.scores.active_config_id()
        assert zero_shot is not None
        assert study.scores.pending_pairs(zero_shot, features=True) == []
        sample = study.audit.draw(per_code=AUDIT, seed=5)
        audit = list(sample.pairs(code.id))
        for rid in texts:
            if rid not in audit:
                study.decisions.record(rid, code.id, labels[rid], coder="ana")
        before = learn(study, coder="ana").codes[0]
        for rid in audit:
            study.decisions.record(rid, code.id, labels[rid], coder="ana", blind=True)
        run = learn(study, coder="ana")
        (fit,) = run.codes
        assert fit.learned
        assert fit.inputs == "features+zero-shot"
        assert fit.left_out_audit == AUDIT
        assert fit.params_hash == before.params_hash  # the audit taught it nothing
        zero = audit_auroc(study, zero_shot, audit)
        learned = audit_auroc(study, run.config_id, audit)
        assert learned > 0.75
        assert learned > zero + 0.1
