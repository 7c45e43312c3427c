from __future__ import annotations

import pandas as pd
import pytest

from codebooks import SAMPLES, InputError, load_codebook, sample_paths
from codebooks.samples import DEFAULT_SAMPLE


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_sample_loads(name: str) -> None:
    responses, codebook_path = sample_paths(name)
    codebook = load_codebook(codebook_path)
    assert codebook.codable
    assert "{code}" in codebook.question
    for code in codebook.codable:
        # Every context level (METHOD.md: none, definition, full) has something to show.
        assert code.definition
        assert code.inclusion
        assert code.exclusion
        assert code.examples
    frame = pd.read_csv(responses, dtype=str, keep_default_na=False)
    assert list(frame.columns[:2]) == ["id", "text"]
    assert 30 <= len(frame) <= 40
    assert frame["id"].is_unique
    assert (frame["text"].str.strip() != "").all()


def test_the_default_sample_is_the_work_survey() -> None:
    assert DEFAULT_SAMPLE == "work_survey"
    responses, codebook = sample_paths()
    assert (responses.name, codebook.name) == ("work_survey.csv", "work_survey.yaml")
    survey = load_codebook(codebook)
    assert 6 <= len(survey.codable) <= 8
    assert any(not c.codable for c in survey.codes)


def test_scales_of_the_samples() -> None:
    assert load_codebook(sample_paths("causal")[1]).scale.name == "binary"
    scaled = load_codebook(sample_paths("causal_scaled")[1]).scale
    assert scaled.labels == ("1", "2", "3", "4", "5")
    assert scaled.threshold == 4
    sets = load_codebook(sample_paths("sets_words")[1])
    assert [c.name for c in sets.codes] == ["Social", "Ecological", "Technological"]


def test_sets_words_mark_their_word_and_use_each_sense() -> None:
    frame = pd.read_csv(sample_paths("sets_words")[0])
    words = {"bug", "virus", "mouse", "cloud", "network", "stream", "web", "tree", "crash", "root"}
    assert set(frame["word"]) == words
    for word, text in zip(frame["word"], frame["text"], strict=True):
        assert f"*{word}*" in text
    senses = frame.groupby("word")["expected"].nunique()
    assert (senses == 3).all()


def test_causal_sample_mixes_kinds_of_statement() -> None:
    frame = pd.read_csv(sample_paths("causal")[0])
    assert set(frame["expected"]) == {"causal", "hedged", "correlational", "denied", "none"}
    assert set(frame["source"]) == {"codecurve", "countercausal_news"}
    assert "Students who study more tend to get better grades." in set(frame["text"])


def test_figurative_sample_has_both_kinds() -> None:
    frame = pd.read_csv(sample_paths("figurative")[0])
    counts = frame["expected"].value_counts()
    assert counts["literal"] >= 10
    assert counts["figurative"] >= 10


def test_unknown_sample() -> None:
    with pytest.raises(InputError, match="no sample called 'nope'; choose one of work_survey"):
        sample_paths("nope")


def test_every_sample_file_is_registered_and_documented() -> None:
    folder = sample_paths()[0].parent
    shipped = {p.name for p in folder.iterdir()} - {"README.md"}
    registered = {f for s in SAMPLES.values() for f in (s.responses, s.codebook)}
    assert shipped == registered
    readme = (folder / "README.md").read_text(encoding="utf-8")
    for name in registered:
        assert name in readme
    assert "CC BY 4.0" in readme
    assert "Copyright (c) 2022 Emmy Liu" in readme
