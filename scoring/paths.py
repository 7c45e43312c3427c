"""Where codecurve keeps things on disk (one module, platformdirs)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "codecurve"


def cache_dir() -> Path:
    """User cache directory; ``CODECURVE_CACHE_DIR`` overrides it (tests, shared machines)."""
    override = os.environ.get("CODECURVE_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir(APP))


def models_dir() -> Path:
    """Converted model weights live here."""
    return cache_dir() / "models"


def data_dir() -> Path:
    """User data directory (the demo study, settings)."""
    override = os.environ.get("CODECURVE_DATA_DIR")
    return Path(override) if override else Path(platformdirs.user_data_dir(APP))


def config_dir() -> Path:
    """User config directory (``keys.toml``); ``CODECURVE_CONFIG_DIR`` overrides it."""
    override = os.environ.get("CODECURVE_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir(APP))
