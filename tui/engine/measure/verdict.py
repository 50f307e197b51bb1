"""The verdict: one word for what a run's measurement supports, and why it is not more.

A run's speedup comes with a 95% interval [lo, hi] (``tui.engine.measure.stats.bootstrap_speedup``).
With the noise threshold ``t`` (``RunOptions.noise_threshold``, default 2%) and the limits of
:class:`~tui.engine.thresholds.VerdictPolicy` (every threshold lives in :mod:`tui.engine.thresholds`):

``noisy``
    something threatened the conclusion, checked first, and any one reason is enough
    (:func:`assess`): other processes busy on the machine while measuring (more than half a core;
    on a GPU run, another process on the GPU); the speedup drifting across the run far enough to
    change the word (the block pairs' ratios trend one way, the last quarter's median lies beyond
    10% of the first's, and the two quarters read different words against the band: a drift that
    says the same word at both ends is a note); a stall (a sample 100x its side's median) that moves its
    side's median by more than t/2.
``faster``
    lo > 1 + t.
``slower``
    hi < 1 - t.
``no change``
    [lo, hi] lies inside [1 - t, 1 + t].
``inconclusive``
    anything else, a run with too few blocks for an interval, and the host-inclusive verdict of
    one process of a launch-bound run (its host time swings between processes more than the
    interval within one says: ``--repeat`` gives an interval across processes).

The distribution's shape alone makes no run noisy: a side's IQR/median above 10%, more than 5%
of its samples beyond the 3-IQR fence, a stall that leaves the median where it was and an
interval with hi/lo above 1.25 are notes with their numbers (:attr:`Verdict.notes`). On quiet
machines such runs were the rule and their intervals agreed from process to process; a loaded
machine is caught by the machine check (docs/BENCHMARKS.md, "Calibrating the verdict").

Only finished runs that are ``done`` get a verdict; failed and cancelled runs keep their status.
The same rules judge the host-inclusive speedup of a launch-bound run (``host_verdict``), with
one value per block as its samples. Outliers are classified as criterion does (Tukey fences at
1.5 and 3 IQR beyond the quartiles), per side (:class:`Outliers`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tui.engine.measure.stats import median
from tui.engine.thresholds import (
    DRIFT_POINTS, DRIFT_TREND_Z, LIMIT_NAMES, MIN_IQR_SHARE, STALL_SHIFT_SHARE, VerdictPolicy,
)  # fmt: skip
from tui.typed import JsonRecord

__all__ = [
    "FASTER", "SLOWER", "NO_CHANGE", "INCONCLUSIVE", "NOISY", "VERDICTS", "CONFIDENT", "undecided_reason",
    "VerdictPolicy", "LIMIT_NAMES", "Outliers", "SideSeries", "Machine", "Verdict", "Assessment",
    "classify_outliers", "judge_interval", "assess", "noise_reasons", "interval_notes", "verdict_for", "RERUN_HINT",
    "series_checks", "stall_opening", "machine_reasons", "speedup_drift", "past_drift", "spread_note",
    "ONE_PROCESS_HOST", "Drift",
]  # fmt: skip

FASTER, SLOWER, NO_CHANGE, INCONCLUSIVE, NOISY = "faster", "slower", "no change", "inconclusive", "noisy"
VERDICTS = (FASTER, SLOWER, NO_CHANGE, INCONCLUSIVE, NOISY)
CONFIDENT = frozenset({FASTER, SLOWER, NO_CHANGE})
"""Verdicts that state a number; ``--strict`` fails on the others."""

RERUN_HINT = "re-run on a quiet machine, or with more iters or --repeat"

ONE_PROCESS_HOST = ("one process: a launch-bound run's host time swings from process to process by more than "
                    "the interval within one says; --repeat 3 (or auto, the default) gives an interval across "
                    "processes")
"""Why the host verdict of one process of a launch-bound run is not decisive."""


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


def severe_fences(q1: float, q3: float, min_iqr: float = 0.0) -> tuple[float, float]:
    """The 3-IQR fences of the quartiles ``q1``, ``q3`` (the IQR at least ``min_iqr``): beyond them, severe."""
    iqr = max(q3 - q1, min_iqr)
    return q1 - 3 * iqr, q3 + 3 * iqr


def classify_outliers(values: Iterable[float], q1: float, q3: float, min_iqr: float = 0.0) -> Outliers:
    """Count ``values`` beyond the 1.5- and 3-IQR fences of the quartiles ``q1``, ``q3``.

    ``min_iqr``: the IQR the fences use is at least this (see :meth:`SideSeries.outliers`).
    """
    iqr = max(q3 - q1, min_iqr)
    low_mild, high_mild = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    low_severe, high_severe = severe_fences(q1, q3, min_iqr)
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
        """This side's outliers (:func:`classify_outliers`), the IQR at least :data:`MIN_IQR_SHARE` of the median.

        Without that floor a side whose times are mostly one value (a short kernel on a clock
        that ticks in 0.5 us steps) has an IQR of 0, and every other tick would be "severe".
        """
        values = (x for block in self.blocks for x in block)
        return classify_outliers(values, self.q1, self.q3, min_iqr=MIN_IQR_SHARE * self.median)

    def median_without_stalls(self, factor: float) -> float | None:
        """The median of the samples below ``factor`` x the median (None when none are left)."""
        kept = [x for block in self.blocks for x in block if x < factor * self.median]
        return median(kept) if kept else None


@dataclass(frozen=True)
class Machine:
    """What the machine did while the run measured (None: not known, never a reason)."""

    other_cpu_cores: float | None = None
    other_cpu_top: tuple[str, ...] = ()
    other_gpu_processes: tuple[str, ...] = ()
    gpu: bool = False


@dataclass(frozen=True)
class Verdict(JsonRecord):
    """A verdict word (:data:`VERDICTS`), why it is not more (noisy's reasons, or why not decisive), and notes."""

    word: str = INCONCLUSIVE
    reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Assessment:
    """What the checks found: ``reasons`` threaten the conclusion (noisy), ``notes`` do not."""

    reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def __add__(self, other: Assessment) -> Assessment:
        return Assessment(self.reasons + other.reasons, self.notes + other.notes)


def _past(value: float, limit: float, spec: str) -> str:
    """``value`` formatted as ``spec`` (``.2f``, ``.0%``, ``+.0%``) for a note that says it is past ``limit``.

    Rounded to the limit's decimals, a value just past it read as the limit itself (``hi/lo 1.25 > 1.25``):
    it gets as many more decimals (up to 4) as tell the two apart (``hi/lo 1.251 > 1.25``).
    """
    sign, _, rest = spec.rpartition(".")
    digits, kind = int(rest[:-1]), rest[-1]
    for extra in range(5):
        shown = f"{abs(value):.{digits + extra}{kind}}"
        if shown != f"{abs(limit):.{digits + extra}{kind}}":
            break
    return f"{value:{sign}.{digits + extra}{kind}}"


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


def undecided_reason(low: float | None, high: float | None, threshold: float, processes: int = 1) -> str:
    """Why :func:`judge_interval` read ``inconclusive`` where no noise check said why: no interval, or one that
    reaches past the ±``threshold`` band on one side and into it on the other. ``processes``: how many a
    ``--repeat`` row ran; more than that is what may decide it, not ``--repeat`` as such."""
    if low is None or high is None:
        return "no interval (too few measured blocks)"
    band = f"[{1 - threshold:g}, {1 + threshold:g}]"
    more = ("more iterations or processes" if processes <= 1
            else f"more iterations, or more processes than these {processes} (--repeat {processes + 2}),")
    return (f"its interval [{low:.4g}, {high:.4g}] is neither inside the no-change band {band} nor wholly past it:"
            f" {more} may decide it")


def spread_note(name: str, relative_iqr: float | None, policy: VerdictPolicy, what: str = "time") -> str | None:
    """The note on a side's IQR/median above ``policy.max_relative_iqr`` (the summary's warning says the same)."""
    if relative_iqr is None or relative_iqr <= policy.max_relative_iqr:
        return None
    shown = _past(relative_iqr, policy.max_relative_iqr, ".0%")
    return (f"{name} {what} spread IQR/median {shown} > {policy.max_relative_iqr:.0%}: a wide distribution;"
            " the verdict judges by the interval")


def series_checks(side: SideSeries, policy: VerdictPolicy, what: str = "time", drift: bool = True) -> Assessment:
    """One series' checks: a stall that moves its median and (``drift``) its own drift are reasons; its shape, notes."""
    notes = []
    spread = spread_note(side.name, (side.q3 - side.q1) / side.median if side.median > 0 else None, policy, what)
    if spread:
        notes.append(spread)
    count = side.count
    severe = side.outliers().severe if count else 0
    if count and severe / count > policy.max_severe_outlier_share:
        notes.append(f"{side.name} {what}: {severe} of {count} samples beyond the 3-IQR fence"
                     f" ({_past(severe / count, policy.max_severe_outlier_share, '.0%')}"
                     f" > {policy.max_severe_outlier_share:.0%})")
    checks = Assessment(notes=tuple(notes)) + _stall(side, policy, what)
    if drift:
        trend = _drift([median(b) for b in side.blocks if b])
        if trend is not None and abs(trend.change) > policy.max_drift:
            shown = _past(trend.change, policy.max_drift, "+.0%")
            checks += Assessment((f"{side.name} {what} drifted {shown} from the first quarter of blocks to the"
                                  f" last (> {policy.max_drift:.0%})",))
    return checks


def stall_opening(side: str, what: str) -> str:
    """How the verdict's line about a stall of ``side``'s ``what`` (``time``, ``host time``) opens: ``eager time: a
    stall``. The run's summary finds the line by it (a stall said by the verdict is not said again)."""
    return f"{side} {what}: a stall"


def _stall(side: SideSeries, policy: VerdictPolicy, what: str) -> Assessment:
    """A stall: a reason when leaving its samples out moves the side's median by more than t/2, else a note."""
    if side.median <= 0 or side.max < policy.stall_factor * side.median:
        return Assessment()
    stall = (f"{stall_opening(side.name, what)} ({side.max:.4g} ms, {side.max / side.median:.0f}x the median: the "
             "worker was paused or the machine was busy)")
    without = side.median_without_stalls(policy.stall_factor)
    shift = abs(without / side.median - 1) if without else 1.0
    if shift > STALL_SHIFT_SHARE * policy.threshold:
        return Assessment((f"{stall} moved the median by {shift:.1%}",))
    return Assessment(notes=(f"{stall}; the median moved {shift:.1%}",))


@dataclass(frozen=True)
class Drift:
    """A trend across a run: the median of its first quarter of blocks (or block pairs) and of its last."""

    first: float
    last: float

    @property
    def change(self) -> float:
        """The last quarter's median over the first's, less one (+0.12: 12% higher at the end)."""
        return self.last / self.first - 1


def _drift(values: Sequence[float]) -> Drift | None:
    """The first and the last quarter's medians of ``values`` (block medians, in order).

    None unless the values also trend one way (Kendall's S beyond :data:`DRIFT_TREND_Z` standard
    deviations): quarters that differ only by the blocks' scatter are not drift, and with five
    blocks no order is significant. More than :data:`DRIFT_POINTS` values are merged into runs of
    adjacent ones first (their medians), which keeps the test's cost bounded.
    """
    if len(values) > DRIFT_POINTS:
        size = -(-len(values) // DRIFT_POINTS)
        values = [median(values[i:i + size]) for i in range(0, len(values), size)]
    n = len(values)
    quarter = n // 4
    if quarter < 1:
        return None
    score = sum((b > a) - (b < a) for i, a in enumerate(values) for b in values[i + 1:])
    if abs(score) < DRIFT_TREND_Z * math.sqrt(n * (n - 1) * (2 * n + 5) / 18):
        return None
    base = median(values[:quarter])
    return Drift(base, median(values[-quarter:])) if base > 0 else None


def speedup_drift(eager: SideSeries, compiled: SideSeries) -> Drift | None:
    """The speedup of the first and the last quarter of block pairs, when it trends (None: no trend).

    Per pair, eager's block median over compiled's: a change of the machine that slows both sides
    alike (the blocks are interleaved) leaves it be; what moves the speedup itself moves it.
    """
    return _drift(
        [
            median(e) / median(c)
            for e, c in zip(eager.blocks, compiled.blocks, strict=False)
            if e and c and median(c) > 0
        ]
    )


def point_word(speedup: float, threshold: float) -> str:
    """The word one speedup reads against the band [1 - t, 1 + t]: an interval of a single point."""
    return judge_interval(speedup, speedup, threshold)


def drift_text(drift: Drift, policy: VerdictPolicy, what: str = "time") -> str:
    """How far a speedup drifted across the run, past ``max_drift``."""
    return (f"the {what} speedup drifted {_past(drift.change, policy.max_drift, '+.0%')} from the first quarter"
            f" of block pairs to the last (> {policy.max_drift:.0%})")


def drift_check(drift: Drift, policy: VerdictPolicy, what: str = "time") -> Assessment:
    """A speedup's drift past ``max_drift``: a reason when its first and last quarters read different words.

    A speedup that climbs from 1.6x to 1.8x reads ``faster`` at either end: the word holds wherever
    in the run one looks, only the number is imprecise, so that drift is a note. One that moves from
    0.99x to 1.10x would have said ``no change`` had the run stopped early and ``faster`` had it
    started late: that drift threatens the word itself.
    """
    first, last = point_word(drift.first, policy.threshold), point_word(drift.last, policy.threshold)
    said = drift_text(drift, policy, what)
    if first != last:
        return Assessment((f"{said}: {drift.first:.3f}x ({first}) to {drift.last:.3f}x ({last})",))
    return Assessment(notes=(f"{said}: {drift.first:.3f}x to {drift.last:.3f}x, {first} at both ends;"
                             " the number is imprecise",))


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


def interval_notes(low: float | None, high: float | None, policy: VerdictPolicy, what: str = "time",
                   kind: str = "interval") -> list[str]:
    """The note on an interval with hi/lo above ``policy.max_interval_ratio`` (its word still stands)."""
    if low is not None and high is not None and low > 0 and high / low > policy.max_interval_ratio:
        shown = _past(high / low, policy.max_interval_ratio, ".2f")
        return [f"the {what} speedup's {kind} is wide (hi/lo {shown} > {policy.max_interval_ratio:.2f}):"
                " the number is imprecise"]
    return []


def assess(eager: SideSeries, compiled: SideSeries, low: float | None, high: float | None, machine: Machine,
           policy: VerdictPolicy, what: str = "time", host: bool = False, paired_drift: bool = True) -> Assessment:
    """Every check of one speedup: the reasons it is noisy (empty: not) and the notes.

    ``paired_drift`` False: the speedup's drift is left to the caller (``compare``, where it is one side of a
    comparison whose word the band around 1 does not decide: :func:`past_drift`).
    """
    checks = series_checks(eager, policy, what, drift=False) + series_checks(compiled, policy, what, drift=False)
    drift = speedup_drift(eager, compiled) if paired_drift else None
    if drift is not None and abs(drift.change) > policy.max_drift:
        checks += drift_check(drift, policy, what)
    checks += Assessment(tuple(machine_reasons(machine, policy, host)), tuple(interval_notes(low, high, policy, what)))
    return checks


def past_drift(eager: SideSeries, compiled: SideSeries, policy: VerdictPolicy, what: str = "time") -> str | None:
    """The speedup's drift past ``max_drift``, said (:func:`drift_text`); None within it."""
    drift = speedup_drift(eager, compiled)
    if drift is None or abs(drift.change) <= policy.max_drift:
        return None
    return drift_text(drift, policy, what)


def noise_reasons(eager: SideSeries, compiled: SideSeries, low: float | None, high: float | None,
                  machine: Machine, policy: VerdictPolicy, what: str = "time", host: bool = False) -> tuple[str, ...]:
    """Every reason the measurement is noisy (empty: not noisy)."""
    return assess(eager, compiled, low, high, machine, policy, what, host).reasons


def verdict_for(eager: SideSeries | None, compiled: SideSeries | None, low: float | None, high: float | None,
                machine: Machine | None = None, policy: VerdictPolicy | None = None,
                what: str = "time", host: bool = False, processes: int | None = None) -> Verdict:
    """The verdict of one speedup: ``noisy`` with its reasons first, else the interval's word, with the notes.

    ``processes``: how many worker processes the interval comes from; a ``host`` verdict of one
    (a launch-bound run's host-inclusive speedup) is at most ``inconclusive``, and says why.
    """
    policy = policy or VerdictPolicy()
    if eager is None or compiled is None:
        return Verdict(INCONCLUSIVE)
    checks = assess(eager, compiled, low, high, machine or Machine(), policy, what, host)
    if checks.reasons:
        return Verdict(NOISY, checks.reasons, checks.notes)
    if host and processes == 1:
        return Verdict(INCONCLUSIVE, (ONE_PROCESS_HOST,), checks.notes)
    return Verdict(judge_interval(low, high, policy.threshold), (), checks.notes)
