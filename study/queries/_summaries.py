"""The columns of the input to screening (``study.queries.annotated_pairs``)."""

from __future__ import annotations

#: Columns of :meth:`study.queries.pairs.Queries.annotated_pairs`, in order.
ANNOTATED_COLUMNS = (
    "response_id",
    "code_id",
    "code_name",
    "coder",
    "value",
    "source",
    "decided_at",
    "applies",
    "scored",
    "pick",
    "pick_applies",
    "probs",
    "p_max",
    "p_applies",
    "norm_entropy",
    "entropy",
    "expected",
    "spread",
    "on_scale_mass",
    "off_scale",
    "truncated",
    "scale_values",
    "applies_from",
)
