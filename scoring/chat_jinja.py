"""A model's chat template, rendered from its Jinja source as transformers renders it.

GGUF files carry the template as text (``tokenizer.chat_template``). To give the prompt
the transformers path gives for the same model, the environment matches
``transformers.utils.chat_template_utils``: a sandbox with ``trim_blocks`` and
``lstrip_blocks``, loop controls, a ``tojson`` that does not escape HTML,
``raise_exception`` and ``strftime_now``, and the special tokens' texts as variables.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from scoring.errors import ScoringError


def render_chat_template(
    template: str,
    messages: Sequence[Mapping[str, str]],
    *,
    special_tokens: Mapping[str, str],
) -> str:
    """The conversation as the model reads it, the assistant turn opened.

    Args:
        template: The Jinja source.
        messages: ``role``/``content`` dicts.
        special_tokens: ``bos_token``, ``eos_token``... and their texts.

    Raises:
        ScoringError: the template does not compile or fails on these messages.
    """
    import jinja2

    try:
        compiled = _compile(template)
        text: str = compiled.render(
            messages=[dict(m) for m in messages],
            tools=None,
            documents=None,
            add_generation_prompt=True,
            **special_tokens,
        )
    except jinja2.TemplateError as exc:
        raise ScoringError(f"the model's chat template failed: {exc}") from exc
    return text


@lru_cache(maxsize=8)
def _compile(template: str) -> Any:
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        from jinja2.exceptions import TemplateError

        raise TemplateError(message)

    def tojson(
        x: Any,
        ensure_ascii: bool = False,
        indent: int | None = None,
        separators: tuple[str, str] | None = None,
        sort_keys: bool = False,
    ) -> str:
        return json.dumps(
            x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
        )

    def strftime_now(fmt: str) -> str:
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(template)
