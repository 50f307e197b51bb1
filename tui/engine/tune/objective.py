"""A candidate's runs as one number to race on, with its interval: the :class:`Score`.

The objective is the speedup over eager measured inside each run's own process (higher is better):
each process's eager normalises its compiled time, so two candidates measured in different
processes compare through their speedups, and what changes from one process to the next (clocks,
load, memory layout) cancels as far as it touches both sides alike. ``device`` (the default) reads
the per-iteration clock (device time on a GPU; on the CPU there is one clock), ``host`` the
host-inclusive time per call (a launch-bound serving loop). With one process the interval is the
run's own (block pairs); with two or more it is across processes
(:func:`tui.engine.store.repeats.summarize_group`).

``calls`` charges the compile time over a job of that many calls: the speedup becomes
``eager / (compiled + compile_s / calls)`` (its interval's ends mapped the same way; the compile
time itself has no interval). ``max_memory_gb`` puts out a candidate whose compiled peak memory (CUDA) is above it.
A candidate is out, with the reason, when none of its runs is done, when one recompiled while
measuring, or when one failed the accuracy check.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from tui.engine.measure.stats import geometric_mean
from tui.engine.status import RunStatus
from tui.engine.store.repeats import summarize_group
from tui.engine.store.results import RunRecord

__all__ = ["DEVICE", "HOST", "OBJECTIVES", "Objective", "Score", "score", "amortized", "failure_reason", "typical_ms"]

DEVICE, HOST = "device", "host"
OBJECTIVES = (DEVICE, HOST)


@dataclass(frozen=True)
class Objective:
    """What the race optimises (see the module docstring)."""

    kind: str = DEVICE
    calls: int | None = None
    max_memory_gb: float | None = None

    def describe(self) -> str:
        """``device time`` / ``host time per call``, and the compile time's charge and the memory limit if set."""
        text = "device time" if self.kind == DEVICE else "host time per call"
        if self.calls:
            text += f" with the compile time over {self.calls} calls"
        if self.max_memory_gb:
            text += f", peak memory at most {self.max_memory_gb:g} GB"
        return text


@dataclass(frozen=True)
class Score:
    """A candidate's standing on the objective: the speedup over eager (higher is better) and its 95% interval."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    processes: int = 0
    """Done runs it pools."""
    compile_s: float | None = None
    """The mean compile time of its done runs."""
    peak_mb: float | None = None
    """The largest peak memory of its done runs' compiled side (CUDA; None on the CPU): the candidate's own, where the
    run's peak would be eager's, the same for every candidate."""
    out: str | None = None
    """Why it is out of the race (failed, recompiled, inaccurate, over the memory limit); None when it is in."""


def amortized(speedup: float | None, eager_ms: float | None, compile_s: float | None,
              calls: int | None) -> float | None:
    """``eager / (compiled + compile_s / calls)`` from ``speedup = eager / compiled``; the speedup without ``calls``."""
    if speedup is None or not calls or eager_ms is None or compile_s is None or speedup <= 0 or eager_ms <= 0:
        return speedup
    return 1.0 / (1.0 / speedup + compile_s * 1e3 / (calls * eager_ms))


def failure_reason(record: RunRecord) -> str:
    """What a run that did not measure says of why: its message, else its kind (the tune's words for a run out)."""
    return record.error_message or record.error_kind or "no reason given"


def _out(records: Sequence[RunRecord], objective: Objective) -> str | None:
    """Why the candidate is out (see :class:`Score`), from its runs."""
    done = [r for r in records if r.status == RunStatus.DONE]
    if not done:
        last = records[-1] if records else None
        if last is None:
            return "not run"
        return f"{last.status}: {failure_reason(last)}"
    for record in done:
        recompiles = record.diagnostics.recompiles_during_measure
        if recompiles:
            return f"recompiled {recompiles} time(s) while measuring"
        if record.accuracy.passed is False:
            worst = f" ({record.accuracy.worst})" if record.accuracy.worst else ""
            return f"failed the accuracy check{worst}"
        peak = record.memory.compiled_peak_mb
        if objective.max_memory_gb and peak is not None and peak > objective.max_memory_gb * 1024:
            return f"compiled peak memory {peak / 1024:.2f} GB is above --max-memory {objective.max_memory_gb:g} GB"
    return None


def typical_ms(done: Sequence[RunRecord], side: str, kind: str) -> float | None:
    """A side's time per call over a candidate's done processes, on the objective's clock (``host`` where measured
    for :data:`HOST`, else the per-iteration one): the geometric mean of their medians, as their group reads them
    (:func:`tui.engine.measure.stats.typical_medians`); None where none has one or one reads zero."""
    values = []
    for record in done:
        stats = record.summary().side(side)
        chosen = stats.host if kind == HOST and stats.host is not None else stats.iter
        if chosen is not None:
            values.append(chosen.median)
    return geometric_mean(values)


def score(records: Sequence[RunRecord], objective: Objective) -> Score:
    """The :class:`Score` of a candidate's runs (any stage's: every done one is pooled)."""
    done = [r for r in records if r.status == RunStatus.DONE]
    compiles = [r.compile_s for r in done if r.compile_s is not None]
    peaks = [r.memory.compiled_peak_mb for r in done if r.memory.compiled_peak_mb is not None]
    base = Score(processes=len(done), compile_s=statistics.fmean(compiles) if compiles else None,
                 peak_mb=max(peaks) if peaks else None, out=_out(records, objective))
    if base.out is not None:
        return base
    value, low, high = _interval(done, objective.kind)
    eager = typical_ms(done, "eager", objective.kind)

    def charge(x: float | None) -> float | None:
        return amortized(x, eager, base.compile_s, objective.calls)

    if value is None:
        return Score(processes=base.processes, compile_s=base.compile_s, peak_mb=base.peak_mb,
                     out="measured no speedup")
    return Score(charge(value), charge(low), charge(high), base.processes, base.compile_s, base.peak_mb)


def _interval(done: Sequence[RunRecord], kind: str) -> tuple[float | None, float | None, float | None]:
    if len(done) == 1:
        summary = done[0].summary()
        if kind == HOST and summary.host_speedup is not None:
            return summary.host_speedup, summary.host_speedup_ci_low, summary.host_speedup_ci_high
        return summary.speedup, summary.speedup_ci_low, summary.speedup_ci_high
    group = summarize_group(done)
    if kind == HOST and group.host_speedup is not None:
        return group.host_speedup, group.host_speedup_xproc_ci_low, group.host_speedup_xproc_ci_high
    return group.speedup, group.speedup_xproc_ci_low, group.speedup_xproc_ci_high
