"""The bounded latency histogram kept per rollup bucket, and percentiles read from it.

Latencies fall in one of `len(LATENCY_BOUNDS_MS) + 1` bins: bin i counts latencies in
[LATENCY_BOUNDS_MS[i-1], LATENCY_BOUNDS_MS[i]) (the first from 0, the last from 300 s up). Histograms of any
number of hours add up bin by bin, so a percentile over a day, a week or a month is read from the summed bins:
the rank is located in its bin and interpolated linearly inside it. The estimate therefore lies in the same
bin as the exact percentile (bins are 25-50 % wide above 100 ms); a percentile in the open last bin is
reported as its lower bound, 300,000 ms.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import accumulate

LATENCY_BOUNDS_MS = (
    10, 25, 50, 75, 100, 150, 200, 300, 400, 500, 750, 1_000, 1_500, 2_000, 3_000, 4_000, 5_000, 7_500,
    10_000, 15_000, 20_000, 30_000, 60_000, 120_000, 300_000,
)  # fmt: skip
BINS = len(LATENCY_BOUNDS_MS) + 1
BIN_FIELDS = tuple(f"latency_{i:02d}" for i in range(BINS))


def bin_of(latency_ms: int) -> int:
    """Index of the bin a latency falls in."""
    return bisect_right(LATENCY_BOUNDS_MS, latency_ms)


def bin_range(index: int) -> tuple[int, int | None]:
    """[lower, upper) of a bin in milliseconds; the last bin has no upper bound."""
    lower = LATENCY_BOUNDS_MS[index - 1] if index else 0
    upper = LATENCY_BOUNDS_MS[index] if index < len(LATENCY_BOUNDS_MS) else None
    return lower, upper


_LOWER = tuple(bin_range(i)[0] for i in range(BINS))
_WIDTH = tuple(LATENCY_BOUNDS_MS[i] - _LOWER[i] if i < len(LATENCY_BOUNDS_MS) else 0 for i in range(BINS))  # 0: open


def _at(cumulative: list[int], counts: Sequence[int], rank: float) -> int:
    index = bisect_left(cumulative, rank)  # the first bin whose cumulative count reaches the rank (never empty)
    count = counts[index]
    width = _WIDTH[index]
    return round(_LOWER[index] + width * (rank - cumulative[index] + count) / count) if width else _LOWER[index]


def percentiles(counts: Sequence[int], low: float, high: float) -> tuple[int | None, int | None]:
    """`percentile(counts, low), percentile(counts, high)`, with one cumulative sum (the usage API's hot path)."""
    cumulative = list(accumulate(counts))
    total = cumulative[-1]
    if total == 0:
        return None, None
    return _at(cumulative, counts, low * total), _at(cumulative, counts, high * total)


def percentile(counts: Sequence[int], q: float) -> int | None:
    """The q-quantile (0 < q <= 1) in milliseconds of the latencies counted in `counts`, None when empty."""
    total = sum(counts)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for index, count in enumerate(counts):
        if count and seen + count >= rank:
            lower, upper = bin_range(index)
            if upper is None:
                return lower
            return round(lower + (upper - lower) * (rank - seen) / count)
        seen += count
    return bin_range(BINS - 1)[0]  # unreachable: the ranks end inside the last non-empty bin
