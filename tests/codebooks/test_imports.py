from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_codebooks_imports_nothing_else_of_the_project() -> None:
    """A fresh interpreter importing every codebooks module loads no torch, UI or sibling."""
    modules = [p.stem for p in Path(sys.modules["codebooks"].__file__ or "").parent.glob("*.py")]
    script = (
        "import importlib, sys\n"
        f"for m in {sorted(modules)!r}:\n"
        "    importlib.import_module('codebooks' if m == '__init__' else 'codebooks.' + m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in\n"
        "    {'torch', 'transformers', 'textual', 'scoring', 'study', 'screening', 'tui',\n"
        "     'pandas', 'numpy'})\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""
