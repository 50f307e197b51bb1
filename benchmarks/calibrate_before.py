"""The verdict's rules as they were before calibration (tui/engine/verdict.py at e31a555), frozen.

A copy, on purpose: ``calibrate.py judge --rules before`` must keep judging stored runs as the
old rules did after the engine's rules changed, so the before/after table can be rebuilt from
the same data at any time. Nothing in the engine imports this; the "after" rules are the
engine's own code (:mod:`tui.engine.measure.verdict`, :mod:`tui.engine.measure.summary`,
:mod:`tui.engine.store.repeats`).

The old rules: ``noisy`` for any one of a side's IQR/median above 10%, more than 5% of a side's
samples beyond the 3-IQR fence (IQR floored at 3% of the median), the last quarter of blocks'
median more than 10% from the first quarter's, one sample 100x the median, more than half a core
of other processes (CPU run or host time), another process on the GPU, or an interval with
hi/lo above 1.25; else the interval's word at threshold 2%. A ``--repeat`` group: noisy when one
of its processes is for its own series or the machine, or the interval across processes is too
wide; else that interval's word.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

THRESHOLD = 0.02
MAX_RELATIVE_IQR = 0.10
MAX_INTERVAL_RATIO = 1.25
MAX_SEVERE_OUTLIER_SHARE = 0.05
MAX_DRIFT = 0.10
STALL_FACTOR = 100.0
MAX_OTHER_CPU_CORES = 0.5
MIN_IQR_SHARE = 0.03


@dataclass(frozen=True)
class Side:
    """One side's blocks and quartiles, as the old rules read them."""

    name: str
    blocks: Sequence[Sequence[float]]
    median: float
    q1: float
    q3: float
    max: float


def interval_word(low: float | None, high: float | None, threshold: float = THRESHOLD) -> str:
    """faster / slower / no change / inconclusive from the interval alone."""
    if low is None or high is None:
        return "inconclusive"
    if low > 1 + threshold:
        return "faster"
    if high < 1 - threshold:
        return "slower"
    if 1 - threshold <= low and high <= 1 + threshold:
        return "no change"
    return "inconclusive"


def _severe(side: Side) -> int:
    iqr = max(side.q3 - side.q1, MIN_IQR_SHARE * side.median)
    low, high = side.q1 - 3 * iqr, side.q3 + 3 * iqr
    return sum(1 for block in side.blocks for x in block if x < low or x > high)


def _drift(blocks: Sequence[Sequence[float]]) -> float | None:
    quarter = len(blocks) // 4
    if quarter < 1:
        return None
    first = [x for block in blocks[:quarter] for x in block]
    last = [x for block in blocks[-quarter:] for x in block]
    if not first or not last or median(first) <= 0:
        return None
    return median(last) / median(first) - 1


def side_reasons(side: Side) -> list[str]:
    """One side's old noise reasons: spread, severe outliers, a stall, drift."""
    reasons = []
    count = sum(len(b) for b in side.blocks)
    if side.median > 0 and (side.q3 - side.q1) / side.median > MAX_RELATIVE_IQR:
        reasons.append(f"{side.name} spread")
    if count and _severe(side) / count > MAX_SEVERE_OUTLIER_SHARE:
        reasons.append(f"{side.name} outliers")
    if side.median > 0 and side.max >= STALL_FACTOR * side.median:
        reasons.append(f"{side.name} stall")
    drift = _drift(side.blocks)
    if drift is not None and abs(drift) > MAX_DRIFT:
        reasons.append(f"{side.name} drift")
    return reasons


def machine_reasons(other_cpu_cores: float | None, other_gpu: Sequence[str], gpu: bool, host: bool) -> list[str]:
    """The old machine reasons: others on the CPU (a CPU run, or host time), others on the GPU."""
    reasons = []
    if other_cpu_cores is not None and other_cpu_cores > MAX_OTHER_CPU_CORES and (host or not gpu):
        reasons.append("machine cpu")
    if gpu and other_gpu:
        reasons.append("machine gpu")
    return reasons


def wide(low: float | None, high: float | None) -> list[str]:
    """The old interval reason."""
    return ["wide interval"] if low and high and high / low > MAX_INTERVAL_RATIO else []


def verdict(
    sides: tuple[Side, Side], low: float | None, high: float | None, machine: list[str]
) -> tuple[str, list[str]]:
    """One run's old verdict and the reasons (short names) it was noisy for."""
    reasons = side_reasons(sides[0]) + side_reasons(sides[1]) + wide(low, high) + machine
    return ("noisy", reasons) if reasons else (interval_word(low, high), [])


def group_verdict(processes: list[tuple[tuple[Side, Side], list[str]]], low: float | None,
                  high: float | None) -> tuple[str, list[str]]:
    """A --repeat group's old verdict: any process noisy on its own series or machine, or a wide interval."""
    reasons = [r for sides, machine in processes for r in side_reasons(sides[0]) + side_reasons(sides[1]) + machine]
    reasons += wide(low, high)
    return ("noisy", sorted(set(reasons))) if reasons else (interval_word(low, high), [])
