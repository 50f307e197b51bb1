"""The change of each matched pair, its verdict, and the gate: one rule for each, here.

Per pair (:func:`judge_pair`) and metric (:data:`METRICS`): BASE's and NEW's value (a process's median; of
several done processes, the geometric mean of their medians, as a ``--repeat`` row reads it), their ratio NEW /
BASE with a 95% bootstrap interval (:mod:`tui.engine.measure.change_stats`: each side's processes, then their
block pairs, resampled on their own; seeded by the side's run ids, so the same runs on both sides read exactly
1 [1, 1]), and a
verdict in :mod:`tui.engine.measure.verdict`'s words, judged on how much faster NEW is (BASE / NEW for a
time, NEW / BASE for the speedup) with threshold t:

* ``noisy`` first: a process of either side whose own series of this metric is noisy by the
  run's rules (a stall that moved its median, a time's drift: :func:`~tui.engine.measure.verdict.series_checks`),
  or a busy machine while it measured (:func:`~tui.engine.measure.verdict.machine_reasons`). The distribution's
  shape and a wide interval are not noise, as for a run. A noisy pair is never faster or slower.
* else ``faster`` / ``slower`` / ``no change`` / ``inconclusive`` from the interval
  (:func:`~tui.engine.measure.verdict.judge_interval`); ``inconclusive`` without an interval (a side with
  fewer than 4 block pairs, or samples that were pruned), and, with the drift named, where a process's speedup
  drifted past ``max_drift`` across its run (:func:`_drifts`).

With two or more processes on each side the interval is across processes; with one on a side it
holds only the noise within a process, and the pair says so (``within_process``). A launch-bound
pair's host time within a process is at most ``inconclusive``, as a run's host verdict of one
process is (:data:`~tui.engine.measure.verdict.ONE_PROCESS_HOST`): identical launch-bound runs moved up
to 1.8x in host time from one process to the next.

The gate (:func:`fails`): a pair fails when the gated metric's verdict is ``slower`` and NEW is
slower by more than ``fail_above`` percent (the point estimate), and when NEW's runs failed where BASE's
did not (a configuration that stopped working: :attr:`PairResult.broke`), and when NEW's compiled output failed
the accuracy check where BASE's passed (:attr:`PairResult.accuracy_broke`); with ``strict`` also when
its verdict is ``noisy`` or ``inconclusive``, when a side has no done run, and for an unmatched row.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tui.engine.measure.change_stats import Medians, SideDraws, change_interval, ratio_of, resample_side
from tui.engine.compare.matching import Pair, Unmatched
from tui.engine.protocol import SIDES
from tui.engine.store.repeats import accuracy_of
from tui.engine.store.results import RunRecord, SamplesUnavailable
from tui.engine.measure.stats import summarize
from tui.engine.measure.stats import BOOTSTRAP_RESAMPLES
from tui.engine.measure.summary import SideStats, launch_bound_of
from tui.engine.thresholds import MIN_INTERVAL_BLOCKS
from tui.engine.measure.verdict import (
    CONFIDENT, INCONCLUSIVE, NOISY, ONE_PROCESS_HOST, SLOWER, Assessment, Machine, SideSeries, VerdictPolicy, assess,
    judge_interval, machine_reasons, past_drift, series_checks,
)  # fmt: skip
from tui.typed import JsonRecord
from tui.engine.status import RunStatus

__all__ = [
    "Metric", "METRICS", "METRIC_NAMES", "CompareSettings", "Change", "PairResult", "UnmatchedRow",
    "judge_pair", "unmatched_row", "side_values", "fails", "COMPARED",
]  # fmt: skip

COMPARED = "compared"
"""A :class:`PairResult`'s status when both sides measured (any other status says why not)."""

# A unit's channels: an interleaved block pair's eager and compiled times, and each side's host time per call.
_EAGER, _COMPILED, _EAGER_HOST, _COMPILED_HOST = range(4)


@dataclass(frozen=True)
class Metric:
    """A quantity compared between BASE and NEW."""

    name: str
    label: str
    time: bool
    """A time (lower is faster); else a speedup (higher is faster)."""
    value: Callable[[Medians], float | None]
    """The side's value from its channel medians."""
    series: tuple[tuple[str, str], ...]
    """The (side of a run, ``iter`` or ``host``) series whose noise concerns it."""

    @property
    def host(self) -> bool:
        """Host-inclusive time: a busy CPU counts against it on a GPU run too."""
        return any(which == "host" for _, which in self.series)

    @property
    def what(self) -> str:
        """How its reasons name the clock: ``time`` (the per-iteration one) or ``host time``."""
        return "time" if self.series[0][1] == "iter" else "host time"


METRICS: dict[str, Metric] = {
    "compiled": Metric("compiled", "compiled time", True, lambda m: m[_COMPILED], (("compiled", "iter"),)),
    "eager": Metric("eager", "eager time", True, lambda m: m[_EAGER], (("eager", "iter"),)),
    "speedup": Metric("speedup", "speedup", False, lambda m: ratio_of(m[_EAGER], m[_COMPILED]),
                      (("eager", "iter"), ("compiled", "iter"))),
    "host": Metric("host", "compiled host time per call", True, lambda m: m[_COMPILED_HOST], (("compiled", "host"),)),
}
"""compiled: the compiled side's per-iteration clock (device time on a GPU); eager likewise; speedup:
eager / compiled; host: the compiled side's host-inclusive time per call."""
METRIC_NAMES = tuple(METRICS)


@dataclass(frozen=True)
class CompareSettings(JsonRecord):
    """How pairs are judged and gated (``compile-lab compare``'s flags)."""

    metric: str = "compiled"
    threshold: float = 0.02
    fail_above: float = 5.0
    """Percent: a ``slower`` gated change beyond it fails the gate."""
    ignore: tuple[str, ...] = ()
    strict: bool = False
    noise_limits: dict[str, float] = field(default_factory=dict)
    resamples: int = BOOTSTRAP_RESAMPLES
    seed: int = 0

    def policy(self, threshold: float | None = None) -> VerdictPolicy:
        """The verdict's policy with this threshold (or ``threshold``) and the noise limits."""
        return VerdictPolicy.of(self.threshold if threshold is None else threshold, self.noise_limits)


@dataclass(frozen=True)
class Change(JsonRecord):
    """One metric of a pair: BASE's and NEW's value, NEW / BASE with its interval, the verdict."""

    metric: str = "compiled"
    base: float | None = None
    """ms for a time, x for the speedup."""
    new: float | None = None
    ratio: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    verdict: str = INCONCLUSIVE
    reasons: tuple[str, ...] = ()
    """Why it is noisy, or why it is not decisive (one process of a launch-bound host time)."""
    threshold: float = 0.02

    @property
    def slowdown(self) -> float | None:
        """How much slower NEW is (0.05: 5% slower; negative: faster); None without a ratio."""
        if self.ratio is None or self.ratio <= 0:
            return None
        return self.ratio - 1 if METRICS[self.metric].time else 1 / self.ratio - 1


@dataclass(frozen=True)
class PairResult(JsonRecord):
    """A matched configuration judged: every metric's change, the gated one's verdict, the gate."""

    label: str = ""
    key: dict[str, str] = field(default_factory=dict)
    """The match fields and their values (``--ignore``'s are left out)."""
    differences: tuple[str, ...] = ()
    base_runs: tuple[str, ...] = ()
    new_runs: tuple[str, ...] = ()
    base_processes: int = 0
    """Done processes with samples (those measured)."""
    new_processes: int = 0
    status: str = COMPARED
    """compared; or why not: ``BASE failed``, ``NEW failed`` (no done run on that side)."""
    launch_bound: bool = False
    within_process: bool = False
    """A side had one process: the interval holds only the noise within a process."""
    metric: str = "compiled"
    changes: tuple[Change, ...] = ()
    verdict: str | None = None
    """The gated metric's verdict (None when not compared)."""
    slowdown: float | None = None
    fails: bool = False
    broke: bool = False
    """NEW failed entirely where BASE measured (``NEW failed``), or some of NEW's processes failed where none of
    BASE's did: a configuration that stopped working, which fails the gate without ``--strict``."""
    new_failed: int = 0
    """NEW's runs that failed."""
    base_accuracy: str = "n/a"
    """The side's accuracy check over its done runs (:func:`~tui.engine.store.repeats.accuracy_of`): pass, fail or
    n/a."""
    new_accuracy: str = "n/a"
    notes: tuple[str, ...] = ()

    def change(self, metric: str) -> Change | None:
        """The :class:`Change` of ``metric`` (None when not compared)."""
        return next((c for c in self.changes if c.metric == metric), None)

    @property
    def accuracy_broke(self) -> bool:
        """NEW's compiled output failed the accuracy check where BASE's passed: wrong numbers, which fail the gate
        without ``--strict`` (a faster wrong answer is no gain)."""
        return self.base_accuracy == "pass" and self.new_accuracy == "fail"

    @property
    def regressed(self) -> bool:
        """A pair that fails the gate whatever its verdict and ``--strict``: runs that fail now (:attr:`broke`), or
        wrong numbers now (:attr:`accuracy_broke`)."""
        return self.broke or self.accuracy_broke


@dataclass(frozen=True)
class UnmatchedRow(JsonRecord):
    """A configuration on one side only (``base`` or ``new``)."""

    label: str = ""
    key: dict[str, str] = field(default_factory=dict)
    side: str = "base"
    runs: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    hint: str = ""
    fails: bool = False


# ----- a side's data ----------------------------------------------------------------------------


@dataclass
class _Process:
    """One done run of a side: its units (block pairs, four channels), its noise series, launch-bound or not."""

    record: RunRecord
    units: list[tuple[list[float], ...]]
    series: dict[tuple[str, str], SideSeries | None]
    launch_bound: bool


def _pair_units(eager: list, compiled: list) -> list[tuple[list[float], ...]]:
    """Block ``i`` of each side as one unit: eager times, compiled times, eager host, compiled host per call."""
    def host(block: Any) -> list[float]:
        return [] if block is None else list(block.host_ms)  # the one rule for both clocks (Block.host_ms)

    units: list[tuple[list[float], ...]] = []
    for i in range(max(len(eager), len(compiled))):
        e, c = (eager[i] if i < len(eager) else None), (compiled[i] if i < len(compiled) else None)
        units.append((list(e.ms) if e else [], list(c.ms) if c else [], host(e), host(c)))
    return units


def _side_series(side: str, blocks: list) -> tuple[SideStats, dict[tuple[str, str], SideSeries | None]]:
    """One side of a run: its iter and host statistics (as its summary has them) and their noise series."""
    values = {"iter": [b.ms for b in blocks],
              "host": [host for b in blocks if (host := b.host_ms)]}
    stats = {which: summarize(x for block in v for x in block) if v else None for which, v in values.items()}
    series = {(side, which): None if st is None else SideSeries(side, values[which], st.median, st.q1, st.q3, st.max)
              for which, st in stats.items()}
    return SideStats(stats["iter"], stats["host"]), series


def _process(record: RunRecord) -> _Process | None:
    """The run's measured blocks as units and series (no bootstrap of its own); None without any."""
    samples = record.loaded_samples()
    blocks = {side: [b for b in samples[side] if b.stage == "measure" and b.ms] for side in SIDES}
    units = _pair_units(blocks["eager"], blocks["compiled"])
    if not units:
        return None
    sides, series = {}, {}
    for side in SIDES:
        sides[side], found = _side_series(side, blocks[side])
        series.update(found)
    clock = next((b.clock for side in SIDES for b in blocks[side]), None)
    return _Process(record, units, series, bool(launch_bound_of(sides, clock)))


@dataclass
class _Side:
    name: str
    processes: list[_Process]
    draws: SideDraws
    notes: list[str]


def _side(name: str, records: Sequence[RunRecord], settings: CompareSettings) -> _Side:
    processes, notes = [], []
    for record in records:
        if record.status != RunStatus.DONE:
            continue
        try:
            process = _process(record)
        except SamplesUnavailable as exc:
            notes.append(f"{name}: {exc}; left out")
            continue
        if process is not None:
            processes.append(process)
    seed = zlib.crc32(",".join(sorted(p.record.run_id for p in processes)).encode()) ^ settings.seed
    draws = resample_side([p.units for p in processes], 4, settings.resamples, seed,
                          together=((_EAGER, _COMPILED), (_EAGER_HOST, _COMPILED_HOST)))
    return _Side(name, processes, draws, notes)


def _said(side: _Side, by_reason: dict[str, list[str]]) -> list[str]:
    """Each reason once, with the processes of ``side`` it concerns."""
    count = len(side.processes)
    if count == 1:
        return [f"{side.name}: {reason}" for reason in by_reason]
    return [f"{side.name} process{'es' if len(n) > 1 else ''} {', '.join(n)} of {count}: {reason}"
            for reason, n in by_reason.items()]


def _noise(side: _Side, metric: Metric, policy: VerdictPolicy) -> list[str]:
    """Each process's noise reasons for ``metric``, a reason said once with the processes it concerns."""
    by_reason: dict[str, list[str]] = {}
    for number, process in enumerate(side.processes, 1):
        reasons = list(_checks(process, metric, policy).reasons)
        reasons += machine_reasons(process.record.machine(), policy, metric.host)
        for reason in reasons:
            by_reason.setdefault(reason, []).append(str(number))
    return _said(side, by_reason)


def _drifts(side: _Side, metric: Metric, policy: VerdictPolicy) -> list[str]:
    """The speedup's drift past ``max_drift`` in each process of ``side`` (a speedup metric; none for a time): it
    caps the pair's word at ``inconclusive``.

    A process whose speedup moved more than ``max_drift`` across its run holds no one value at the threshold's
    resolution, so the pair cannot be decided; it is no sign of a busy machine, which ``noisy`` says, and counted
    as noise it called quiet pairs of one configuration against itself noisy (docs/BENCHMARKS.md §24)."""
    if len(metric.series) != 2:
        return []
    by_reason: dict[str, list[str]] = {}
    for number, process in enumerate(side.processes, 1):
        eager, compiled = (process.series[key] for key in metric.series)
        said = past_drift(eager, compiled, policy, metric.what) if eager is not None and compiled is not None else None
        if said is not None:
            by_reason.setdefault(said, []).append(str(number))
    return _said(side, by_reason)


def _checks(process: _Process, metric: Metric, policy: VerdictPolicy) -> Assessment:
    """A process's own checks of ``metric``, as a run's verdict makes them (the machine's apart).

    The speedup's series are checked as a run's speedup is, its paired drift apart (:func:`_drifts`: compare's
    word is NEW against BASE, which the drift's own words do not decide); a time as one series, with its own drift.
    """
    series = [process.series[key] for key in metric.series]
    if len(series) == 2 and series[0] is not None and series[1] is not None:
        return assess(series[0], series[1], None, None, Machine(), policy, metric.what, paired_drift=False)
    checks = Assessment()
    for one in series:
        if one is not None:
            checks += series_checks(one, policy, metric.what)
    return checks


def side_values(records: Sequence[RunRecord], settings: CompareSettings,
                name: str = "BASE") -> tuple[int, dict[str, float | None], list[str]]:
    """One side on its own: its measured processes, each metric's value (as a pair's :class:`Change` has it), notes."""
    side = _side(name, records, dataclasses.replace(settings, resamples=1))  # the point is all it needs
    return len(side.processes), {m.name: m.value(side.draws.point) for m in METRICS.values()}, side.notes


# ----- judging -----------------------------------------------------------------------------------


def _change(metric: Metric, base: _Side, new: _Side, settings: CompareSettings, one_process_host: bool) -> Change:
    threshold = settings.threshold
    policy = settings.policy(threshold)
    enough = min(base.draws.units, new.draws.units) >= MIN_INTERVAL_BLOCKS
    interval = change_interval(base.draws, new.draws, metric.value)
    low, high = (interval.low, interval.high) if enough else (None, None)
    values = Change(metric=metric.name, base=metric.value(base.draws.point), new=metric.value(new.draws.point),
                    ratio=interval.point, ratio_low=low, ratio_high=high, threshold=threshold)  # fmt: skip
    # A wide interval of the change is not noise: its word is inconclusive unless it clears the band.
    reasons = _noise(base, metric, policy) + _noise(new, metric, policy)
    if reasons:
        return dataclasses.replace(values, verdict=NOISY, reasons=tuple(reasons))
    if low is None or high is None or low <= 0:
        return dataclasses.replace(values, verdict=INCONCLUSIVE)
    if one_process_host:
        return dataclasses.replace(values, verdict=INCONCLUSIVE, reasons=(ONE_PROCESS_HOST,))
    drifts = _drifts(base, metric, policy) + _drifts(new, metric, policy)
    if drifts:
        return dataclasses.replace(values, verdict=INCONCLUSIVE, reasons=tuple(drifts))
    gain = (1 / high, 1 / low) if metric.time else (low, high)
    return dataclasses.replace(values, verdict=judge_interval(*gain, threshold))


def fails(verdict: str | None, slowdown: float | None, settings: CompareSettings, compared: bool = True) -> bool:
    """The gate, for one pair: slower by more than ``fail_above`` percent; with ``strict`` anything unconfident."""
    if verdict == SLOWER and slowdown is not None and slowdown * 100 > settings.fail_above:
        return True
    return settings.strict and (not compared or verdict not in CONFIDENT)


def _failed(records: Sequence[RunRecord]) -> int:
    return sum(r.status == RunStatus.FAILED for r in records)


def _not_compared(pair: Pair, settings: CompareSettings, label: str, status: str, notes: list[str],
                  measured: tuple[int, int], broke: bool) -> PairResult:
    """A pair a side of which measured nothing: its status says why; ``measured``: each side's measured processes,
    counted as a compared pair's are (the side not measured has none); ``broke``: see :attr:`PairResult.broke`."""
    result = PairResult(label=label, key=dict(pair.key.fields), differences=pair.differences,
                        base_runs=tuple(r.run_id for r in pair.base), new_runs=tuple(r.run_id for r in pair.new),
                        base_processes=measured[0], new_processes=measured[1], status=status, metric=settings.metric,
                        base_accuracy=accuracy_of(pair.base), new_accuracy=accuracy_of(pair.new),
                        notes=tuple(notes), broke=broke, new_failed=_failed(pair.new))  # fmt: skip
    return dataclasses.replace(result, fails=result.regressed or fails(None, None, settings, compared=False))


NOT_MEASURED = " not measured"
"""How a pair's status ends when a side has no done run with samples and none failed (they were pruned, or the
side was cancelled): nothing ran wrong, and nothing could be compared."""


def judge_pair(pair: Pair, settings: CompareSettings) -> PairResult:
    """The :class:`PairResult` of one matched configuration (see the module docstring)."""
    label = pair.key.label()
    base, new = _side(pair.names[0], pair.base, settings), _side(pair.names[1], pair.new, settings)
    notes = base.notes + new.notes
    missing = [(s.name, records) for s, records in ((base, pair.base), (new, pair.new)) if not s.processes]
    if missing:
        failed = any(r.status == RunStatus.FAILED for _, records in missing for r in records)
        status = " and ".join(name for name, _ in missing) + (" failed" if failed else NOT_MEASURED)
        broke = failed and bool(base.processes)  # only NEW is missing, and it failed
        return _not_compared(pair, settings, label, status, notes, (len(base.processes), len(new.processes)), broke)
    launch_bound = any(p.launch_bound for p in base.processes + new.processes)
    within = min(len(base.processes), len(new.processes)) < 2
    if within:
        notes.append(f"one process on a side ({base.name} {len(base.processes)}, {new.name} {len(new.processes)}): the "
                     "interval holds only the noise within a process (--repeat 3 gives one across processes)")
    elif min(len(base.processes), len(new.processes)) < 3:
        notes.append(f"two processes on a side ({base.name} {len(base.processes)}, {new.name} {len(new.processes)}): "
                     "resampling two processes draws three distinct pairs of them, so the interval can be narrower "
                     "than how much processes differ (--repeat 3 or more)")
    changes = [
        _change(metric, base, new, settings, metric.host and launch_bound and within) for metric in METRICS.values()
    ]
    gated = next(c for c in changes if c.metric == settings.metric)
    result = PairResult(label=label, key=dict(pair.key.fields), differences=pair.differences,
                        base_runs=tuple(r.run_id for r in pair.base), new_runs=tuple(r.run_id for r in pair.new),
                        base_processes=len(base.processes), new_processes=len(new.processes),
                        launch_bound=launch_bound, within_process=within, metric=settings.metric,
                        changes=tuple(changes), verdict=gated.verdict, slowdown=gated.slowdown,
                        base_accuracy=accuracy_of(pair.base), new_accuracy=accuracy_of(pair.new),
                        broke=_newly_failing(pair), new_failed=_failed(pair.new), notes=tuple(notes))  # fmt: skip
    return dataclasses.replace(result, fails=result.regressed or fails(gated.verdict, gated.slowdown, settings))


def _newly_failing(pair: Pair) -> bool:
    """NEW has failed runs where BASE has none."""
    return _failed(pair.new) > 0 and _failed(pair.base) == 0


def unmatched_row(row: Unmatched, settings: CompareSettings) -> UnmatchedRow:
    """An :class:`Unmatched` configuration as a row (it fails the gate only with ``strict``)."""
    return UnmatchedRow(label=row.key.label(), key=dict(row.key.fields), side=row.side,
                        runs=tuple(r.run_id for r in row.records), statuses=tuple(r.status for r in row.records),
                        hint=row.hint, fails=settings.strict)  # fmt: skip
