"""The verdict: one word for what a run's measurement supports, checked for noise first.

A run's speedup comes with a 95% interval [lo, hi] (``tui.engine.stats.bootstrap_speedup``).
With the noise threshold ``t`` (``RunOptions.noise_threshold``, default 2%):

``noisy``
    the measurement cannot support a number; checked first, and any one reason is enough
    (:func:`noise_reasons`, thresholds in :class:`VerdictPolicy`): a side's IQR/median above
    10%; hi/lo above 1.25; more than 5% of a side's samples beyond the 3-IQR (severe) fence;
    the median of a side's last quarter of blocks differs from its first quarter by more than
    10%; a stall (one sample above 100x its side's median); other processes busy on the
    machine while measuring (more than half a core; on a GPU run, another process on the GPU).
``faster``
    lo > 1 + t.
``slower``
    hi < 1 - t.
``no change``
    [lo, hi] lies inside [1 - t, 1 + t].
``inconclusive``
    anything else, and a run with too few blocks for an interval.

Only finished runs that are ``done`` get a verdict; failed and cancelled runs keep their status.
The same rules judge the host-inclusive speedup of a launch-bound run (``host_verdict``), with
one value per block as its samples. Outliers are classified as criterion does (Tukey fences at
1.5 and 3 IQR beyond the quartiles), per side (:class:`Outliers`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Iterable, Sequence

from tui.engine.stats import median
from tui.typed import JsonRecord

__all__ = [
    "FASTER", "SLOWER", "NO_CHANGE", "INCONCLUSIVE", "NOISY", "VERDICTS", "CONFIDENT",
    "VerdictPolicy", "LIMIT_NAMES", "Outliers", "SideSeries", "Machine", "Verdict",
    "classify_outliers", "judge_interval", "noise_reasons", "interval_reasons", "verdict_for", "RERUN_HINT",
    "spread_reasons", "machine_reasons",
]  # fmt: skip

FASTER, SLOWER, NO_CHANGE, INCONCLUSIVE, NOISY = "faster", "slower", "no change", "inconclusive", "noisy"
VERDICTS = (FASTER, SLOWER, NO_CHANGE, INCONCLUSIVE, NOISY)
CONFIDENT = frozenset({FASTER, SLOWER, NO_CHANGE})
"""Verdicts that state a number; ``--strict`` fails on the others."""

MIN_IQR_SHARE = 0.03
"""Outlier fences use an IQR of at least this share of the median (:meth:`SideSeries.outliers`).

The severe fence thus lies at least 9% of the median beyond a quartile. A tighter floor (1%,
until 2026-12-03) called the H200's CNN b64 runs noisy for their first call of each block,
about 6% slower than the rest after the other side ran (docs/BENCHMARKS.md, "Verdicts on the
H200"): a systematic cost of interleaving that the median ignores, not noise."""

RERUN_HINT = "re-run on a quiet machine, or with more iters or --repeat"


@dataclass(frozen=True)
class VerdictPolicy(JsonRecord):
    """The thresholds of the verdict (the module docstring says what each one means)."""

    threshold: float = 0.02
    max_relative_iqr: float = 0.10
    max_interval_ratio: float = 1.25
    max_severe_outlier_share: float = 0.05
    max_drift: float = 0.10
    stall_factor: float = 100.0
    max_other_cpu_cores: float = 0.5

    @classmethod
    def of(cls, threshold: float | None = None, limits: dict[str, float] | None = None) -> "VerdictPolicy":
        """The defaults with ``threshold`` (t) and any of the other limits replaced (checked by RunOptions)."""
        changes = {k: float(v) for k, v in (limits or {}).items() if k in LIMIT_NAMES}
        if threshold is not None:
            changes["threshold"] = float(threshold)
        return replace(cls(), **changes) if changes else cls()


LIMIT_NAMES = tuple(f.name for f in fields(VerdictPolicy) if f.name != "threshold")
"""The limits ``--noise-limit NAME=VALUE`` (``RunOptions.noise_limits``) may change."""


@dataclass(frozen=True)
class Outliers(JsonRecord):
    """Samples beyond Tukey's fences: mild between 1.5 and 3 IQR from a quartile, severe beyond 3."""

    low_severe: int = 0
    low_mild: int = 0
    high_mild: int = 0
    high_severe: int = 0

    @property
    def mild(self) -> int:
        """Mild outliers on both sides."""
        return self.low_mild + self.high_mild

    @property
    def severe(self) -> int:
        """Severe outliers on both sides."""
        return self.low_severe + self.high_severe


def classify_outliers(values: Iterable[float], q1: float, q3: float, min_iqr: float = 0.0) -> Outliers:
    """Count ``values`` beyond the 1.5- and 3-IQR fences of the quartiles ``q1``, ``q3``.

    ``min_iqr``: the IQR the fences use is at least this (see :meth:`SideSeries.outliers`).
    """
    iqr = max(q3 - q1, min_iqr)
    low_mild, low_severe = q1 - 1.5 * iqr, q1 - 3 * iqr
    high_mild, high_severe = q3 + 1.5 * iqr, q3 + 3 * iqr
    counts = [0, 0, 0, 0]
    for x in values:
        if x < low_severe:
            counts[0] += 1
        elif x < low_mild:
            counts[1] += 1
        elif x > high_severe:
            counts[3] += 1
        elif x > high_mild:
            counts[2] += 1
    return Outliers(*counts)


@dataclass(frozen=True)
class SideSeries:
    """What the noise checks need of one side: its blocks in order and its quartiles."""

    name: str
    blocks: Sequence[Sequence[float]]
    median: float
    q1: float
    q3: float
    max: float

    @property
    def count(self) -> int:
        """Samples over all blocks."""
        return sum(len(b) for b in self.blocks)

    def outliers(self) -> Outliers:
        """This side's outliers (:func:`classify_outliers`), with an IQR of at least :data:`MIN_IQR_SHARE` of the median.

        Without that floor a side whose times are mostly one value (a short kernel on a clock
        that ticks in 0.5 us steps) has an IQR of 0, and every other tick would be "severe".
        """
        values = (x for block in self.blocks for x in block)
        return classify_outliers(values, self.q1, self.q3, min_iqr=MIN_IQR_SHARE * self.median)


@dataclass(frozen=True)
class Machine:
    """What the machine did while the run measured (None: not known, never a reason)."""

    other_cpu_cores: float | None = None
    other_cpu_top: tuple[str, ...] = ()
    other_gpu_processes: tuple[str, ...] = ()
    gpu: bool = False


@dataclass(frozen=True)
class Verdict(JsonRecord):
    """A verdict word (:data:`VERDICTS`) and, for ``noisy``, the reasons that tripped."""

    word: str = INCONCLUSIVE
    reasons: tuple[str, ...] = ()


def judge_interval(low: float | None, high: float | None, threshold: float) -> str:
    """faster / slower / no change / inconclusive from the interval alone (no noise checks)."""
    if low is None or high is None:
        return INCONCLUSIVE
    if low > 1 + threshold:
        return FASTER
    if high < 1 - threshold:
        return SLOWER
    if 1 - threshold <= low and high <= 1 + threshold:
        return NO_CHANGE
    return INCONCLUSIVE


def spread_reasons(side: SideSeries, policy: VerdictPolicy, what: str) -> list[str]:
    """One side's own noise reasons: spread, severe outliers, a stall, drift (empty: none)."""
    reasons = []
    if side.median > 0 and (side.q3 - side.q1) / side.median > policy.max_relative_iqr:
        reasons.append(f"{side.name} {what} spread IQR/median {(side.q3 - side.q1) / side.median:.0%}"
                       f" > {policy.max_relative_iqr:.0%}")
    count = side.count
    severe = side.outliers().severe if count else 0
    if count and severe / count > policy.max_severe_outlier_share:
        reasons.append(f"{side.name} {what}: {severe} of {count} samples beyond the 3-IQR fence"
                       f" ({severe / count:.0%} > {policy.max_severe_outlier_share:.0%})")
    if side.median > 0 and side.max >= policy.stall_factor * side.median:
        reasons.append(f"{side.name} {what}: a stall ({side.max:.4g} ms, {side.max / side.median:.0f}x the median)")
    drift = _drift(side.blocks)
    if drift is not None and abs(drift) > policy.max_drift:
        reasons.append(f"{side.name} {what} drifted {drift:+.0%} from the first quarter of blocks to the last"
                       f" (> {policy.max_drift:.0%})")
    return reasons


def _drift(blocks: Sequence[Sequence[float]]) -> float | None:
    """Median of the last quarter of blocks / median of the first quarter - 1 (None below 4 blocks)."""
    quarter = len(blocks) // 4
    if quarter < 1:
        return None
    first = [x for block in blocks[:quarter] for x in block]
    last = [x for block in blocks[-quarter:] for x in block]
    if not first or not last:
        return None
    base = median(first)
    return median(last) / base - 1 if base > 0 else None


def machine_reasons(machine: Machine, policy: VerdictPolicy, host: bool) -> list[str]:
    """The machine's noise reasons: other processes on the CPU (``host`` time, or a CPU run) or on the GPU."""
    reasons = []
    cores = machine.other_cpu_cores
    # A GPU run's device time does not suffer from a busy CPU; its host time does.
    if cores is not None and cores > policy.max_other_cpu_cores and (host or not machine.gpu):
        top = f" ({', '.join(machine.other_cpu_top)})" if machine.other_cpu_top else ""
        reasons.append(f"other processes used {cores:.1f} CPU cores while measuring{top}")
    if machine.gpu and machine.other_gpu_processes:
        reasons.append(f"other processes used the GPU while measuring: {', '.join(machine.other_gpu_processes)}")
    return reasons


def noise_reasons(eager: SideSeries, compiled: SideSeries, low: float | None, high: float | None,
                  machine: Machine, policy: VerdictPolicy, what: str = "time", host: bool = False) -> tuple[str, ...]:
    """Every reason the measurement cannot support a number (empty: not noisy)."""
    reasons = spread_reasons(eager, policy, what) + spread_reasons(compiled, policy, what)
    reasons += interval_reasons(low, high, policy, what)
    reasons += machine_reasons(machine, policy, host)
    return tuple(reasons)


def interval_reasons(low: float | None, high: float | None, policy: VerdictPolicy, what: str = "time",
                     kind: str = "interval") -> list[str]:
    """The interval's noise reason (hi/lo above ``policy.max_interval_ratio``), or none."""
    if low is not None and high is not None and low > 0 and high / low > policy.max_interval_ratio:
        return [f"the {what} speedup's {kind} is too wide (hi/lo {high / low:.2f} > {policy.max_interval_ratio:.2f})"]
    return []


def verdict_for(eager: SideSeries | None, compiled: SideSeries | None, low: float | None, high: float | None,
                machine: Machine | None = None, policy: VerdictPolicy | None = None,
                what: str = "time", host: bool = False) -> Verdict:
    """The verdict of one speedup: ``noisy`` with its reasons first, else the interval's word."""
    policy = policy or VerdictPolicy()
    if eager is None or compiled is None:
        return Verdict(INCONCLUSIVE)
    machine = machine or Machine()
    reasons = noise_reasons(eager, compiled, low, high, machine, policy, what, host)
    if reasons:
        return Verdict(NOISY, reasons)
    return Verdict(judge_interval(low, high, policy.threshold))
