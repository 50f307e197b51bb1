"""How a run's calls are split into timing blocks, and when a side's warm-up has settled.

Pure arithmetic, no torch: the worker's :class:`~tui.engine.worker.measure.Benchmark` plans
its blocks with it, and so does the test suite's torch-free fake worker, so a fake run sends
the blocks a real one would (a short last block, the set-up and warm-up blocks, the extra
warm-up blocks until the times settle).
"""

from __future__ import annotations

import statistics
from typing import Mapping

from tui.engine.protocol import SIDES

__all__ = [
    "EAGER_SETUP_CALLS",
    "MIN_COMPILED_WARMUP",
    "WARMUP_SETTLED",
    "WARMUP_MAX_EXTRA_BLOCKS",
    "WARMUP_MAX_EXTRA_S",
    "SETTLED_ABS_MS",
    "chunks",
    "eager_setup_calls",
    "compiled_warmup_calls",
    "settle_block_size",
    "measure_round",
    "relative_iqr",
    "Settler",
]

#: Eager calls before compiling, so CUDA / cuBLAS / cuDNN set-up is not billed to the compiler.
EAGER_SETUP_CALLS = 3
#: Compiled warm-up calls at least (CUDA-graph trees warm up on the 1st call, record on the 2nd).
MIN_COMPILED_WARMUP = 3
#: After the fixed warm-up, a side warms up a block at a time until the medians of two
#: consecutive blocks differ by at most this fraction ("settled")...
WARMUP_SETTLED = 0.05
#: ...giving up after this many extra blocks or once this many seconds of extra warm-up have passed.
WARMUP_MAX_EXTRA_BLOCKS = 6
WARMUP_MAX_EXTRA_S = 3.0
#: Two medians closer than this (ms) agree whatever their ratio: below the clocks' resolution.
SETTLED_ABS_MS = 0.001


def chunks(total: int, size: int) -> list[int]:
    """``total`` calls as blocks of ``size``; the last one is shorter when ``size`` does not divide ``total``."""
    return [min(size, total - start) for start in range(0, total, size)]


def eager_setup_calls(input_sets: int) -> int:
    """Eager set-up calls after the very first one (those form the first eager warm-up block)."""
    return max(EAGER_SETUP_CALLS, input_sets) - 1


def compiled_warmup_calls(warmup: int, input_sets: int) -> int:
    """The fixed compiled warm-up: at least ``MIN_COMPILED_WARMUP`` and ``warmup`` calls,
    and three calls per input set when there are several."""
    return max(MIN_COMPILED_WARMUP, warmup, 3 * input_sets if input_sets > 1 else 0)


def settle_block_size(block_size: int) -> int:
    """Calls per extra warm-up block (three at least: a median of fewer says little)."""
    return max(block_size, 3)


def measure_round(iters: int, block_size: int, measured: Mapping[str, int]) -> list[tuple[str, int]]:
    """The next round of measured blocks: (side, calls) for eager then compiled, none for a side that is done."""
    plan = [(side, min(block_size, iters - measured[side])) for side in SIDES]
    return [(side, n) for side, n in plan if n > 0]


def relative_iqr(ms: list[float]) -> float:
    """Interquartile range / median of one block's times (0 for fewer than 3 calls)."""
    if len(ms) < 3:
        return 0.0
    q1, median, q3 = statistics.quantiles(ms, n=4, method="inclusive")
    return (q3 - q1) / median if median > 0 else 0.0


class Settler:
    """Decides, one extra warm-up block at a time, when a side's times have settled.

    "Settled": the medians of two consecutive blocks within ``WARMUP_SETTLED`` of each
    other, or within the blocks' own spread (relative IQR) when that is larger: a change
    smaller than the noise of the calls cannot be told from it, and on a busy CPU
    microsecond calls jitter by tens of percent. Medians within ``SETTLED_ABS_MS`` agree
    whatever their ratio (below what the clocks resolve).
    """

    def __init__(self, baseline_ms: list[float] | None) -> None:
        # a leftover chunk of one or two calls says too little to compare against
        self.previous = baseline_ms if baseline_ms is not None and len(baseline_ms) >= 3 else None
        self.change: float | None = None
        self.tolerance: float | None = None

    def add(self, ms: list[float]) -> bool:
        """Take the next block's times; True once they agree with the block before."""
        previous_ms, self.previous = self.previous, ms
        if not previous_ms:
            return False
        previous, current = statistics.median(previous_ms), statistics.median(ms)
        if abs(current - previous) <= SETTLED_ABS_MS:
            return True
        self.change = abs(current - previous) / previous if previous > 0 else float("inf")
        self.tolerance = max(WARMUP_SETTLED, relative_iqr(previous_ms), relative_iqr(ms))
        return self.change <= self.tolerance

    def unsettled_warning(self, side: str, extra_calls: int) -> str:
        """The warning for a side measured before it settled."""
        moved = (f" (the last two blocks' medians differed by {self.change:.0%}, more than the "
                 f"{self.tolerance:.0%} their spread allows)" if self.change is not None else "")
        return (f"{side} warm-up did not settle within {extra_calls} extra calls{moved}: "
                "the first measured blocks may still include warm-up effects")
