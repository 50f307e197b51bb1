"""A run's results as one immutable value: :class:`RunSummary`, and how it is computed from blocks.

Timing data
    Only ``stage == "measure"`` blocks enter the statistics. ``iter`` statistics use the
    per-iteration clock (CUDA events on a GPU, perf_counter on the CPU). ``host`` statistics
    use each block's host-inclusive times (:attr:`tui.engine.measure.samples.Block.host_ms`). On a GPU
    that is the host sub-block's ``host_ms_per_call``: **one value per block, unweighted**, so
    their ``n`` is the number of blocks (blocks are equal-sized apart from the last one, so
    weighting would change little, and ``n`` stays the number of independent host
    measurements). On the CPU one loop times both clocks, and the host statistics *are* the
    per-call ones: the same samples, median and block-bootstrap interval, so the host-inclusive
    speedup equals the speedup and never gets a verdict of its own (``launch_bound`` is None).

Fields of :class:`RunSummary`
    ``eager`` / ``compiled`` (:class:`SideStats`: ``iter`` and ``host`` Stats, each None when
    nothing was measured); ``clock``; ``speedup`` = eager iter median / compiled iter median;
    ``speedup_ci_low`` / ``speedup_ci_high`` / ``significant`` from
    :func:`tui.engine.measure.stats.bootstrap_speedup` (seed 0, 2000 resamples), computed once the run
    has ended: while it runs they are None and ``live`` is True, so a summary at 10 Hz stays
    cheap and never steals CPU from a CPU benchmark next to it; the same three for
    ``host_speedup``; ``launch_bound`` (device-time clocks only: the host median exceeds the
    per-iteration median by more than 1.25x on either side; None otherwise);
    ``break_even_calls`` = ceil(compile_s / (eager median - compiled median)), None unless
    compiled is faster; ``per_label`` (dynamic shapes: :class:`LabelStats` per input label);
    ``tflops`` / ``gbps`` from the compiled median (None when the worker counted no FLOPs or
    bytes: never a fake 0); ``warnings`` (stability, the worker's, telemetry).
"""

from __future__ import annotations

import dataclasses
import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tui.engine.measure.clocks import clock_info
from tui.engine.protocol import SIDES
from tui.engine.measure.samples import Samples, checked_ms
from tui.engine.measure.stats import (
    BOOTSTRAP_RESAMPLES, SampleAccumulator, SpeedupCI, Stats, bootstrap_speedup, is_significant, typical_medians,
)
from tui.engine.thresholds import LAUNCH_BOUND_RATIO, MIN_INTERVAL_BLOCKS, MIN_SAMPLES, STALL_SHIFT_SHARE, VerdictPolicy
from tui.engine.measure.verdict import (
    Machine, Outliers, SideSeries, Verdict, spread_note, stall_opening, verdict_for,
)
from tui.typed import JsonRecord

__all__ = [
    "SideStats",
    "LabelStats",
    "RunSummary",
    "LiveStats",
    "SummaryInputs",
    "build_summary",
    "MIN_SAMPLES",
    "MIN_INTERVAL_BLOCKS",
    "LAUNCH_BOUND_RATIO",
    "BOOTSTRAP_RESAMPLES",
    "launch_bound_of",
    "check_stored_times",
    "with_typical_medians",
    "typical_clock",
]

# The thresholds (MIN_SAMPLES, MIN_INTERVAL_BLOCKS, LAUNCH_BOUND_RATIO, the policy's) live in tui.engine.thresholds.


@dataclass(frozen=True)
class SideStats(JsonRecord):
    """One side's statistics: per-iteration clock (``iter``) and host-inclusive per call (``host``)."""

    iter: Stats | None = None
    host: Stats | None = None
    outliers: Outliers | None = None
    """The ``iter`` samples beyond Tukey's fences (tui.engine.measure.verdict); None while the run is live."""


@dataclass(frozen=True)
class LabelStats(JsonRecord):
    """Per input label (a dynamic-shapes batch size): each side's iter Stats and their ratio."""

    eager: Stats | None = None
    compiled: Stats | None = None
    speedup: float | None = None


@dataclass(frozen=True)
class RunSummary(JsonRecord):
    """Everything a run's blocks say, with the worker's counts; see the module docstring."""

    eager: SideStats = field(default_factory=SideStats)
    compiled: SideStats = field(default_factory=SideStats)
    clock: str | None = None
    speedup: float | None = None
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    significant: bool | None = None
    host_speedup: float | None = None
    host_speedup_ci_low: float | None = None
    host_speedup_ci_high: float | None = None
    launch_bound: bool | None = None
    break_even_calls: int | None = None
    per_label: dict[str, LabelStats] = field(default_factory=dict)
    tflops: float | None = None
    gbps: float | None = None
    warnings: tuple[str, ...] = ()
    live: bool = False
    verdict: str | None = None
    noise_reasons: tuple[str, ...] = ()
    host_verdict: str | None = None
    host_noise_reasons: tuple[str, ...] = ()

    def side(self, name: str) -> SideStats:
        """``eager`` or ``compiled``."""
        return self.eager if name == "eager" else self.compiled

    @property
    def one_clock(self) -> bool:
        """True on a host clock (perf_counter on the CPU): the host-inclusive figures are the per-call ones
        (:attr:`tui.engine.measure.samples.Block.host_ms`), so a view says them once."""
        info = clock_info(self.clock)
        return info is not None and not info.device_time


_STORED_TIMES = ("median", "mean", "min", "max", "p10", "p90", "q1", "q3")


def check_stored_times(summary: RunSummary) -> None:
    """TimingError naming the field (``summary.compiled.iter.median``) for a time in a summary read from a file
    that no measurement gives: where the samples are gone (pruned, or an export without them) the stored
    summary stands in for them, and is checked like them (:func:`~tui.engine.measure.samples.checked_ms`)."""
    for side in SIDES:
        stats = getattr(summary, side)
        for which in ("iter", "host"):
            found = getattr(stats, which)
            for name in _STORED_TIMES if found is not None else ():
                checked_ms(getattr(found, name), f"summary.{side}.{which}.{name}")


class LiveStats:
    """Incremental statistics over a run's measure blocks (rebuilt when samples are replaced)."""

    def __init__(self) -> None:
        self.iter = {side: SampleAccumulator() for side in SIDES}
        self.host = {side: SampleAccumulator() for side in SIDES}
        self.labels: dict[str, dict[str, SampleAccumulator]] = {}
        self.blocks: dict[str, list[array]] = {side: [] for side in SIDES}
        self.host_blocks: dict[str, list[Sequence[float]]] = {side: [] for side in SIDES}
        self.consumed = {side: 0 for side in SIDES}
        self.clock: str | None = None
        self._intervals: dict[str, tuple[tuple[int, int], SpeedupCI]] = {}

    def feed(self, samples: Samples) -> None:
        """Take in the blocks that arrived since the last call."""
        for side in SIDES:
            start = self.consumed[side]
            # A snapshot: a block appended meanwhile (another thread) is picked up next time.
            new_blocks = samples[side][start:]
            self.consumed[side] = start + len(new_blocks)
            for block in new_blocks:
                if block.stage == "measure" and block.ms:
                    self._add(side, block)

    def _add(self, side: str, block: Any) -> None:
        self.clock = self.clock or block.clock
        self.iter[side].add(block.ms)
        self.blocks[side].append(block.ms)
        host = block.host_ms  # the one rule for both clocks (tui.engine.measure.samples.Block.host_ms)
        if host:
            self.host[side].add(host)
            self.host_blocks[side].append(host)
        if block.labels:
            by_label: dict[str, list[float]] = {}
            for label, value in zip(block.labels, block.ms, strict=True):
                by_label.setdefault(label, []).append(value)
            for label, values in by_label.items():
                acc = self.labels.setdefault(label, {s: SampleAccumulator() for s in SIDES})
                acc[side].add(values)

    def interval(self, which: str) -> SpeedupCI:
        """The block-bootstrap interval of the ``iter`` or ``host`` speedup (cached per block count)."""
        blocks = self.blocks if which == "iter" else self.host_blocks
        key = (len(blocks["eager"]), len(blocks["compiled"]))
        cached = self._intervals.get(which)
        if cached is None or cached[0] != key:
            result = bootstrap_speedup(blocks["eager"], blocks["compiled"], BOOTSTRAP_RESAMPLES, seed=0)
            if min(key) < MIN_INTERVAL_BLOCKS:
                result = SpeedupCI(result.point, None, None)
            cached = self._intervals[which] = (key, result)
        return cached[1]

    def series(self, side: str, which: str, stats: Stats | None) -> SideSeries | None:
        """One side's ``iter`` or ``host`` blocks with their quartiles, for the verdict's noise checks."""
        if stats is None:
            return None
        blocks = self.blocks[side] if which == "iter" else self.host_blocks[side]
        return SideSeries(side, blocks, stats.median, stats.q1, stats.q3, stats.max)

    def outliers(self, side: str, stats: Stats | None) -> Outliers | None:
        """``side``'s per-iteration samples beyond Tukey's fences (O(samples): once a run has ended)."""
        series = self.series(side, "iter", stats)
        return None if series is None else series.outliers()

    def pairs(self) -> int:
        """How many interleaved block pairs were measured (the bootstrap's units)."""
        return min(len(self.blocks["eager"]), len(self.blocks["compiled"]))

    def side_stats(self) -> dict[str, SideStats]:
        """Both sides' statistics so far."""
        return {side: SideStats(self.iter[side].stats(), self.host[side].stats()) for side in SIDES}

    def per_label(self) -> dict[str, LabelStats]:
        """Per-label statistics, labels in numeric order (``batch=16`` before ``batch=128``)."""
        result = {}
        for label, acc in sorted(self.labels.items(), key=lambda item: _label_key(item[0])):
            eager, compiled = acc["eager"].stats(), acc["compiled"].stats()
            result[label] = LabelStats(eager, compiled, _ratio(eager, compiled))
        return result


@dataclass(frozen=True)
class SummaryInputs:
    """What a summary needs from its run besides the blocks."""

    finished: bool
    done: bool
    compile_s: float | None
    flops_per_call: float | None
    bytes_per_call: float | None
    warnings: tuple[str, ...]
    throttled: tuple[str, ...]
    policy: VerdictPolicy = field(default_factory=VerdictPolicy)
    machine: Machine = field(default_factory=Machine)
    sm_clocks: tuple[float | None, float | None] = (None, None)
    """The mean SM clock (MHz) during eager's and compiled's measured blocks, None when not known."""
    concurrent_runs: int = 0
    """The most other runs of its session that ran beside it (one worker per GPU)."""


def build_summary(live: LiveStats, run: SummaryInputs) -> RunSummary:
    """The summary of the blocks ``live`` has taken in, for a run described by ``run``."""
    sides = live.side_stats()
    eager, compiled = sides["eager"], sides["compiled"]
    speedup = _ratio(eager.iter, compiled.iter)
    host_speedup = _ratio(eager.host, compiled.host)
    low = high = host_low = host_high = None
    if run.finished and speedup is not None:
        _, low, high = live.interval("iter")
    if run.finished and host_speedup is not None:
        _, host_low, host_high = live.interval("host")
    launch_bound = launch_bound_of(sides, live.clock)
    warnings = _warnings(sides, live.clock, run, live.pairs() if speedup is not None else None)
    if launch_bound and host_speedup is not None:
        warnings.append(_launch_bound_warning(sides, host_speedup, host_low, host_high))
    if launch_bound and run.concurrent_runs:
        warnings.append(_beside_others_warning(run.concurrent_runs))
    verdict = host_verdict = None
    if run.finished:
        eager, compiled = (SideStats(s.iter, s.host, live.outliers(name, s.iter)) for name, s in sides.items())
    if run.done and run.finished:
        verdict = _verdict(live, sides, "iter", (low, high), run)
        if launch_bound:
            host_verdict = _verdict(live, sides, "host", (host_low, host_high), run)
        warnings = _with_verdict_notes(warnings, verdict, host_verdict)
    return RunSummary(
        eager=eager,
        compiled=compiled,
        clock=live.clock,
        speedup=speedup,
        speedup_ci_low=low,
        speedup_ci_high=high,
        significant=is_significant(low, high),
        host_speedup=host_speedup,
        host_speedup_ci_low=host_low,
        host_speedup_ci_high=host_high,
        launch_bound=launch_bound,
        break_even_calls=_break_even(run.compile_s, eager.iter, compiled.iter),
        per_label=live.per_label(),
        tflops=_rate(run.flops_per_call, compiled.iter, 1e12),
        gbps=_rate(run.bytes_per_call, compiled.iter, 1e9),
        warnings=tuple(warnings),
        live=not run.finished,
        verdict=verdict.word if verdict else None,
        noise_reasons=verdict.reasons if verdict else (),
        host_verdict=host_verdict.word if host_verdict else None,
        host_noise_reasons=host_verdict.reasons if host_verdict else (),
    )


def typical_clock(processes: Sequence[RunSummary], which: str) -> tuple[float, ...] | None:
    """(eager, compiled) of several processes on one clock (``iter`` or ``host``):
    :func:`~tui.engine.measure.stats.typical_medians` of their own medians; None where that rule has none."""
    medians = []
    for process in processes:
        stats = [getattr(process.side(name), which) for name in SIDES]
        medians.append(tuple(s.median if s else None for s in stats))
    return typical_medians(medians)


def with_typical_medians(pooled: RunSummary, processes: Sequence[RunSummary], run: SummaryInputs) -> RunSummary:
    """``pooled`` (the statistics of several processes' blocks pooled) with each clock's eager and compiled medians
    replaced by the geometric means of the processes' own (:func:`~tui.engine.measure.stats.typical_medians`), each
    input label's too (dynamic shapes), and what is read from the medians read again: the speedups, the break-even
    calls, TFLOP/s and GB/s.

    The speedup is then the geometric mean of the processes' own speedups, always within their range. The median
    of the pooled samples is not: when the processes run at different levels (a CPU whose load changed between
    them), it is a time no process measured, and their ratio can fall outside every process's speedup
    (docs/METHOD.md, "Several processes"). A clock some process lacks, or times at zero, keeps both pooled medians.
    """
    sides = {name: pooled.side(name) for name in SIDES}
    for which in ("iter", "host"):
        typical = typical_clock(processes, which)
        if typical is None or any(getattr(sides[name], which) is None for name in SIDES):
            continue
        for name, centre in zip(SIDES, typical, strict=True):
            stats = dataclasses.replace(getattr(sides[name], which), median=centre)
            sides[name] = dataclasses.replace(sides[name], **{which: stats})
    eager, compiled = sides["eager"], sides["compiled"]
    labels = {label: _typical_label(entry, [p.per_label.get(label) for p in processes])
              for label, entry in pooled.per_label.items()}
    return dataclasses.replace(
        pooled, eager=eager, compiled=compiled, per_label=labels, speedup=_ratio(eager.iter, compiled.iter),
        host_speedup=_ratio(eager.host, compiled.host),
        break_even_calls=_break_even(run.compile_s, eager.iter, compiled.iter),
        tflops=_rate(run.flops_per_call, compiled.iter, 1e12), gbps=_rate(run.bytes_per_call, compiled.iter, 1e9))


def _typical_label(pooled: LabelStats, processes: Sequence[LabelStats | None]) -> LabelStats:
    """One input label's statistics read as :func:`with_typical_medians` reads a clock's."""
    own = [(p.eager.median if p and p.eager else None, p.compiled.median if p and p.compiled else None)
           for p in processes]
    typical = typical_medians(own)
    if typical is None or pooled.eager is None or pooled.compiled is None:
        return pooled
    eager, compiled = (dataclasses.replace(stats, median=centre)
                       for stats, centre in zip((pooled.eager, pooled.compiled), typical, strict=True))
    return LabelStats(eager, compiled, _ratio(eager, compiled))


def _verdict(live: LiveStats, sides: dict[str, SideStats], which: str, interval: tuple[float | None, float | None],
             run: SummaryInputs) -> Verdict:
    """The verdict of the ``iter`` (device or CPU time) or ``host`` speedup (tui.engine.measure.verdict)."""
    series = {name: live.series(name, which, getattr(side, which)) for name, side in sides.items()}
    what = "time" if which == "iter" else "host time"
    # One run is one process: its host verdict says so (tui.engine.measure.verdict); a --repeat group judges its own.
    return verdict_for(series["eager"], series["compiled"], *interval, machine=run.machine, policy=run.policy,
                       what=what, host=which == "host", processes=1)


def _ratio(top: Stats | None, bottom: Stats | None) -> float | None:
    if top is None or bottom is None or bottom.median <= 0:
        return None
    return top.median / bottom.median


def launch_bound_of(sides: dict[str, SideStats], clock: str | None) -> bool | None:
    """Device-time clocks only: a side's host median above :data:`LAUNCH_BOUND_RATIO` x its iter median.

    None: unknown."""
    info = clock_info(clock)
    if info is None or not info.device_time:
        return None
    known = False
    for side in sides.values():
        if side.iter is None or side.host is None or side.iter.median <= 0:
            continue
        known = True
        if side.host.median > LAUNCH_BOUND_RATIO * side.iter.median:
            return True
    return False if known else None


def _beside_others_warning(others: int) -> str:
    # Workers pinned to their own cores still share the host's memory bandwidth, caches and the
    # driver: a launch-bound run's host time is what such neighbours disturb first.
    runs = "run" if others == 1 else "runs"
    return (f"launch-bound and measured while {others} other {runs} of this session ran on other GPUs: its "
            f"host time shares the host with them; re-run it alone (--serial; the app's Serial / parallel) to check")


def _launch_bound_warning(sides: dict[str, SideStats], host_speedup: float, low: float | None,
                          high: float | None) -> str:
    # The headline speedup is device time; a loop that never synchronises pays host time.
    interval = f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else ""
    eager, compiled = sides["eager"].host, sides["compiled"].host
    assert eager is not None and compiled is not None
    # "x", not the front ends' "×": the warning is stored in the history, and a run recomputed from its samples
    # must read as it was stored
    return (
        f"launch-bound: the host needs more time per call than the GPU; host-inclusive "
        f"speedup {host_speedup:.2f}x{interval} (eager {eager.median:.4g} ms, "
        f"compiled {compiled.median:.4g} ms per call) is what a serving loop sees"
    )


def _break_even(compile_s: float | None, eager: Stats | None, compiled: Stats | None) -> int | None:
    if compile_s is None or eager is None or compiled is None:
        return None
    saved_ms = eager.median - compiled.median
    if saved_ms <= 0:
        return None
    return math.ceil(compile_s * 1000 / saved_ms)


def _stall_warning(side: str, stats: Stats | None, what: str, policy: VerdictPolicy) -> list[str]:
    if stats is None or stats.median <= 0 or stats.max < policy.stall_factor * stats.median:
        return []
    return [
        f"stall: one {side} {what} took {stats.max:.4g} ms, {stats.max / stats.median:.0f}x its median"
        f" ({stats.median:.4g} ms): the worker was paused or the machine was busy (the verdict counts it as noise"
        f" only where leaving it out moves the median by more than {STALL_SHIFT_SHARE * policy.threshold:.1%})"
    ]


def _with_verdict_notes(warnings: list[str], verdict: Verdict, host_verdict: Verdict | None) -> list[str]:
    """The run's warnings and its verdicts' notes (the distribution's shape, a wide interval), each said once."""
    notes = verdict.notes + (host_verdict.notes if host_verdict else ())
    return [w for w in dict.fromkeys([*warnings, *notes]) if not _stall_said(w, verdict, host_verdict)]


def _stall_said(warning: str, verdict: Verdict, host_verdict: Verdict | None) -> bool:
    """Whether ``warning`` is the live stall warning of a side whose stall a verdict tells, with how far it moved
    the median (a reason or a note): the verdict's line then stands for both."""
    for told, what, live in ((verdict, "time", "iteration"), (host_verdict, "host time", "block's host time")):
        for side in ("eager", "compiled"):
            if (told is not None and warning.startswith(f"stall: one {side} {live}")
                    and any(line.startswith(stall_opening(side, what)) for line in told.reasons + told.notes)):
                return True
    return False


def _side_warnings(side: str, stats: Stats | None, clock: str | None, run: SummaryInputs) -> list[str]:
    if stats is None:
        return [f"no {side} samples were measured"] if run.done else []
    messages = _stall_warning(side, stats, "iteration", run.policy)
    if stats.n < MIN_SAMPLES:
        messages.append(f"too few {side} samples (n = {stats.n} < {MIN_SAMPLES}): raise iters")
    # The verdict's own note, from the run's policy (--noise-limit max_relative_iqr moves both).
    spread = spread_note(side, stats.relative_iqr, run.policy)
    if spread:
        messages.append(spread)
    info = clock_info(clock)
    if info is not None and stats.median < info.too_fast_ms:
        messages.append(
            f"{side} median {stats.median * 1000:.1f} us is close to the {info.label} resolution"
            f" (about {info.resolution_ms * 1000:.1f} us): too fast to time, use a larger workload"
        )
    return messages


def _warnings(sides: dict[str, SideStats], clock: str | None, run: SummaryInputs, pairs: int | None) -> list[str]:
    messages: list[str] = []
    for name, side in sides.items():
        messages.extend(_side_warnings(name, side.iter, clock, run))
        if not any(m.startswith(f"stall: one {name}") for m in messages):
            messages.extend(_stall_warning(name, side.host, "block's host time per call", run.policy))
    if run.finished and pairs is not None and pairs < MIN_INTERVAL_BLOCKS:
        messages.append(f"too few interleaved blocks for a 95% interval ({pairs} < {MIN_INTERVAL_BLOCKS}):"
                        " raise iters or lower block_size")
    messages.extend(run.warnings)
    messages.extend(_clock_warning(run.sm_clocks))
    if run.throttled:
        messages.append(
            f"GPU clocks were throttled during the run ({', '.join(run.throttled)}):"
            " times may be slow; let the GPU cool or check its power limit"
        )
    return list(dict.fromkeys(messages))


CLOCK_MISMATCH = 0.03
"""Sides whose mean SM clocks differ by more than this share: the speedup includes a clock difference."""


def _clock_warning(clocks: tuple[float | None, float | None]) -> list[str]:
    eager, compiled = clocks
    if not eager or not compiled:
        return []
    difference = compiled / eager - 1
    if abs(difference) <= CLOCK_MISMATCH:
        return []
    return [f"SM clock differed between the sides (eager {eager:.0f} MHz, compiled {compiled:.0f} MHz,"
            f" {difference:+.1%}): the speedup includes a clock difference"]


def _label_key(label: str) -> tuple:
    # "batch=16" before "batch=128": compare the numbers inside labels as numbers.
    digits = "".join(c if c.isdigit() else " " for c in label).split()
    return (tuple(int(d) for d in digits), label)


def _rate(amount: float | None, compiled: Stats | None, unit: float) -> float | None:
    if not amount or amount <= 0 or compiled is None or compiled.median <= 0:
        return None
    return amount / (compiled.median / 1000) / unit
