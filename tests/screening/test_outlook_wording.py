"""The delegation outlook's words when the audit has nothing left to gain."""

from __future__ import annotations

from screening.delegation import AuditOutlook


def _outlook(*, errors: int, more_at_rate: int | None) -> AuditOutlook:
    return AuditOutlook(
        threshold=0.75,
        n_audit=40,
        n_above=29,
        errors_above=errors,
        max_error=0.05,
        level=0.95,
        more_clean=355,
        more_at_rate=more_at_rate,
    )


def test_a_finished_audit_is_not_said_to_have_only_zero_left() -> None:
    line = _outlook(errors=0, more_at_rate=400).describe("Staff manner", remaining=0)
    assert "only 0" not in line
    assert "the audit has no response left" in line
    assert "out of reach in this study" in line


def test_one_response_left_is_singular() -> None:
    line = _outlook(errors=0, more_at_rate=400).describe("Staff manner", remaining=1)
    assert "only 1 is left" in line
