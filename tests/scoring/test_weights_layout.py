"""The converted embedded model is a folder any loader reads the same way.

vLLM (and other loaders) ignore ``lm_head.weight`` when embeddings are tied and take the
table from ``model.embed_tokens.weight``; a conversion that stored only the former
served a uniform distribution through vLLM while transformers was fine.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.model


def test_tied_embeddings_are_stored_under_embed_tokens(embedded_backend: Any) -> None:
    from safetensors import safe_open

    from scoring import weights

    gguf = weights.embedded_gguf_path()
    folder = weights.converted_dir(gguf, weights.file_hash(gguf))
    assert weights.is_converted(folder)
    config = json.loads((folder / "config.json").read_text())
    with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
        keys = set(f.keys())
        embed = f.get_tensor("model.embed_tokens.weight")
    assert "model.embed_tokens.weight" in keys
    if config.get("tie_word_embeddings"):
        assert "lm_head.weight" not in keys
    # The table the model computes its logits with is the stored one.
    lm_head = embedded_backend.model.get_output_embeddings().weight.detach()
    assert embed.shape == lm_head.shape
    assert bool((embed == lm_head).all())
    source = json.loads((folder / "codecurve-source.json").read_text())
    assert source["format"] == weights.CONVERSION_FORMAT
    assert folder.name.endswith(f"{source['sha256_prefix']}-c{weights.CONVERSION_FORMAT}")
