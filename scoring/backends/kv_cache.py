"""The model's key/value cache: reading its layers so that a prompt prefix can be shared.

A prefix's cache is computed once at batch size one and expanded over a batch; that is
sound only for a plain per-layer key/value cache (:func:`layers_kv` refuses others).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def common_prefix_len(seqs: list[list[int]]) -> int:
    """Length of the longest token prefix all ``seqs`` share."""
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for s in seqs[1:]:
        i = 0
        while i < n and s[i] == first[i]:
            i += 1
        n = i
    return n


def cache_of(out: Any) -> Any:
    """The cache of a forward pass's output (named ``cache`` in transformers 5)."""
    cache = getattr(out, "cache", None)
    return cache if cache is not None else getattr(out, "past_key_values", None)


class Unshareable(Exception):
    """The model's cache is not a plain per-layer key/value cache (sliding windows,
    linear attention, ...): its prefix cannot be expanded over a batch."""


def layers_kv(cache: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per layer, the (keys, values) tensors of a plain dynamic cache.

    Raises:
        Unshareable: any other kind of cache.
    """
    layers = getattr(cache, "layers", None)
    if layers is None:
        raise Unshareable(f"cache of type {type(cache).__name__}")
    kv = []
    for layer in layers:
        # exact type: subclasses (sliding windows) keep only part of the prefix
        if type(layer).__name__ != "DynamicLayer" or not getattr(layer, "is_initialized", True):
            raise Unshareable(f"cache layer of type {type(layer).__name__}")
        kv.append((layer.keys, layer.values))
    return kv
