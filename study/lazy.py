"""Front doors that cost nothing until used: a package's names imported on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` (PEP 562) of ``package``: each of ``names`` (a name ->
    the module defining it) imported from its module when first asked for, looked up
    there every time (so that a test's patch of the module is seen)."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
