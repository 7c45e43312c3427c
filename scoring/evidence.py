"""Which sentence of a response moved the model: leave-one-sentence-out, measured.

For a scored (response, code) pair, the response is cut into sentences
(:mod:`scoring.sentences`), and each sentence is left out in turn; every such variant
is scored through the same :class:`~scoring.engine.ScoringEngine` as the pair itself (the
same prompt, context, scale and model), so the variants of a code share the code's
prompt prefix and go through the engine's batches and prefix reuse like any pairs. A
sentence's effect is how far the pair's numbers fall when it is left out:

    applies_effect  = P(applies | response) - P(applies | response without the sentence)
    expected_effect = E[value | response]   - E[value | response without the sentence]

P(applies) is the curve's probability of the values that mean "applies" (the scale's
``applies_from`` and above). A positive effect: the sentence pushed the model towards
"applies"; the *top* sentence is the one with the largest ``applies_effect`` (the
model's evidence for the code, the quotation a QDA user expects). This is attribution
measured on the model (ERASER's comprehensiveness, DeYoung et al. 2020), not a
rationale the model wrote.

Which curve: by default the engine's own, the model's zero-shot curve. A configuration
whose curve is computed from what the engine returns (a learned curve:
:meth:`scoring.learned.LearnedCurve.probs_of` reads the score's features and zero-shot
curve) passes a :data:`Reading`, and every variant is read through it, the whole
response included: the effects are then the learned curve's.

A response of one sentence (or none) has no evidence: leaving its only sentence out
leaves nothing to score. A response of many sentences is explained by its
:data:`~scoring.sentences.MAX_SENTENCES` longest (:func:`scoring.sentences.bounded`),
so one pair costs at most that many passes, plus one for the pair itself (a cache hit
when the engine scored it already).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from codebooks.model import Scale
from scoring.engine import PAIR_OVERHEAD, BatchResult, ScoringEngine, pair_work
from scoring.score import Pair, Score, text_hash
from scoring.sentences import MAX_SENTENCES, Span, bounded, split_sentences, without

#: Variants scored between two reports of progress (and two chances to cancel): a few
#: engine batches, so that a code's variants still share batches.
CHUNK_VARIANTS = 256

#: A curve's probabilities over the scale (shape (K,)) for a score the engine returned.
Reading = Callable[[Score], npt.NDArray[np.float64]]

#: Why a pair has no evidence.
NONE_ONE_SENTENCE = "one sentence"
NONE_NO_SENTENCE = "no sentence"


@dataclass(frozen=True)
class SentenceEffect:
    """One sentence of a response and what leaving it out did.

    Attributes:
        start: First character of the sentence in the response text.
        end: One past its last character.
        applies_without: P(applies) with the sentence left out.
        expected_without: The expected value with the sentence left out.
        applies_effect: P(applies) minus ``applies_without`` (positive: the sentence
            pushed the model towards "applies").
        expected_effect: The expected value minus ``expected_without``.
    """

    start: int
    end: int
    applies_without: float
    expected_without: float
    applies_effect: float
    expected_effect: float

    def text(self, response: str) -> str:
        return response[self.start : self.end]


@dataclass(frozen=True)
class Evidence:
    """The sentences of one pair's response and their effects.

    Attributes:
        response_id: The response.
        code_id: The code.
        text_hash: Hash of the response text explained (it is invalid for another text).
        code_hash: :meth:`Code.content_hash` of the code as asked.
        applies: P(applies) of the whole response.
        expected: Its expected value.
        sentences: The sentences measured, in text order (empty: see ``reason``).
        total_sentences: Sentences in the response, before :func:`bounded` kept the
            longest.
        reason: Why there are no sentences (``one sentence``, ``no sentence``), else "".
        variants_tokens: Prompt tokens the model read for the pair and its variants (a
            chunk's tokens shared out by variants; 0 when unknown or cached): the cost of
            the explanation.
    """

    response_id: str
    code_id: str
    text_hash: str
    code_hash: str
    applies: float
    expected: float
    sentences: tuple[SentenceEffect, ...]
    total_sentences: int
    reason: str = ""
    variants_tokens: int = 0

    @property
    def top(self) -> SentenceEffect | None:
        """The sentence whose absence lowers P(applies) most (ties: the earlier)."""
        return self.ranked()[0] if self.sentences else None

    def ranked(self) -> list[SentenceEffect]:
        """The sentences by ``applies_effect``, largest first (ties: text order)."""
        return sorted(self.sentences, key=lambda s: (-s.applies_effect, s.start))

    @property
    def bounded(self) -> bool:
        """Whether only the longest sentences were measured."""
        return len(self.sentences) < self.total_sentences


@dataclass(frozen=True)
class ExplainProgress:
    """Where an explanation run stands: pairs and variants done, seconds, the engine's
    last batch (None before the first)."""

    pairs_done: int
    pairs_total: int
    variants_done: int
    variants_total: int
    elapsed: float
    batch: BatchResult | None = None


def applies_probability(probs: Sequence[float] | np.ndarray, scale: Scale) -> float:
    """P(applies): the renormalised probability of the values at or above the scale's
    ``applies_from``."""
    mask = np.asarray([v >= scale.threshold for v in scale.values], dtype=bool)
    return float(np.asarray(probs, dtype=np.float64)[mask].sum())


def sentence_spans(text: str, *, limit: int = MAX_SENTENCES) -> tuple[list[Span], int]:
    """The spans measured for ``text`` (at most ``limit``, the longest) and how many
    sentences it has."""
    spans = split_sentences(text)
    return bounded(spans, limit) if len(spans) > 1 else [], len(spans)


def explain_work(text: str, *, limit: int = MAX_SENTENCES) -> float:
    """What explaining a pair of response ``text`` costs, in :func:`pair_work`'s
    characters (0 for a response of one sentence or none): the pair itself, then each
    variant from the end of the sentence it leaves out on, since what comes before is
    computed once for all of a pair's variants (prefix reuse and the transformers
    backend's token tree), and the prompt's part after the response, which every
    variant reads (:data:`~scoring.engine.PAIR_OVERHEAD`)."""
    spans, _ = sentence_spans(text, limit=limit)
    if not spans:
        return 0.0
    return pair_work(text) + sum(len(text) - end + PAIR_OVERHEAD for _, end in spans)


def variant_count(text: str, *, limit: int = MAX_SENTENCES) -> int:
    """Variants :func:`explain` scores for ``text`` (0 for one sentence or none)."""
    return len(sentence_spans(text, limit=limit)[0])


def explain(
    engine: ScoringEngine,
    pairs: Sequence[Pair],
    *,
    limit: int = MAX_SENTENCES,
    progress: Callable[[ExplainProgress], None] | None = None,
    cancel: threading.Event | None = None,
    reading: Reading | None = None,
) -> Iterator[Evidence]:
    """Measure each pair's sentences, yielding an :class:`Evidence` per pair as its
    variants are scored (pairs of one chunk together, in the order given).

    Args:
        engine: The engine of the pairs' configuration: the variants are scored exactly
            as the pairs were.
        pairs: The pairs to explain.
        limit: Most sentences measured per response (the longest; see the module).
        progress: Called after every engine batch.
        cancel: Checked between engine batches; set, the iteration stops (what was
            yielded stays valid).
        reading: The curve the effects are measured on, from each variant's score
            (default: the engine's zero-shot curve; see the module).

    Raises:
        ScoringError: the model failed.
    """
    planned = [(pair, *sentence_spans(pair.text, limit=limit)) for pair in pairs]
    variants_total = sum(len(spans) + 1 for _, spans, _ in planned)
    started = time.monotonic()
    pairs_done = variants_done = 0
    for chunk in _chunks(planned):
        families = [_variants(pair, spans) for pair, spans, _ in chunk]
        asked = [p for family in families for p in family]
        scores: list[Score] = []
        read = 0
        before = 0  # the chunk's variants in earlier calls
        for call in _calls(families, engine.batch_size):
            for batch in engine.iter_batches(call):
                scores.extend(batch.scores)
                read += batch.tokens
                if progress is not None:
                    elapsed = time.monotonic() - started
                    progress(
                        ExplainProgress(
                            pairs_done,
                            len(planned),
                            variants_done + before + batch.done,
                            variants_total,
                            elapsed,
                            batch,
                        )
                    )
                if cancel is not None and cancel.is_set():
                    return
            before += len(call)
        by_id = {s.response_id: s for s in scores}
        for pair, spans, total in chunk:
            share = read * (len(spans) + 1) // max(len(asked), 1)
            yield _evidence(pair, spans, total, by_id, share, reading)
        pairs_done += len(chunk)
        variants_done += len(asked)
        if progress is not None:
            elapsed = time.monotonic() - started
            progress(
                ExplainProgress(pairs_done, len(planned), variants_done, variants_total, elapsed)
            )


_Planned = tuple[Pair, list[Span], int]


def _chunks(planned: list[_Planned]) -> Iterator[list[_Planned]]:
    """Consecutive pairs of about :data:`CHUNK_VARIANTS` variants (a pair is never split)."""
    chunk: list[_Planned] = []
    size = 0
    for item in planned:
        chunk.append(item)
        size += len(item[1]) + 1
        if size >= CHUNK_VARIANTS:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _calls(families: list[list[Pair]], size: int) -> Iterator[list[Pair]]:
    """The engine calls of a chunk: its pairs' variants (a *family* each) a code at a
    time, whole families together up to ``size`` variants (a larger family alone), so
    that a family lands in one batch, where a backend can compute the tokens its
    variants begin with once (the transformers backend's token tree)."""
    call: list[Pair] = []
    for family in sorted(families, key=lambda f: f[0].code.id):
        if call and (len(call) + len(family) > size or call[0].code.id != family[0].code.id):
            yield call
            call = []
        call += family
    if call:
        yield call


def _variants(pair: Pair, spans: list[Span]) -> list[Pair]:
    """The pair itself, then one pair per sentence left out (ids ``rid\\x1fi``)."""
    out = [Pair(_variant_id(pair, None), pair.text, pair.code)]
    out += [
        Pair(_variant_id(pair, i), without(pair.text, span), pair.code)
        for i, span in enumerate(spans)
    ]
    return out


def _variant_id(pair: Pair, i: int | None) -> str:
    return f"{pair.response_id}\x1f{pair.code.id}\x1f{'' if i is None else i}"


def _evidence(
    pair: Pair,
    spans: list[Span],
    total: int,
    by_id: dict[str, Score],
    tokens: int,
    reading: Reading | None,
) -> Evidence:
    whole = by_id[_variant_id(pair, None)]
    applies, expected = _read(whole, reading)
    effects = []
    for i, (start, end) in enumerate(spans):
        p, e = _read(by_id[_variant_id(pair, i)], reading)
        effects.append(SentenceEffect(start, end, p, e, applies - p, expected - e))
    reason = "" if spans else (NONE_ONE_SENTENCE if total == 1 else NONE_NO_SENTENCE)
    return Evidence(
        response_id=pair.response_id,
        code_id=pair.code.id,
        text_hash=text_hash(pair.text),
        code_hash=whole.code_hash,
        applies=applies,
        expected=expected if math.isfinite(expected) else math.nan,
        sentences=tuple(effects),
        total_sentences=total,
        reason=reason,
        variants_tokens=tokens,
    )


def _read(score: Score, reading: Reading | None) -> tuple[float, float]:
    """P(applies) and the expected value of ``score``'s curve, or of ``reading``'s."""
    if reading is None:
        return applies_probability(score.curve.probs, score.scale), float(score.curve.expected)
    probs = np.asarray(reading(score), dtype=np.float64)
    values = np.asarray([float(v) for v in score.scale.values])
    return applies_probability(probs, score.scale), float((values * probs).sum())
