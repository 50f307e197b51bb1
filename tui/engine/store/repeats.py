"""Repeats across processes (``--repeat``): a configuration's runs as one group, one row.

A configuration run ``K`` times gets ``K`` records, each from its own fresh worker process,
sharing a ``group_id`` (the first run's id) and numbered by ``repeat`` (0-based). What belongs
to the group is computed here, from the runs' measured blocks:

* :class:`GroupSummary`: the speedup and the host-inclusive speedup, each the geometric mean of the done
  processes' own (within their range, where the ratio of their samples' pooled medians need not be), with a 95%
  interval across processes (:func:`tui.engine.measure.stats.bootstrap_speedup_processes`: processes, then blocks
  within each; widened to hold the point where it does not),
  the per-process speedups and their spread (max / min), and the group's verdict;
* :class:`GroupRecord`: the row of a group, for the CSV, the CLI's table and the app. It reads
  like one run: its statistics pool every done process's blocks (its medians are the geometric means of the
  processes' own: :func:`~tui.engine.measure.summary.with_typical_medians`), its interval, significance
  and verdict are the group's (across processes), its payloads (environment, diagnostics,
  memory, telemetry, compile time) are those of its first done process, and its wall time is every
  process's added up, part by part (what the configuration cost); the per-process records stay as
  they are (history, JSON, raw CSV).

The group's verdict follows :mod:`tui.engine.measure.verdict` with the across-process interval:
``noisy`` when a process's own measurement was (a stall that moved its median, its speedup's
drift, a busy machine; the reason names the process); otherwise the across-process interval's
word, however wide (the processes' disagreement is in it). A group with one done run is that run:
its own interval and verdict.

``--repeat auto`` (:func:`wants_another_process`): after each round, a launch-bound GPU group
gets one more process while its across-process intervals (speedup and host speedup) are wider
than the target (``RunOptions.target_ci``, else 2%), up to :data:`AUTO_MAX_PROCESSES`. It is the
default (:data:`DEFAULT_REPEAT`, in the CLI and the app alike) because a launch-bound run's host
time swings from one process to the next: its host verdict from one process is never decisive
(:mod:`tui.engine.measure.verdict`). A CPU group gets one more process only while it reads
``inconclusive``, up to :data:`AUTO_CPU_MAX_PROCESSES`: the CPU's speedup also moves from process
to process, so an effect near the threshold straddles the band in one process and not in the
next (docs/BENCHMARKS.md, "Calibrating the verdict"), while a decisive or noisy first process
stays one. Every configuration under ``auto`` is a group; a group of one reads as its run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from tui.engine.options import RunOptions
from tui.engine.protocol import SIDES
from tui.engine.store.results import TERMINAL_STATUSES, RunRecord, SamplesInvalid, SamplesUnavailable
from tui.engine.store.wall_time import WallTime
from tui.engine.measure.stats import SpeedupCI, Stats, bootstrap_speedup_processes, is_significant
from tui.engine.measure.summary import (
    BOOTSTRAP_RESAMPLES, MIN_INTERVAL_BLOCKS, LiveStats, RunSummary, SideStats, SummaryInputs, build_summary,
    typical_clock, with_typical_medians,
)  # fmt: skip
from tui.engine.measure.verdict import (
    INCONCLUSIVE, NOISY, SideSeries, Verdict, VerdictPolicy, judge_interval, noise_reasons,
)  # fmt: skip
from tui.typed import JsonRecord
from tui.engine.status import RunStatus

__all__ = [
    "later_repeat", "auto_round", "accuracy_of",
    "AUTO", "AUTO_MAX_PROCESSES", "DEFAULT_TARGET", "MAX_REPEATS", "GroupSummary", "GroupRecord",
    "group_records", "group_rows", "members_of", "summarize_group", "wants_another_process", "parse_repeat",
    "relative_width", "DEFAULT_REPEAT", "AUTO_CPU_MAX_PROCESSES", "keeps_spare", "another_process_wanted",
]  # fmt: skip

AUTO = "auto"
AUTO_MAX_PROCESSES = 5
"""``--repeat auto`` stops adding processes to a GPU configuration at this many."""
AUTO_CPU_MAX_PROCESSES = 3
"""...and to a CPU configuration (which grows only while ``inconclusive``) at this many."""
DEFAULT_TARGET = 0.02
"""``--repeat auto``'s target for the across-process interval (hi/lo - 1) without ``--target-ci``."""
MAX_REPEATS = 100
DEFAULT_REPEAT = AUTO
"""``--repeat`` when the user gives none: one process, more for a launch-bound configuration."""


def keeps_spare(options: object) -> bool:
    """Whether a warm spare worker pays for ``--repeat auto``'s next process: on a GPU only, since a
    spare starting beside a CPU run would take the cores that run is measured on."""
    return str(getattr(options, "device", "cpu")).startswith("cuda")


def parse_repeat(value: int | str) -> int | str:
    """``K`` (an integer from 1 to :data:`MAX_REPEATS`) or ``"auto"``; ValueError names what is allowed."""
    text = str(value).strip().lower()
    if text == AUTO:
        return AUTO
    allowed = f"an integer from 1 to {MAX_REPEATS}, or auto"
    try:
        number = int(text)
    except ValueError:
        raise ValueError(f"{value!r} is not allowed (allowed: {allowed})") from None
    if not 1 <= number <= MAX_REPEATS:
        raise ValueError(f"{number} is not allowed (allowed: {allowed})")
    return number


@dataclass(frozen=True)
class GroupSummary(JsonRecord):
    """What a configuration's runs across processes say together (see the module docstring)."""

    group_id: str = ""
    run_ids: tuple[str, ...] = ()
    processes: int = 0
    """Runs in the group, whatever their status."""
    done: int = 0
    """Runs that ended done: their blocks are pooled."""
    status: str = RunStatus.QUEUED
    speedup: float | None = None
    speedup_xproc_ci_low: float | None = None
    speedup_xproc_ci_high: float | None = None
    host_speedup: float | None = None
    host_speedup_xproc_ci_low: float | None = None
    host_speedup_xproc_ci_high: float | None = None
    process_speedups: tuple[float, ...] = ()
    process_host_speedups: tuple[float, ...] = ()
    speedup_process_spread: float | None = None
    """max / min of the per-process speedups (1.0: the processes agree); None below two."""
    host_speedup_process_spread: float | None = None
    launch_bound: bool | None = None
    verdict: str | None = None
    noise_reasons: tuple[str, ...] = ()
    host_verdict: str | None = None
    host_noise_reasons: tuple[str, ...] = ()


def relative_width(low: float | None, high: float | None) -> float | None:
    """hi/lo - 1 of an interval (the measure ``target_ci`` uses), None without one."""
    if low is None or high is None or low <= 0:
        return None
    return high / low - 1


# ----- grouping ------------------------------------------------------------------------------


def group_records(records: Iterable[RunRecord]) -> list[list[RunRecord]]:
    """Records by group, groups in order of their first record, each by ``repeat``.

    A record without a ``group_id`` is a group of its own, and so is a :class:`GroupRecord`.
    """
    groups: dict[object, list[RunRecord]] = {}
    for record in records:
        key = record.group_id if record.group_id and not isinstance(record, GroupRecord) else id(record)
        groups.setdefault(key, []).append(record)
    return [sorted(members, key=lambda r: r.repeat) for members in groups.values()]


def group_rows(records: Iterable[RunRecord]) -> list[RunRecord]:
    """One row per configuration: a run alone as it is, a group of several as a :class:`GroupRecord`."""
    return list(_rows(records))


def _rows(records: Iterable[RunRecord]) -> Iterator[RunRecord]:
    for members in group_records(records):
        yield members[0] if len(members) == 1 else GroupRecord.of(members)


def members_of(rows: Iterable[RunRecord]) -> list[RunRecord]:
    """The per-process records behind rows (a :class:`GroupRecord` stands for its members)."""
    return [member for row in rows for member in (row.members if isinstance(row, GroupRecord) else [row])]


def accuracy_of(records: Sequence[RunRecord]) -> str:
    """The accuracy check over the done ones of ``records`` (a configuration's processes, a side of a comparison):
    ``fail`` when one failed it, ``pass`` when one passed and none failed, else ``n/a`` (not checked, or none done)."""
    verdicts = [r.accuracy.verdict for r in records if r.status == RunStatus.DONE]
    if "fail" in verdicts:
        return "fail"
    return "pass" if "pass" in verdicts else "n/a"


def group_status(members: Sequence[RunRecord]) -> str:
    """failed if a run failed, else cancelled if one was, else an unfinished run's status, else done."""
    statuses = [m.status for m in members]
    for status in (RunStatus.FAILED, RunStatus.CANCELLED):
        if status in statuses:
            return status
    waiting = [s for s in statuses if s not in TERMINAL_STATUSES]
    active = [s for s in waiting if s != RunStatus.QUEUED]
    return (active or waiting or [RunStatus.DONE])[0]


# ----- the group's numbers -------------------------------------------------------------------


def _blocks(record: RunRecord, side: str, which: str) -> list[Sequence[float]]:
    measured = [b for b in record.loaded_samples()[side] if b.stage == "measure" and b.ms]
    if which == "iter":
        return [b.ms for b in measured]
    return [host for b in measured if (host := b.host_ms)]  # the one rule for both clocks (Block.host_ms)


def _series(record: RunRecord, which: str) -> tuple[SideSeries, SideSeries] | None:
    """Both sides of one run as the verdict's noise checks read them; None when a side is empty."""
    summary = record.summary()
    series = []
    for side in SIDES:
        stats: Stats | None = getattr(summary.side(side), which)
        if stats is None:
            return None
        series.append(SideSeries(side, _blocks(record, side, which), stats.median, stats.q1, stats.q3, stats.max))
    return series[0], series[1]


def _spread(values: Sequence[float]) -> float | None:
    if len(values) < 2 or min(values) <= 0:
        return None
    return max(values) / min(values)


def _group_verdict(done: Sequence[RunRecord], interval: tuple[float | None, float | None], which: str,
                   policy: VerdictPolicy) -> Verdict:
    """Noisy when a process's own measurement was; else the across-process interval's word.

    A wide interval across processes is their disagreement, which the interval already holds:
    its word stands (tui.engine.measure.verdict), and the host verdict of two or more processes may be decisive.
    """
    what = "time" if which == "iter" else "host time"
    by_reason: dict[str, list[str]] = {}
    for number, record in enumerate(done, 1):
        series = _series(record, which)
        if series is not None:
            for reason in noise_reasons(*series, None, None, record.machine(), policy, what, host=which == "host"):
                by_reason.setdefault(reason, []).append(str(number))
    reasons = [f"process{'es' if len(numbers) > 1 else ''} {', '.join(numbers)} of {len(done)}: {reason}"
               for reason, numbers in by_reason.items()]
    if reasons:
        return Verdict(NOISY, tuple(reasons))
    return Verdict(judge_interval(*interval, policy.threshold))


def _launch_bound(summaries: Sequence[RunSummary]) -> bool | None:
    flags = [s.launch_bound for s in summaries if s.launch_bound is not None]
    return any(flags) if flags else None


def pooled_members(members: Sequence[RunRecord]) -> tuple[list[RunRecord], list[str]]:
    """The done members whose samples load (their blocks are pooled), and a line for each done one left out: its
    samples were pruned (``compile-lab prune``) or are gone, so the group reads the others (as ``compare`` does).
    Samples that hold an impossible time still raise :class:`SamplesInvalid`: those are not a deletion."""
    pooled, left_out = [], []
    for number, record in enumerate(members, 1):
        if record.status != RunStatus.DONE:
            continue
        try:
            record.ensure_samples()
        except SamplesInvalid:
            raise
        except SamplesUnavailable as exc:
            left_out.append(f"process {number} of {len(members)} left out: {exc}")
            continue
        pooled.append(record)
    return pooled, left_out


def summarize_group(members: Sequence[RunRecord]) -> GroupSummary:
    """The :class:`GroupSummary` of one group's records (their samples are loaded if stored apart; a process whose
    samples were pruned is left out: :func:`pooled_members`)."""
    members = sorted(members, key=lambda r: r.repeat)
    return _summary_of(members, pooled_members(members)[0])


def _summary_of(members: Sequence[RunRecord], done: Sequence[RunRecord]) -> GroupSummary:
    """The :class:`GroupSummary` of ``members`` (in repeat order) whose blocks ``done`` pools."""
    status = group_status(members)
    base = GroupSummary(group_id=members[0].group_id or members[0].run_id, run_ids=tuple(m.run_id for m in members),
                        processes=len(members), done=len(done), status=status)  # fmt: skip
    if not done:
        return base
    summaries = [r.summary() for r in done]
    speedups = tuple(s.speedup for s in summaries if s.speedup is not None)
    host_speedups = tuple(s.host_speedup for s in summaries if s.host_speedup is not None)
    base = dataclasses.replace(base, launch_bound=_launch_bound(summaries), process_speedups=speedups,
                               process_host_speedups=host_speedups, speedup_process_spread=_spread(speedups),
                               host_speedup_process_spread=_spread(host_speedups))  # fmt: skip
    if len(done) == 1:
        only = summaries[0]
        return dataclasses.replace(base, speedup=only.speedup, host_speedup=only.host_speedup,
                                   verdict=only.verdict if status == RunStatus.DONE else None,
                                   noise_reasons=only.noise_reasons if status == RunStatus.DONE else (),
                                   host_verdict=only.host_verdict if status == RunStatus.DONE else None,
                                   host_noise_reasons=only.host_noise_reasons if status == RunStatus.DONE else ())
    return _across_processes(base, done)


def _across_processes(base: GroupSummary, done: Sequence[RunRecord]) -> GroupSummary:
    """Intervals across processes and the verdicts of a group of two or more done runs."""
    intervals = {}
    summaries = [r.summary() for r in done]
    for which in ("iter", "host"):
        processes = [(_blocks(r, "eager", which), _blocks(r, "compiled", which)) for r in done]
        interval = _around_typical(bootstrap_speedup_processes(processes, BOOTSTRAP_RESAMPLES, seed=0),
                                   typical_clock(summaries, which))
        # As for one run: too few block pairs in all give no interval (tui.engine.measure.summary).
        if sum(min(len(e), len(c)) for e, c in processes) < MIN_INTERVAL_BLOCKS:
            interval = SpeedupCI(interval.point, None, None)
        intervals[which] = interval
    iter_ci, host_ci = intervals["iter"], intervals["host"]
    changes: dict = dict(speedup=iter_ci.point, speedup_xproc_ci_low=iter_ci.low, speedup_xproc_ci_high=iter_ci.high,
                         host_speedup=host_ci.point, host_speedup_xproc_ci_low=host_ci.low,
                         host_speedup_xproc_ci_high=host_ci.high)  # fmt: skip
    if base.status == RunStatus.DONE:
        options = done[0].options
        policy = VerdictPolicy.of(options.noise_threshold, options.noise_limits)
        verdict = _group_verdict(done, (iter_ci.low, iter_ci.high), "iter", policy)
        changes.update(verdict=verdict.word, noise_reasons=verdict.reasons)
        if base.launch_bound:
            host = _group_verdict(done, (host_ci.low, host_ci.high), "host", policy)
            changes.update(host_verdict=host.word, host_noise_reasons=host.reasons)
    return dataclasses.replace(base, **changes)


def _around_typical(pooled: SpeedupCI, typical: tuple[float, ...] | None) -> SpeedupCI:
    """The group's speedup: eager over compiled of the processes' ``typical`` medians (their geometric means: the
    geometric mean of the processes' own speedups, as :func:`~tui.engine.measure.summary.with_typical_medians` reads
    the row), with the interval of their blocks pooled, widened to hold it where it does not. The pooled ratio's
    point where there are no typical medians (a process lacks the clock, or timed zero)."""
    if typical is None:
        return pooled
    point = typical[0] / typical[1]
    if pooled.low is None or pooled.high is None:
        return SpeedupCI(point, None, None)
    return SpeedupCI(point, min(pooled.low, point), max(pooled.high, point))


def wants_another_process(group: GroupSummary, target: float | None = None,
                          cap: int = AUTO_MAX_PROCESSES, *, device: str = "cuda",
                          interval: tuple[float | None, float | None] = (None, None)) -> bool:
    """``--repeat auto``: one more process for a done group whose answer is not good enough yet.

    On a GPU (``device``), a launch-bound group whose across-process intervals (speedup and
    host-inclusive speedup) are not both at most ``target`` wide (hi/lo - 1; default
    :data:`DEFAULT_TARGET`), up to ``cap``; a group of one has no such interval yet. On the CPU, a
    group whose verdict is ``inconclusive`` although it has an ``interval`` (the speedup's: its
    run's own for a group of one), up to :data:`AUTO_CPU_MAX_PROCESSES`: an interval that straddles
    the band's edge, not a run too short to have one. A group that failed, was cancelled or (on a
    GPU) is not launch-bound never grows.
    """
    if group.status != RunStatus.DONE:
        return False
    if not device.startswith("cuda"):
        return (group.processes < min(cap, AUTO_CPU_MAX_PROCESSES) and group.verdict == INCONCLUSIVE
                and None not in interval)
    if not group.launch_bound or group.processes >= cap:
        return False
    if group.done < 2:
        return True
    limit = DEFAULT_TARGET if target is None else target
    widths = (relative_width(group.speedup_xproc_ci_low, group.speedup_xproc_ci_high),
              relative_width(group.host_speedup_xproc_ci_low, group.host_speedup_xproc_ci_high))
    return any(width is None or width > limit for width in widths)


def another_process_wanted(members: Sequence[RunRecord]) -> bool:
    """:func:`wants_another_process` for a group's records (its options, and its speedup's interval)."""
    group = summarize_group(members)
    done = [m for m in members if m.status == RunStatus.DONE]
    if len(done) == 1:
        summary = done[0].summary()
        interval = (summary.speedup_ci_low, summary.speedup_ci_high)
    else:
        interval = (group.speedup_xproc_ci_low, group.speedup_xproc_ci_high)
    options = members[0].options
    return wants_another_process(group, options.target_ci, device=options.device, interval=interval)


# ----- the group's row -----------------------------------------------------------------------


class GroupRecord(RunRecord):
    """One configuration's runs as one row; build it with :meth:`of` (see the module docstring).

    ``members`` are the per-process records, ``group`` their :class:`GroupSummary`. A snapshot:
    build a new one when a member changes. Its raw rows are its members'.
    """

    members: list[RunRecord]
    group: GroupSummary
    pooled: list[RunRecord]
    """The done members whose blocks the row pools (:func:`pooled_members`)."""
    _pooled: RunSummary | None

    @classmethod
    def of(cls, members: Sequence[RunRecord]) -> GroupRecord:
        """The row of ``members`` (one group's records)."""
        members = sorted(members, key=lambda r: r.repeat)
        done, left_out = pooled_members(members)
        group = _summary_of(members, done)
        first = done[0] if done else members[0]
        row = cls(run_id=group.group_id, options=first.options, created=members[0].created, status=group.status,
                  env=first.env, compile_s=first.compile_s, diagnostics=first.diagnostics,
                  accuracy=next((m.accuracy for m in done if m.accuracy.passed is False), first.accuracy),
                  memory=first.memory, flops_per_call=first.flops_per_call, bytes_per_call=first.bytes_per_call,
                  telemetry=first.telemetry, group_id=group.group_id, session_id=first.session_id,
                  tune_id=first.tune_id, tune_stage=first.tune_stage,
                  wall_time=WallTime.summed(m.wall_time for m in members),
                  notes=tuple(dict.fromkeys(note for m in members for note in m.notes)),
                  profile=next((m.profile for m in done if m.profile and m.profile.available),
                               first.profile))  # fmt: skip
        row.members, row.group, row.pooled = list(members), group, done
        row.warnings = [*left_out, *_process_warnings(members, done)]
        ended = [m for m in members if m.status in (RunStatus.FAILED, RunStatus.CANCELLED)]
        if ended:
            number = members.index(ended[0]) + 1
            row.error_kind = ended[0].error_kind
            row.error_message = f"process {number} of {len(members)}: {ended[0].error_message}"
            row.error_detail = ended[0].error_detail
        row.samples = {side: [b for m in done for b in m.loaded_samples()[side] if b.stage == "measure"]
                       for side in SIDES}
        row._pooled = None
        return row

    def summary(self) -> RunSummary:
        """The pooled blocks' statistics with the group's intervals, verdicts and warnings."""
        if self._pooled is None:
            self._pooled = _pooled_summary(self)
        return self._pooled

    def raw_rows(self) -> Iterator[dict[str, str]]:
        """Every member's per-iteration rows, in repeat order."""
        for member in self.members:
            yield from member.raw_rows()

    def to_json(self, samples: bool = True) -> dict:
        """Refused: a group is stored as its members (and its :class:`GroupSummary`)."""
        raise TypeError("a GroupRecord is not stored: store its members and its group summary")


def _process_warnings(members: Sequence[RunRecord], done: Sequence[RunRecord]) -> list[str]:
    """Each pooled process's warnings, named by its number among the group's processes (``process 2 of 3: ...``,
    as the row's error and the lines of processes left out are): a process's figures, not the pooled row's. The
    front ends say those that read alike once (:func:`tui.present.warning_groups.merged_processes`: ``processes
    1–3 of 3: ...``); the exports keep every line."""
    if len(members) == 1:
        return [w for record in done for w in record.summary().warnings]
    return [f"process {members.index(record) + 1} of {len(members)}: {warning}"
            for record in done for warning in record.summary().warnings]


def _pooled_summary(row: GroupRecord) -> RunSummary:
    live = LiveStats()
    live.feed(row.samples)
    # Not "finished": the pooled blocks get no interval of their own (the group's replaces it).
    inputs = SummaryInputs(finished=False, done=False, compile_s=row.compile_s, flops_per_call=row.flops_per_call,
                           bytes_per_call=row.bytes_per_call, warnings=(), throttled=())
    pooled = build_summary(live, inputs)
    sides = {side: SideStats(pooled.side(side).iter, pooled.side(side).host,
                             live.outliers(side, pooled.side(side).iter)) for side in SIDES}  # fmt: skip
    pooled = dataclasses.replace(pooled, eager=sides["eager"], compiled=sides["compiled"])
    if len(row.pooled) > 1:
        pooled = with_typical_medians(pooled, [m.summary() for m in row.pooled], inputs)
    group = row.group
    if group.done == 1:
        only = row.pooled[0].summary()
        low, high, host_low, host_high = (only.speedup_ci_low, only.speedup_ci_high, only.host_speedup_ci_low,
                                          only.host_speedup_ci_high)  # fmt: skip
    else:
        low, high = group.speedup_xproc_ci_low, group.speedup_xproc_ci_high
        host_low, host_high = group.host_speedup_xproc_ci_low, group.host_speedup_xproc_ci_high
    return dataclasses.replace(
        pooled, live=False, launch_bound=group.launch_bound,
        speedup_ci_low=low, speedup_ci_high=high, significant=is_significant(low, high),
        host_speedup_ci_low=host_low, host_speedup_ci_high=host_high, warnings=tuple(row.warnings),
        verdict=group.verdict, noise_reasons=group.noise_reasons, host_verdict=group.host_verdict,
        host_noise_reasons=group.host_noise_reasons,
    )  # fmt: skip


def later_repeat(options: RunOptions) -> RunOptions:
    """A configuration's second and later processes: the profile pass and the traces run once per
    configuration (repeat 0)."""
    if options.profile or options.trace or options.torch_trace:
        return dataclasses.replace(options, profile=False, trace=False, torch_trace=False)
    return options


def auto_round(batch: list[str], members: list[RunRecord]) -> list[RunRecord]:
    """One more queued record for each group of ``batch`` that wants another process, in batch order."""
    groups = {group[0].group_id: group for group in group_records(members)}
    more = []
    for group_id in batch:
        group = groups.get(group_id)
        if not group:
            continue
        if another_process_wanted(group):
            record = RunRecord.new(later_repeat(group[0].options))
            record.group_id, record.repeat = group_id, max(r.repeat for r in group) + 1
            more.append(record)
    return more
