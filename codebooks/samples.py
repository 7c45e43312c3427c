"""Sample studies shipped with codecurve: a responses CSV and a codebook for each of the
four domains of METHOD.md. Sources and licences: ``codebooks/samples/README.md``.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from codebooks.errors import InputError


@dataclass(frozen=True)
class Sample:
    """One sample: file names inside ``codebooks/samples``.

    Attributes:
        name: The key in :data:`SAMPLES` (``codecurve demo NAME``).
        title: One line saying what it is.
        responses: The responses CSV (``id,text`` and extra columns).
        codebook: The codebook YAML.
    """

    name: str
    title: str
    responses: str
    codebook: str


SAMPLES: dict[str, Sample] = {
    s.name: s
    for s in (
        Sample(
            "work_survey",
            "deductive coding of a staff survey: 36 answers, 7 codes on 1-5",
            "work_survey.csv",
            "work_survey.yaml",
        ),
        Sample(
            "causal",
            "causal claims in news and everyday sentences, yes/no",
            "causal.csv",
            "causal.yaml",
        ),
        Sample(
            "causal_scaled",
            "the same sentences on a 1-5 scale of causal claim strength",
            "causal.csv",
            "causal_scaled.yaml",
        ),
        Sample(
            "figurative",
            "figurative vs literal sentences, 1-5",
            "figurative.csv",
            "figurative.yaml",
        ),
        Sample(
            "sets_words",
            "ambiguous words (bug, virus, cloud...) as social, ecological or technological",
            "sets_words.csv",
            "sets_words.yaml",
        ),
    )
}
DEFAULT_SAMPLE = "work_survey"


def sample_paths(name: str = DEFAULT_SAMPLE) -> tuple[Path, Path]:
    """The files of a sample: ``(responses_path, codebook_path)``.

    Raises:
        InputError: for a name not in :data:`SAMPLES`.
    """
    sample = SAMPLES.get(name)
    if sample is None:
        raise InputError(f"no sample called {name!r}; choose one of {', '.join(SAMPLES)}")
    return _resource(sample.responses), _resource(sample.codebook)


def _resource(file_name: str) -> Path:
    resource = resources.files("codebooks") / "samples" / file_name
    if isinstance(resource, Path):
        return resource
    return _extracted() / file_name


@cache
def _extracted() -> Path:
    """The samples copied to a temporary folder, for an install that is not on disk (a
    zip); done once per process."""
    folder = Path(tempfile.mkdtemp(prefix="codecurve-samples-"))
    for entry in (resources.files("codebooks") / "samples").iterdir():
        if entry.is_file():
            with resources.as_file(entry) as source:
                shutil.copyfile(source, folder / entry.name)
    return folder
