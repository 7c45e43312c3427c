"""What a loaded transformers model and its tokenizer allow: context, BOS, padding, packing.

Read from the model's config and the tokenizer only (no torch here), once per backend.
"""

from __future__ import annotations

from typing import Any

#: Attention implementations that take a custom 4D additive mask.
PACKABLE_ATTENTION = ("sdpa", "eager")

#: Context used when neither config nor tokenizer states a sane one.
FALLBACK_CONTEXT = 2048


def can_pack(model: Any) -> bool:
    """Whether prompts may be packed into one row under a custom 4D mask.

    The mask replaces the model's own: fine for plain causal attention through sdpa or
    eager, wrong for sliding windows or mixed layer types, unsupported by flash kernels.
    """
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else None
    config = config or model.config
    if getattr(config, "_attn_implementation", None) not in PACKABLE_ATTENTION:
        return False
    windowed = getattr(config, "sliding_window", None) and getattr(
        config, "use_sliding_window", True
    )
    if windowed or getattr(config, "attention_chunk_size", None):
        return False
    layer_types = getattr(config, "layer_types", None)
    return not layer_types or all(t == "full_attention" for t in layer_types)


def bos_to_add(tokenizer: Any) -> int | None:
    """The BOS id if the tokenizer prepends one to plain text, else None."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return None
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    return int(bos) if with_special[:1] == [bos] and plain[:1] != [bos] else None


def pad_id(tokenizer: Any) -> int:
    """The id that pads a row: the pad token, else end of sequence, else unknown, else 0."""
    for attr in ("pad_token_id", "eos_token_id", "unk_token_id"):
        value = getattr(tokenizer, attr, None)
        if isinstance(value, int):
            return value
    return 0


def model_context(model: Any, tokenizer: Any) -> int:
    """The longest input the model takes: the smaller of what config and tokenizer state."""
    candidates = []
    for attr in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(model.config, attr, None)
        if isinstance(value, int) and value > 0:
            candidates.append(value)
            break
    value = getattr(tokenizer, "model_max_length", None)
    if isinstance(value, int) and 0 < value < 10_000_000:
        candidates.append(value)
    return min(candidates) if candidates else FALLBACK_CONTEXT
