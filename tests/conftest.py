"""Test-wide settings: never reach a model hub, and keep the model cache across runs."""

from __future__ import annotations

import os

# Set before anything imports huggingface_hub or transformers.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

# After the settings above: the factories import the packages.
from tests.factories import shared_data

# Test modules read it at import time, after this conftest has run.
os.environ.setdefault("CODECURVE_SHARED_DATA", str(shared_data()))
