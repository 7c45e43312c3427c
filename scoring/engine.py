"""The batch engine: from (response, code) pairs to scores, batch by batch.

For a list of :class:`~scoring.score.Pair` the engine

1. looks every pair up in its in-process cache, keyed by the score's identity
   (METHOD.md: model and revision, template id and hash, context, scale and strictness,
   the question, the code's content hash, the text's hash); the option token ids are a
   function of the model and the scale, both in the key;
2. de-duplicates the rest (same text and same code are scored once, whatever their
   response ids);
3. groups them by code, so that every batch shares the long prompt prefix the templates
   put before the response (the transformers backend computes it once), and by scale,
   since one backend call scores one options list; at context ``examples`` a code's
   worked examples are part of that prefix, shown identically in each of its prompts;
4. sorts each group by length, longest first (memory errors surface early, time
   estimates err high), and cuts it into batches; the group holding the longest text
   goes first;
5. yields a :class:`BatchResult` per batch from a generator, with progress figures.

Stopping the iteration between batches cancels the run; :meth:`ScoringEngine.score`
does that when its ``cancel`` event is set and raises :class:`ScoringCancelled` (its
``scores`` attribute holds the scores finished so far, in the caller's order, ``None``
for the rest; finished batches also stay in the engine's cache, so scoring the same
pairs again resumes where it stopped).

Prompts longer than the prompt budget (``max_prompt_tokens``, 2,048 tokens by default,
or the model's context when that is shorter) have their response cut from the middle
(the mark ``[...]`` shows where) *before* rendering, so the prompt recorded with a score
is exactly the one the model read; the score is flagged ``truncated``. A long response
costs the budget, not the model's full context (attention grows with its square).

Long prompts also make long backend calls. Where the backend says how many prompt
tokens one call should hold (:attr:`Backend.batch_tokens`), a batch that holds a long
prompt (over half that) and exceeds it is sent in several calls, each yielding its own
:class:`BatchResult`, so progress keeps coming; every result also says how many prompt
tokens the model read, and at what rate. Any other batch is sent whole, as before, so
the numbers of ordinary prompts do not move.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from codebooks.errors import Remedy
from codebooks.model import Code, Codebook, Scale
from scoring.backend import Backend, OptionLogprobs
from scoring.curves import curve_from_logprobs
from scoring.errors import ScoringCancelled, ScoringError
from scoring.score import CONTEXT_LEVELS, Pair, Score, ScoreConfig, text_hash
from scoring.templates import (
    TRUNCATION_MARK,
    Example,
    PromptTemplate,
    examples_hash,
    get_template,
)

log = logging.getLogger(__name__)

#: Cached scores kept in memory (least recently used dropped first).
DEFAULT_CACHE_SIZE = 100_000

#: Tokens kept free after the prompt for the options' tokens.
OPTION_RESERVE = 16

#: Longest prompt, in tokens, unless the engine is told otherwise (or the model's context
#: is shorter): beyond it the response is cut from the middle.
DEFAULT_PROMPT_TOKENS = 2048

#: More characters than any token of any tokenizer covers (the longest are runs of
#: spaces or punctuation, well under this): a response longer than this many characters
#: per token of the prompt budget cannot fit, and is cut to its two ends before it is
#: tokenized.
MAX_TOKEN_CHARS = 256

#: The smallest prompt budget accepted: the instructions need room, and so does the text.
MIN_PROMPT_TOKENS = 64

#: Placeholder rendered in place of the response to split a code's prompt once.
_SLOT = "\x00codecurve-response\x00"

#: A response no faithful template changes: spaces at both ends, braces, markup, escapes.
_PROBE = '  \n {x} {{y}} <b>&amp;</b> \\n "q" \t\n '


#: What scoring a pair costs besides its response, in characters of response: the part
#: of the prompt after the response, the answer's options, a sequence of the batch.
PAIR_OVERHEAD = 200


def pair_work(text: str) -> float:
    """What scoring a pair of response ``text`` costs, in characters: the time a run
    takes grows with its responses' length (the code's shared prompt is read once)."""
    return float(len(text) + PAIR_OVERHEAD)


@dataclass(frozen=True)
class BatchResult:
    """One finished batch and where the run stands.

    Attributes:
        scores: The batch's scores (duplicates of a scored pair included, each with its
            own response id); the first batch of a run may hold cache hits only.
        done: Pairs finished so far, cache hits and duplicates included.
        total: Pairs in the run.
        elapsed: Seconds since the run started.
        rate: Pairs scored by the model per second so far (0.0 before the first batch).
        eta: Seconds left; ``nan`` while unknown, 0.0 when done. Measured in work, not
            pairs (:func:`pair_work`): the batches go longest response first, so the
            first pairs' speed says little of the rest's.
        cached: Pairs of this batch that came from the cache.
        tokens: Prompt tokens the model read for this batch (0 for cache hits).
        token_rate: Prompt tokens read per second so far (0.0 before the first batch).
        work_done: :func:`pair_work` of the pairs the model scored so far.
        work_left: :func:`pair_work` of the pairs it has still to score.
    """

    scores: list[Score]
    done: int
    total: int
    elapsed: float
    rate: float
    eta: float
    cached: int = 0
    tokens: int = 0
    token_rate: float = 0.0
    work_done: float = 0.0
    work_left: float = 0.0

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


ProgressCallback = Callable[[BatchResult], None]


@dataclass(frozen=True)
class _Fitted:
    """A pair's prompt as the model reads it, whether it was cut, and its tokens if counted."""

    prompt: str
    cut: bool
    tokens: int | None = None
    span: tuple[int, int] | None = None  # the response's characters in the prompt

    @property
    def byte_bound(self) -> int:
        """At least as many as the prompt's tokens (BOS and a spare included)."""
        return len(self.prompt.encode("utf-8")) + 2


@dataclass
class _Item:
    """A unique (text, code) to score, and the caller's positions it answers."""

    key: str
    pair: Pair
    scale: Scale
    positions: list[int] = field(default_factory=list)


class ScoringEngine:
    """Scores pairs with one backend, codebook, template and context level.

    Args:
        backend: The model.
        codebook: Supplies the question and the default scale (a code may bring its own).
        context: ``none``, ``definition``, ``full`` or ``examples``.
        strict: Score one rendering per option instead of pooling surface variants.
        batch_size: Pairs per backend call (default: the backend's own,
            :attr:`Backend.batch_size`).
        template: A template id (``chat-v1``, ``base-v1``), a template, or None for the
            backend's default (chat-v1 for chat models, base-v1 otherwise).
        cache_size: Scores kept in the in-process cache.
        max_prompt_tokens: Longest prompt in tokens; a longer one has its response cut
            from the middle and its score flagged ``truncated``. None = the model's
            context. The model's context caps it either way.
        batch_tokens: Most prompt tokens per backend call for a batch that holds a long
            prompt (over half of it); such a batch is sent in several calls (default:
            :attr:`Backend.batch_tokens`; None there = no bound).
        features: Keep what the model computed for each pair (:attr:`Score.features`)
            where the backend returns it, in the same pass; off scores without it.
        examples: At context ``examples`` (and only there), the worked examples shown
            per code id: (response text, label) pairs, in the order shown, before the
            response in every prompt of the code. A code without any is asked as at
            ``full``. They are part of the configuration
            (:attr:`ScoreConfig.examples_hash`).
    """

    def __init__(
        self,
        backend: Backend,
        codebook: Codebook,
        *,
        context: str = "definition",
        strict: bool = False,
        batch_size: int | None = None,
        template: str | PromptTemplate | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        max_prompt_tokens: int | None = DEFAULT_PROMPT_TOKENS,
        batch_tokens: int | None = None,
        features: bool = True,
        examples: Mapping[str, Sequence[Example]] | None = None,
    ) -> None:
        if context not in CONTEXT_LEVELS:
            raise ScoringError(
                f"unknown context level {context!r}; choose one of {', '.join(CONTEXT_LEVELS)}"
            )
        if context == "examples" and examples is None:
            raise ScoringError(
                "context 'examples' shows pairs a coder decided as worked examples, and "
                "none were given (scoring a study at context 'examples' chooses them from "
                "the study's decisions)",
                remedy=Remedy(
                    "score", "score a study with worked examples", {"context": "examples"}
                ),
            )
        if context != "examples" and examples is not None:
            raise ScoringError(f"worked examples are shown at context 'examples', not {context!r}")
        if batch_size is None:
            batch_size = backend.batch_size
        if batch_size < 1:
            raise ScoringError(f"batch size must be at least 1, got {batch_size}")
        if max_prompt_tokens is not None and max_prompt_tokens < MIN_PROMPT_TOKENS:
            raise ScoringError(
                f"a prompt budget of {max_prompt_tokens} tokens is too small; "
                f"give at least {MIN_PROMPT_TOKENS}"
            )
        if batch_tokens is None:
            batch_tokens = backend.batch_tokens
        if batch_tokens is not None and batch_tokens < 1:
            raise ScoringError(f"tokens per call must be at least 1, got {batch_tokens}")
        self.backend = backend
        self.codebook = codebook
        self.context = context
        self.strict = strict
        self.batch_size = batch_size
        self.max_prompt_tokens = max_prompt_tokens
        self.batch_tokens = batch_tokens
        self.features = features
        self.template = get_template(template, backend)
        self._examples: dict[str, tuple[Example, ...]] = {
            code_id: tuple((str(text), str(label)) for text, label in shown)
            for code_id, shown in (examples or {}).items()
            if shown
        }
        # Per code, so that a code's frame and cache keys hold the examples it shows.
        self._examples_keys = {
            code_id: text_hash(json.dumps(shown, ensure_ascii=False))
            for code_id, shown in self._examples.items()
        }
        self._config = ScoreConfig(
            model=backend.identity,
            template_id=self.template.id,
            template_hash=self.template.hash,
            context=context,
            scale=codebook.scale,
            strict=strict,
            examples_hash="" if examples is None else examples_hash(self._examples),
        )
        self._config_key = self._config.key()
        self._question_hash = text_hash(codebook.question)
        self._cache: OrderedDict[str, Score] = OrderedDict()
        self._cache_size = cache_size
        self._frames: dict[str, tuple[str, str] | None] = {}
        # Keyed by id() with the object kept, so an id is never reused while cached.
        self._code_hashes: dict[int, tuple[Code, str]] = {}
        self._code_keys: dict[int, tuple[Code, str]] = {}
        self._frames_lock = threading.Lock()

    # -- public ---------------------------------------------------------------------------

    @property
    def config(self) -> ScoreConfig:
        return self._config

    @property
    def examples(self) -> Mapping[str, tuple[Example, ...]]:
        """The worked examples shown per code id (empty unless at context ``examples``)."""
        return dict(self._examples)

    @property
    def captures_features(self) -> bool:
        """Whether the scores carry the model's features (:attr:`Score.features`): the
        backend returns them and the engine was not told to leave them out."""
        return self.features and self.backend.feature_layout is not None

    @property
    def feature_layout(self) -> str | None:
        """What the scores' features are (None: they carry none)."""
        return self.backend.feature_layout if self.captures_features else None

    def prompt_for(self, pair: Pair) -> str:
        """The exact prompt the model reads for ``pair`` (cut to fit, if it must be)."""
        return self._fit(pair).prompt

    @property
    def prompt_limit(self) -> int:
        """Tokens a prompt may hold: the budget or the model's context, less the options'."""
        context = self.backend.max_context
        if self.max_prompt_tokens is not None:
            context = min(context, self.max_prompt_tokens)
        return context - OPTION_RESERVE

    def iter_batches(self, pairs: Sequence[Pair]) -> Iterator[BatchResult]:
        """Score ``pairs``, yielding each batch as it finishes (stop iterating to cancel)."""
        for result, _ in self._run(list(pairs)):
            yield result

    def score(
        self,
        pairs: Iterable[Pair],
        *,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> list[Score]:
        """Score ``pairs`` and return the scores in the same order.

        Args:
            pairs: The pairs; duplicates are scored once.
            progress: Called with every :class:`BatchResult`.
            cancel: Checked between batches; when set, the run stops and
                :class:`ScoringCancelled` is raised with the finished scores attached
                (``exc.scores``: the caller's order, None where not scored).
        """
        items = list(pairs)
        out: list[Score | None] = [None] * len(items)
        runner = self._run(items)
        try:
            while True:
                if cancel is not None and cancel.is_set():
                    done = sum(s is not None for s in out)
                    if done < len(items):
                        raise ScoringCancelled(
                            f"scoring cancelled after {done} of {len(items)} pairs", scores=out
                        )
                try:
                    result, positions = next(runner)
                except StopIteration:
                    break
                for score, pos in zip(result.scores, positions, strict=True):
                    out[pos] = score
                if progress is not None:
                    progress(result)
        finally:
            runner.close()
        return [s for s in out if s is not None]

    def cache_size(self) -> int:
        """Scores held in the in-process cache."""
        return len(self._cache)

    def clear_cache(self) -> None:
        self._cache.clear()

    # -- the run ------------------------------------------------------------------------

    def _run(self, pairs: list[Pair]) -> Generator[tuple[BatchResult, list[int]], None, None]:
        started = time.monotonic()
        total = len(pairs)
        hits: list[Score] = []
        hit_positions: list[int] = []
        todo: dict[str, _Item] = {}
        for pos, pair in enumerate(pairs):
            scale = self.codebook.scale_for(pair.code)
            key = self._key(pair, scale)
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                hits.append(_for_pair(cached, pair))
                hit_positions.append(pos)
                continue
            item = todo.get(key)
            if item is None:
                item = todo[key] = _Item(key, pair, scale)
            item.positions.append(pos)
        done = len(hits)
        remaining = len(todo)
        work_left = sum(pair_work(item.pair.text) for item in todo.values())
        work_done = 0.0
        if hits:
            eta = 0.0 if not todo else math.nan
            yield (
                BatchResult(hits, done, total, time.monotonic() - started, 0.0, eta, len(hits)),
                hit_positions,
            )
        scored = 0
        tokens = 0
        for batch in self._batches(list(todo.values())):
            fitted = [self._fit(item.pair) for item in batch]
            options = self.template.options(batch[0].scale, strict=self.strict)
            for part in self._calls(fitted):
                items = [batch[i] for i in part]
                answers = self._ask(
                    [fitted[i].prompt for i in part], options, [fitted[i].span for i in part]
                )
                scores: list[Score] = []
                positions: list[int] = []
                for i, item, answer in zip(part, items, answers, strict=True):
                    score = self._make_score(item, fitted[i], answer)
                    self._remember(item.key, score)
                    for pos in item.positions:
                        scores.append(_for_pair(score, pairs[pos]))
                        positions.append(pos)
                read = sum(max(0, a.prompt_tokens) for a in answers)
                scored += len(items)
                tokens += read
                remaining -= len(items)
                work = sum(pair_work(item.pair.text) for item in items)
                work_done += work
                work_left = max(0.0, work_left - work)
                done += len(scores)
                elapsed = time.monotonic() - started
                rate = scored / elapsed if elapsed > 0 else 0.0
                if remaining == 0:
                    eta = 0.0
                elif work_done > 0 and elapsed > 0:
                    eta = work_left / (work_done / elapsed)
                else:
                    eta = math.nan
                token_rate = tokens / elapsed if elapsed > 0 else 0.0
                result = BatchResult(
                    scores,
                    done,
                    total,
                    elapsed,
                    rate,
                    eta,
                    tokens=read,
                    token_rate=token_rate,
                    work_done=work_done,
                    work_left=work_left,
                )
                yield result, positions

    def _ask(
        self,
        prompts: list[str],
        options: list[tuple[str, ...]],
        spans: list[tuple[int, int] | None],
    ) -> list[OptionLogprobs]:
        """One backend call, its failures turned into :class:`ScoringError`.

        A backend that returns features (:attr:`Backend.feature_layout`) is told where
        each response lies in its prompt, so that it pools the response's tokens.
        """
        try:
            if self.captures_features:
                answers = self.backend.option_logprobs(prompts, options, spans=spans)
            else:
                answers = self.backend.option_logprobs(prompts, options)
        except ScoringError:
            raise
        except (RuntimeError, ValueError) as exc:
            raise ScoringError(f"the model failed on a batch of {len(prompts)}: {exc}") from exc
        if len(answers) != len(prompts):
            raise ScoringError(
                f"the backend answered {len(answers)} prompts for a batch of {len(prompts)}"
            )
        return answers

    def _calls(self, fitted: list[_Fitted]) -> list[list[int]]:
        """A batch cut into backend calls of at most :attr:`batch_tokens` prompt tokens.

        Only a batch that holds a long prompt (over half a call's tokens) and exceeds the
        bound is cut; any other batch is one call, exactly as without the bound, so
        ordinary prompts keep their numbers to the last bit. Counting tokens costs a
        tokenizer run, so it is skipped while a bound on the bytes (a token covers at
        least one) shows that no prompt is long.
        """
        whole = [list(range(len(fitted)))]
        limit = self.batch_tokens
        if limit is None or len(fitted) < 2:
            return whole
        bounds = [f.tokens if f.tokens is not None else f.byte_bound for f in fitted]
        if max(bounds) <= limit // 2 or sum(bounds) <= limit:
            return whole
        counts = [
            f.tokens if f.tokens is not None else (self.backend.count_tokens(f.prompt) or b)
            for f, b in zip(fitted, bounds, strict=True)
        ]
        if max(counts) <= limit // 2 or sum(counts) <= limit:
            return whole
        calls: list[list[int]] = [[]]
        size = 0
        for i, count in enumerate(counts):
            if calls[-1] and size + count > limit:
                calls.append([])
                size = 0
            calls[-1].append(i)
            size += count
        return calls

    def _batches(self, items: list[_Item]) -> list[list[_Item]]:
        groups: dict[tuple[str, str], list[_Item]] = {}
        for item in items:
            groups.setdefault((item.pair.code.id, self._code_hash(item.pair.code)), []).append(item)
        ordered = []
        for group in groups.values():
            group.sort(key=lambda it: -len(it.pair.text))
            ordered.append(group)
        ordered.sort(key=lambda g: -len(g[0].pair.text))
        return [
            group[i : i + self.batch_size]
            for group in ordered
            for i in range(0, len(group), self.batch_size)
        ]

    def _make_score(self, item: _Item, fitted: _Fitted, answer: OptionLogprobs) -> Score:
        prompt = fitted.prompt
        scale = item.scale
        curve = curve_from_logprobs(answer.logprobs, values=[float(v) for v in scale.values])
        missing = np.asarray(answer.missing, dtype=bool)
        if missing.shape != (scale.k,):
            missing = np.zeros(scale.k, dtype=bool)
        return Score(
            response_id=item.pair.response_id,
            code_id=item.pair.code.id,
            config_key=self._config_key,
            scale=scale,
            curve=curve,
            token_ids=answer.token_ids,
            missing=tuple(bool(m) for m in missing),
            prompt=prompt,
            prompt_hash=text_hash(prompt),
            text_hash=text_hash(item.pair.text),
            code_hash=self._code_hash(item.pair.code),
            truncated=fitted.cut or answer.truncated,
            features=answer.features,
        )

    def _remember(self, key: str, score: Score) -> None:
        self._cache[key] = score
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _key(self, pair: Pair, scale: Scale) -> str:
        return self._code_key(pair.code, scale) + text_hash(pair.text)

    def _code_key(self, code: Code, scale: Scale) -> str:
        """Everything in a score's identity but the text, once per code object."""
        hit = self._code_keys.get(id(code))
        if hit is not None and hit[0] is code:
            return hit[1]
        parts = [
            self._config_key,
            self._question_hash,
            self._code_hash(code),
            repr(scale.to_dict()),
        ]
        shown = self._examples_keys.get(code.id)
        if shown is not None:
            parts.append(shown)
        key = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]
        self._code_keys[id(code)] = (code, key)
        return key

    def _code_hash(self, code: Code) -> str:
        """:meth:`Code.content_hash` (a JSON dump and a sha256), once per code object."""
        hit = self._code_hashes.get(id(code))
        if hit is not None and hit[0] is code:
            return hit[1]
        value = code.content_hash()
        self._code_hashes[id(code)] = (code, value)
        return value

    # -- prompts ----------------------------------------------------------------------------

    def _render(self, code: Code, text: str) -> str:
        """Render a prompt, through a per-code frame when that is provably identical.

        Rendering a chat template per pair costs a Jinja run; a code's frame (everything
        before and after the response) is rendered once with a placeholder and checked
        against one full rendering before it is trusted.
        """
        frame = self._frame(code)
        if frame is None:
            return self._render_whole(code, text)
        head, tail = frame
        return head + text + tail

    def _render_whole(self, code: Code, text: str) -> str:
        """The template's rendering, the code's worked examples included."""
        return self.template.render(
            self.backend,
            self.codebook,
            code,
            text,
            self.context,
            examples=self._examples.get(code.id, ()),
        )

    def _frame(self, code: Code) -> tuple[str, str] | None:
        key = self._code_hash(code) + self._examples_keys.get(code.id, "")
        with self._frames_lock:
            if key in self._frames:
                return self._frames[key]
        probe = self._render_whole(code, _SLOT)
        frame: tuple[str, str] | None = None
        if probe.count(_SLOT) == 1:
            head, tail = probe.split(_SLOT)
            # A template that trims, escapes or rewrites the content fails this check.
            full = self._render_whole(code, _PROBE)
            if full == head + _PROBE + tail:
                frame = (head, tail)
        with self._frames_lock:
            self._frames[key] = frame
        return frame

    def _fit(self, pair: Pair) -> _Fitted:
        """The prompt for a pair, its response cut from the middle when too long, with
        the response's place in it when the code's frame is known."""
        fitted = self._fit_prompt(pair)
        frame = self._frame(pair.code)
        if frame is None:
            return fitted
        head, tail = frame
        prompt = fitted.prompt
        if not (prompt.startswith(head) and prompt.endswith(tail)):
            return fitted
        return replace(fitted, span=(len(head), len(prompt) - len(tail)))

    def _fit_prompt(self, pair: Pair) -> _Fitted:
        text = pair.text
        prompt = self._render(pair.code, text)
        limit = self.prompt_limit
        # A token covers at least one byte, so a prompt this short in bytes always fits.
        if len(prompt) + 2 <= limit and len(prompt.encode("utf-8")) + 2 <= limit:
            return _Fitted(prompt, False)
        span = limit * MAX_TOKEN_CHARS
        if len(text) > span:
            # Longer than any prompt of ``limit`` tokens can be: only its two ends can be
            # read, so only they are tokenized (a 50 MB response is never tokenized whole).
            half = span // 2
            text = text[:half] + text[len(text) - half :]
            prompt = self._render(pair.code, text[:half] + TRUNCATION_MARK + text[half:])
            count = self.backend.count_tokens(prompt)
            if count is None or count <= limit:
                return _Fitted(prompt, True, count)
        else:
            count = self.backend.count_tokens(prompt)
            if count is None or count <= limit:
                return _Fitted(prompt, False, count)
        bare = self.backend.count_tokens(self._render(pair.code, TRUNCATION_MARK.strip()))
        room = limit - (bare or 0)
        if room < 8:
            log.warning("the prompt of code %r leaves no room for a response", pair.code.name)
            return _Fitted(prompt, False, count)  # the backend cuts the tokens, flags the score
        keep = len(text)
        for _ in range(12):
            keep = int(keep * min(0.95, room / max(count - (bare or 0), 1)))
            if keep < 2:
                break
            head = text[: keep - keep // 2].rstrip()
            tail = text[len(text) - keep // 2 :].lstrip()
            prompt = self._render(pair.code, head + TRUNCATION_MARK + tail)
            count = self.backend.count_tokens(prompt) or 0
            if count <= limit:
                return _Fitted(prompt, True, count)
        return _Fitted(self._render(pair.code, TRUNCATION_MARK.strip()), True, bare)


def _for_pair(score: Score, pair: Pair) -> Score:
    """A score handed to another pair with the same text and code."""
    if score.response_id == pair.response_id:
        return score
    return replace(score, response_id=pair.response_id)
