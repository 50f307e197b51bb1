"""How a run's calls are split into timing blocks, when a side's warm-up has settled, and
when the speedup's interval is narrow enough to stop measuring.

Pure arithmetic, no torch: the worker's :class:`~tui.engine.worker.measure.Benchmark` plans
its blocks with it, and so does the test suite's torch-free fake worker, so a fake run sends
the blocks a real one would (a short last block, the set-up and warm-up blocks, the extra
warm-up blocks until the times settle).

Measure rounds alternate which side goes first (eager then compiled, then compiled then
eager: ABBA), so whatever the first block of a round gets (on a GPU, the round's only rest
before a timed block: docs/METHOD.md) falls on each side in half of the rounds, and a linear
drift falls on both alike.

``target_ci`` (:class:`IntervalTarget`): after ``iters`` per side, rounds go on until the
speedup's 95% interval, computed exactly as the parent computes it (block pairs, 2000
resamples, seed 0, at least ``MIN_INTERVAL_BLOCKS`` pairs), satisfies hi/lo - 1 <= target,
or the time budget runs out (:func:`target_budget_s`). A CPU run without a target or a time
budget measures on towards :data:`CPU_DEFAULT_TARGET` for at most :data:`CPU_DEFAULT_TARGET_S`
(:func:`interval_target`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence

from tui.engine.protocol import SIDES
from tui.engine.measure.stats import BOOTSTRAP_RESAMPLES, SpeedupCI, bootstrap_speedup, median, summarize
from tui.engine.thresholds import MIN_INTERVAL_BLOCKS

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
    "HOST_BLOCK_MIN_MS",
    "HOST_BLOCK_MAX_CALLS",
    "host_block_repeats",
    "measure_round",
    "extra_round",
    "relative_iqr",
    "Settler",
    "TARGET_BUDGET_S",
    "CPU_DEFAULT_TARGET",
    "CPU_DEFAULT_TARGET_S",
    "interval_target",
    "TARGET_BUDGET_TIMEOUT_SHARE",
    "CHECK_SHARE",
    "target_budget_s",
    "relative_width",
    "IntervalTarget",
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
#: With ``target_ci`` and no ``time_budget_s``, measuring ends this long after it began (the
#: ``iters`` per side are always measured first)...
TARGET_BUDGET_S = 60.0
#: ...or after this share of the run's ``timeout_s`` when that is shorter, so a run that misses
#: its target still ends (with a warning) before the parent's timeout kills it.
TARGET_BUDGET_TIMEOUT_SHARE = 0.25
#: A CPU run with neither ``target_ci`` nor ``time_budget_s`` measures on past ``iters`` until its
#: interval is at most this wide (hi/lo - 1)...
CPU_DEFAULT_TARGET = 0.05
#: ...or this long after measuring began: the default 50 calls of a small CPU model last milliseconds,
#: and five block pairs of them gave intervals up to 88% wide (docs/BENCHMARKS.md, section 10).
CPU_DEFAULT_TARGET_S = 1.0
#: Checking the interval may take at most this share of the time spent measuring: the bootstrap
#: is pure Python, 0.05-0.6 s for 5-200 block pairs on a small CPU, so it runs every few rounds.
CHECK_SHARE = 0.1


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


#: A host sub-block runs its block's calls over and over until it lasts at least this long (ms)...
HOST_BLOCK_MIN_MS = 50.0
#: ...but at most this many calls.
HOST_BLOCK_MAX_CALLS = 5000


def host_block_repeats(calls: int, ms_per_call: float | None) -> int:
    """How many times a host sub-block runs its ``calls`` input sets, from the step's time per call.

    A host sub-block starts on an idle GPU and ends with a synchronize, so it pays once the
    first call's launch before the GPU has work and the last call's time on the GPU: a fixed
    cost spread over the block's calls. Over a block of 10 calls of a GPU-bound step that cost
    is several percent of a call, where the loop a user runs (many calls per synchronize) pays
    next to nothing. Repeating the calls until the block lasts ``HOST_BLOCK_MIN_MS`` keeps that
    cost under about 1% of the time per call, as in a plain loop of a few hundred calls per
    synchronize. Whole repeats keep the mix of input sets exact. With no time known: 1.
    """
    if calls <= 0 or ms_per_call is None or not ms_per_call > 0:
        return 1
    wanted = math.ceil(HOST_BLOCK_MIN_MS / (ms_per_call * calls))
    return max(1, min(wanted, HOST_BLOCK_MAX_CALLS // calls))


def _round_order(round_index: int) -> tuple[str, ...]:
    """Eager first in even rounds, compiled first in odd ones (ABBA)."""
    return SIDES if round_index % 2 == 0 else tuple(reversed(SIDES))


def measure_round(iters: int, block_size: int, measured: Mapping[str, int], round_index: int = 0
                  ) -> list[tuple[str, int]]:
    """The next round of measured blocks: (side, calls), none for a side that is done.

    Eager goes first in even rounds (``round_index``), compiled in odd ones.
    """
    plan = [(side, min(block_size, iters - measured[side])) for side in _round_order(round_index)]
    return [(side, n) for side, n in plan if n > 0]


def extra_round(block_size: int, round_index: int) -> list[tuple[str, int]]:
    """A round beyond ``iters`` (measuring towards ``target_ci``): one full block per side."""
    return [(side, block_size) for side in _round_order(round_index)]


def target_budget_s(time_budget_s: float | None, timeout_s: float) -> float:
    """How long measuring may go on towards ``target_ci``, counted from its start.

    The user's ``time_budget_s`` when set; otherwise ``TARGET_BUDGET_S``, or a
    ``TARGET_BUDGET_TIMEOUT_SHARE`` of ``timeout_s`` when that is shorter.
    """
    if time_budget_s is not None:
        return float(time_budget_s)
    return min(TARGET_BUDGET_S, TARGET_BUDGET_TIMEOUT_SHARE * float(timeout_s))


def interval_target(target_ci: float | None, time_budget_s: float | None, timeout_s: float,
                    cpu: bool) -> tuple[float, float, bool] | None:
    """What measuring goes on towards after ``iters``: (target, budget in seconds from the start of measuring,
    whether an unmet target warns), or None. The user's ``target_ci`` (:func:`target_budget_s`), which warns;
    else on the CPU without a ``time_budget_s`` the default :data:`CPU_DEFAULT_TARGET` within
    :data:`CPU_DEFAULT_TARGET_S`, a best effort that does not."""
    if target_ci is not None:
        return float(target_ci), target_budget_s(time_budget_s, timeout_s), True
    if cpu and time_budget_s is None:
        return CPU_DEFAULT_TARGET, CPU_DEFAULT_TARGET_S, False
    return None


def relative_width(interval: SpeedupCI) -> float | None:
    """hi/lo - 1 of a speedup's interval (0.02: 2% wide relative to the speedup); None without one."""
    if interval.low is None or interval.high is None or interval.low <= 0:
        return None
    return interval.high / interval.low - 1


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.3g}%"


def _seconds(seconds: float) -> str:
    return f"{seconds:.0f}" if seconds >= 10 else f"{seconds:.2g}"


class IntervalTarget:
    """Whether the speedup's interval is narrow enough yet (``target_ci``), checked every few rounds.

    :meth:`check` computes the interval as the parent will (so a target met here is met in
    the run's results); :meth:`due` says when the next check is worth its cost: once the
    time measured since the last check is ``1 / CHECK_SHARE`` times what that check took.
    """

    def __init__(self, target: float, clock: Callable[[], float] = time.perf_counter) -> None:
        self.target = target
        self.clock = clock
        self.width: float | None = None
        self.pairs = 0
        self.checks = 0
        self.check_s = 0.0
        self._next_at = float("-inf")
        self._key: tuple[int, int] | None = None
        self._met = False

    def due(self) -> bool:
        """True when a check now would cost at most ``CHECK_SHARE`` of the time measured since the last one."""
        return self.clock() >= self._next_at

    def check(self, eager_blocks: Sequence[Sequence[float]], compiled_blocks: Sequence[Sequence[float]]) -> bool:
        """The interval of these measure blocks (per-call ms, one list per block): True when it meets the target.

        The same blocks are not checked twice.
        """
        key = (len(eager_blocks), len(compiled_blocks))
        if key == self._key:
            return self._met
        started = self.clock()
        interval = bootstrap_speedup(eager_blocks, compiled_blocks, BOOTSTRAP_RESAMPLES, seed=0)
        self.pairs = min(key)
        self.width = relative_width(interval) if self.pairs >= MIN_INTERVAL_BLOCKS else None
        ended = self.clock()
        self.checks += 1
        self.check_s += ended - started
        self._next_at = ended + (ended - started) / CHECK_SHARE
        self._key = key
        self._met = self.width is not None and self.width <= self.target
        return self._met

    def unmet_warning(self, elapsed_s: float) -> str:
        """The warning of a run that ended without meeting the target."""
        if self.width is None:
            got = f"no interval ({self.pairs} block pairs, {MIN_INTERVAL_BLOCKS} needed)"
        else:
            got = f"{_percent(self.width)} ({self.pairs} block pairs)"
        return (f"target interval {_percent(self.target)} not met: {got} after {_seconds(elapsed_s)} s of measuring; "
                "raise the time budget or the block size, or quieten the machine")


def relative_iqr(ms: list[float]) -> float:
    """Interquartile range / median of one block's times, as :class:`~tui.engine.measure.stats.Stats` has it
    (0 for fewer than 3 calls, or a median of 0)."""
    if len(ms) < 3:
        return 0.0
    return summarize(ms).relative_iqr or 0.0


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
        previous, current = median(previous_ms), median(ms)
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
