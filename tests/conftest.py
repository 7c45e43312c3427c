"""Test-wide settings: never reach a model hub, and keep the model cache across runs."""

from __future__ import annotations

import os
from pathlib import Path

# Set before anything imports huggingface_hub or transformers.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def _shared_data() -> Path:
    """The labelled data sets beside the checkout (``../shared/data``), wherever it lies."""
    beside = Path(__file__).resolve().parents[2] / "shared" / "data"
    return beside if beside.is_dir() else Path("/work/shared/data")


# Test modules read it at import time, after this conftest has run.
os.environ.setdefault("CODECURVE_SHARED_DATA", str(_shared_data()))
