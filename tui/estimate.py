"""What a scoring run will cost, said before it starts: its pairs and the time they take
at the speed measured on an earlier run of the study (or on the first batches of this
one). The command line and the app say it alike.
"""

from __future__ import annotations

from study.rows import ScoringRate
from tui.text import duration, plural

#: Pairs the command line scores before it estimates the rest, where no earlier run of
#: the study measured the speed (two batches of the default size).
WARM_UP_PAIRS = 32


def estimate_text(pairs: int, rate: ScoringRate | None, *, config_id: int) -> str:
    """``2,000 pairs to score: about 3m20s at 10.0 pairs/s (measured on 500 pairs of
    this configuration's last run)``; without a measured speed, the pairs alone."""
    head = f"{plural(pairs, 'pair')} to score"
    if rate is None or rate.rate <= 0:
        return f"{head}; the time is estimated once the first batches are scored"
    where = (
        "this configuration's last run"
        if rate.config_id == config_id
        else f"the last run of configuration {rate.config_id}, same model and device"
    )
    return (
        f"{head}: about {duration(pairs / rate.rate)} at {rate.rate:,.1f} pairs/s "
        f"(measured on {plural(rate.pairs, 'pair')} of {where})"
    )


def warm_up_text(left: int, rate: float, measured: int, seconds: float | None = None) -> str:
    """``1,968 pairs left: about 3m17s (10.0 pairs/s on the first 32, the longest
    responses)``: ``seconds`` the time left as measured in work (the responses left are
    shorter than the first ones); default ``left`` pairs at ``rate``."""
    if seconds is None:
        seconds = left / rate
    return (
        f"{plural(left, 'pair')} left: about {duration(seconds)} "
        f"({rate:,.1f} pairs/s on the first {measured:,}, the longest responses)"
    )
