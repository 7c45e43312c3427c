"""The transformers backend on the real embedded model (CPU, float32, deterministic).

Reference values are computed independently: one prompt at a time, a plain forward pass
without padding, full logits, ``log_softmax`` in float64. Tolerance 1e-4 nats: batching,
padding and the shared-prefix cache change float32 rounding, nothing else.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from codebooks.model import Code, Codebook
from scoring import Pair, ScoringEngine, load_backend
from scoring.backend import OptionVariants
from scoring.backends.transformers.backend import MIN_SHARED_PREFIX, TransformersBackend

pytestmark = pytest.mark.model

TOL = 1e-4

LIKERT = [(str(i), f" {i}") for i in range(1, 6)]


def reference_pooled(
    backend: TransformersBackend, prompt: str, options: list[OptionVariants]
) -> np.ndarray:
    """ln P(option | prompt) with variants pooled: one unpadded sequence at a time, full
    logits, float64 log-softmax; a multi-token variant gets its own teacher-forced pass."""
    import torch

    ids = backend.encode(prompt)

    def logp(tokens: list[int]) -> Any:
        with torch.inference_mode():
            logits = backend.model(input_ids=torch.tensor([ids + tokens])).logits[0]
        return torch.log_softmax(logits.double(), dim=-1)

    after_prompt = logp([])[-1]
    pooled = []
    for option in options:
        values = []
        for variant in option:
            tokens = list(backend.tokenizer(variant, add_special_tokens=False)["input_ids"])
            if len(tokens) == 1:
                values.append(float(after_prompt[tokens[0]]))
            else:
                lp = logp(tokens)
                values.append(sum(float(lp[len(ids) - 1 + t, k]) for t, k in enumerate(tokens)))
        pooled.append(np.logaddexp.reduce(values))
    return np.array(pooled)


SHORT = "Rate it.\nAnswer:"
MEDIUM = (
    "Rate how well the code 'Pay' applies to this survey response, from 1 (not at all) to "
    "5 (fully).\n\nResponse: My salary has not moved in three years while rent doubled.\n"
    "Answer:"
)
LONG = (
    "Rate how well the code 'Team' applies to this survey response, from 1 (not at all) to "
    "5 (fully).\n\nResponse: "
    + "My colleagues cover for me when my kids are ill, and I do the same for them. " * 6
    + "\nAnswer:"
)


def layout(plain: TransformersBackend, *, packing: bool, sharing: bool = True) -> Any:
    """The same weights with a chosen batch layout (and a cold prefix cache)."""
    return TransformersBackend(
        plain.model,
        plain.tokenizer,
        name="t",
        revision="t",
        chat=False,
        packing=packing,
        prefix_sharing=sharing,
    )


@pytest.mark.parametrize("packing", [True, False], ids=["packed", "padded"])
def test_batched_scores_equal_one_prompt_at_a_time(
    plain_backend: TransformersBackend, packing: bool
) -> None:
    plain_backend = layout(plain_backend, packing=packing)
    prompts = [SHORT, LONG, MEDIUM]
    lengths = [plain_backend.count_tokens(p) for p in prompts]
    assert max(lengths) > 10 * min(lengths)
    options: list[OptionVariants] = [("1",), ("2",), ("3",), ("4",), ("5",)]
    got = plain_backend.option_logprobs(prompts, options)
    for prompt, result in zip(prompts, got, strict=True):
        want = reference_pooled(plain_backend, prompt, options)
        np.testing.assert_allclose(result.logprobs, want, atol=TOL, rtol=0)
        assert result.prompt_tokens == plain_backend.count_tokens(prompt)
        assert not result.truncated
    assert (got[0].logprobs <= 0).all()


@pytest.mark.parametrize("packing", [True, False], ids=["packed", "padded"])
def test_multi_token_options_are_teacher_forced_sums(
    plain_backend: TransformersBackend, packing: bool
) -> None:
    plain_backend = layout(plain_backend, packing=packing)
    tok = plain_backend.tokenizer
    options: list[OptionVariants] = [("Tokyo",), ("Berlin",), (" 10",), (" Paris",)]
    lengths = [len(tok(o[0], add_special_tokens=False)["input_ids"]) for o in options]
    assert lengths == [2, 2, 3, 1]  # two distinct continuations and a three-token one
    prompts = ["The capital of Germany is", SHORT]
    got = plain_backend.option_logprobs(prompts, options)
    for prompt, result in zip(prompts, got, strict=True):
        np.testing.assert_allclose(
            result.logprobs, reference_pooled(plain_backend, prompt, options), atol=TOL, rtol=0
        )
    # one shared continuation (the space before a digit) goes through the single-pass path
    spaced: list[OptionVariants] = [(" 1",), (" 2",), (" 10",)]
    (result,) = plain_backend.option_logprobs([MEDIUM], spaced)
    np.testing.assert_allclose(
        result.logprobs, reference_pooled(plain_backend, MEDIUM, spaced), atol=TOL, rtol=0
    )
    assert result.token_ids[2] == (tuple(tok(" 10", add_special_tokens=False)["input_ids"]),)


def test_surface_variants_are_pooled_and_strict_scores_one(
    plain_backend: TransformersBackend,
) -> None:
    pooled = plain_backend.option_logprobs([MEDIUM], LIKERT)[0].logprobs
    bare = plain_backend.option_logprobs([MEDIUM], [(a,) for a, _ in LIKERT])[0].logprobs
    spaced = plain_backend.option_logprobs([MEDIUM], [(b,) for _, b in LIKERT])[0].logprobs
    np.testing.assert_allclose(pooled, np.logaddexp(bare, spaced), atol=1e-6, rtol=0)
    assert (pooled >= np.maximum(bare, spaced) - 1e-6).all()

    book = Codebook(name="t", codes=(Code("pay", "Pay", definition="Money."),))
    pair = Pair("r", "My salary is too low.", book.codes[0])
    strict = ScoringEngine(plain_backend, book, strict=True).score([pair])[0]
    loose = ScoringEngine(plain_backend, book).score([pair])[0]
    # base-v1 ends in "Answer:", so strict mode scores the leading-space rendering
    assert [len(o) for o in strict.token_ids] == [1] * 5
    assert strict.token_ids[2] == (tuple(plain_backend.tokenizer(" 3")["input_ids"]),)
    assert [len(o) for o in loose.token_ids] == [2] * 5
    assert strict.config_key != loose.config_key
    assert (loose.curve.surprisal <= strict.curve.surprisal + 1e-9).all()


def test_capital_of_france_is_paris(plain_backend: TransformersBackend) -> None:
    labels = ["Paris", "Tokyo", "London", "Berlin"]
    options = [(label, " " + label) for label in labels]
    (result,) = plain_backend.option_logprobs(["The capital of France is"], options)
    assert labels[int(np.argmax(result.logprobs))] == "Paris"


def test_same_input_twice_gives_identical_numbers(plain_backend: TransformersBackend) -> None:
    prompts = [MEDIUM, SHORT]
    a = plain_backend.option_logprobs(prompts, LIKERT)
    b = plain_backend.option_logprobs(prompts, LIKERT)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x.logprobs, y.logprobs)
        assert x.token_ids == y.token_ids


def test_prefix_sharing_and_packing_equal_the_plain_path(
    plain_backend: TransformersBackend,
) -> None:
    head = MEDIUM.split("Response:")[0] + "Response: "
    tails = [
        "ok",
        "The pay is fine but the hours are long and the commute is worse every winter.",
        "Money.",
        "I would like a raise, like everyone else here, and a bonus at the end of the year.",
    ]
    prompts = [head + t + "\nAnswer:" for t in tails]
    options: list[OptionVariants] = [*LIKERT, ("Tokyo",), ("Berlin",)]  # every path at once
    plain = layout(plain_backend, packing=False, sharing=False).option_logprobs(prompts, options)
    assert len(plain) == len(prompts)
    for packing in (False, True):
        backend = layout(plain_backend, packing=packing, sharing=True)
        shared = backend.option_logprobs(prompts, options)
        saved = backend.stats["shared_tokens_saved"]
        assert saved >= MIN_SHARED_PREFIX * len(prompts)
        again = backend.option_logprobs(prompts[::-1], options)  # reuses the prefix's cache
        for x, y, z in zip(plain, shared, again[::-1], strict=True):
            np.testing.assert_allclose(x.logprobs, y.logprobs, atol=TOL, rtol=0)
            np.testing.assert_allclose(x.logprobs, z.logprobs, atol=TOL, rtol=0)
    unshared_packed = layout(plain_backend, packing=True, sharing=False)
    for x, y in zip(plain, unshared_packed.option_logprobs(prompts, options), strict=True):
        np.testing.assert_allclose(x.logprobs, y.logprobs, atol=TOL, rtol=0)


def test_a_new_code_extends_the_cached_prefix(plain_backend: TransformersBackend) -> None:
    backend = layout(plain_backend, packing=True)
    intro = "Rate how well a code applies to a survey response, from 1 to 5.\n\nCode: "
    first = [intro + "Pay\n\nResponse: " + t + "\nAnswer:" for t in ("low", "fine")]
    second = [intro + "Team\n\nResponse: " + t + "\nAnswer:" for t in ("low", "fine")]
    backend.option_logprobs(first, LIKERT)
    before = backend.stats["forward_tokens"]
    got = backend.option_logprobs(second, LIKERT)
    computed = backend.stats["forward_tokens"] - before
    assert computed < sum(backend.count_tokens(p) for p in second) - len(intro) // 8
    plain = layout(plain_backend, packing=False, sharing=False)
    for x, y in zip(plain.option_logprobs(second, LIKERT), got, strict=True):
        np.testing.assert_allclose(x.logprobs, y.logprobs, atol=TOL, rtol=0)


def test_over_long_prompts_are_cut_and_flagged(plain_backend: TransformersBackend) -> None:
    small = TransformersBackend(
        plain_backend.model,
        plain_backend.tokenizer,
        name="t",
        revision="t",
        chat=False,
        max_context=64,
    )
    long_result, short_result = small.option_logprobs([LONG, SHORT], LIKERT)
    assert long_result.truncated
    assert long_result.prompt_tokens <= 64
    assert np.isfinite(long_result.logprobs).all()
    assert not short_result.truncated


def test_engine_cuts_the_response_so_the_prompt_is_what_the_model_read(
    plain_backend: TransformersBackend,
) -> None:
    small = TransformersBackend(
        plain_backend.model,
        plain_backend.tokenizer,
        name="t",
        revision="t",
        chat=False,
        max_context=128,
    )
    book = Codebook(name="t", codes=(Code("team", "Team"),))
    text = "My colleagues cover for me when my kids are ill, and I do the same. " * 8
    (score,) = ScoringEngine(small, book, context="none").score([Pair("r", text, book.codes[0])])
    assert score.truncated
    assert "[...]" in score.prompt
    assert small.count_tokens(score.prompt) <= 128


def test_embedded_model_identity_and_chat_prompt(embedded_backend: TransformersBackend) -> None:
    ident = embedded_backend.identity
    assert ident.name == "embedded:SmolLM2-135M-Instruct"
    assert len(ident.revision) == 16
    assert int(ident.revision, 16) >= 0
    assert (ident.dtype, ident.device, ident.backend) == ("float32", "cpu", "transformers")
    assert embedded_backend.is_chat
    rendered = embedded_backend.render_chat([{"role": "user", "content": "Hi"}])
    assert rendered.endswith("<|im_start|>assistant\n")


def test_engine_batches_equal_single_pairs(embedded_backend: TransformersBackend) -> None:
    book = Codebook(name="t", codes=(Code("pay", "Pay", definition="Salary and benefits."),))
    texts = ["My salary has not moved in three years.", "Great colleagues."]
    pairs = [Pair(str(i), t, book.codes[0]) for i, t in enumerate(texts)]
    batched = ScoringEngine(embedded_backend, book, context="none", batch_size=8).score(pairs)
    single = ScoringEngine(embedded_backend, book, context="none", batch_size=1).score(pairs)
    for a, b in zip(batched, single, strict=True):
        np.testing.assert_allclose(a.curve.surprisal, b.curve.surprisal, atol=TOL, rtol=0)
        assert a.prompt == b.prompt
        assert a.prompt.endswith("<|im_start|>assistant\n")
        assert a.curve.on_scale_mass > 0.01


def test_second_load_reads_the_converted_weights(embedded_backend: TransformersBackend) -> None:
    started = time.perf_counter()
    again: Any = load_backend("embedded", device="cpu")
    seconds = time.perf_counter() - started
    # A benchmark figure, not an assertion: this machine is shared.
    print(f"second load of the embedded model: {seconds:.2f} s")
    assert again.identity == embedded_backend.identity
    (a,) = again.option_logprobs(["The capital of France is"], [("Paris",), ("Rome",)])
    (b,) = embedded_backend.option_logprobs(["The capital of France is"], [("Paris",), ("Rome",)])
    assert np.array_equal(a.logprobs, b.logprobs)


def test_a_cache_that_cannot_be_shared_falls_back_to_the_plain_path(
    plain_backend: TransformersBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scoring.backends.kv_cache import Unshareable
    from scoring.backends.transformers import backend as tb

    backend = layout(plain_backend, packing=False)
    head = "Rate how well the code 'Pay' applies, from 1 (not at all) to 5 (fully). Answer: "
    prompts = [head + "a", head + "bcd"]
    want = backend.option_logprobs(prompts, LIKERT)
    assert backend.stats["shared_tokens_saved"] > 0

    def unshareable(cache: Any) -> Any:
        raise Unshareable("sliding windows")

    monkeypatch.setattr(tb, "_layers_kv", unshareable)
    backend.close()
    got = backend.option_logprobs(prompts, LIKERT)
    assert not backend.prefix_sharing
    for x, y in zip(want, got, strict=True):
        np.testing.assert_allclose(x.logprobs, y.logprobs, atol=TOL, rtol=0)


def test_a_gguf_path_loads_through_the_same_converted_folder(
    embedded_backend: TransformersBackend,
) -> None:
    from scoring.weights import embedded_gguf_path

    path = embedded_gguf_path()
    backend: Any = load_backend(str(path), device="cpu", chat=False)
    assert backend.identity.name == str(path.resolve())
    assert backend.identity.revision == embedded_backend.identity.revision
    assert not backend.is_chat


def test_a_100000_character_response_reads_the_prompt_budget_only(
    embedded_backend: TransformersBackend,
) -> None:
    book = Codebook(name="t", codes=(Code("pay", "Pay", definition="Salary and benefits."),))
    sentence = "My pay has not moved in years, and the rent keeps going up. "
    text = "FIRST " + sentence * (100_000 // len(sentence) + 1) + " LAST"
    assert len(text) > 100_000
    engine = ScoringEngine(embedded_backend, book)
    assert engine.max_prompt_tokens == 2048
    assert embedded_backend.max_context > 2048
    seen: list[Any] = []
    started = time.monotonic()
    (score,) = engine.score([Pair("long", text, book.codes[0])], progress=seen.append)
    elapsed = time.monotonic() - started
    print(f"\n100,000 characters scored in {elapsed:.1f} s")  # a figure, not an assertion
    assert score.truncated
    for part in ("FIRST", "[...]", "LAST"):
        assert part in score.prompt
    read = embedded_backend.count_tokens(score.prompt)
    assert 1800 < read <= 2048 - 16
    assert seen[-1].tokens == read
    assert seen[-1].token_rate > 0


def test_long_prompts_in_several_calls_equal_one_call(
    embedded_backend: TransformersBackend,
) -> None:
    book = Codebook(name="t", codes=(Code("team", "Team"),))
    base = "My colleagues cover for me when my kids are ill, and I do the same. "
    pairs = [Pair(str(i), f"{i}: " + base * (12 + 3 * i), book.codes[0]) for i in range(3)]
    split = ScoringEngine(embedded_backend, book, context="none", batch_tokens=300)
    whole = ScoringEngine(embedded_backend, book, context="none", batch_tokens=None)
    results = list(split.iter_batches(pairs))
    # About 200 to 310 tokens each: every prompt is long for 300 tokens per call.
    assert len(results) == 3
    reference = {s.response_id: s for s in whole.score(pairs)}
    for result in results:
        for score in result.scores:
            np.testing.assert_allclose(
                score.curve.surprisal, reference[score.response_id].curve.surprisal, atol=TOL
            )


@pytest.mark.parametrize("packing", [True, False], ids=["packed", "padded"])
def test_a_batch_whose_prefix_the_kept_one_holds_whole_reuses_it(
    plain_backend: TransformersBackend, packing: bool
) -> None:
    backend = layout(plain_backend, packing=packing)
    head = MEDIUM.split("Response:")[0] + "Response: "
    common = "My salary has not moved in three years while the rent in this city doubled, "
    long_shared = [head + common + t + "\nAnswer:" for t in ("and I am tired.", "so I left.")]
    short_shared = [head + t + "\nAnswer:" for t in ("Fine.", "Too low for the work.")]
    backend.option_logprobs(long_shared, LIKERT)
    kept = backend.stats["forward_tokens"]
    got = backend.option_logprobs(short_shared, LIKERT)  # computes no prefix of its own
    suffixes = sum(backend.count_tokens(p) for p in short_shared) - 2 * len(backend.encode(head))
    assert backend.stats["forward_tokens"] - kept <= suffixes + 2 * len(LIKERT)
    plain = layout(plain_backend, packing=False, sharing=False)
    for x, y in zip(plain.option_logprobs(short_shared, LIKERT), got, strict=True):
        np.testing.assert_allclose(x.logprobs, y.logprobs, atol=TOL, rtol=0)


def test_a_prompt_that_runs_on_as_another_ones_option_reads_its_own_options(
    plain_backend: TransformersBackend,
) -> None:
    """In a packed row's token tree a prompt may end where another prompt's option
    continues (the same tokens at the same positions): both read every option, in
    whichever order the row takes them."""
    options: list[OptionVariants] = [*LIKERT, ("Tokyo",), ("Berlin",)]
    tokyo = plain_backend.tokenizer("Tokyo", add_special_tokens=False)["input_ids"]
    assert len(tokyo) > 1  # a continuation: its first token is fed after the prompt
    short = plain_backend.encode(MEDIUM)
    runs_on = short + tokyo[:1]  # the prompt "Tokyo"'s continuation would be
    backend = layout(plain_backend, packing=True)
    plan = backend._plan(options)
    plain = layout(plain_backend, packing=False, sharing=False)
    want = plain._score_encoded([short], plan, None) + plain._score_encoded([runs_on], plan, None)
    for order in ([short, runs_on], [runs_on, short]):
        got = backend._score_encoded(order, plan, None)
        if order[0] is runs_on:
            got = got[::-1]
        for x, y in zip(want, got, strict=True):
            flat_x = [v for variants in x.values for v in variants]
            flat_y = [v for variants in y.values for v in variants]
            np.testing.assert_allclose(flat_x, flat_y, atol=TOL, rtol=0)
