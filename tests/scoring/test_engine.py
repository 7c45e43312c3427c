"""The batch engine with the fake backend: dedupe, order, batches, progress, cancel, cache."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from codebooks.model import BINARY, Code, Codebook
from scoring import (
    BatchResult,
    FakeBackend,
    Pair,
    ScoringCancelled,
    ScoringEngine,
    ScoringError,
)
from scoring.templates import BASE_V1, CHAT_V1, TRUNCATION_MARK


@pytest.fixture
def codebook() -> Codebook:
    return Codebook(
        name="Test",
        codes=(
            Code("pay", "Pay", definition="Money, salary, fees."),
            Code("team", "Team", definition="Colleagues and the people around."),
            Code("yn", "Mentions a date", scale=BINARY),
        ),
        question='How well does "{code}" apply?',
    )


TEXTS = {
    "r1": "The pay is too low.",
    "r2": "My team is lovely and helps me every day, even when it is busy.",
    "r3": "ok",
    "r4": "The pay is too low.",  # same text as r1
}


def pairs_for(codebook: Codebook, texts: dict[str, str] = TEXTS) -> list[Pair]:
    return [Pair(rid, text, code) for rid, text in texts.items() for code in codebook.codes]


def test_scores_come_back_in_the_callers_order(codebook: Codebook) -> None:
    pairs = pairs_for(codebook)[::-1]
    scores = ScoringEngine(FakeBackend(), codebook, batch_size=2).score(pairs)
    assert [(s.response_id, s.code_id) for s in scores] == [
        (p.response_id, p.code.id) for p in pairs
    ]
    for s in scores:
        assert s.curve.probs.sum() == pytest.approx(1.0)
        assert s.scale.k == (2 if s.code_id == "yn" else 5)


def test_same_text_and_code_is_scored_once(codebook: Codebook) -> None:
    backend = FakeBackend()
    pairs = pairs_for(codebook)
    pairs.append(pairs[0])  # the very same pair twice
    scores = ScoringEngine(backend, codebook).score(pairs)
    prompts = [p for batch in backend.batches for p in batch]
    assert len(prompts) == 3 * 3  # r4 duplicates r1, the repeated pair is free
    assert len(set(prompts)) == len(prompts)
    by_pair = {(s.response_id, s.code_id): s for s in scores}
    assert by_pair["r4", "pay"].curve.surprisal.tolist() == (
        by_pair["r1", "pay"].curve.surprisal.tolist()
    )
    assert by_pair["r4", "pay"].response_id == "r4"
    assert scores[-1] == scores[0]


def test_batches_hold_one_code_and_the_longest_text_first(codebook: Codebook) -> None:
    backend = FakeBackend()
    engine = ScoringEngine(backend, codebook, batch_size=2)
    texts = {f"r{i}": "word " * (i + 1) for i in range(5)}
    list(engine.iter_batches(pairs_for(codebook, texts)))
    assert len(backend.batches) == 3 * 3  # 5 texts in batches of 2, per code
    for batch in backend.batches:
        codes = {line for p in batch for line in p.splitlines() if line.startswith("Code: ")}
        assert len(codes) == 1
    lengths = [len(p) for batch in backend.batches[:3] for p in batch]
    assert lengths == sorted(lengths, reverse=True)


def test_progress_reports_every_batch(codebook: Codebook) -> None:
    seen: list[BatchResult] = []
    engine = ScoringEngine(FakeBackend(), codebook, batch_size=2)
    pairs = pairs_for(codebook)
    scores = engine.score(pairs, progress=seen.append)
    assert len(scores) == len(pairs)
    assert [b.done for b in seen] == sorted(b.done for b in seen)
    assert seen[-1].done == seen[-1].total == len(pairs)
    assert sum(len(b.scores) for b in seen) == len(pairs)
    assert seen[-1].eta == 0.0
    assert all(b.rate > 0 for b in seen)
    assert seen[-1].fraction == 1.0


def test_cache_answers_a_second_run_without_the_model(codebook: Codebook) -> None:
    backend = FakeBackend()
    engine = ScoringEngine(backend, codebook)
    pairs = pairs_for(codebook)
    first = engine.score(pairs)
    calls = backend.calls
    batches = list(engine.iter_batches(pairs))
    assert backend.calls == calls
    assert len(batches) == 1
    assert batches[0].cached == len(pairs)
    assert batches[0].eta == 0.0
    second = engine.score(pairs)
    assert [s.curve.surprisal.tolist() for s in second] == [
        s.curve.surprisal.tolist() for s in first
    ]


def test_cache_key_follows_the_configuration(codebook: Codebook) -> None:
    backend = FakeBackend()
    pairs = pairs_for(codebook)[:3]
    a = ScoringEngine(backend, codebook, context="none").score(pairs)
    b = ScoringEngine(backend, codebook, context="full").score(pairs)
    assert a[0].config_key != b[0].config_key
    assert a[0].prompt != b[0].prompt
    strict = ScoringEngine(backend, codebook, strict=True)
    assert strict.config.key() != ScoringEngine(backend, codebook).config.key()


def test_same_input_scored_twice_gives_identical_numbers(codebook: Codebook) -> None:
    pairs = pairs_for(codebook)
    a = ScoringEngine(FakeBackend(), codebook).score(pairs)
    b = ScoringEngine(FakeBackend(), codebook).score(pairs)
    assert [s.curve.surprisal.tolist() for s in a] == [s.curve.surprisal.tolist() for s in b]
    assert [s.prompt_hash for s in a] == [s.prompt_hash for s in b]


def test_cancel_between_batches_keeps_what_was_finished(codebook: Codebook) -> None:
    backend = FakeBackend()
    engine = ScoringEngine(backend, codebook, batch_size=1)
    cancel = threading.Event()
    pairs = pairs_for(codebook)

    def stop_after_two(batch: BatchResult) -> None:
        if batch.done >= 2:
            cancel.set()

    with pytest.raises(ScoringCancelled, match="cancelled after") as info:
        engine.score(pairs, progress=stop_after_two, cancel=cancel)
    assert backend.calls == 2
    finished = [s for s in info.value.scores if s is not None]
    assert len(info.value.scores) == len(pairs)
    assert 2 <= len(finished) < len(pairs)
    # a second run reuses the finished batches: 9 unique (text, code) items in all
    engine.score(pairs)
    assert backend.calls == 9


def test_a_set_cancel_event_stops_before_the_first_batch(codebook: Codebook) -> None:
    backend = FakeBackend()
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(ScoringCancelled):
        ScoringEngine(backend, codebook).score(pairs_for(codebook), cancel=cancel)
    assert backend.calls == 0


def test_stopping_the_iteration_cancels(codebook: Codebook) -> None:
    backend = FakeBackend()
    batches = ScoringEngine(backend, codebook, batch_size=1).iter_batches(pairs_for(codebook))
    next(batches)
    batches.close()  # type: ignore[attr-defined]
    assert backend.calls == 1


def test_backend_failure_is_a_scoring_error(codebook: Codebook) -> None:
    engine = ScoringEngine(FakeBackend(fail_on_call=1), codebook, batch_size=2)
    seen: list[BatchResult] = []
    with pytest.raises(ScoringError, match="fake failure"):
        engine.score(pairs_for(codebook), progress=seen.append)
    assert len(seen) == 1


def test_scores_record_the_exact_prompt_and_identity(codebook: Codebook) -> None:
    engine = ScoringEngine(FakeBackend(), codebook, context="definition")
    pair = pairs_for(codebook)[0]
    (score,) = engine.score([pair])
    assert score.prompt == engine.prompt_for(pair)
    rendered = BASE_V1.render(engine.backend, codebook, pair.code, pair.text, "definition")
    assert score.prompt == rendered
    assert score.prompt.endswith(pair.text + "\nAnswer:")
    assert engine.config.template_id == "base-v1"
    assert engine.config.template_hash == BASE_V1.hash
    assert score.config_key == engine.config.key()
    assert score.code_hash == pair.code.content_hash()
    assert len(score.token_ids) == 5
    assert score.missing == (False,) * 5
    assert not score.truncated


def test_chat_prompts_through_the_frame_equal_a_full_rendering(codebook: Codebook) -> None:
    backend = FakeBackend(chat=True)
    engine = ScoringEngine(backend, codebook, context="full")
    assert engine.template is CHAT_V1
    texts = {"a": "  spaces at both ends  ", "b": "braces {code} and {{x}}", "c": "x\n\ny"}
    for pair in pairs_for(codebook, texts):
        expected = CHAT_V1.render(backend, codebook, pair.code, pair.text, "full")
        assert engine.prompt_for(pair) == expected
        assert expected.endswith(pair.text + "\n<|assistant|>\n")


def test_long_responses_are_cut_from_the_middle(codebook: Codebook) -> None:
    backend = FakeBackend(max_context=120)
    engine = ScoringEngine(backend, codebook)
    text = "start " + " ".join(f"w{i}" for i in range(400)) + " end"
    (score,) = engine.score([Pair("long", text, codebook.codes[0])])
    assert score.truncated
    assert TRUNCATION_MARK in score.prompt
    assert "start" in score.prompt
    assert "end\nAnswer:" in score.prompt
    assert backend.count_tokens(score.prompt) <= 120
    (short,) = engine.score([Pair("short", "fine", codebook.codes[0])])
    assert not short.truncated


def test_bad_settings_are_refused(codebook: Codebook) -> None:
    with pytest.raises(ScoringError, match="context level"):
        ScoringEngine(FakeBackend(), codebook, context="everything")
    with pytest.raises(ScoringError, match="batch size"):
        ScoringEngine(FakeBackend(), codebook, batch_size=0)
    with pytest.raises(ScoringError, match="needs a chat model"):
        ScoringEngine(FakeBackend(), codebook, template="chat-v1")
    with pytest.raises(ScoringError, match="unknown prompt template"):
        ScoringEngine(FakeBackend(), codebook, template="chat-v9")


def test_empty_run_yields_nothing(codebook: Codebook) -> None:
    assert ScoringEngine(FakeBackend(), codebook).score([]) == []


def test_rate_and_eta_are_numbers(codebook: Codebook) -> None:
    engine = ScoringEngine(FakeBackend(delay=0.01), codebook, batch_size=3)
    batches = list(engine.iter_batches(pairs_for(codebook)))
    assert all(b.rate > 0 and not math.isnan(b.eta) for b in batches)
    assert batches[0].eta > 0


def test_the_batch_size_defaults_to_the_backends_own(codebook: Codebook) -> None:
    class Roomy(FakeBackend):
        @property
        def batch_size(self) -> int:
            return 3

    assert ScoringEngine(FakeBackend(), codebook).batch_size == 16
    backend = Roomy()
    engine = ScoringEngine(backend, codebook)
    assert engine.batch_size == 3
    pairs = pairs_for(codebook, {f"r{i}": f"answer number {i}" for i in range(5)})
    engine.score(pairs)
    assert backend.calls == 3 * 2  # per code, 5 pairs in batches of 3
    assert ScoringEngine(backend, codebook, batch_size=5).batch_size == 5  # told otherwise


# -- long prompts: a token budget, and progress between the calls of a batch -----------------


def _long(words: int, tag: str = "") -> str:
    return f"start{tag} " + " ".join(f"w{i}" for i in range(words)) + f" end{tag}"


def test_a_long_response_costs_the_prompt_budget_not_the_models_context(
    codebook: Codebook,
) -> None:
    backend = FakeBackend(max_context=200_000)
    engine = ScoringEngine(backend, codebook)
    assert engine.max_prompt_tokens == 2048
    (score,) = engine.score([Pair("long", _long(20_000), codebook.codes[0])])
    assert score.truncated
    assert TRUNCATION_MARK in score.prompt
    assert 1500 < backend.count_tokens(score.prompt) <= 2048 - 16
    # The budget is configurable, and None means the model's whole context.
    small = ScoringEngine(backend, codebook, max_prompt_tokens=300)
    (score,) = small.score([Pair("long", _long(20_000), codebook.codes[0])])
    assert score.truncated
    assert backend.count_tokens(score.prompt) <= 300 - 16
    whole = ScoringEngine(backend, codebook, max_prompt_tokens=None)
    (score,) = whole.score([Pair("long", _long(20_000), codebook.codes[0])])
    assert not score.truncated
    # The model's context still caps the budget.
    short = ScoringEngine(FakeBackend(max_context=120), codebook, max_prompt_tokens=5000)
    assert short.prompt_limit == 120 - 16


def test_a_prompt_budget_too_small_is_refused(codebook: Codebook) -> None:
    with pytest.raises(ScoringError, match="prompt budget of 10 tokens is too small"):
        ScoringEngine(FakeBackend(), codebook, max_prompt_tokens=10)
    with pytest.raises(ScoringError, match="tokens per call"):
        ScoringEngine(FakeBackend(), codebook, batch_tokens=0)


def test_long_prompts_are_spread_over_calls_with_progress_after_each(
    codebook: Codebook,
) -> None:
    code = codebook.codes[0]
    pairs = [Pair(f"l{i}", _long(700, str(i)), code) for i in range(3)]
    pairs += [Pair("s1", "short one", code), Pair("s2", "short two", code)]
    reference = ScoringEngine(FakeBackend(max_context=200_000), codebook).score(pairs)
    backend = FakeBackend(max_context=200_000, batch_tokens=1000)
    engine = ScoringEngine(backend, codebook, batch_size=16)
    assert engine.batch_tokens == 1000
    results = list(engine.iter_batches(pairs))
    # One batch of five pairs, sent as four calls: each long prompt alone, then the
    # last long one with the two short ones; progress after every call.
    assert [len(b) for b in backend.batches] == [1, 1, 3]
    assert [len(r.scores) for r in results] == [1, 1, 3]
    assert all(sum(backend.count_tokens(p) for p in b) <= 1000 for b in backend.batches[:2])
    assert [r.done for r in results] == [1, 2, 5]
    assert all(r.tokens > 0 and r.token_rate > 0 for r in results)
    assert sum(r.tokens for r in results) == sum(
        backend.count_tokens(p) for b in backend.batches for p in b
    )
    # The same numbers as one call would give.
    by_id = {s.response_id: s for r in results for s in r.scores}
    for score in reference:
        assert by_id[score.response_id].curve.surprisal.tolist() == score.curve.surprisal.tolist()


def test_a_batch_within_the_token_bound_is_one_call_and_counts_nothing(
    codebook: Codebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = FakeBackend(batch_tokens=4096)
    counted: list[str] = []
    real = backend.count_tokens

    def count(prompt: str) -> int:
        counted.append(prompt)
        return real(prompt)

    monkeypatch.setattr(backend, "count_tokens", count)
    pairs = pairs_for(codebook)
    engine = ScoringEngine(backend, codebook, batch_size=16)
    engine.score(pairs)
    assert counted == []  # short prompts are known to fit from their bytes alone
    unbounded = FakeBackend()
    ScoringEngine(unbounded, codebook, batch_size=16).score(pairs)
    assert backend.batches == unbounded.batches


def test_a_slow_long_batch_reports_progress_every_call(codebook: Codebook) -> None:
    code = codebook.codes[0]
    pairs = [Pair(f"l{i}", _long(400, str(i)), code) for i in range(4)]
    backend = FakeBackend(max_context=200_000, batch_tokens=500, delay_per_token=2e-4)
    seen: list[BatchResult] = []
    ScoringEngine(backend, codebook).score(pairs, progress=seen.append)
    assert len(seen) == 4  # not one report after the whole batch
    assert seen[0].rate > 0
    assert math.isfinite(seen[0].eta)
    assert seen[0].eta > 0
    assert seen[-1].eta == 0.0


def test_a_batch_of_medium_prompts_beyond_the_bound_stays_one_call(codebook: Codebook) -> None:
    code = codebook.codes[0]
    pairs = [Pair(f"m{i}", _long(300, str(i)), code) for i in range(5)]
    backend = FakeBackend(max_context=200_000, batch_tokens=1000)
    results = list(ScoringEngine(backend, codebook).iter_batches(pairs))
    assert sum(backend.count_tokens(p) for p in backend.batches[0]) > 1000
    assert [len(b) for b in backend.batches] == [5]  # none is over half a call: no cut
    assert len(results) == 1


# -- a huge response: only its two ends are tokenized ---------------------------------------


class CountingBackend(FakeBackend):
    """The fake model, noting the longest text it was asked to tokenize or read."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.longest = 0

    def count_tokens(self, prompt: str) -> int:
        self.longest = max(self.longest, len(prompt))
        return super().count_tokens(prompt)

    def option_logprobs(self, prompts, options, *, spans=None):
        self.longest = max(self.longest, *(len(p) for p in prompts))
        return super().option_logprobs(prompts, options, spans=spans)


def test_a_huge_response_is_cut_before_it_is_tokenized(codebook: Codebook) -> None:
    from scoring.engine import MAX_TOKEN_CHARS

    backend = CountingBackend()
    engine = ScoringEngine(backend, codebook)
    text = "start " + "word " * 1_000_000 + "end"  # 5 MB
    (score,) = engine.score([Pair("huge", text, codebook.codes[0])])
    bound = engine.prompt_limit * MAX_TOKEN_CHARS + 10_000  # the ends, and the instructions
    assert backend.longest <= bound, backend.longest
    assert bound < len(text) // 5
    assert score.truncated
    assert TRUNCATION_MARK in score.prompt
    assert "start word word" in score.prompt.split(TRUNCATION_MARK)[0]
    assert score.prompt.endswith("word end\nAnswer:")
    assert backend.count_tokens(score.prompt) <= engine.prompt_limit
    # Cut the same way as a response just over the bound would be.
    just = "start " + "word " * (bound // 5) + "end"
    (near,) = engine.score([Pair("near", just, codebook.codes[0])])
    assert near.truncated
    assert abs(len(near.prompt) - len(score.prompt)) < 50


def test_the_embedded_model_tokenizes_only_the_ends_of_a_huge_response(
    plain_backend: object, codebook: Codebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scoring.engine import MAX_TOKEN_CHARS

    seen: list[int] = []
    count = plain_backend.count_tokens  # type: ignore[attr-defined]

    def counting(prompt: str) -> int | None:
        seen.append(len(prompt))
        return count(prompt)

    monkeypatch.setattr(plain_backend, "count_tokens", counting)
    engine = ScoringEngine(plain_backend, codebook, max_prompt_tokens=256)  # type: ignore[arg-type]
    text = "It began well. " + "The pay was late again. " * 200_000 + "It ended badly."  # 4.8 MB
    (score,) = engine.score([Pair("huge", text, codebook.codes[0])])
    assert max(seen) <= engine.prompt_limit * MAX_TOKEN_CHARS + 10_000
    assert score.truncated
    assert "It began well." in score.prompt
    assert "It ended badly." in score.prompt
    assert count(score.prompt) <= engine.prompt_limit
    assert math.isclose(float(score.curve.probs.sum()), 1.0, abs_tol=1e-6)


# -- features: where the response lies, and what the scores carry ---------------------------


def test_the_engine_tells_the_backend_where_each_response_lies(codebook: Codebook) -> None:
    backend = FakeBackend()
    engine = ScoringEngine(backend, codebook)
    code = codebook.codable[0]
    text = "my manager never listens to the team"
    (score,) = engine.score([Pair("r1", text, code)])
    assert engine.feature_layout == backend.feature_layout
    assert score.features is not None
    assert score.features.dtype == np.float16
    # The fake's features are the response's words alone: the prompt around them is not.
    from scoring.fake import fake_features

    prompt = engine.prompt_for(Pair("r1", text, code))
    start = prompt.index(text)
    assert np.array_equal(score.features, fake_features(prompt, (start, start + len(text))))
    assert not np.array_equal(score.features, fake_features(prompt, None))


def test_features_off_or_a_backend_without_them_leave_the_numbers_alone(
    codebook: Codebook,
) -> None:
    pairs = [Pair(f"r{i}", f"pay is low {i}", codebook.codable[0]) for i in range(5)]
    with_features = ScoringEngine(FakeBackend(), codebook).score(pairs)
    without = ScoringEngine(FakeBackend(), codebook, features=False).score(pairs)
    none = ScoringEngine(FakeBackend(features=False), codebook).score(pairs)
    assert all(s.features is None for s in without + none)
    for a, b in zip(with_features, without, strict=True):
        assert np.array_equal(a.curve.surprisal, b.curve.surprisal)
        assert (a.prompt_hash, a.config_key) == (b.prompt_hash, b.config_key)


def test_the_time_left_is_measured_in_work_not_pairs(codebook: Codebook) -> None:
    # The longest responses go first: a pair-count estimate after them said 16 minutes
    # for a run of 6 (llama.cpp, NHS comments). The work left is what remains to read.
    from scoring.engine import pair_work

    texts = {f"r{i}": f"{i:02d} " + "word " * (200 if i < 4 else 2) for i in range(16)}
    pairs = [Pair(rid, text, codebook.codes[0]) for rid, text in texts.items()]
    batches = list(ScoringEngine(FakeBackend(), codebook, batch_size=4).iter_batches(pairs))
    first = batches[0]
    assert first.work_done == pytest.approx(4 * pair_work("00 " + "word " * 200))
    assert first.work_left == pytest.approx(12 * pair_work("00 " + "word " * 2))
    # Time left = work left at the speed in work so far: a quarter of the pairs, far
    # more than a quarter of the work, done.
    assert first.eta == pytest.approx(first.elapsed * first.work_left / first.work_done)
    assert first.eta < first.elapsed * 3  # the pair count would have said 3x
    assert batches[-1].eta == 0.0
    assert batches[-1].work_left == 0.0
