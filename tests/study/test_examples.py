"""Examples in the prompt (study.analysis._examples): which decided pairs a code shows.

Never an audit pair (nor an accepted pick, a delegated one or another coder's), balanced
over the values decided, deterministic, short; kept in the study with their provenance;
and a configuration of their own whose stored row gives back its key exactly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebooks.model import BINARY, LIKERT_5, Code, Codebook
from scoring import FakeBackend, ScoringEngine
from study import ResponseTable, Study, score_study
from study.analysis._examples import (
    MAX_EXAMPLE_CHARS,
    ExampleSet,
    choose_examples,
    excerpt,
    record_examples,
    stored_examples,
)
from study.errors import StudyError
from study.scores.configurations import split_template_hash, stored_template_hash

CODEBOOK = Codebook(
    name="Patients",
    codes=(
        Code("wait", "Waiting", "Mentions of waiting or delays."),
        Code("mood", "Mood", "How positive the comment is.", scale=LIKERT_5),
    ),
    scale=BINARY,
)

TEXTS = {f"c{i}": f"comment number {i} about the ward" for i in range(1, 61)}


@pytest.fixture
def study(tmp_path: Path) -> Iterator[Study]:
    with Study.create(
        tmp_path / "s.codecurve", responses=ResponseTable.from_texts(TEXTS), codebook=CODEBOOK
    ) as opened:
        opened.audit.draw(per_code=20, seed=5)
        yield opened


def outside_audit(study: Study, code: str) -> list[str]:
    sample = study.audit.sample()
    assert sample is not None
    return [r for r in study.response_ids() if not sample.is_audit(r, code)]


def audit_pairs(study: Study, code: str) -> list[str]:
    sample = study.audit.sample()
    assert sample is not None
    return list(sample.pairs(code))


def test_an_audit_pair_is_never_shown(study: Study) -> None:
    # The audit's decisions are the only decisions of value 1: were an audit pair ever
    # shown, a 1 would appear among the examples.
    for rid in outside_audit(study, "wait")[:6]:
        study.decisions.record(rid, "wait", 0, coder="ana")
    for rid in audit_pairs(study, "wait"):
        study.decisions.record(rid, "wait", 1, coder="ana", blind=True)
    chosen = choose_examples(study, per_value=3)
    (wait,) = [c for c in chosen.codes if c.code_id == "wait"]
    assert [e.value for e in wait.examples] == [0, 0, 0]
    assert not {e.response_id for e in wait.examples} & set(audit_pairs(study, "wait"))
    assert dict(wait.decided) == {0: 6}
    assert wait.left_out_audit == 20
    assert all(e.label == "No" for e in wait.examples)


def test_only_the_coders_own_decisions_are_shown(study: Study) -> None:
    free = outside_audit(study, "wait")
    study.decisions.record(free[0], "wait", 0, coder="ana")
    study.decisions.record(free[1], "wait", 1, coder="ana", source="model")  # accepted pick
    study.decisions.record(free[2], "wait", 1, coder="ben")  # another coder
    chosen = choose_examples(study, coder="ana")
    (wait,) = [c for c in chosen.codes if c.code_id == "wait"]
    assert [(e.response_id, e.value) for e in wait.examples] == [(free[0], 0)]


def test_examples_are_balanced_over_the_values_decided(study: Study) -> None:
    free = outside_audit(study, "mood")
    counts = {1: 5, 2: 1, 4: 3, 5: 4}  # no 3 decided, a single 2
    values = [v for v, n in counts.items() for _ in range(n)]
    for rid, value in zip(free, values, strict=False):
        study.decisions.record(rid, "mood", value, coder="ana")
    chosen = choose_examples(study, per_value=2)
    (mood,) = [c for c in chosen.codes if c.code_id == "mood"]
    # Round-robin over the values in scale order: each value once, then again.
    assert [e.value for e in mood.examples] == [1, 2, 4, 5, 1, 4, 5]
    assert dict(mood.decided) == counts
    one = choose_examples(study, per_value=1)
    assert [e.value for e in one.codes[1].examples] == [1, 2, 4, 5]
    assert [e.label for e in mood.examples] == [str(e.value) for e in mood.examples]
    # A code nobody decided shows none, and is asked as at `full`.
    (wait,) = [c for c in chosen.codes if c.code_id == "wait"]
    assert wait.examples == ()
    assert "wait" not in chosen.prompt_examples()
    assert "no examples" in wait.describe()


def test_the_choice_is_deterministic_and_independent_of_the_order_of_coding(
    study: Study, tmp_path: Path
) -> None:
    free = outside_audit(study, "mood")[:20]
    items = [(rid, "mood", i % 5 + 1) for i, rid in enumerate(free)]
    for rid, code, value in items:
        study.decisions.record(rid, code, value, coder="ana")
    first = choose_examples(study)
    assert choose_examples(study) == first
    assert first.hash == choose_examples(study).hash
    with Study.create(
        tmp_path / "other.codecurve",
        responses=ResponseTable.from_texts(TEXTS),
        codebook=CODEBOOK,
    ) as other:
        other.audit.draw(per_code=20, seed=5)
        for rid, code, value in reversed(items):
            other.decisions.record(rid, code, value, coder="ana")
        assert choose_examples(other) == first
    # Another seed ranks the decisions otherwise: a deterministic choice, not the first ids.
    reseeded = choose_examples(study, seed=1)
    assert reseeded.hash != first.hash
    shown = [e.response_id for e in first.codes[1].examples]
    assert shown != sorted(free, key=study.index.response_key)[: len(shown)]


def test_texts_are_one_short_paragraph(tmp_path: Path) -> None:
    long = "First line.\n\n" + " ".join(f"word{i}" for i in range(200))
    with Study.create(
        tmp_path / "s.codecurve",
        responses=ResponseTable.from_texts({"a": long, "b": "   ", "c": "Short."}),
        codebook=CODEBOOK,
    ) as s:
        for rid in ("a", "b", "c"):
            s.decisions.record(rid, "wait", 1, coder="ana")
        (wait, _) = choose_examples(s, per_value=5).codes
    texts = {e.response_id: e.text for e in wait.examples}
    assert set(texts) == {"a", "c"}  # a blank response is no example
    assert "\n" not in texts["a"]
    assert len(texts["a"]) <= MAX_EXAMPLE_CHARS
    assert texts["a"].startswith("First line. word0 word1")
    assert texts["a"].endswith(" [...]")
    assert excerpt("a  b\nc") == "a b c"


def test_no_decisions_is_one_clear_error(study: Study) -> None:
    with pytest.raises(StudyError, match="no coder has decided anything yet"):
        choose_examples(study)


def test_only_audit_decisions_is_one_clear_error(study: Study) -> None:
    for rid in audit_pairs(study, "wait"):
        study.decisions.record(rid, "wait", 1, coder="ana", blind=True)
    with pytest.raises(StudyError, match="audit pairs, which are never shown") as caught:
        choose_examples(study)
    assert "code some pairs in the queue first" in str(caught.value)


def test_several_coders_need_one_named(study: Study) -> None:
    free = outside_audit(study, "wait")
    study.decisions.record(free[0], "wait", 0, coder="ana")
    study.decisions.record(free[1], "wait", 1, coder="ben")
    with pytest.raises(StudyError, match="name the one to learn from") as several:
        choose_examples(study)
    assert [dict(r.options) for r in several.value.remedies] == [{"coder": "NAME"}]
    with pytest.raises(StudyError, match="'cy' has made no decisions"):
        choose_examples(study, coder="cy")
    assert choose_examples(study, coder="ben").coder == "ben"
    with pytest.raises(ValueError, match="at least 1"):
        choose_examples(study, coder="ben", per_value=0)


def test_a_chosen_set_is_kept_with_its_provenance(study: Study) -> None:
    for i, rid in enumerate(outside_audit(study, "mood")[:10]):
        study.decisions.record(rid, "mood", i % 5 + 1, coder="ana")
    chosen = choose_examples(study)
    assert stored_examples(study, chosen.hash) is None
    record_examples(study, chosen)
    kept = stored_examples(study, chosen.hash)
    assert kept == chosen
    assert kept.fits(study.codebook.codable)
    data = json.loads(study.meta()[f"examples:{chosen.hash}"])
    assert data["coder"] == "ana"
    assert data["per_value"] == 2
    assert ExampleSet.from_dict(data) == chosen
    assert stored_examples(study, "") is None


def test_the_examples_configuration_is_stored_and_read_back_exactly(study: Study) -> None:
    for i, rid in enumerate(outside_audit(study, "mood")[:10]):
        study.decisions.record(rid, "mood", i % 5 + 1, coder="ana")
    chosen = choose_examples(study)
    plain = ScoringEngine(FakeBackend(), study.codebook, context="full")
    engine = ScoringEngine(
        FakeBackend(), study.codebook, context="examples", examples=chosen.prompt_examples()
    )
    config = engine.config
    assert config.examples_hash == chosen.hash
    # The set is itself the mapping the engine takes.
    assert dict(chosen) == chosen.prompt_examples()
    direct = ScoringEngine(FakeBackend(), study.codebook, context="examples", examples=chosen)
    assert direct.config == config
    plain_id = score_study(study, plain).config_id
    run = score_study(study, engine, activate=False)
    assert run.config_id != plain_id
    assert study.scores.active_config_id() == plain_id
    row = study.scores.config_row(run.config_id)
    assert row.config == config
    assert row.key == config.key() == row.config.key()
    assert (row.context, row.examples_hash, row.template_hash) == (
        "examples",
        chosen.hash,
        engine.template.hash,
    )
    assert study.scores.config_row(plain_id).config == plain.config
    assert study.scores.config_row(plain_id).examples_hash == ""
    # Kept in the template hash column (no column of its own in schema version 5).
    with study.snapshot() as conn:
        (stored,) = conn.execute(
            "SELECT template_hash FROM configs WHERE id = ?", (run.config_id,)
        ).fetchone()
        (detail,) = conn.execute(
            "SELECT detail FROM events WHERE kind = 'config' AND config_id = ?",
            (run.config_id,),
        ).fetchone()
    assert stored == stored_template_hash(config) == f"{engine.template.hash}+{chosen.hash}"
    assert split_template_hash(stored) == (engine.template.hash, chosen.hash)
    assert json.loads(detail)["examples"] == chosen.hash
    assert study.scores.scored_count(run.config_id) == study.pair_count()
    # Scoring the same examples again adds no configuration and no score.
    again = ScoringEngine(
        FakeBackend(), study.codebook, context="examples", examples=chosen.prompt_examples()
    )
    rerun = score_study(study, again, activate=False)
    assert (rerun.config_id, rerun.stored) == (run.config_id, 0)
