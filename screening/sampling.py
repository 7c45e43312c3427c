"""The blind random audit sample and the stratified pooled 2x2 table (METHOD.md section 3).

The screen and everything built on it describe the model on the pairs whose decisions it
is given. For them to describe the pairs nobody will look at, the decisions must come
from a random sample drawn independently of the model. This module draws that sample
and pools its per-code tables.

- :func:`audit_permutation`: one seeded random order of the responses, shared by all
  codes (an audited response is coded on every code in one reading). It depends only on
  the set of response ids and the seed, never on any score or on the ids' input order.
- :func:`audit_sample` / :func:`audit_extension`: the first m responses of the
  permutation, and the next ones when the sample grows from m to m'. For each code this
  is a simple random sample of responses without replacement at every size.
- :func:`audit_sizes`: the per-code sizes, :data:`DEFAULT_AUDIT_PER_CODE` by default,
  capped by the population.
- :func:`audit_progress`: how much of a sample is coded and how much was skipped.
- :func:`pool_tables`: per-code 2x2 tables pooled with weights N_h / n_h, and an
  effective table that :func:`~screening.tiers.screen_table` consumes.

Malformed input raises ValueError naming the argument (see :mod:`screening.errors`).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TypeVar

import numpy as np

from screening.table import CELL_NAMES, Table2x2

__all__ = [
    "DEFAULT_AUDIT_PER_CODE",
    "AuditProgress",
    "PooledTable",
    "audit_extension",
    "audit_permutation",
    "audit_positions",
    "audit_progress",
    "audit_sample",
    "audit_sizes",
    "new_audit_seed",
    "pool_tables",
]

#: Default audit size per code, capped by the number of responses. Why 150: the screen
#: judges nothing until each 2x2 cell holds 5 items, and the smallest cell is usually the
#: low-confidence errors (at 10% errors of which half are low-confidence, 150 items give
#: about 7.5); the reference implementation reports stable tiers from about 100-150
#: items; and certifying delegation at <= 5% errors (level 0.95) needs at least 59 clean
#: audit pairs above the threshold, which 150 items reach when some 40% of pairs are
#: confident. Smaller studies audit everything; larger delegation targets need more.
DEFAULT_AUDIT_PER_CODE = 150

ResponseId = TypeVar("ResponseId", bound=Hashable)


def new_audit_seed() -> int:
    """A fresh random seed for :func:`audit_permutation` (63 bits: fits a SQLite integer)."""
    return secrets.randbits(63)


def _check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    return int(seed)


def audit_permutation(response_ids: Iterable[ResponseId], *, seed: int) -> tuple[ResponseId, ...]:
    """The seeded random order in which responses enter the audit sample.

    The ids are sorted first, so the order depends only on the set of ids and the seed.
    Each id gets a random 64-bit key from the raw stream of numpy's ``PCG64`` bit
    generator seeded with ``SeedSequence(seed)`` (the bit generator of
    ``np.random.default_rng(seed)``); the permutation sorts by key. Bit generator
    streams are stable across numpy versions, which ``Generator.permutation`` does not
    promise, so a recorded seed redraws the same sample later.

    Args:
        response_ids: Shape (n_responses,), distinct ids, all strings or all integers.
        seed: A non-negative integer (see :func:`new_audit_seed`).

    Returns:
        The ids in audit order; empty for no ids.

    Raises:
        ValueError: If an id repeats, the ids cannot be sorted together (mixed types),
            or ``seed`` is not a non-negative integer.
    """
    seed = _check_seed(seed)
    ids = list(response_ids)
    try:
        ordered = sorted(ids)  # type: ignore[type-var]
    except TypeError as exc:
        raise ValueError(
            "response_ids must be all strings or all integers (they are sorted first)"
        ) from exc
    if len(set(ordered)) != len(ordered):
        dupes = [a for a, b in pairwise(ordered) if a == b]
        raise ValueError(f"response_ids must be distinct; repeated: {dupes[:5]!r}")
    keys = np.random.PCG64(np.random.SeedSequence(seed)).random_raw(len(ordered))
    # Ties among 64-bit keys are vanishingly rare; the stable sort breaks them by id.
    order = np.argsort(np.asarray(keys, dtype=np.uint64), kind="stable")
    return tuple(ordered[i] for i in order.tolist())


def _check_size(size: int, population: int, name: str) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {size!r}")
    if size < 1:
        raise ValueError(f"{name} must be at least 1, got {size}")
    if size > population:
        raise ValueError(f"{name} = {size} is larger than the population of {population}")
    return int(size)


def audit_sample(permutation: Sequence[ResponseId], *, size: int) -> tuple[ResponseId, ...]:
    """The first ``size`` responses of the audit permutation.

    Args:
        permutation: The output of :func:`audit_permutation`.
        size: Responses in the sample, 1 <= size <= len(permutation).

    Raises:
        ValueError: If ``size`` is below 1 or above the population.
    """
    return tuple(permutation[: _check_size(size, len(permutation), "audit size")])


def audit_extension(
    permutation: Sequence[ResponseId], *, current: int, size: int
) -> tuple[ResponseId, ...]:
    """The responses that extend an audit sample from ``current`` to ``size`` items.

    They are the next items of the same permutation, so the extended sample is still a
    simple random sample.

    Args:
        permutation: The output of :func:`audit_permutation`.
        current: Size of the sample drawn so far (0 for none).
        size: The new size, current < size <= len(permutation).

    Raises:
        ValueError: If ``current`` is negative or above the population, or ``size`` is
            not above ``current`` or is above the population.
    """
    population = len(permutation)
    if isinstance(current, bool) or not isinstance(current, (int, np.integer)):
        raise ValueError(f"current audit size must be an integer, got {current!r}")
    if not 0 <= current <= population:
        raise ValueError(f"current audit size must be in [0, {population}], got {current}")
    size = _check_size(size, population, "new audit size")
    if size <= current:
        raise ValueError(f"new audit size {size} must exceed the current size {current}")
    return tuple(permutation[current:size])


def audit_positions(permutation: Sequence[ResponseId]) -> dict[ResponseId, int]:
    """Each response's 0-based position in the audit order (for sorting a queue)."""
    return {rid: i for i, rid in enumerate(permutation)}


def audit_sizes(
    codes: Sequence[str], *, population: int, per_code: int | Mapping[str, int] | None = None
) -> dict[str, int]:
    """Audit size per code: one size for all, a size per code, or the default.

    Args:
        codes: The codes to audit, in display order.
        population: Responses in the study (each code has one pair per response).
        per_code: One size for every code, a mapping code -> size (codes not in it get
            the default), or None for :data:`DEFAULT_AUDIT_PER_CODE`. Defaults are
            capped by the population; explicit sizes are not.

    Returns:
        code -> size, in the order of ``codes``.

    Raises:
        ValueError: If the population is below 1, a mapping names an unknown code, or
            an explicit size is below 1 or above the population.
    """
    if population < 1:
        raise ValueError(f"the population must hold at least 1 response, got {population}")
    default = min(DEFAULT_AUDIT_PER_CODE, population)
    if isinstance(per_code, Mapping):
        unknown = sorted(set(per_code) - set(codes))
        if unknown:
            raise ValueError(f"audit sizes name unknown codes: {', '.join(unknown)}")
        return {
            c: _check_size(per_code[c], population, f"audit size of {c}")
            if c in per_code
            else default
            for c in codes
        }
    size = default if per_code is None else _check_size(per_code, population, "audit size")
    return dict.fromkeys(codes, size)


@dataclass(frozen=True)
class AuditProgress:
    """How far the coding of one audit sample has come.

    Attributes:
        size: Audit pairs drawn.
        coded: Audit pairs with a decision.
        skipped: Audit pairs without a decision that come before the last coded one in
            audit order: missing values, not free choices (skipping the hard ones
            biases the sample), so they are reported.
        remaining: Audit pairs after the last coded one, still to code.
    """

    size: int
    coded: int
    skipped: int
    remaining: int

    def describe(self) -> str:
        """One line for a status bar, e.g. ``"audit 37/150, 2 skipped"``."""
        text = f"audit {self.coded}/{self.size}"
        return f"{text}, {self.skipped} skipped" if self.skipped else text


def audit_progress(sample: Sequence[ResponseId], coded: Collection[ResponseId]) -> AuditProgress:
    """Count coded, skipped and remaining items of an audit sample.

    Args:
        sample: The audit sample in audit order (:func:`audit_sample`).
        coded: Ids with a decision; ids outside the sample are ignored.
    """
    done = [rid in coded for rid in sample]
    last = max((i for i, d in enumerate(done) if d), default=-1)
    n_coded = sum(done)
    return AuditProgress(
        size=len(sample),
        coded=n_coded,
        skipped=last + 1 - n_coded,
        remaining=len(sample) - (last + 1),
    )


@dataclass(frozen=True)
class PooledTable:
    """Per-code 2x2 tables pooled over codes, weighting each code by N_h / n_h.

    Attributes:
        table: Effective counts for :func:`~screening.tiers.screen_table`: the weighted
            cell shares times the effective sample size, rounded (largest remainders)
            to whole items. Equal to ``raw`` when the sample is self-weighting.
        raw: The plain sum of the per-code tables.
        estimate: Weighted cells (a, b, c, d), sum over codes of w_h times the code's
            cell: estimated population counts of the pooled pairs.
        n_effective: Kish's effective sample size (sum of weights)^2 / sum of squared
            weights over the audit pairs; equal to ``raw.n`` when self-weighting.
        weights: code -> N_h / n_h, for codes with at least one audit decision.
        self_weighting: Whether all codes share one sampling fraction (then the plain
            sum is the estimate and no weighting is applied).
        empty: Codes left out because they have no audit decision yet.
    """

    table: Table2x2
    raw: Table2x2
    estimate: tuple[float, float, float, float]
    n_effective: float
    weights: Mapping[str, float]
    self_weighting: bool
    empty: tuple[str, ...]

    @property
    def estimated_shares(self) -> tuple[float, float, float, float]:
        """Estimated population shares of the four cells; nan when nothing is coded."""
        total = sum(self.estimate)
        if total == 0:
            return (math.nan, math.nan, math.nan, math.nan)
        a, b, c, d = (x / total for x in self.estimate)
        return (a, b, c, d)


def _largest_remainder(shares: np.ndarray, total: int) -> list[int]:
    raw = shares * total
    counts = np.floor(raw).astype(int)
    short = total - int(counts.sum())
    # Ties go to the earlier cell (a before b ...), so the result is deterministic.
    for i in np.argsort(-(raw - counts), kind="stable")[:short]:
        counts[i] += 1
    return [int(x) for x in counts]


def pool_tables(
    tables: Mapping[str, Table2x2], *, population: Mapping[str, int] | int
) -> PooledTable:
    """Pool per-code audit tables into one table describing all pairs of all codes.

    Each code h is a stratum with N_h pairs of which n_h (its table's total) were
    audited. Where the sampling fractions n_h / N_h are equal the pooled sample is
    self-weighting and the plain sum is used. Otherwise each audited pair of code h
    stands for w_h = N_h / n_h pairs: the weighted cells estimate the population cells
    (a stratified ratio estimator of L, Fp and accuracy), and the effective table
    rescales the weighted shares to Kish's effective sample size so that the screen's
    intervals reflect the loss of precision from unequal weights.

    The pooled pairs are clustered by response (each audited response gives one pair
    per code), which the pooled intervals ignore: they are narrower than they should be
    when codes' errors go together. Per-code screens are primary.

    Args:
        tables: code -> 2x2 table of that code's audit decisions.
        population: code -> N_h (pairs of that code, normally the number of responses),
            or one N for every code.

    Returns:
        The pooled table.

    Raises:
        ValueError: If ``population`` misses a code, or a code has more audit decisions
            than pairs.
    """
    sizes: dict[str, int] = {}
    for code in tables:
        n_pop = population.get(code) if isinstance(population, Mapping) else int(population)
        if n_pop is None:
            raise ValueError(f"population has no size for code {code!r}")
        if tables[code].n > n_pop:
            raise ValueError(
                f"code {code!r} has {tables[code].n} audit decisions but only {n_pop} pairs"
            )
        sizes[code] = int(n_pop)
    empty = tuple(c for c, t in tables.items() if t.n == 0)
    used = [c for c in tables if tables[c].n > 0]
    raw = Table2x2(*(sum(tables[c].cells()[k] for c in used) for k in CELL_NAMES))
    weights = {c: sizes[c] / tables[c].n for c in used}
    # Exact comparison of fractions n_h / N_h by cross-multiplication (no float error).
    first = used[0] if used else None
    self_weighting = first is None or all(
        tables[c].n * sizes[first] == tables[first].n * sizes[c] for c in used
    )
    cells = np.array([[tables[c].cells()[k] for k in CELL_NAMES] for c in used], dtype=float)
    w = np.array([weights[c] for c in used], dtype=float)
    est = (w[:, None] * cells).sum(axis=0) if used else np.zeros(4)
    if self_weighting:
        return PooledTable(
            table=raw,
            raw=raw,
            estimate=(float(est[0]), float(est[1]), float(est[2]), float(est[3])),
            n_effective=float(raw.n),
            weights=weights,
            self_weighting=True,
            empty=empty,
        )
    n_h = cells.sum(axis=1)
    n_eff = float((w @ n_h) ** 2 / ((w**2) @ n_h))
    # floor: never claim more information than the sample holds (1e-9 absorbs rounding).
    effective = _largest_remainder(est / est.sum(), math.floor(n_eff + 1e-9))
    return PooledTable(
        table=Table2x2(*effective),
        raw=raw,
        estimate=(float(est[0]), float(est[1]), float(est[2]), float(est[3])),
        n_effective=n_eff,
        weights=weights,
        self_weighting=False,
        empty=empty,
    )
