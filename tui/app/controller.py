"""LabController: the app's session state in plain Python (no textual), observed by the app.

It owns what one app session knows: the run session and its runners, the records by run id
(this session's and previous sessions'), which of them are final, the rows of runs repeated
across processes (:class:`~tui.app.grouping.RowGroups`), the baseline's state
(:class:`~tui.app.baselines.BaselineState`), the settings the user confirmed, the traces the next
runs record, the config, and what an export writes. It is the session's listener: the session's
calls become calls on its :class:`~tui.app.lab_view.LabView` (the app), which turns them into messages and redraws.
Data flows down (the app's screen reads the controller), requests flow up (the app's actions call
it). A test drives it without Textual (``tests/app/test_controller.py``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence

from tui.app.lab_view import LabView
from tui.app.baselines import BaselineState
from tui.app.config import AppConfig, load_config, save_config
from tui.app.grouping import RowGroups
from tui.app.notices import NoisyNotices
from tui.engine.options import RunOptions
from tui.engine.run.session import SessionListener
from tui.engine.store.stored_options import code_settings
from tui.present.format import TERMINAL_STATUSES

if TYPE_CHECKING:
    from tui.app.tune_run import TuneRun
    from tui.engine.protocol import Event
    from tui.engine.store.results import RunRecord

__all__ = ["LabController", "LabView", "TRACE_CHOICES", "TRACE_NOTES", "Setting", "CANCELLED_WITH_X",
           "CANCELLED_WITH_SHIFT_X", "CANCELLED_AS_THE_APP_QUIT"]

logger = logging.getLogger(__name__)

Setting = tuple[str, str]
"""A setting that starts a program: (name, value), e.g. ``("python", "/usr/bin/python3")``."""

TRACE_CHOICES = ("off", "trace", "trace+torch_trace")
"""What ``t`` makes the next runs record: nothing more, the Chrome trace, the Chrome trace and TORCH_TRACE."""
TRACE_NOTES = {
    "off": "The next runs record no traces.",
    "trace": "The next runs write the profile pass as a Chrome trace (trace.json in each run's data folder; "
             "open it in ui.perfetto.dev). t again: TORCH_TRACE too.",
    "trace+torch_trace": "The next runs also keep a TORCH_TRACE directory for tlparse (each starts a fresh "
                         "worker; its compile time includes torch's structured logging). t again: off.",
}

CANCELLED_WITH_X = "by the user (x)"
"""What a run ``x`` cancelled says ended it (``cancelled: by the user (x)``), in its details and the history."""
CANCELLED_WITH_SHIFT_X = "by the user (X, with the queue)"
"""What a run ``X`` (cancel all) cancelled says ended it."""
CANCELLED_AS_THE_APP_QUIT = "as the app quit"
"""What a run still running when the app quit says ended it."""


class LabController(SessionListener):
    """The app's session state and the requests that change it (see the module docstring).

    Args:
        runner: a ``WorkerRunner`` (default: a real one sharing ``telemetry``).
        telemetry: a telemetry source (default: ``NvmlSource()``, initialised lazily).
        history: a ``History`` (default: the user's history file).
        config_path: the config file (default: ``paths.config_file()``).
        cluster: a ClusterLink: every run goes to that Ray cluster (``--cluster``), else None.
    """

    def __init__(self, runner: Any = None, telemetry: Any = None, history: Any = None, *,
                 config_path: Path | None = None, cluster: Any = None) -> None:
        if telemetry is None:
            from tui.telemetry.nvml import NvmlSource

            telemetry = NvmlSource()
        if runner is None:
            from tui.engine.runner import WorkerRunner

            runner = WorkerRunner(telemetry=telemetry)
        if history is None:
            from tui.engine.store.history import History

            history = History()
        from tui.app.gpu_pool import LaneRunners
        from tui.engine.run.session import RunSession

        self.telemetry = telemetry
        """The GPU telemetry source (shared by the GPU pane and the runner)."""
        self.runner = runner
        """The WorkerRunner that starts one worker per run."""
        self.history = history
        """Where ended runs are appended and previous runs are read from."""
        self.cluster = cluster
        """Where every run goes when the app was started with ``--cluster`` (a ClusterLink), else None."""
        self.config_path = config_path
        self.config: AppConfig
        self.config, self.config_warning = load_config(config_path)
        self.lanes = LaneRunners(self)
        """The runner of each lane: ``runner`` for single runs, one per GPU of a pool (``cuda:all``)."""
        self.session = RunSession(self.lanes, self.history, self, spare="runner")
        """Queues, runs, ends and saves the runs (the same policies as the command line)."""
        self.view: LabView | None = None
        self.records: dict[str, RunRecord] = {}
        """Every record the table knows, session and history, by run id."""
        self.history_ids: list[str] = []
        """Previous sessions' runs (oldest first): the table's history rows."""
        self.pooled: set[str] = set()
        """Run ids of the runs dealt to a pool of GPUs (their GPU is named where they are shown)."""
        self.confirmed_code: set[Setting] = set()
        """Settings that start a program (``python``, inductor options) the user confirmed in this session."""
        self.trace_next = "off"
        """What the next runs record besides their numbers (``t``; :data:`TRACE_CHOICES`)."""
        self.data_usage_line = ""
        """The data dir's size, measured off the event loop after the history loaded (shown in the help)."""
        self.groups = RowGroups(self.records)
        """One row per configuration repeated across processes."""
        self.baseline = BaselineState()
        """The rows marked as the baseline and each compared row's result."""
        self.finalized: set[str] = set()
        """Run ids whose final summary and history line are made (or that need none)."""
        self.injected: RunRecord | None = None
        """A record shown as running that no worker runs (tests, demos)."""
        self.shutting_down = False
        self.current_theme: Callable[[], str | None] = lambda: None
        """The theme shown now (the app sets it): saved with the config."""
        self._noisy = NoisyNotices(self._notify)
        self.tune: TuneRun | None = None
        """The search the Tune action started (running or ended), else None."""

    @property
    def workload_names(self) -> Mapping[str, str] | None:
        """The user files' names in the view's listing (the app sets it: the table's), for the notices."""
        return self._noisy.names

    @workload_names.setter
    def workload_names(self, names: Mapping[str, str] | None) -> None:
        self._noisy.names = names

    def attach(self, view: LabView) -> None:
        """Tell ``view`` what happens from now on."""
        self.view = view

    def _notify(self, message: str, **kwargs: Any) -> None:
        if self.view is not None:
            self.view.notify(message, **kwargs)

    # ----- what the session holds --------------------------------------------------------

    @property
    def current(self) -> RunRecord | None:
        """The run a worker executes now (or a record shown as running), or None."""
        for unit in self.session.running.values():
            return unit.record
        return self.injected

    @property
    def running(self) -> list[RunRecord]:
        """Every run a worker executes now (several with a pool of GPUs), or the record shown as running."""
        records = [unit.record for unit in self.session.running.values()]
        return records or ([self.injected] if self.injected is not None else [])

    @property
    def queue(self) -> list[RunRecord]:
        """Runs waiting for a worker, in order."""
        return [unit.record for unit in self.session.queue]

    def computing(self, record: RunRecord) -> bool:
        """Whether ``record`` ended and its final summary and history line are still being made."""
        return record.finished and record.run_id not in self.finalized

    @property
    def run_active(self) -> bool:
        """Whether a run executes or waits in the queue."""
        return self.session.active or self.injected is not None

    @property
    def settled(self) -> bool:
        """No run active or queued, every ended run finalized (summary, history), no row being rebuilt."""
        if self.run_active or not self.session.settled or self.groups.regrouping:
            return False
        return not any(self.computing(record) for record in self.records.values())

    def group_members(self, run_id: str) -> list[RunRecord]:
        """The runs of the row ``run_id``: a group's processes in repeat order, else the run alone."""
        return self.groups.members(run_id)

    def row_of(self, record: RunRecord) -> str:
        """The key of the row that shows ``record``: its group's, for a process of this session's groups."""
        return self.groups.row_of(record)

    def row_record(self, run_id: str) -> RunRecord | None:
        """What the row ``run_id`` shows: its group's row when there is one, else the run."""
        return self.groups.row_record(run_id)

    def all_rows(self) -> list[str]:
        """Every row's key, in the order the records became known."""
        return list(dict.fromkeys(self.row_of(record) for record in self.records.values()))

    # ----- queueing ----------------------------------------------------------------------

    def traced(self, options_list: Sequence[RunOptions]) -> list[RunOptions]:
        """``options_list`` with the traces ``t`` asked for (a run without the profile pass gets no Chrome trace)."""
        if self.trace_next == "off":
            return list(options_list)
        torch_trace = self.trace_next == "trace+torch_trace"
        return [dataclasses.replace(o, trace=o.trace or o.profile, torch_trace=o.torch_trace or torch_trace)
                for o in options_list]

    def cycle_trace(self) -> str:
        """The next of :data:`TRACE_CHOICES`; returns what the next runs record, in words."""
        self.trace_next = TRACE_CHOICES[(TRACE_CHOICES.index(self.trace_next) + 1) % len(TRACE_CHOICES)]
        return TRACE_NOTES[self.trace_next]

    def unconfirmed(self, options_list: Iterable[RunOptions]) -> list[Setting]:
        """The settings of ``options_list`` that start a program and were not confirmed in this session."""
        pending: list[Setting] = []
        for options in options_list:
            for setting in code_settings(options):
                if setting not in self.confirmed_code and setting not in pending:
                    pending.append(setting)
        return pending

    def enqueue(self, options_list: list[RunOptions], origin: str = "run", repeats: int | str = 1,
                pool: tuple[str, ...] = ()) -> list[RunRecord]:
        """Queue each options (already validated) in ``repeats`` processes (or ``"auto"``); returns the records.

        A configuration in several processes gets one row, its group's. ``pool``: the GPUs (or cluster
        lanes) the runs are dealt to, one run each at a time.
        """
        if not options_list or self.shutting_down:
            return []
        from tui.engine.run.session import is_local

        if pool and is_local(pool[0]):
            self.lanes.pinned(pool)  # queued by a key: pinned near the GPUs already (queue_on_pool)
        records = self.session.submit(self.traced(options_list), repeats=repeats, pool=pool or None)
        self.pooled.update(r.run_id for r in records if pool)
        self.known(records)
        if self.view is not None:
            self.view.show_queued(records, [r for r in records if r.group_id in (None, r.run_id)], origin)
        return records

    async def enqueue_on_pool(self, options_list: list[RunOptions], origin: str, repeats: int | str,
                              pool: tuple[str, ...]) -> list[RunRecord]:
        """:meth:`enqueue` on a pool of GPUs, each GPU's cores asked of NVML first (off the event loop)."""
        async with self.lanes.lock:
            await self.lanes.pin(pool)
            return self.enqueue(options_list, origin=origin, repeats=repeats, pool=pool)

    async def enqueue_on_cluster(self, options_list: list[RunOptions], origin: str,
                                 repeats: int | str) -> list[RunRecord]:
        """:meth:`enqueue` on the Ray cluster (connecting first); a refusal is a notice and no records."""
        from tui.engine.cluster import ClusterError
        from tui.engine.cluster.link import on_cluster

        assert self.cluster is not None
        options_list = [on_cluster(options) for options in options_list]
        async with self.lanes.lock:
            first = self.cluster.runner is None
            try:
                lanes = await self.cluster.lanes(options_list, getattr(self.runner, "worker_argv", None))
            except ClusterError as exc:
                self._notify(str(exc), title="Not run: the cluster", severity="error", markup=False)
                return []
            if first:
                self._notify(f"Runs go to the Ray cluster at {self.cluster.address}: {len(lanes)} at once.",
                             title="Cluster", markup=False)
            return self.enqueue(options_list, origin=origin, repeats=repeats, pool=lanes)

    def known(self, records: list[RunRecord]) -> None:
        """Records queued (by a request or by ``--repeat auto``) join the model; nothing to compute yet."""
        for record in records:
            self.records[record.run_id] = record
            self.finalized.add(record.run_id)
        self.groups.add(records)

    def inject_record(self, record: RunRecord, *, current: bool = False) -> None:
        """A record made elsewhere joins the model (an ended one as final: its summary is computed here)."""
        self.records[record.run_id] = record
        if record.finished:
            record.summary()
            self.finalized.add(record.run_id)
        else:
            self.finalized.discard(record.run_id)
        if current:
            self.injected = record

    def add_history(self, records: Sequence[RunRecord], is_history_row: Callable[[str], bool]) -> list[int]:
        """Previous sessions' records join the model as final; returns the positions of those that are rows.

        A run this session knows stays as it is (``is_history_row``: whether a known run id is a history row).
        """
        added = []
        for position, record in enumerate(records):
            run_id = record.run_id
            if run_id in self.records:
                if not is_history_row(run_id):
                    continue  # one of this session's runs
            else:
                self.history_ids.append(run_id)
            self.records[run_id] = record  # a later line of the same run replaces the earlier one
            self.finalized.add(run_id)
            added.append(position)
        return added

    def start_tune(self, base: RunOptions, request: Any, on_change: Any = None) -> TuneRun | None:
        """Start a search (a TuneRequest) on ``base`` as a task, ``on_change(board)`` hearing it; None if one runs."""
        from tui.app.tune_run import TuneRun

        if self.shutting_down or self.view is None or (self.tune is not None and self.tune.running):
            return None
        self.tune = tune = TuneRun(self, base, request, on_change)
        self.view.spawn(tune.task(), "tune")
        return tune

    def stop_tune(self) -> bool:
        """Stop the running search (the best so far, unconfirmed); False when none runs."""
        return self.tune is not None and self.tune.stop()

    # ----- cancelling ----------------------------------------------------------------------

    def cancel_running(self, selected: str | None) -> tuple[int, bool]:
        """Cancel the row ``selected``'s running runs, else every running run; returns (lanes running, chosen)."""
        lanes = {lane: unit.record for lane, unit in self.session.running.items()}
        members = {record.run_id for record in self.group_members(selected)} if selected else set()
        chosen = [lane for lane, record in lanes.items() if record.run_id in members or record.group_id == selected]
        for lane in chosen or lanes:
            self.session.cancel_running(lane, CANCELLED_WITH_X)
        return len(lanes), bool(chosen)

    def toggle_serial(self) -> bool:
        """One run at a time even over a pool of GPUs, or one per GPU again; returns whether serial now."""
        serial = self.session.max_running != 1
        self.session.set_max_running(1 if serial else None)
        return serial

    async def close(self) -> None:
        """Cancel what runs (ended runs are saved), drop the queue, close the runner; never raises.

        The view is let go first: the app closes its screens before this, and a run cancelled here
        is still saved to the history, but nothing about it reaches a screen that is gone.
        """
        self.shutting_down = True
        self.view = None
        if self.tune is not None:  # as the view: the search's board reaches no screen from now on
            self.tune.close()
        try:
            await self.session.aclose(timeout=3.0, reason=CANCELLED_AS_THE_APP_QUIT)
        except Exception as exc:  # closing goes on: the runner below still kills its workers
            logger.warning("closing the session failed", exc_info=exc)
        try:
            await asyncio.wait_for(self.runner.aclose(), timeout=3.0)
        except Exception as exc:  # its workers are killed below
            logger.warning("closing the runner failed", exc_info=exc)
        self.kill_all()

    def kill_all(self) -> None:
        """Kill every worker process now (a signal, the last guard at exit)."""
        self.session.kill_all()
        try:
            self.runner.kill_all()
        except Exception as exc:  # the last guard at exit: logged, the exit goes on
            logger.warning("killing the runner's workers failed", exc_info=exc)

    # ----- exports and the config ------------------------------------------------------------

    def exportable_records(self, row_ids: Iterable[str]) -> tuple[list[RunRecord], int]:
        """The ended runs of the rows ``row_ids`` in order, and how many runs are skipped (not ended or computing).

        A group's row stands for its processes: each one that ended is exported (the CSV makes them one row).
        """
        records, skipped = [], 0
        for run_id in row_ids:
            for record in self.group_members(run_id):
                if record.status in TERMINAL_STATUSES and not self.computing(record):
                    records.append(record)
                else:
                    skipped += 1
        return records, skipped

    @staticmethod
    def write_export(records: list[RunRecord], target: str | None, *, make_directory: bool = False) -> list[Path]:
        """Write ``records`` in every default export format at ``target`` (blocking: call it off the event loop).

        Returns the paths written, in the formats' order; ExportError, OSError or ValueError say why nothing
        (or not all) was written. The writing is the engine's, the command line's too
        (:func:`tui.engine.store.export.export_records`); the first failure stops the rest.
        """
        from tui.app.export_target import export_paths
        from tui.engine.store.export import default_export_paths, export_records

        destinations = export_paths(target, default_export_paths, make_directory=make_directory)
        written = []
        for outcome in export_records(records, destinations, keep_going=False):
            if isinstance(outcome.result, Exception):
                raise outcome.result
            written.append(outcome.result)
        return written

    def save_config(self) -> None:
        """Save the config (with the theme shown now); a failure is a notice."""
        theme = self.current_theme()
        if theme is not None:
            self.config.theme = theme
        try:
            aside = save_config(self.config, self.config_path)
        except OSError as exc:
            self._notify(f"config not saved: {exc}", severity="warning", markup=False)
            return
        if aside is not None:
            self._notify(f"The config file no longer parsed (changed by hand?): kept as {aside}, and this session's "
                         "settings saved anew.", title="Config", severity="warning", markup=False)

    # ----- the session's listener (tui.engine.run.session.SessionListener) -----------------------

    def run_started(self, record: RunRecord) -> None:
        """A worker takes ``record``."""
        # Here, not in the view's handler: a run that fails at once can be saved (run_saved)
        # before the view has handled its start, and its row would then go back to "computing".
        self.finalized.discard(record.run_id)
        # Before the run's task starts its worker: a GPU lane starts a spare only while its pool has runs waiting.
        self.lanes.keep_spares(self.session.queue, bool(getattr(self.runner, "keep_spare", True)))
        if self.view is not None:
            self.view.show_started(record)

    def run_event(self, record: RunRecord, event: Event) -> None:
        """``record`` applied ``event``."""
        if self.view is not None:
            self.view.show_event(record, event)

    def run_finished(self, record: RunRecord) -> None:
        """``record`` ended."""
        if self.injected is record:
            self.injected = None
        if self.view is not None:
            self.view.show_finished(record)

    def run_saved(self, record: RunRecord, problem: str | None) -> None:
        """The session computed ``record``'s final summary and appended it to the history."""
        self.finalized.add(record.run_id)
        if self.tune is not None:
            self.tune.saved(record)
        if self.view is not None:
            self.view.show_saved(record)
        if record.group_id is not None:
            self._regroup(record.group_id)
        if problem:
            self._notify(problem, title="History", severity="warning", markup=False)
        summary = record.summary()  # computed by the session already: cached
        noisy = summary.verdict == "noisy" and record.group_id is None
        self._noisy.saved(record, summary.noise_reasons if noisy else None, queue_ended=self._queue_ended(record))

    def _queue_ended(self, record: RunRecord) -> bool:
        """Whether ``record``, just saved, ends its queue: nothing else runs, waits or is being saved."""
        if self.queue or any(other is not record for other in self.running):
            return False
        return not any(self.computing(other) for other in self.records.values())

    def data_pruned(self, result: Any) -> None:
        """The data dir's size cap deleted older runs' files: a notice."""
        from tui.engine.explain.artifacts import format_bytes

        for note in result.notes:
            self._notify(note, title="Data dir", severity="warning", markup=False)
        if not (result.runs or result.errors):
            return
        left = f" {len(result.errors)} file(s) were left: {result.errors[0]}" if result.errors else ""
        self._notify(f"The data dir's size cap deleted the files of {result.runs} older run(s) "
                     f"({format_bytes(result.bytes_freed)}); their rows stay.{left}", title="Data dir",
                     severity="warning" if left else "information", markup=False)

    def runs_queued(self, records: list[RunRecord]) -> None:
        """``--repeat auto``'s next round: more processes of groups that have their rows already."""
        self.known(records)
        if self.view is not None:
            self.view.show_dirty(None)

    def _regroup(self, group_id: str) -> None:
        """Rebuild a group's row off the event loop (one of its processes was saved)."""
        if self.shutting_down or self.view is None:
            return
        work = self.groups.rebuild(group_id)
        if work is not None:
            view = self.view
            self.view.spawn(_then(work, lambda: view.show_dirty(group_id)), "regroup")


async def _then(work: Coroutine[Any, Any, bool], done: Callable[[], None]) -> None:
    if await work:
        done()
