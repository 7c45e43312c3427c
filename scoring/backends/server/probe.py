"""What a server can do: the model it serves, its dialect, its context, its best mode.

Asked once per backend. ``/v1/models`` says whether the model is served, which server
answers (vLLM or llama.cpp, from ``owned_by``), the weights' origin (the revision) and,
on vLLM, the context length; llama.cpp's ``/props`` gives its context. The read mode,
when ``auto``, is chosen by trying each mode on a tiny prompt, fastest exact first, and
keeping the first that answers sound numbers: log-probabilities (see
:func:`scoring.backends.server.modes.logprob`) whose probabilities add up to at most 1.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from codebooks.errors import Remedy
from scoring.backends.server.modes import MODES, ModeReader, Unsupported, pool_reading, unusable
from scoring.backends.server.tokens import ServerTokens, TokenPlan
from scoring.errors import ModelNotFoundError, ServerError, ServerRejectedError

log = logging.getLogger(__name__)

#: Context assumed when the server does not report one.
FALLBACK_CONTEXT = 2048


@dataclass(frozen=True)
class ServedModel:
    """What ``/v1/models`` says about the model.

    Attributes:
        flavor: ``vllm``, ``llamacpp`` or ``unknown``: which endpoint dialect to speak.
        revision: The weights' origin (vLLM's ``root``), else the served name.
        context: The context length, when the list states it.
    """

    flavor: str
    revision: str
    context: int | None


def served_model(models: Any, *, url: str, name: str) -> ServedModel:
    """Read the answer of ``/v1/models`` for the model ``name``.

    Raises:
        ServerError: the answer is not a model list.
        ModelNotFoundError: the server does not serve ``name`` (the message lists what it does).
    """
    data = models.get("data") if isinstance(models, dict) else None
    if not isinstance(data, list):
        raise ServerError(f"{url}/v1/models did not answer a model list")
    entries = {str(e.get("id")): e for e in data if isinstance(e, dict)}
    entry = entries.get(name)
    if entry is None:
        served = ", ".join(sorted(entries)) or "none"
        first = next(iter(sorted(entries)), None)
        raise ModelNotFoundError(
            f"the server at {url} does not serve model {name!r} (it serves: {served})",
            remedy=None
            if first is None
            else Remedy(
                "retry", f"score with the model it serves, {first}", {"model": f"openai:{first}"}
            ),
        )
    owner = str(entry.get("owned_by", "")).lower()
    flavor = "vllm" if "vllm" in owner else "llamacpp" if "llama" in owner else "unknown"
    revision = name
    for key in ("revision", "root"):
        value = entry.get(key)
        if isinstance(value, str) and value:
            revision = value
            break
    value = entry.get("max_model_len")  # vLLM; llama.cpp is asked through /props
    context = value if isinstance(value, int) and value > 1 else None
    return ServedModel(flavor=flavor, revision=revision, context=context)


async def llamacpp_context(request: Callable[..., Awaitable[Any]]) -> int | None:
    """llama.cpp's context length from ``/props``; None when it does not say."""
    try:
        props = await request("GET", "/props", retries=0)
    except ServerError:
        return None
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    return n_ctx if isinstance(n_ctx, int) and n_ctx > 1 else None


async def choose_mode(reader: ModeReader, tokens: ServerTokens, *, url: str, name: str) -> str:
    """Try each mode on a tiny prompt; return the first that gives sound numbers.

    Raises:
        ServerError: no mode works.
    """
    ids = await tokens.encode("The answer is")
    # Two answers, one of them improbable: a server that ignores a parameter and
    # answers its plain top k cannot pass for one that honours it.
    likely, unlikely = [tuple(await tokens.tokenize(t, special=False)) for t in (" yes", " zebra")]
    plan = TokenPlan.build(((likely,), (unlikely,)))
    reasons = []
    for mode in MODES[1:]:
        try:
            reading = await reader.read(mode, ids, plan)
            value, missing = pool_reading(reading, plan)
        except (Unsupported, ServerRejectedError) as exc:
            reasons.append(f"{mode}: {exc}")
            continue
        # A top-k server may list neither probe answer; what it does list must add up.
        wrong = None if missing.all() else unusable(value, missing, plan)
        if np.isfinite(value).all() and wrong is None:
            if mode == "topk":
                log.warning(
                    "the server at %s has neither prompt_logprobs nor echo: scoring in "
                    "top-%d mode, options outside the top k are reported missing",
                    url,
                    reader.topk,
                )
            else:
                log.info("the server at %s is scored in %s mode", url, mode)
            return mode
        reasons.append(f"{mode}: {wrong or 'answered no usable number'}")
    raise ServerError(
        f"the server at {url} gives no usable log-probabilities for {name} ("
        + "; ".join(reasons)
        + ")"
    )
