"""RunRecord: the one place that turns worker events into a run's state.

The runner feeds every typed event of a run (:mod:`tui.engine.protocol`) to
:meth:`RunRecord.apply`; front ends read :meth:`RunRecord.summary` (an immutable
:class:`~tui.engine.measure.summary.RunSummary`), the typed payloads (``env``, ``diagnostics``,
``accuracy``, ``memory``, ``telemetry``), and write :meth:`RunRecord.to_json`,
:meth:`RunRecord.raw_rows` and the CSV row (:mod:`tui.engine.store.columns`).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui.engine.explain.artifacts import RunArtifacts, load_code
from tui.engine.explain.kernels import Profile
from tui.engine.options import RunOptions
from tui.engine.payloads import Accuracy, Diagnostics, Env, Memory
from tui.engine.protocol import (
    SIDES, ArtifactWritten, BlockTimed, Compiled, Event, Failed, Finished, GraphCoded, Measured, Profiled, PhaseChanged,
    Ready, Started, WorkerWarning,
)  # fmt: skip
from tui.engine.measure.samples import (
    Block, Samples, SamplesInvalid, SamplesPruned, SamplesUnavailable, kept_samples, new_samples, samples_from_json,
    samples_to_json,
)  # fmt: skip
from tui.engine.store.columns import csv_row, raw_rows
from tui.engine.store.run_ids import iso_utc, new_run_id
from tui.engine.store.stored_run import StoredRun, stored_options
from tui.engine.store.wall_time import PartClock, WallTime
from tui.engine.measure.summary import LiveStats, RunSummary, SummaryInputs, build_summary
from tui.engine.measure.verdict import Machine, VerdictPolicy
from tui.telemetry.model import RunTelemetry
from tui.typed import decode_fields, finite, printable
from tui.engine.status import ACTIVE_STATUSES, STATUSES, TERMINAL_STATUSES, RunStatus

__all__ = ["RunRecord", "Block", "SamplesUnavailable", "SamplesPruned", "SamplesInvalid", "STATUSES",
           "TERMINAL_STATUSES", "ACTIVE_STATUSES", "SIDES", "samples_to_json", "samples_from_json"]


@dataclass(eq=False)
class RunRecord:
    """Everything known about one run, built from the worker's events.

    Create one with :meth:`new` (or ``RunRecord(run_id, options)``), feed it every event
    with :meth:`apply`, end it with :meth:`fail` when the runner decides the run failed.
    ``samples[side]`` lists the :class:`Block` s of ``"eager"`` / ``"compiled"`` in
    arrival order. ``telemetry`` is filled by the runner's GPU sampler. ``samples_file``
    names the file holding the samples when the record came from the history; they are
    then loaded on demand.
    """

    run_id: str
    options: RunOptions = field(default_factory=RunOptions)
    created: float = field(default_factory=time.time)
    status: str = RunStatus.QUEUED
    env: Env = field(default_factory=Env)
    compile_s: float | None = None
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    accuracy: Accuracy = field(default_factory=Accuracy)
    memory: Memory = field(default_factory=Memory)
    flops_per_call: float | None = None
    bytes_per_call: float | None = None
    profile: Profile | None = None
    """The profile pass after measuring (None: the worker sent none, or an old record)."""
    artifacts: RunArtifacts = field(default_factory=RunArtifacts)
    """Generated code and traces (:mod:`tui.engine.explain.artifacts`; their files are in ``data_dir``)."""
    warnings: list[str] = field(default_factory=list)
    error_kind: str | None = None
    error_message: str | None = None
    error_detail: str | None = None
    telemetry: RunTelemetry = field(default_factory=RunTelemetry)
    samples: Samples = field(default_factory=new_samples)
    samples_file: str | None = None
    group_id: str | None = None
    """Shared by the runs of one configuration repeated across processes (``--repeat``); None alone."""
    repeat: int = 0
    """Which process of its group this run is (0-based, in the order they were queued)."""
    session_id: str | None = None
    """The app's or CLI's start that ran it (``RunSession.session_id``); None in lines written before it."""
    tune_id: str | None = None
    """The ``compile-lab tune`` search that ran it (every run of one search shares it); None otherwise."""
    tune_stage: str | None = None
    """Which part of its tune ran it: ``screening``, ``stage N`` (the race's later stages) or ``confirmation``
    (:func:`tui.engine.tune.search.stage_name`); None outside a tune, and in lines written before it."""
    concurrent_runs: int = 0
    """The most other runs of its session that ran at the same time (one worker per GPU); 0: it ran alone."""
    notes: tuple[str, ...] = ()
    """What reading an older stored run changed in it (its precision from the old TF32 switch)."""
    leftover_processes: int = 0
    """Processes its workload started outside the worker's process group (a daemon) that were still running
    when the run ended; the runner killed them (tui.engine.runner.leftovers)."""
    wall_time: WallTime = field(default_factory=WallTime)
    """Wall seconds in each part of the run, from its start to the worker's exit (tui.engine.store.wall_time)."""

    def __post_init__(self) -> None:
        self._version = 0
        self._cache: tuple[tuple, RunSummary] | None = None
        self._live = LiveStats()
        self._labels: dict[str, str] = {}
        self._measured_iters = 0
        self._measured_s = 0.0
        self._stored_summary: RunSummary | None = None
        self._samples_loaded = True
        self._samples_loader: Callable[[RunRecord], Samples] | None = None
        self._samples_lock = threading.RLock()  # the app loads and releases while exports read
        self.data_dir: Path | None = None  # the run's data folder, when known (tui.engine.explain.artifacts)
        self._clock = PartClock()
        self.measured = False  # a ``measured`` event arrived: the run's measurement is complete
        self.kept = False  # end_measured ended it: stopped after its measurement, its wall time cut short

    @classmethod
    def new(cls, options: RunOptions, run_id: str | None = None) -> RunRecord:
        """A queued record for ``options`` with a fresh run id."""
        return cls(run_id=run_id or new_run_id(), options=options)

    # ----- events ---------------------------------------------------------

    @property
    def finished(self) -> bool:
        """True once the record is done, failed or cancelled."""
        return self.status in TERMINAL_STATUSES

    def set_status(self, status: str) -> None:
        """Set a status by hand (the runner: "starting"); ValueError for an unknown one."""
        if status not in STATUSES:
            raise ValueError(f"status {status!r} is not one of {', '.join(STATUSES)}")
        self.status = status
        if status == RunStatus.STARTING:
            self._enter(status)
        self._version += 1

    def _enter(self, part: str | None) -> None:
        self._clock.enter(part)
        self.wall_time = self._clock.times

    def part_elapsed_s(self) -> float | None:
        """Seconds the run has been in its current part (compiling, say); None while its clock is stopped."""
        return self._clock.elapsed()

    def wait_for_gpu(self) -> None:
        """The runner waits for the GPU's lock (another run holds it): ``waiting``, until it sets ``starting`` again."""
        self._enter("waiting")
        self._version += 1

    def end_clock(self) -> None:
        """The run's end is decided (its last event, the runner's timeout or cancel): its ``ending`` part begins."""
        self._clock.end()
        self.wall_time = self._clock.times
        self._version += 1

    def stop_clock(self) -> None:
        """The worker exited and was reaped (the runner): the run's last part, ``ending``, ends."""
        if self._clock.running:
            self._enter(None)
            self._version += 1

    def apply(self, event: Event) -> None:
        """Update the record from one typed event, in place (ignored once the record ended)."""
        if self.finished:
            return
        handler = _HANDLERS.get(type(event))
        if handler is None:
            return
        handler(self, event)
        self._version += 1

    def _on_ready(self, event: Ready) -> None:
        if self.status == RunStatus.QUEUED:
            self.status = RunStatus.STARTING
            self._enter(RunStatus.STARTING)

    def _on_started(self, event: Started) -> None:
        self.env = event.env
        if self.status == RunStatus.QUEUED:
            self.status = RunStatus.STARTING
            self._enter(RunStatus.STARTING)

    def _on_phase(self, event: PhaseChanged) -> None:
        self.status = event.phase
        self._enter(event.phase)

    def _on_warning(self, event: WorkerWarning) -> None:
        if event.message:
            self._warn(" ".join(event.message.split()))

    def _on_compiled(self, event: Compiled) -> None:
        if event.compile_s is not None:
            self.compile_s = event.compile_s
        self.diagnostics = self.diagnostics.merged(event.diagnostics)

    def _on_block(self, event: BlockTimed) -> None:
        block = Block.from_event(event, self._intern)
        self.samples[event.side].append(block)
        if block.stage == "measure":
            self._measured_iters += len(block.ms)
            if block.host_ms_per_call is not None:
                self._measured_s += block.host_ms_per_call * len(block.ms) / 1000

    def _on_profiled(self, event: Profiled) -> None:
        self.profile = event.profile

    def _on_code(self, event: GraphCoded) -> None:
        self.artifacts = self.artifacts.added(event.graph)

    def _on_artifact(self, event: ArtifactWritten) -> None:
        if event.kind == "trace":
            self.artifacts = dataclasses.replace(self.artifacts, trace_file=event.name)
        else:
            self.artifacts = dataclasses.replace(self.artifacts, torch_trace_dir=event.name)

    def _on_measured(self, event: Measured) -> None:
        self.measured = True
        self.diagnostics = self.diagnostics.merged(event.diagnostics)
        if self.compile_s is None:
            self.compile_s = event.compile_s
        self.accuracy = event.accuracy
        self.memory = event.memory
        if event.flops_per_call is not None:
            self.flops_per_call = event.flops_per_call
        if event.bytes_per_call is not None:
            self.bytes_per_call = event.bytes_per_call
        for message in event.warnings:
            self._warn(" ".join(message.split()))

    def _on_finished(self, event: Finished) -> None:
        self.status = RunStatus.DONE
        self.end_clock()

    def end_measured(self) -> bool:
        """End the run as done on its measurement (a ``measured`` event) though its worker did not finish: the runner
        stopped it after that event (:mod:`tui.engine.run.kept`); False, and nothing changes, without one."""
        if self.finished or not self.measured:
            return False
        self.status, self.kept = RunStatus.DONE, True
        self.end_clock()  # a new version
        return True

    def _on_failed(self, event: Failed) -> None:
        self.fail(event.kind, event.message, event.detail)

    def warn(self, message: str) -> None:
        """Add a warning of the parent's (the store's, the runner's) to the run, once."""
        self._warn(message)

    def _warn(self, message: str) -> None:
        message = printable(message)
        if message not in self.warnings:
            self.warnings.append(message)

    def _intern(self, label: str) -> str:
        return self._labels.setdefault(label, label)

    def fail(self, kind: str, message: str, detail: str = "") -> None:
        """End the record as failed (or cancelled when ``kind == "cancelled"``)."""
        self.error_kind = kind
        self.error_message = printable(" ".join(message.split())) or kind.replace("_", " ")
        self.error_detail = printable(detail)  # a worker's stderr: shown, never run by the terminal
        self.status = RunStatus.CANCELLED if kind == "cancelled" else RunStatus.FAILED
        self.end_clock()
        self._version += 1

    def set_telemetry(self, telemetry: RunTelemetry) -> None:
        """Store the runner's GPU-sampler summary for this run."""
        self.telemetry = telemetry
        self._version += 1

    def set_samples(self, samples: Samples) -> None:
        """Replace every timing block (loading stored samples); statistics are recomputed."""
        self.samples = {side: list(samples.get(side, ())) for side in SIDES}
        self._samples_loaded = True
        self._live = LiveStats()
        measure = [b for side in SIDES for b in self.samples[side] if b.stage == "measure"]
        self._measured_iters = sum(len(b.ms) for b in measure)
        self._measured_s = sum(b.host_ms_per_call * len(b.ms) / 1000 for b in measure if b.host_ms_per_call)
        self._version += 1

    # ----- lazily stored samples -------------------------------------------

    @property
    def samples_loaded(self) -> bool:
        """False for a record read from the history whose samples are still on disk."""
        return self._samples_loaded

    def defer_samples(self, loader: Callable[[RunRecord], Samples]) -> None:
        """Mark the samples as stored apart; ``loader(record)`` returns them on demand."""
        self._samples_loaded = False
        self._samples_loader = loader

    def ensure_samples(self) -> None:
        """Load deferred samples now (SamplesUnavailable when they cannot be)."""
        self.loaded_samples()

    def loaded_samples(self) -> Samples:
        """The timing blocks, loaded first if they are stored apart (SamplesUnavailable when they cannot be).

        Readers on other threads use what this returns rather than ``samples``, which
        :meth:`release_samples` may swap for an empty set at any moment.
        """
        with self._samples_lock:
            if not self._samples_loaded:
                if self._samples_loader is None:
                    raise SamplesUnavailable(f"run {self.run_id}: its per-iteration samples were not stored")
                self.set_samples(self._samples_loader(self))
            return self.samples

    def release_samples(self) -> bool:
        """Drop samples that were loaded from the history (they stay on disk); the summary is kept.

        False, and nothing changes, for samples that exist only in memory (a run of this
        session) or that are not loaded. Lets a viewer that loads one stored run at a time keep
        memory flat however many runs it walks through.
        """
        with self._samples_lock:
            if not self._samples_loaded or self._samples_loader is None:
                return False
            self._stored_summary = self.summary()
            self.samples = new_samples()
            self._live = LiveStats()
            self._samples_loaded = False
            self._version += 1
            return True

    def set_samples_json(self, data: dict[str, Any]) -> None:
        """Replace every timing block from :func:`samples_to_json` output (malformed blocks dropped)."""
        self.set_samples(samples_from_json(data, self._intern))

    # ----- progress and summary -----------------------------------------------

    def progress(self) -> float:
        """0..1: measured iterations / (2 * options.iters), or the share of the time budget if larger."""
        if self.status == RunStatus.DONE:
            return 1.0
        fraction = self._measured_iters / (2 * max(1, self.options.iters))
        budget = self.options.time_budget_s
        if budget:
            fraction = max(fraction, self._measured_s / float(budget))
        return min(1.0, fraction)

    def _fingerprint(self) -> tuple:
        # Direct attribute assignment (not through a method) still invalidates the cache.
        return (self._version, self.status, self.compile_s, len(self.warnings), id(self.telemetry), self.flops_per_call,
                self.bytes_per_call, self.concurrent_runs, tuple(len(self.samples.get(side, ())) for side in SIDES))

    def summary(self) -> RunSummary:
        """The run's results (:class:`~tui.engine.measure.summary.RunSummary`); cached until the record changes."""
        with self._samples_lock:  # never from samples that release_samples is swapping out
            return self._summary()

    def _summary(self) -> RunSummary:
        key = self._fingerprint()
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        if not self._samples_loaded and self._stored_summary is not None:
            result = self._stored_summary
        else:
            self._live.feed(self.samples)
            result = build_summary(self._live, SummaryInputs(
                finished=self.finished,
                done=self.status == RunStatus.DONE,
                compile_s=self.compile_s,
                flops_per_call=self.flops_per_call,
                bytes_per_call=self.bytes_per_call,
                warnings=tuple(self.warnings),
                throttled=self.telemetry.throttled,
                policy=VerdictPolicy.of(self.options.noise_threshold, self.options.noise_limits),
                machine=self.machine(),
                sm_clocks=(self.telemetry.sm_clock_eager_mhz, self.telemetry.sm_clock_compiled_mhz),
                concurrent_runs=self.concurrent_runs,
            ))
        self._cache = (key, result)
        return result

    def machine(self) -> Machine:
        """What the machine did while this run measured, as the verdict reads it."""
        telemetry = self.telemetry
        return Machine(other_cpu_cores=telemetry.other_cpu_cores, other_cpu_top=telemetry.other_cpu_top,
                       other_gpu_processes=telemetry.other_gpu_processes,
                       gpu=self.options.device.startswith("cuda"))

    # ----- rows and lines ---------------------------------------------------------

    def to_row(self) -> dict[str, str]:
        """The CSV row: every column of :data:`tui.engine.store.columns.CSV_COLUMNS`, formatted."""
        return csv_row(self)

    @property
    def timestamp(self) -> str:
        """``created`` as ISO 8601 UTC with a ``Z``, to the second (:func:`iso_utc`)."""
        return iso_utc(self.created)

    def raw_rows(self) -> Iterator[dict[str, str]]:
        """One formatted row (:data:`tui.engine.store.columns.RAW_COLUMNS`) per timed iteration of every block."""
        return raw_rows(self)

    # ----- JSON -------------------------------------------------------------------

    def to_json(self, samples: bool = True) -> dict[str, Any]:
        """Everything as a JSON-ready dict; with ``samples`` the per-iteration times too."""
        data: dict[str, Any] = {
            "run_id": self.run_id,
            "created": self.created,
            "timestamp": self.timestamp,
            "options": self.options.to_dict(),
            "status": self.status,
            "env": self.env.to_json(),
            "compile_s": self.compile_s,
            "diagnostics": self.diagnostics.to_json(),
            "accuracy": self.accuracy.to_json(),
            "memory": self.memory.to_json(),
            "flops_per_call": self.flops_per_call,
            "bytes_per_call": self.bytes_per_call,
            "profile": None if self.profile is None else self.profile.to_json(),
            "artifacts": (dataclasses.replace(self.artifacts, graphs=load_code(self).graphs) if samples
                          else self.artifacts.without_code()).to_json(),
            "warnings": list(self.warnings),
            "error_kind": self.error_kind,
            "error_message": self.error_message,
            "error_detail": self.error_detail,
            "telemetry": self.telemetry.to_json(),
            "group_id": self.group_id,
            "repeat": self.repeat,
            "session_id": self.session_id,
            "tune_id": self.tune_id,
            "tune_stage": self.tune_stage,
            "concurrent_runs": self.concurrent_runs,
            "notes": list(self.notes),
            "leftover_processes": self.leftover_processes,
            "wall_time": self.wall_time.to_json(),
            "summary": self.summary().to_json(),
        }
        if samples:
            kept = kept_samples(self)  # None: pruned, or the file is gone (the export says which, once)
            data["samples"] = None if kept is None else samples_to_json(kept)
        return finite(data)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        """Rebuild from :meth:`to_json` output, checking every field (see :meth:`decode`)."""
        return cls.decode(data)[0]

    @classmethod
    def decode(cls, data: dict[str, Any]) -> tuple[RunRecord, list[str]]:
        """Rebuild from :meth:`to_json` output: (record, one line per field that did not fit).

        A field of the wrong type takes its default and adds a warning naming it to the
        record; a missing one takes its default. Without ``"samples"`` the stored
        ``"summary"`` stands in until the samples are loaded. TypeError when ``data`` is not
        an object.
        """
        if not isinstance(data, dict):
            raise TypeError("a run record must be a JSON object")
        stored, problems = decode_fields(StoredRun, data, where="record")
        options, option_problems = stored_options(data.get("options"))
        problems += option_problems
        kept = {f.name: getattr(stored, f.name) for f in dataclasses.fields(StoredRun)
                if f.name not in ("summary", "samples", "warnings")}
        record = cls(options=options, warnings=list(stored.warnings), **kept)
        record.run_id = record.run_id or new_run_id()
        if record.status not in STATUSES:
            problems.append(f"record.status: {record.status!r} is not a status")
            record.status = RunStatus.FAILED
        record.warnings.extend(f"stored record: {p}" for p in problems)
        if stored.samples is not None:
            record.set_samples_json(stored.samples)
        else:
            record._samples_loaded = False
            record._stored_summary = stored.summary
        return record, problems


_HANDLERS: dict[type, Callable[[RunRecord, Any], None]] = {
    Ready: RunRecord._on_ready,
    Started: RunRecord._on_started,
    PhaseChanged: RunRecord._on_phase,
    WorkerWarning: RunRecord._on_warning,
    Compiled: RunRecord._on_compiled,
    BlockTimed: RunRecord._on_block,
    Profiled: RunRecord._on_profiled,
    GraphCoded: RunRecord._on_code,
    ArtifactWritten: RunRecord._on_artifact,
    Measured: RunRecord._on_measured,
    Finished: RunRecord._on_finished,
    Failed: RunRecord._on_failed,
}

