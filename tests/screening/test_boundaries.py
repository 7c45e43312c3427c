"""screening is pure: importing it loads nothing from the project, no UI, no torch."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
import screening
forbidden = {"codebooks", "scoring", "study", "tui", "torch", "textual", "transformers", "rich"}
loaded = sorted({m.split(".")[0] for m in sys.modules} & forbidden)
print(",".join(loaded))
"""


def test_import_loads_no_project_ui_or_torch_module() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""


def test_public_api_is_exported() -> None:
    import screening

    missing = [name for name in screening.__all__ if not hasattr(screening, name)]
    assert missing == []
