from __future__ import annotations

from pathlib import Path

import pytest
import xmlschema

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def codebook_schema() -> xmlschema.XMLSchema:
    """REFI-QDA's Codebook.xsd (a copy, MIT, kept with its header in tests/codebooks/data)."""
    return xmlschema.XMLSchema(str(DATA / "Codebook.xsd"))
