"""Features from the scoring pass: the middle layer's hidden states at the answer position
and their mean over the response, projected, float16 (:mod:`scoring.backends.local`), in
both local backends on the embedded model (CPU; transformers in float32, llama.cpp on its
Q4_1 file).

Within transformers every layout computes the same states to float32 rounding, so the
float16 features agree to a float16 rounding step (:data:`F16_STEP`, relative). llama.cpp
rounds by batch shape (its quantized kernels): features agree to :data:`LLAMA_COSINE`
within it, and to :data:`CROSS_COSINE` with transformers (measured above 0.999).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scoring.backend import OptionVariants
from scoring.backends.kv_cache import common_prefix_len
from scoring.backends.local import FEATURE_WIDTH, PROJECTION_SEED, feature_layer
from scoring.backends.transformers.backend import TransformersBackend

pytestmark = pytest.mark.model

#: Relative step of float16 (10 mantissa bits): two roundings of nearly equal values.
F16_STEP = 2.0**-10
#: Log-probabilities with and without spans: the same pass, the same numbers.
TOL_LOGPROBS = 1e-9
#: llama.cpp with and without prefix reuse, alone or in a batch (per vector).
LLAMA_COSINE = 0.999
#: llama.cpp (Q4_1, 8-bit activations) against transformers (float32), per vector.
CROSS_COSINE = 0.9

#: The embedded model: 576 wide, 30 layers, read after 15 of them.
LAYOUT = "h576:l15of30:answer+mean:p512:f16"

LIKERT: list[OptionVariants] = [(str(i), f" {i}") for i in range(1, 6)]
MULTI: list[OptionVariants] = [*LIKERT, ("Tokyo",), ("Berlin",)]  # two continuations

HEAD = (
    "Rate how well the code 'Pay' applies to this survey response, from 1 (not at all) to "
    "5 (fully).\n\nResponse:\n"
)
TEXTS = [
    "My pay is low.",
    "My pay is fine, but the hours are long and the commute gets worse every winter.",
    "Great colleagues.",
    "ok",
    "The salary has not moved in three years while the rent doubled.",
]


def chat_prompts(backend: Any, texts: list[str]) -> tuple[list[str], list[tuple[int, int] | None]]:
    prompts = [backend.render_chat([{"role": "user", "content": HEAD + t}]) for t in texts]
    spans: list[tuple[int, int] | None] = []
    for prompt, text in zip(prompts, texts, strict=True):
        start = prompt.find(text)
        spans.append((start, start + len(text)))
    return prompts, spans


def same_backend(embedded: TransformersBackend, **options: Any) -> TransformersBackend:
    """The embedded weights with a chosen layout and a cold prefix cache."""
    return TransformersBackend(
        embedded.model, embedded.tokenizer, name="t", revision="t", **options
    )


def assert_f16_equal(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_allclose(
        a.astype(np.float64), b.astype(np.float64), rtol=F16_STEP, atol=F16_STEP / 16
    )


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    x, y = a.astype(np.float64), b.astype(np.float64)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def feats(result: Any) -> np.ndarray:
    """A result's features, which must be there."""
    assert result.features is not None
    features: np.ndarray = result.features
    return features


def halves(result: Any) -> tuple[np.ndarray, np.ndarray]:
    """A result's answer-position vector and its pooled one."""
    features = feats(result)
    return features[:FEATURE_WIDTH], features[FEATURE_WIDTH:]


# -- transformers ---------------------------------------------------------------------------


def test_features_are_two_projected_float16_vectors_only_when_spans_are_given(
    embedded_backend: TransformersBackend,
) -> None:
    assert embedded_backend.feature_layout == LAYOUT
    prompts, spans = chat_prompts(embedded_backend, TEXTS[:2])
    plain = embedded_backend.option_logprobs(prompts, LIKERT)
    assert all(r.features is None for r in plain)
    with_spans = embedded_backend.option_logprobs(prompts, LIKERT, spans=spans)
    for result in with_spans:
        assert result.features is not None
        assert result.features.shape == (2 * FEATURE_WIDTH,)
        assert result.features.dtype == np.float16
        assert result.features.nbytes == 2048
        assert np.isfinite(result.features).all()
    # A response that cannot be located pools the answer position alone.
    (lost,) = embedded_backend.option_logprobs(prompts[:1], LIKERT, spans=[None])
    answer, pooled = halves(lost)
    assert np.array_equal(answer, pooled)
    assert_f16_equal(answer, halves(with_spans[0])[0])  # alone, then in a packed row


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"packing": False},
        {"prefix_sharing": False},
        {"packing": False, "prefix_sharing": False},
    ],
    ids=["packed", "padded", "packed-unshared", "padded-unshared"],
)
def test_features_are_the_same_alone_and_in_every_batch_layout(
    embedded_backend: TransformersBackend, options: dict[str, bool]
) -> None:
    # The first two responses open alike ("My pay is"): scored as a batch of their own,
    # their shared prefix reaches into the responses, so pooled positions are read from
    # the prefix pass's states. Then all five, under a shorter prefix the first one holds
    # whole; then the two again, over the kept prefix.
    prompts, spans = chat_prompts(embedded_backend, TEXTS)
    alone = [
        same_backend(embedded_backend).option_logprobs([p], MULTI, spans=[s])[0]
        for p, s in zip(prompts, spans, strict=True)
    ]
    with_spans = same_backend(embedded_backend, **options)
    without = same_backend(embedded_backend, **options)
    start = prompts[0].find(TEXTS[0])
    response = len(embedded_backend.encode(prompts[0][:start]))  # its first token
    for part in (slice(0, 2), slice(0, 5), slice(0, 2)):
        got = with_spans.option_logprobs(prompts[part], MULTI, spans=spans[part])
        plain = without.option_logprobs(prompts[part], MULTI)
        if part.stop == 2 and options.get("prefix_sharing", True):
            assert with_spans._prefix is not None
            assert len(with_spans._prefix.ids) >= response + 3  # "My pay is" is in it
        for a, b, p in zip(alone[part], got, plain, strict=True):
            assert_f16_equal(feats(a), feats(b))
            np.testing.assert_allclose(p.logprobs, b.logprobs, atol=TOL_LOGPROBS, rtol=0)
            assert p.features is None
    assert with_spans.stats == without.stats
    if options.get("prefix_sharing", True):
        assert with_spans.stats["shared_tokens_saved"] > 0


def test_the_states_are_the_middle_layers_output(embedded_backend: TransformersBackend) -> None:
    """The states read are transformers' ``hidden_states[L // 2]`` of a plain forward pass
    of the prompt alone, in the padded and the packed layouts."""
    import torch

    backend = same_backend(embedded_backend)
    prompts, _ = chat_prompts(backend, TEXTS[:3])
    encoded = [backend.encode(p) for p in prompts]
    plan = backend._plan(LIKERT)
    layers = backend.model.config.num_hidden_layers
    assert feature_layer(layers) == 15 == layers // 2
    for batch in ([encoded[0]], encoded):  # alone (padded path) and packed
        scored = backend._score_encoded(batch, plan, [tuple(range(len(ids))) for ids in batch])
        for ids, one in zip(batch, scored, strict=True):
            assert one.states is not None
            assert sorted(one.states) == list(range(len(ids)))
            with torch.inference_mode():
                out = backend.model(input_ids=torch.tensor([ids]), output_hidden_states=True)
            reference = out.hidden_states[layers // 2][0].numpy()
            got = np.stack([one.states[p] for p in range(len(ids))])
            np.testing.assert_allclose(got, reference, atol=2e-3, rtol=1e-4)


def test_features_follow_the_one_definition(embedded_backend: TransformersBackend) -> None:
    """The answer state and the mean over every response token, each projected by the
    Gaussian matrix seeded by the hidden width, as float16."""
    backend = same_backend(embedded_backend)
    prompts, spans = chat_prompts(backend, TEXTS[1:3])
    results = backend.option_logprobs(prompts, LIKERT, spans=spans)
    width = 576
    rng = np.random.default_rng([PROJECTION_SEED, width])
    matrix = rng.normal(0.0, FEATURE_WIDTH**-0.5, size=(width, FEATURE_WIDTH))
    plan = backend._plan(LIKERT)
    for prompt, span, result in zip(prompts, spans, results, strict=True):
        assert span is not None
        start, end = span
        ids = backend.encode(prompt)
        first = len(backend.encode(prompt[:start]))
        last = len(backend.encode(prompt[:end])) - 1
        # The chat template puts the response right after a newline token: its first and
        # last tokens are the response's own.
        assert backend.tokenizer.decode(ids[first : last + 1]) == prompt[start:end]
        positions = tuple(range(first, last + 1))
        assert backend._pool_positions(prompt, span, len(ids), 10_000) == positions
        (scored,) = backend._score_encoded([ids], plan, [positions])
        assert scored.states is not None
        answer = scored.states[len(ids) - 1].astype(np.float64)
        pooled = np.mean([scored.states[p].astype(np.float64) for p in positions], axis=0)
        want = np.concatenate([answer @ matrix, pooled @ matrix]).astype(np.float16)
        assert_f16_equal(feats(result), want)


def test_a_prompt_cut_from_the_middle_pools_what_is_left_of_its_response(
    embedded_backend: TransformersBackend,
) -> None:
    small = same_backend(embedded_backend, chat=False, max_context=48)
    text = "My colleagues cover for me when my kids are ill, and I do the same for them. " * 4
    prompt = f"Rate it.\nResponse: {text}\nAnswer:"
    start = prompt.find(text)
    (result,) = small.option_logprobs([prompt], LIKERT, spans=[(start, start + len(text))])
    assert result.truncated
    assert result.features is not None
    assert np.isfinite(result.features).all()
    budget = 48 - 2  # the longest variant, " 5", is two tokens
    length = small.count_tokens(prompt)
    positions = small._pool_positions(prompt, (start, start + len(text)), length, budget)
    # The response's first tokens are kept at their places; its last ones moved left by
    # what was cut; the cue after it is kept too.
    first = small.count_tokens(prompt[:start])
    last = small.count_tokens(prompt[: start + len(text)]) - 1 - (length - budget)
    assert positions == tuple(range(first, last + 1))
    assert last < budget - 1


# -- llama.cpp ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def llama() -> Any:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from scoring import load_backend

    return load_backend(None, backend="llama.cpp", threads=1)


def fresh_llama(llama: Any, **options: Any) -> Any:
    from scoring.backends.llama.backend import LlamaCppBackend

    return LlamaCppBackend(llama.info, name="t", revision="t", threads=1, **options)


def test_llama_features_have_the_same_layout_and_leave_the_numbers_alone(llama: Any) -> None:
    assert llama.feature_layout == LAYOUT
    prompts, spans = chat_prompts(llama, TEXTS)
    without, with_spans = fresh_llama(llama), fresh_llama(llama)
    for options in (LIKERT, MULTI):
        plain = without.option_logprobs(prompts, options)
        got = with_spans.option_logprobs(prompts, options, spans=spans)
        for a, b in zip(plain, got, strict=True):
            assert a.features is None
            assert b.features is not None
            assert b.features.shape == (2 * FEATURE_WIDTH,)
            assert b.features.dtype == np.float16
            np.testing.assert_allclose(a.logprobs, b.logprobs, atol=TOL_LOGPROBS, rtol=0)
    # The pooled positions cost nothing: the same tokens are evaluated.
    assert without.stats == with_spans.stats
    assert fresh_llama(llama, features=False).feature_layout is None


def test_llama_features_are_the_same_alone_and_under_prefix_reuse(llama: Any) -> None:
    # "My pay is low." and "My pay is fine, ..." share their first three tokens: under
    # prefix reuse the second prompt does not evaluate them again, and its pooled
    # positions there come from the first prompt's pass, which marks them for it.
    prompts, spans = chat_prompts(llama, TEXTS)
    alone = [
        fresh_llama(llama, prefix_reuse=False).option_logprobs([p], LIKERT, spans=[s])[0]
        for p, s in zip(prompts, spans, strict=True)
    ]
    reused = fresh_llama(llama)
    batch = reused.option_logprobs(prompts, LIKERT, spans=spans)
    assert reused.stats["reused_tokens"] > 0
    whole = fresh_llama(llama, prefix_reuse=False).option_logprobs(prompts, LIKERT, spans=spans)
    for a, b, c in zip(alone, batch, whole, strict=True):
        for x, y, z in zip(halves(a), halves(b), halves(c), strict=True):
            assert cosine(x, y) > LLAMA_COSINE
            assert cosine(x, z) > LLAMA_COSINE


def test_llama_features_agree_with_the_transformers_path(
    llama: Any, embedded_backend: TransformersBackend
) -> None:
    prompts, spans = chat_prompts(llama, TEXTS)
    ours = llama.option_logprobs(prompts, LIKERT, spans=spans)
    ref = embedded_backend.option_logprobs(prompts, LIKERT, spans=spans)
    seen = []
    for a, b in zip(ours, ref, strict=True):
        for x, y in zip(halves(a), halves(b), strict=True):
            seen.append(cosine(x, y))
    print(f"\ncosine llama.cpp / transformers: min {min(seen):.4f}, median {np.median(seen):.4f}")
    assert min(seen) > CROSS_COSINE


def test_leave_one_out_variants_share_their_opening_tokens_and_read_the_same(
    embedded_backend: TransformersBackend,
) -> None:
    """A response and its leave-one-sentence-out variants, packed in one row: each
    variant's tokens before the sentence it leaves out are computed once (a token tree),
    and every variant reads what it reads alone, features included."""
    sentences = [
        "The pay is fine.",
        " The hours are long and the rota changes every week.",
        " The commute gets worse every winter.",
        " My manager listens when I raise a problem.",
    ]
    texts = ["".join(sentences)] + [
        "".join(s for j, s in enumerate(sentences) if j != i) for i in range(len(sentences))
    ]
    prompts, spans = chat_prompts(embedded_backend, texts)
    alone = [
        same_backend(embedded_backend).option_logprobs([p], MULTI, spans=[s])[0]
        for p, s in zip(prompts, spans, strict=True)
    ]
    packed = same_backend(embedded_backend, packing=True)
    got = packed.option_logprobs(prompts, MULTI, spans=spans)
    for a, b in zip(alone, got, strict=True):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4, rtol=0)
        assert_f16_equal(feats(a), feats(b))
    # Without the tree a packed row holds every prompt's tokens past the shared prefix.
    encoded = [packed.encode(p) for p in prompts]
    shared = common_prefix_len(encoded)
    suffixes = sum(len(e) - shared for e in encoded)
    first = spans[0]
    assert first is not None
    opening = len(packed.encode(prompts[0][: first[0] + len(sentences[0])])) - shared
    computed = packed.stats["forward_tokens"] - shared  # the prefix pass, then the row
    assert computed < suffixes - 3 * opening  # variants 2-4 share at least sentence 1
