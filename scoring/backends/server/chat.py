"""Chat templates on the server: render through it, or through a layout learned from it.

Rendering every prompt on the server costs two round trips per pair, one pair at a time.
So a template's layout (the literal text around each message's content) is learned once
per sequence of roles by rendering sentinel contents, and kept only if it reproduces the
server's own rendering of real and of whitespace-padded contents; templates that trim or
branch on content fail that check and stay on the server.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.backends.server.modes import Unsupported
from scoring.errors import ServerRejectedError

log = logging.getLogger(__name__)

#: A sentinel in chat contents while learning a template's layout; ASCII so that no
#: tokenizer normalises it.
SLOT = "CodecurveSlot{i}x{nonce}"

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class ChatLayout:
    """A chat template's layout: literal text around each message's content."""

    pieces: tuple[str, ...]

    def fill(self, contents: Sequence[str]) -> str:
        out = [self.pieces[0]]
        for content, piece in zip(contents, self.pieces[1:], strict=True):
            out.append(content)
            out.append(piece)
        return "".join(out)


class ServerChat:
    """The served model's chat template, rendered by the server or from a learned layout.

    Args:
        request: Sends one JSON request (``request(method, path, payload)``).
        name: The served model name.
        flavor: ``vllm``, ``llamacpp`` or ``unknown``: which endpoint dialect to speak.
    """

    def __init__(
        self, request: Callable[[str, str, Any], Awaitable[Any]], *, name: str, flavor: str
    ) -> None:
        self._request = request
        self.name = name
        self.flavor = flavor
        self._layouts: dict[tuple[str, ...], ChatLayout | None] = {}

    async def available(self) -> bool:
        """Whether the server renders chat messages for the model."""
        try:
            await self.render_on_server([{"role": "user", "content": "Hello"}])
        except (ServerRejectedError, Unsupported) as exc:
            log.info("no chat template on the server (%s); plain prompts", exc)
            return False
        return True

    async def render(self, msgs: Messages) -> str:
        """Render through a layout learned from the server, or the server itself."""
        roles = tuple(m["role"] for m in msgs)
        if roles not in self._layouts:
            self._layouts[roles] = await self._learn(msgs)
        layout = self._layouts[roles]
        if layout is not None:
            return layout.fill([m["content"] for m in msgs])
        return await self.render_on_server(msgs)

    async def _learn(self, msgs: Messages) -> ChatLayout | None:
        nonce = f"{random.randrange(16**8):08x}"  # uniqueness, not secrecy
        slots = [SLOT.format(i=i, nonce=nonce) for i in range(len(msgs))]
        text = await self.render_on_server(
            [{"role": m["role"], "content": s} for m, s in zip(msgs, slots, strict=True)]
        )
        pieces: list[str] = []
        rest = text
        for slot in slots:
            head, sep, rest = rest.partition(slot)
            if not sep or slot in rest:
                log.info("chat template does not place contents verbatim; server renders")
                return None
            pieces.append(head)
        pieces.append(rest)
        layout = ChatLayout(tuple(pieces))
        padded = [f" \n{s}\n " for s in slots]
        checks = [
            ([m["content"] for m in msgs], msgs),
            (
                padded,
                [{"role": m["role"], "content": p} for m, p in zip(msgs, padded, strict=True)],
            ),
        ]
        for contents, real in checks:
            if layout.fill(contents) != await self.render_on_server(real):
                log.info("chat template changes contents (trim or branch); server renders")
                return None
        return layout

    async def render_on_server(self, msgs: Messages) -> str:
        if self.flavor == "llamacpp":
            body = await self._request("POST", "/apply-template", {"messages": msgs})
            text = body.get("prompt") if isinstance(body, dict) else None
            if not isinstance(text, str):
                raise Unsupported("/apply-template answered no prompt")
            return text
        body = await self._request(
            "POST",
            "/tokenize",
            {"model": self.name, "messages": msgs, "add_generation_prompt": True},
        )
        tokens = body.get("tokens") if isinstance(body, dict) else None
        if not isinstance(tokens, list):
            raise Unsupported("/tokenize with messages answered no tokens")
        body = await self._request(
            "POST", "/detokenize", {"model": self.name, "tokens": [int(t) for t in tokens]}
        )
        text = body.get("prompt") if isinstance(body, dict) else None
        if not isinstance(text, str):
            raise Unsupported("/detokenize answered no text")
        return text
