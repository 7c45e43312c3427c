"""Test-wide settings: never reach a model hub, and keep the model cache across runs; the
simulations' full grids (marker ``grid``) run only when asked for (``pytest -m grid``)."""

from __future__ import annotations

import os

import pytest

# Set before anything imports huggingface_hub or transformers.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

# After the settings above: the factories import the packages.
from tests.factories import shared_data

# Test modules read it at import time, after this conftest has run.
os.environ.setdefault("CODECURVE_SHARED_DATA", str(shared_data()))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the simulations' full grids unless a marker expression was given (``-m
    grid`` runs them, ``-m slow`` too): the suite runs each grid's fast subset, with its
    own Monte Carlo tolerance, and the grids' tables are in docs/method.md."""
    if config.getoption("markexpr"):
        return
    grids = [item for item in items if item.get_closest_marker("grid") is not None]
    if grids:
        config.hook.pytest_deselected(items=grids)
        items[:] = [item for item in items if item.get_closest_marker("grid") is None]
