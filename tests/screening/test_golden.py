"""METHOD.md section 2: the golden vector and the paper's tables, field by field."""

from __future__ import annotations

import numpy as np
import pytest

from screening import (
    Table2x2,
    distance_to_verdict,
    screen,
    screen_table,
    wilson_interval,
    z_critical,
)

GOLDEN = Table2x2(a=24, b=71, c=423, d=6)


def f3(x: float) -> str:
    return f"{x:.3f}"


def s3(x: float) -> str:
    return f"{x:+.3f}"


def test_golden_vector_field_by_field() -> None:
    res = screen_table(GOLDEN)
    assert (res.table.a, res.table.b, res.table.c, res.table.d) == (24, 71, 423, 6)
    assert f3(res.trin.value) == "0.819"
    assert res.trin.direction == "fixed-low"
    assert not res.trin.warning
    assert [f3(res.l.value), f3(res.l.interval.lower), f3(res.l.interval.upper)] == [
        "0.922",
        "0.840",
        "0.964",
    ]
    assert [f3(res.fp.value), f3(res.fp.interval.lower), f3(res.fp.interval.upper)] == [
        "0.946",
        "0.921",
        "0.964",
    ]
    assert [s3(res.rbs.value), s3(res.rbs.interval.lower), s3(res.rbs.interval.upper)] == [
        "+0.868",
        "+0.805",
        "+0.932",
    ]
    assert [f3(res.r.r), f3(res.r.interval.lower), f3(res.r.interval.upper)] == [
        "-0.798",
        "-0.827",
        "-0.765",
    ]
    assert res.tier == "Invalid"
    assert res.flagging_reason == (
        "Fp = 0.946 exceeds .50 (Wilson CI lower = 0.921 > .40); "
        "RBS = +0.868, CI [+0.805, +0.932] excludes zero"
    )
    assert res.response_style == (
        "excessive withdrawal of correct items (Fp = 0.946); inverted monitoring (RBS = +0.868)"
    )
    assert res.status("Fp") == "invalid"
    assert res.status("RBS") == "invalid"
    assert res.status("L") == "ok"
    assert res.status("TRIN") == "ok"


def test_golden_vector_from_arrays_matches_table() -> None:
    correct = np.array([1] * 24 + [0] * 71 + [1] * 423 + [0] * 6, dtype=bool)
    high = np.array([1] * 95 + [0] * 429, dtype=bool)
    assert screen(correct, high) == screen_table(GOLDEN)


@pytest.mark.parametrize(
    ("cells", "tier"),
    [
        ((385, 29, 82, 28), "Valid"),  # Claude Haiku 4.5
        ((222, 152, 94, 56), "Indeterminate"),  # Gemma 3 1B
        ((491, 26, 3, 4), "Insufficient data"),  # GLM-5
        ((263, 52, 154, 55), "Valid"),  # GPT-5.4 nano
    ],
)
def test_paper_tables_give_listed_tiers(cells: tuple[int, int, int, int], tier: str) -> None:
    assert screen_table(Table2x2(*cells)).tier == tier


def test_gemma_is_indeterminate_through_rbs_only() -> None:
    res = screen_table(Table2x2(222, 152, 94, 56))
    assert s3(res.rbs.value) == "+0.028"
    assert res.rbs.interval.lower < 0 < res.rbs.interval.upper
    assert [f.index for f in res.flags] == ["RBS"]
    assert res.flags[0].level == "indeterminate"
    assert res.response_style.startswith("inverted monitoring")


def test_insufficient_data_judges_nothing() -> None:
    res = screen_table(Table2x2(491, 26, 3, 4))
    assert res.reasons == ("Cell count below 5 (min cell = 3)",)
    assert res.response_style == ""
    assert not res.judged
    assert all(res.status(i) == "not judged" for i in ("Fp", "L", "RBS", "TRIN", "r"))


def test_z_and_l_certification_minimum() -> None:
    assert f"{z_critical():.6f}" == "1.959964"
    assert f3(wilson_interval(35, 35).lower) == "0.901"
    assert wilson_interval(34, 34).lower < 0.90 < wilson_interval(35, 35).lower


def test_distance_to_verdict_l_minimum_is_the_smallest_invalid_l() -> None:
    dist = distance_to_verdict(Table2x2(10, 10, 10, 10))
    assert dist.l_wilson_min_errors == 35
    # Brute force: the fewest errors with which a table passing the cell guard is
    # Invalid through L.
    fewest = None
    for n_err in range(10, 200):
        for d in range(5, n_err - 4):
            res = screen_table(Table2x2(a=50, b=n_err - d, c=50, d=d))
            if res.status("L") == "invalid":
                fewest = n_err
                break
        if fewest is not None:
            break
    assert dist.l_min_errors == fewest == 113


def test_distance_to_verdict_estimates_at_current_rates() -> None:
    dist = distance_to_verdict(Table2x2(491, 26, 3, 4))
    short = {s.cell: s for s in dist.shortfalls}
    assert set(short) == {"c", "d"}
    # c: 3 of 524, needs 2 more: ceil(524 * 2 / 3) = 350 items; d: ceil(524 * 1 / 4) = 131.
    assert (short["c"].missing, short["c"].more_items) == (2, 350)
    assert (short["d"].missing, short["d"].more_items) == (1, 131)
    assert dist.more_items == 350
    assert not dist.l_certifiable
    assert dist.more_items_for_l == -(-524 * (113 - 30) // 30)
    assert any("cell c" in line for line in dist.describe())


def test_distance_with_an_empty_cell_gives_no_estimate() -> None:
    dist = distance_to_verdict(Table2x2(40, 0, 7, 9))
    (short,) = dist.shortfalls
    assert short.cell == "b"
    assert short.more_items is None
    assert dist.more_items is None
    assert "no estimate" in dist.describe()[0]


def test_distance_for_a_full_table() -> None:
    dist = distance_to_verdict(Table2x2(222, 152, 94, 56))
    assert dist.shortfalls == ()
    assert dist.more_items == 0
    assert dist.l_certifiable
    assert dist.more_items_for_l == 0
