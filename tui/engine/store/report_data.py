"""What ``compile-lab report`` shows, gathered from run records: one typed row per configuration.

No torch, no plotting: :func:`gather_report` turns records (a JSON export's, the history's)
into a :class:`ReportData` whose rows carry everything the page draws and tabulates: the
speedup and its interval with the verdict (the host-inclusive one too where the run is
launch-bound), each side's per-iteration statistics and a bounded set of quantiles for the
distribution plot, each process's telemetry and environment, the options and the command that
reproduces them, the noise reasons. Runs repeated across processes (``--repeat``) are one row,
as in the CSV and the CLI's table (:func:`tui.engine.store.repeats.group_records`); a configuration
run again apart (another run, another ``--repeat`` group) has a row for each, so the rows are counted
apart from the configurations, by the key the caller gives (compare's
:func:`tui.engine.compare.matching.config_key`: the store part imports no later part of the engine).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from tui.engine.measure.clocks import clock_info
from tui.engine.options import RunOptions
from tui.engine.payloads import Env
from tui.engine.store.reproduce import reproduce_command
from tui.engine.store.results import RunRecord, SamplesInvalid, SamplesUnavailable
from tui.engine.measure.stats import Stats, percentile
from tui.engine.measure.summary import RunSummary
from tui.engine.measure.verdict import NOISY
from tui.telemetry.model import RunTelemetry
from tui.engine.status import RunStatus, ended_reason

__all__ = ["Interval", "SideData", "ProcessData", "ReportRow", "EnvironmentRow", "ReportData", "gather_report",
           "QUANTILES", "ENV_FIELDS"]

QUANTILES = 101
"""Evenly spaced quantiles (min and max included) kept per side for the distribution plot: its size stays
bounded whatever the number of iterations."""

ENV_FIELDS = ("torch", "cuda", "triton", "cudnn", "python", "gpu_name", "driver", "compute_capability",
              "gpu_memory_mb", "platform", "cpu", "cpu_count", "cxx")
"""The :class:`~tui.engine.payloads.Env` fields that tell environments apart in the report."""


@dataclass(frozen=True)
class Interval:
    """A speedup and its 95% interval (``low``/``high`` None when the run had too few blocks for one)."""

    point: float
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class SideData:
    """One side's per-iteration times (ms): statistics over every measured sample, and quantiles to draw."""

    name: str
    stats: Stats | None = None
    host: Stats | None = None
    """The host-inclusive time per call, one value per block."""
    quantiles: tuple[float, ...] = ()


@dataclass(frozen=True)
class ProcessData:
    """One worker process of a configuration (a run): its id, status, environment and the machine meanwhile."""

    run_id: str
    repeat: int
    status: str
    created: float
    env: Env
    telemetry: RunTelemetry
    error: str | None = None


@dataclass(frozen=True)
class ReportRow:
    """One run, or one ``--repeat`` group, of a configuration: numbered from 1 in the order of the runs read."""

    number: int
    options: RunOptions
    status: str
    clock: str | None
    """The clock's label (``CUDA event``, ``perf_counter``); None when nothing was measured."""
    device_time: bool
    speedup: Interval | None
    verdict: str | None
    noise_reasons: tuple[str, ...]
    launch_bound: bool
    host_speedup: Interval | None
    host_verdict: str | None
    host_noise_reasons: tuple[str, ...]
    eager: SideData
    compiled: SideData
    compile_s: float | None
    processes: tuple[ProcessData, ...]
    command: str
    warnings: tuple[str, ...] = ()
    error: str | None = None
    samples_note: str | None = None
    """Why the distributions are missing (samples pruned or not stored); None when they are there."""
    accuracy: str = "n/a"
    """The accuracy check of the compiled output over the processes (:func:`~tui.engine.store.repeats.accuracy_of`):
    ``pass``, ``fail`` (one process's failed) or ``n/a``."""
    tune_stage: str | None = None
    """The part of a ``compile-lab tune`` that ran it (``screening``, ``stage N``, ``confirmation``); None: no tune."""
    source: str | None = None
    """The RUNS argument it was read from, where the report read several (``base.json``, ``session:last``); None
    where it read one: two files of one configuration are then told apart."""

    @property
    def noisy(self) -> bool:
        """True when the verdict or the host verdict is ``noisy``."""
        return NOISY in (self.verdict, self.host_verdict)

    @property
    def shows_host(self) -> bool:
        """True when the host-inclusive speedup belongs beside the speedup (a launch-bound run)."""
        return self.launch_bound and self.host_speedup is not None


@dataclass(frozen=True)
class EnvironmentRow:
    """One distinct environment (:data:`ENV_FIELDS`) and the configurations that ran in it."""

    env: Env
    numbers: tuple[int, ...]


@dataclass(frozen=True)
class ReportData:
    """Everything a report shows, ready to render."""

    rows: tuple[ReportRow, ...]
    environments: tuple[EnvironmentRow, ...]
    sources: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    runs: int = 0
    first_created: float | None = None
    last_created: float | None = None
    configurations: int = 0
    """How many configurations the rows measure (compare's key): fewer than the rows when one was run again apart."""

    @property
    def counts(self) -> str:
        """What the report holds, as its header and the command's last line say it: ``3 configuration(s) in 5 rows
        from 6 run(s)`` (the rows only when there are more of them than configurations)."""
        rows = f" in {len(self.rows)} rows" if len(self.rows) != self.configurations else ""
        return f"{self.configurations} configuration(s){rows} from {self.runs} run(s)"

    @property
    def noisy_rows(self) -> tuple[ReportRow, ...]:
        """The rows whose verdict or host verdict is ``noisy``."""
        return tuple(row for row in self.rows if row.noisy)


def _quantiles(values: Sequence[float]) -> tuple[float, ...]:
    ordered = sorted(values)
    if len(ordered) <= QUANTILES:
        return tuple(ordered)
    return tuple(percentile(ordered, 100 * i / (QUANTILES - 1)) for i in range(QUANTILES))


def _interval(point: float | None, low: float | None, high: float | None) -> Interval | None:
    if point is None:
        return None
    if low is None or high is None:
        return Interval(point)
    return Interval(point, low, high)


def _side(name: str, record: RunRecord, summary: RunSummary, with_samples: bool) -> SideData:
    stats = summary.side(name)
    values: list[float] = []
    if with_samples:
        values = [x for block in record.loaded_samples()[name] if block.stage == "measure" for x in block.ms]
    return SideData(name, stats.iter, stats.host, _quantiles(values))


def _process(record: RunRecord) -> ProcessData:
    error = f"{record.error_kind}: {record.error_message}" if record.error_kind or record.error_message else None
    return ProcessData(record.run_id, record.repeat, record.status, record.created, record.env, record.telemetry,
                       error)  # fmt: skip


def _samples_note(members: Sequence[RunRecord]) -> str | None:
    """None when every member's samples load; else why not (the first member that fails says)."""
    for member in members:
        try:
            member.ensure_samples()
        except SamplesUnavailable as exc:
            return str(exc)
    return None


def _error(record: RunRecord) -> str | None:
    """What a failed or cancelled run's status cell adds to its status: its kind and message, each left out
    where it repeats what comes before it (a cancelled run's cell read ``cancelled: cancelled: cancelled``)."""
    if record.status not in (RunStatus.FAILED, RunStatus.CANCELLED):
        return None
    return ended_reason(record.error_kind, record.error_message, after=str(record.status)) or None


def _row(number: int, members: Sequence[RunRecord], source: str | None = None) -> ReportRow:
    from tui.engine.store.repeats import GroupRecord, accuracy_of

    # A group pools the samples its members still have (_units split those that have none), saying which it left
    # out; a run alone without them shows its stored summary, and the note says why.
    note = None if len(members) > 1 else _samples_note(members)
    record = GroupRecord.of(members) if len(members) > 1 else members[0]
    summary = record.summary()
    clock = clock_info(summary.clock)
    repeat = len(members) if len(members) > 1 else 1
    error = _error(record)
    return ReportRow(
        number=number, options=record.options, status=record.status,
        clock=clock.label if clock else summary.clock, device_time=bool(clock and clock.device_time),
        speedup=_interval(summary.speedup, summary.speedup_ci_low, summary.speedup_ci_high),
        verdict=summary.verdict, noise_reasons=tuple(summary.noise_reasons), launch_bound=bool(summary.launch_bound),
        host_speedup=_interval(summary.host_speedup, summary.host_speedup_ci_low, summary.host_speedup_ci_high),
        host_verdict=summary.host_verdict, host_noise_reasons=tuple(summary.host_noise_reasons),
        eager=_side("eager", record, summary, note is None), compiled=_side("compiled", record, summary, note is None),
        compile_s=record.compile_s, processes=tuple(_process(m) for m in members),
        command=reproduce_command(record.options, repeat), warnings=tuple(summary.warnings), error=error,
        samples_note=note, accuracy=accuracy_of(members), tune_stage=record.tune_stage, source=source,
    )  # fmt: skip


def _units(records: Sequence[RunRecord]) -> list[list[RunRecord]]:
    """Groups of one configuration's processes; a group none of whose done processes has its samples still (all
    pruned) splits into its runs, each with its stored summary. One that keeps some pools those (GroupRecord.of)."""
    from tui.engine.store.repeats import group_records

    units: list[list[RunRecord]] = []
    for members in group_records(records):
        if len(members) > 1 and _samples_note(members) is not None and not _pools_some(members):
            units += [[member] for member in members]
        else:
            units.append(members)
    return units


def _pools_some(members: Sequence[RunRecord]) -> bool:
    """Whether some done member's samples load, and none holds an impossible time (those split the group, each
    run with its note)."""
    from tui.engine.store.repeats import pooled_members

    try:
        return bool(pooled_members(members)[0])
    except SamplesInvalid:
        return False


def _env_key(env: Env) -> tuple:
    return tuple(getattr(env, name) for name in ENV_FIELDS)


def _environments(rows: Iterable[ReportRow]) -> tuple[EnvironmentRow, ...]:
    seen: dict[tuple, tuple[Env, list[int]]] = {}
    for row in rows:
        for process in row.processes:
            if process.status == RunStatus.CANCELLED and process.env == Env():
                continue  # cancelled before it started: it never had an environment
            env, numbers = seen.setdefault(_env_key(process.env), (process.env, []))
            if row.number not in numbers:
                numbers.append(row.number)
    return tuple(EnvironmentRow(env, tuple(numbers)) for env, numbers in seen.values())


def gather_report(records: Iterable[RunRecord], sources: Sequence[str] = (), problems: Sequence[str] = (), *,
                  configuration: Callable[[RunRecord], Hashable],
                  origins: Mapping[str, str] | None = None) -> ReportData:
    """The report of ``records``: one row per run or ``--repeat`` group, in the order of their first run.

    ``configuration``: a run's configuration (runs with equal keys are one, counted once). ``sources``
    (what was read) and ``problems`` (met reading it) are shown on the page. ``origins`` (run id -> the RUNS
    argument it came from): where they name more than one, each row says its own. A run whose per-iteration
    samples are gone keeps its stored summary and says why it has no distribution.
    """
    records = list(records)
    units = _units(records)
    several = origins is not None and len(set(origins.values())) > 1
    rows = tuple(_row(number, members, origins.get(members[0].run_id) if several and origins else None)
                 for number, members in enumerate(units, 1))
    created = [r.created for r in records]
    return ReportData(rows=rows, environments=_environments(rows), sources=tuple(sources), problems=tuple(problems),
                      runs=len(records), first_created=min(created, default=None),
                      last_created=max(created, default=None),
                      configurations=len({configuration(members[0]) for members in units}))  # fmt: skip

