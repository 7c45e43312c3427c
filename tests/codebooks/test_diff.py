"""The difference between two codebooks."""

from __future__ import annotations

from dataclasses import replace

import pytest

from codebooks.diff import CodeChange, diff_codebooks
from codebooks.errors import CodebookError
from codebooks.model import BINARY, Code, Codebook

OLD = Codebook(
    name="Work",
    codes=(
        Code("pressures", "Pressures", codable=False),
        Code("workload", "Workload", definition="Too much work.", parent="pressures"),
        Code("pay", "Pay", definition="Money.", examples=("low pay",)),
        Code("team", "Team", definition="Colleagues."),
    ),
)


def test_no_change_is_empty() -> None:
    diff = diff_codebooks(OLD, OLD)
    assert diff.empty
    assert diff.lines() == []


def test_every_kind_of_change_is_reported() -> None:
    new = replace(
        OLD,
        codes=(
            Code("pressures", "Pressures", codable=False),
            Code("workload", "Hours", definition="Too much work."),  # renamed, moved to top
            Code("money", "Pay", definition="Money and pensions.", examples=("low pay", "bonus")),
            Code("growth", "Growth"),
        ),
    )
    diff = diff_codebooks(OLD, new)
    assert [c.describe() for c in diff.changes] == [
        "renamed workload: Workload (workload) -> Hours (workload)",
        "moved workload: pressures -> (top level)",
        "renamed money: Pay (pay) -> Pay (money)",
        "changed money: definition, examples",
        "added growth",
        "removed team",
    ]
    assert ("pay", "money") in diff.matches


def test_scale_and_codebook_fields() -> None:
    new = replace(
        OLD,
        question="Which applies?",
        codes=tuple(replace(c, scale=BINARY) if c.id == "team" else c for c in OLD.codes),
    )
    diff = diff_codebooks(OLD, new)
    assert diff.codebook_fields == ("question",)
    assert diff.of_kind("changed")[0].fields == ("scale",)


def test_two_old_codes_to_one_is_an_error() -> None:
    merged = replace(
        OLD,
        codes=tuple(
            replace(c, name="Team") if c.id == "pay" else c for c in OLD.codes if c.id != "team"
        ),
    )
    with pytest.raises(CodebookError, match="two old codes cannot become one"):
        diff_codebooks(OLD, merged)


def test_changes_round_trip_through_dicts() -> None:
    change = CodeChange("changed", "pay", "pay", fields=("definition",))
    assert CodeChange.from_dict(change.to_dict()) == change
