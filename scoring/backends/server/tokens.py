"""Tokens on the server's side: its tokenizer, and the plan that reads an options list.

The server tokenizes (``/tokenize``), so the ids in the score ledger are the server's.
The model's BOS is prepended when its tokenizer adds one to plain text and the prompt
does not already start with it (the transformers backend's rule). Each option variant is
tokenized on its own, once per backend; an options list becomes a :class:`TokenPlan`
once: which continuations to send after a prompt and where each variant token is read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from scoring.backend import OptionVariants
from scoring.errors import ScoringError, ServerError
from scoring.variants import check_variant_ids

#: A token sequence.
Seq = tuple[int, ...]

#: ``request(method, path, payload)``: one JSON request to the server.
Request = Callable[[str, str, Any], Awaitable[Any]]


@dataclass(frozen=True)
class TokenPlan:
    """How one options list is read, computed once per list.

    Attributes:
        token_ids: Per option, per variant, the variant's token ids.
        sequences: Continuations sent after the prompt: every variant that is not a
            prefix of another (its sequence also yields the shorter one's tokens).
        contexts: Continuations after which the next-token distribution is needed
            (``()`` is right after the prompt); what the one-token modes ask for.
        next_tokens: Per context, the variant tokens that follow it.
        longest: Tokens of the longest variant.
        disjoint: No variant is a prefix of another (nor repeated): the options are
            disjoint events, so their probabilities add up to at most 1.
    """

    token_ids: tuple[tuple[Seq, ...], ...]
    sequences: tuple[Seq, ...]
    contexts: tuple[Seq, ...]
    next_tokens: tuple[Seq, ...]
    longest: int
    disjoint: bool

    @classmethod
    def build(cls, token_ids: tuple[tuple[Seq, ...], ...]) -> TokenPlan:
        every = [ids for opt in token_ids for ids in opt]
        flat = list(dict.fromkeys(every))
        sequences = tuple(s for s in flat if not any(o != s and o[: len(s)] == s for o in flat))
        following: dict[Seq, dict[int, None]] = {}
        for s in flat:
            for j in range(len(s)):
                following.setdefault(s[:j], {})[s[j]] = None
        return cls(
            token_ids=token_ids,
            sequences=sequences,
            contexts=tuple(following),
            next_tokens=tuple(tuple(t) for t in following.values()),
            longest=max(len(s) for s in flat),
            disjoint=len(sequences) == len(every),
        )


class ServerTokens:
    """The server's tokenizer, with what it has answered remembered.

    Args:
        request: Sends one JSON request (see
            :class:`~scoring.backends.server.transport.ServerTransport`).
        url: The server's URL, for messages.
        name: The served model name.
        flavor: ``vllm``, ``llamacpp`` or ``unknown``: which endpoint dialect to speak.
    """

    def __init__(self, request: Request, *, url: str, name: str, flavor: str) -> None:
        self._request = request
        self.url = url
        self.name = name
        self.flavor = flavor
        self.bos: int | None = None
        self._variant_ids: dict[str, Seq] = {}
        self._plans: dict[tuple[OptionVariants, ...], TokenPlan] = {}
        self._pieces: dict[int, str] = {}

    async def learn_bos(self) -> None:
        """Find whether the model's tokenizer prepends a BOS to plain text."""
        tok = await self.tokenize("a", special=True)
        plain = await self.tokenize("a", special=False)
        if len(tok) == len(plain) + 1 and tok[1:] == plain:
            self.bos = tok[0]

    async def tokenize(self, text: str, *, special: bool) -> list[int]:
        if self.flavor == "llamacpp":
            body = await self._request(
                "POST", "/tokenize", {"content": text, "add_special": special}
            )
        else:
            body = await self._request(
                "POST",
                "/tokenize",
                {"model": self.name, "prompt": text, "add_special_tokens": special},
            )
        tokens = body.get("tokens") if isinstance(body, dict) else None
        if not isinstance(tokens, list):
            raise ServerError(f"{self.url}/tokenize answered no token list")
        # llama.cpp answers {"id", "piece"} objects when asked for pieces; plain ints else.
        ids: list[int] = []
        for t in tokens:
            token = t.get("id") if isinstance(t, dict) else t
            if not isinstance(token, int) or isinstance(token, bool):
                raise ServerError(f"{self.url}/tokenize answered {token!r:.40} for a token id")
            ids.append(token)
        return ids

    async def encode(self, prompt: str) -> list[int]:
        """The ids the model reads for a prompt (BOS included when expected)."""
        ids = await self.tokenize(prompt, special=False)
        if self.bos is not None and (not ids or ids[0] != self.bos):
            ids.insert(0, self.bos)
        return ids

    async def piece(self, token: int) -> str:
        """A token's text, to match answers keyed by token strings (servers without ids)."""
        piece = self._pieces.get(token)
        if piece is None:
            body = await self._request(
                "POST", "/detokenize", {"model": self.name, "tokens": [token]}
            )
            piece = str(body.get("prompt", body.get("content", "")))
            self._pieces[token] = piece
        return piece

    async def plan(self, options: list[OptionVariants]) -> TokenPlan:
        """The plan of an options list, its variants tokenized once.

        Raises:
            ScoringError: a variant has no tokens, an option none, or two tokenize alike.
        """
        key = tuple(options)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        todo = sorted({v for opt in options for v in opt} - set(self._variant_ids))
        found = await asyncio.gather(*(self.tokenize(v, special=False) for v in todo))
        for text, tokens in zip(todo, found, strict=True):
            if not tokens:
                raise ScoringError(f"option variant {text!r} has no tokens")
            self._variant_ids[text] = tuple(tokens)
        token_ids = tuple(tuple(self._variant_ids[v] for v in opt) for opt in options)
        check_variant_ids(options, token_ids)
        plan = TokenPlan.build(token_ids)
        self._plans[key] = plan
        return plan
