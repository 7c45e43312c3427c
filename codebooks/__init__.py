"""What may be asked: scales, codes and codebooks, and their file formats.

Imports nothing else of the project, and no torch.
"""

from codebooks.errors import CodebookError, CodecurveError, InputError
from codebooks.mapping import codebook_from_mapping, scale_from_value, slugify
from codebooks.model import (
    BINARY,
    DEFAULT_QUESTION,
    LIKERT_5,
    LIKERT_9,
    SCALES,
    Code,
    Codebook,
    Option,
    Scale,
    get_scale,
)
from codebooks.readers import load_codebook
from codebooks.samples import SAMPLES, sample_paths
from codebooks.writers import save_codebook

__all__ = [
    "BINARY",
    "DEFAULT_QUESTION",
    "LIKERT_5",
    "LIKERT_9",
    "SAMPLES",
    "SCALES",
    "Code",
    "Codebook",
    "CodebookError",
    "CodecurveError",
    "InputError",
    "Option",
    "Scale",
    "codebook_from_mapping",
    "get_scale",
    "load_codebook",
    "sample_paths",
    "save_codebook",
    "scale_from_value",
    "slugify",
]
