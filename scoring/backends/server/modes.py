"""The four ways of reading log-probabilities from a completions server: payloads and answers.

Every variant token's log-probability is read in one of four ways (``mode``):

``logprob_token_ids``  vLLM's one-token read of chosen tokens (``max_tokens: 1`` with
                       ``logprob_token_ids``): the full-vocabulary log-probability of
                       exactly the variants' tokens, after the prompt and after each
                       leading part of a multi-token variant, one request per prompt.
``prompt_logprobs``    vLLM's extra body field on the list of sequences prompt + variant;
                       each position's entry is keyed by token id, so reading it is exact.
``echo``               ``echo: true, logprobs: 0, max_tokens: 0`` on the same sequences; a
                       variant's tokens are the last ``token_logprobs`` of its sequence.
``topk``               ``max_tokens: 1, logprobs: k`` on the prompt (and on the prompt
                       followed by the leading tokens of multi-token variants); a token
                       outside the top k is bounded by the k-th log-probability.

Each read gives a :class:`Reading`; :func:`pool_reading` turns it into one value per
option with :func:`scoring.variants.pool_variants`, flagging as missing an option one of
whose tokens was not seen (its value is then an upper bound, never a guess).

Nothing the server says is taken on trust (:func:`logprob`): a value where a
log-probability belongs must be a JSON number, not NaN, at most :data:`LOGPROB_SLACK`
above 0 (logits and probabilities are refused, not clamped to 0) and either ``-inf``
(probability zero) or at least :data:`LOGPROB_FLOOR`. :func:`unusable` then refuses a
pooled reading that cannot be a curve: every option at probability zero, every option
unseen, or disjoint options whose probabilities add up to more than 1.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from scoring.backend import BoolArray, FloatArray
from scoring.backends.server.tokens import Seq, ServerTokens, TokenPlan
from scoring.errors import ServerRejectedError
from scoring.variants import pool_variants

log = logging.getLogger(__name__)

MODES = ("auto", "logprob_token_ids", "prompt_logprobs", "echo", "topk")

#: vLLM's cap on ``logprob_token_ids`` per request.
MAX_LOGPROB_TOKEN_IDS = 128

#: Top-k asked in ``topk`` mode; vLLM caps it at ``--max-logprobs`` (default 20).
DEFAULT_TOPK = 20

#: One top log-probability entry of an answer: (token id, token text, logprob).
Entry = tuple[int | None, str | None, float]


#: How far above 0 a log-probability may be: float32 rounding of a softmax, no more.
LOGPROB_SLACK = 1e-6

#: The lowest finite log-probability believed, in nats. A real softmax over a vocabulary
#: gives nothing near it (vLLM itself writes a zero probability as -9999.0); below it the
#: numbers are not log-probabilities, and values like -1e308 make a curve's mass
#: underflow to a uniform curve with entropy 0.
LOGPROB_FLOOR = -1e4

#: How far above 1 the probabilities of disjoint options may add up (rounding).
MASS_SLACK = 1e-3


class Unsupported(Exception):
    """An answer that lacks what a mode needs (a server that ignores the parameter)."""


class NotALogprob(Unsupported):
    """A value where a log-probability belongs that is not one."""


def logprob(raw: object) -> float:
    """A value of an answer as a log-probability in nats, at most 0.

    Raises:
        NotALogprob: ``raw`` is not a number (``true``, a string, null), is NaN, lies above
            :data:`LOGPROB_SLACK` (+inf, a logit, a probability) or is finite below
            :data:`LOGPROB_FLOOR`.
    """
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise NotALogprob(f"{str(raw)[:40]!r} where a log-probability belongs")
    value = float(raw)
    if math.isnan(value):
        raise NotALogprob("NaN where a log-probability belongs")
    if value > LOGPROB_SLACK:
        raise NotALogprob(
            f"{value:g} where a log-probability belongs: log-probabilities are at most 0, "
            "so these look like logits or probabilities (a vLLM server must be "
            "started with its logprobs mode raw_logprobs or processed_logprobs)"
        )
    if value < LOGPROB_FLOOR and value != -math.inf:
        raise NotALogprob(
            f"{value:g} where a log-probability belongs: no softmax gives a finite value "
            f"below {LOGPROB_FLOOR:g}"
        )
    return min(value, 0.0)


@dataclass
class Reading:
    """What the server said about one prompt: ``lp[context][token]`` in nats.

    ``bound[context]`` is set in ``topk`` mode: the lowest log-probability listed there,
    an upper bound for every token that was not.
    """

    lp: dict[Seq, dict[int, float]]
    bound: dict[Seq, float]


class ModeReader:
    """Reads one prompt's variant tokens in a given mode.

    Args:
        request: Sends one JSON request (``request(method, path, payload)``).
        tokens: The server's tokenizer (for token texts, where answers carry no ids).
        name: The served model name.
        stats: Counters; ``sequences`` is raised by every sequence scored.
        topk: The k of ``topk`` mode (lowered to the server's limit when it says so).
    """

    def __init__(
        self,
        request: Callable[[str, str, Any], Awaitable[Any]],
        tokens: ServerTokens,
        *,
        name: str,
        stats: dict[str, int],
        topk: int = DEFAULT_TOPK,
    ) -> None:
        self._request = request
        self._tokens = tokens
        self.name = name
        self.stats = stats
        self.topk = max(1, topk)

    async def read(self, mode: str, ids: list[int], plan: TokenPlan) -> Reading:
        """Every token the plan needs, after the prompt ``ids``, in ``mode``."""
        if mode == "logprob_token_ids":
            return await self._read_token_ids(ids, plan)
        if mode == "prompt_logprobs":
            return await self._read_prompt_logprobs(ids, plan)
        if mode == "echo":
            return await self._read_echo(ids, plan)
        return await self._read_topk(ids, plan)

    async def _completions(self, payload: dict[str, Any], n: int) -> list[dict[str, Any]]:
        payload = {"model": self.name, "temperature": 0.0, **payload}
        body = await self._request("POST", "/v1/completions", payload)
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or len(choices) != n:
            raise Unsupported(f"expected {n} choices in the answer")
        numbered: list[tuple[int, dict[str, Any]]] = []
        for c in choices:
            i = c.get("index", 0) if isinstance(c, dict) else None
            if not isinstance(i, int) or isinstance(i, bool):
                raise Unsupported("the answer's choices are not numbered")
            numbered.append((i, c))
        numbered.sort(key=lambda p: p[0])
        self.stats["sequences"] += n
        return [c for _, c in numbered]

    async def _read_token_ids(self, ids: list[int], plan: TokenPlan) -> Reading:
        """One-token reads of exactly the variant tokens, one sequence per context."""
        union = sorted({t for tokens in plan.next_tokens for t in tokens})
        chunks = [
            union[i : i + MAX_LOGPROB_TOKEN_IDS]
            for i in range(0, len(union), MAX_LOGPROB_TOKEN_IDS)
        ]
        seqs = [ids + list(c) for c in plan.contexts]
        answers = await asyncio.gather(
            *(
                self._completions(
                    {
                        "prompt": seqs,
                        "max_tokens": 1,
                        "logprobs": len(chunk),
                        "logprob_token_ids": chunk,
                        "return_tokens_as_token_ids": True,
                    },
                    len(seqs),
                )
                for chunk in chunks
            )
        )
        reading = Reading({}, {})
        for choices in answers:
            for context, wanted, choice in zip(
                plan.contexts, plan.next_tokens, choices, strict=True
            ):
                found = {t: v for t, _, v in top_entries(choice) if t is not None}
                table = reading.lp.setdefault(context, {})
                table.update((t, found[t]) for t in wanted if t in found)
        for context, wanted in zip(plan.contexts, plan.next_tokens, strict=True):
            if any(t not in reading.lp.get(context, {}) for t in wanted):
                raise Unsupported("the answer lacks a requested token's log-probability")
        return reading

    async def _read_prompt_logprobs(self, ids: list[int], plan: TokenPlan) -> Reading:
        seqs = [ids + list(s) for s in plan.sequences]
        choices = await self._completions(
            {"prompt": seqs, "max_tokens": 1, "prompt_logprobs": 0}, len(seqs)
        )
        reading = Reading({}, {})
        start = len(ids)
        for cont, seq, choice in zip(plan.sequences, seqs, choices, strict=True):
            entries = choice.get("prompt_logprobs")
            if not isinstance(entries, list) or len(entries) < len(seq):
                raise Unsupported("no prompt_logprobs in the answer")
            for j, token in enumerate(cont):
                entry = entries[start + j]
                value = entry.get(str(token)) if isinstance(entry, dict) else None
                if not isinstance(value, dict) or "logprob" not in value:
                    raise Unsupported(f"prompt_logprobs lack token {token}")
                reading.lp.setdefault(cont[:j], {})[token] = logprob(value["logprob"])
        return reading

    async def _read_echo(self, ids: list[int], plan: TokenPlan) -> Reading:
        seqs = [ids + list(s) for s in plan.sequences]
        choices = await self._completions(
            {"prompt": seqs, "max_tokens": 0, "echo": True, "logprobs": 0}, len(seqs)
        )
        reading = Reading({}, {})
        start = len(ids)
        for cont, seq, choice in zip(plan.sequences, seqs, choices, strict=True):
            logprobs = choice.get("logprobs")
            values = logprobs.get("token_logprobs") if isinstance(logprobs, dict) else None
            if not isinstance(values, list) or len(values) < len(seq):
                raise Unsupported("no echoed token_logprobs in the answer")
            for j, token in enumerate(cont):
                value = values[start + j]
                if value is None:
                    raise Unsupported("echoed token_logprobs lack a value")
                reading.lp.setdefault(cont[:j], {})[token] = logprob(value)
        return reading

    async def _read_topk(self, ids: list[int], plan: TokenPlan) -> Reading:
        found = await asyncio.gather(*(self._topk_at(ids + list(c)) for c in plan.contexts))
        reading = Reading({}, {})
        for context, wanted, entries in zip(plan.contexts, plan.next_tokens, found, strict=True):
            table: dict[int, float] = {}
            by_piece: dict[str, float] = {}
            for token, piece, value in entries:
                if token is not None:
                    table[token] = value
                elif piece is not None:
                    by_piece[piece] = value
            if by_piece:
                for token in set(wanted) - set(table):
                    piece = await self._tokens.piece(token)
                    if piece in by_piece:
                        table[token] = by_piece[piece]
            reading.lp[context] = table
            reading.bound[context] = min(v for _, _, v in entries)
        return reading

    async def _topk_at(self, seq: list[int]) -> list[Entry]:
        payload: dict[str, Any] = {"prompt": seq, "max_tokens": 1, "logprobs": self.topk}
        if self._tokens.flavor == "vllm":
            payload["return_tokens_as_token_ids"] = True
        try:
            choices = await self._completions(payload, 1)
        except ServerRejectedError as exc:
            cap = re.search(r"max(?:imum)? allowed:?\s*(\d+)", str(exc))
            if cap is None or int(cap.group(1)) >= self.topk or int(cap.group(1)) < 1:
                raise
            self.topk = int(cap.group(1))
            log.info("the server allows top-%d log-probabilities; asking for that", self.topk)
            payload["logprobs"] = self.topk
            choices = await self._completions(payload, 1)
        entries = top_entries(choices[0])
        if not entries:
            raise Unsupported("no top log-probabilities in the answer")
        return entries


def pool_reading(reading: Reading, plan: TokenPlan) -> tuple[FloatArray, BoolArray]:
    """Per option: logsumexp over variants; missing (an upper bound) when a token was unseen."""
    values: list[list[float]] = []
    missing = np.zeros(len(plan.token_ids), dtype=bool)
    for k, opt in enumerate(plan.token_ids):
        per_variant: list[float] = []
        for ids in opt:
            total = 0.0
            for j, token in enumerate(ids):
                context = ids[:j]
                value = reading.lp.get(context, {}).get(token)
                if value is None:
                    if context not in reading.bound:
                        raise Unsupported(f"the answer lacks token {token}")
                    value, missing[k] = reading.bound[context], True
                total += value
            per_variant.append(total)
        values.append(per_variant)
    return pool_variants(values), missing


def unusable(logprobs: FloatArray, missing: BoolArray, plan: TokenPlan) -> str | None:
    """Why a pooled reading cannot be stored as a curve; None when it can.

    Refused: every option at probability zero (no curve exists), every option unseen (a
    top-k reading that would be stored as a uniform curve of full mass), and, where the
    options are disjoint events, seen options whose probabilities add up to more than 1.
    """
    if not np.isfinite(logprobs).any():
        return "gave every option probability zero"
    if missing.all():
        return "listed none of the options among its top log-probabilities"
    seen = logprobs[~missing & np.isfinite(logprobs)]
    if plan.disjoint and seen.size:
        top = float(seen.max())
        mass = math.exp(top + math.log(float(np.exp(seen - top).sum())))
        if mass > 1.0 + MASS_SLACK:
            return (
                f"gave options whose probabilities add up to {mass:.4g}, more than 1 "
                "(these are not log-probabilities)"
            )
    return None


def top_entries(choice: dict[str, Any]) -> list[Entry]:
    """The first generated position's top log-probabilities: (id, piece, logprob).

    Understands the completions format (``top_logprobs``: one dict per position, keyed by
    the token's text or, with vLLM's ``return_tokens_as_token_ids``, ``token_id:N``) and
    the chat-style one llama.cpp's server uses (``content``: entries with ``id``).
    """
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        return []
    tops = logprobs.get("top_logprobs")
    if isinstance(tops, list) and tops and isinstance(tops[0], dict):
        out: list[Entry] = []
        for key, value in tops[0].items():
            if value is None:  # llama.cpp writes -inf as null: left unseen, an upper bound
                continue
            if key.startswith("token_id:") and key[9:].lstrip("-").isdigit():
                out.append((int(key[9:]), None, logprob(value)))
            else:
                out.append((None, key, logprob(value)))
        return out
    content = logprobs.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        entries = content[0].get("top_logprobs") or []
        return [
            (
                int(e["id"]) if isinstance(e.get("id"), int) else None,
                e.get("token") if isinstance(e.get("token"), str) else None,
                logprob(e["logprob"]),
            )
            for e in entries
            if isinstance(e, dict) and e.get("logprob") is not None
        ]
    return []
