"""WorkerRunner: one benchmark run per fresh worker process, its typed events streamed into a RunRecord.

It composes the pieces of this package: the worker process handle (:mod:`.process`), the
per-GPU lock (:mod:`.gpu_lock`), the warm spare (:mod:`.spare`), the worker's command line and
environment (:mod:`.launch`) and per-run GPU telemetry (:mod:`.sampling`), and owns the run's
policy: the timeout, cancel, and how a worker that died is reported.

A run with ``torch_trace`` gets a worker started for it alone, with ``TORCH_TRACE`` set to its data
folder's ``torch_trace`` directory (torch reads it at import, so the warm spare, which imported torch
already, cannot serve it; the spare is kept for the next run). A run with ``trace`` is told its data
folder in its command, where the worker writes the Chrome trace (:mod:`tui.engine.explain.artifacts`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import logging
import os
import signal
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.engine.explain.artifacts import TORCH_TRACE_DIR, run_folder
from tui.logs import WORKER_MARK
from tui.engine.protocol import Event, Failed, Finished, PhaseChanged, Started, WorkerWarning
from tui.engine.run.cancel import cancel
from tui.engine.run.kept import CANCELLED_THEN, kept_events, timed_out
from tui.engine.runner.gpu_lock import GpuResolver, acquire_gpu_lock, release_gpu_lock
from tui.engine.runner.launch import Launch, launch_for
from tui.engine.runner.leftovers import leftover_warning
from tui.engine.runner.process import WorkerProcess
from tui.engine.runner.sampling import RunSampling
from tui.engine.runner.spare import SparePool
from tui.engine.status import RunStatus

if TYPE_CHECKING:
    from tui.engine.store.results import RunRecord

__all__ = ["WorkerRunner", "EventCallback", "EXIT_GRACE_S", "own_worker_pids", "timeout_message"]

EXIT_GRACE_S = 3.0
"""Seconds a worker gets to exit on its own after its finished/failed event."""

EventCallback = Callable[[Event], Any]
"""Called with each typed event after the record applied it; may return an awaitable."""

_RUNNERS: weakref.WeakSet[WorkerRunner] = weakref.WeakSet()

log = logging.getLogger(__name__)


def _copy_worker_log(run_id: str, pid: int | None, stderr: str) -> None:
    """Copy what a worker logged (its stderr from the first :data:`~tui.logs.WORKER_MARK` on) into this log."""
    start = stderr.find(WORKER_MARK)
    if start >= 0:
        log.warning("run %s: its worker (pid %s) logged:\n%s", run_id, pid, stderr[start:].rstrip())


def timeout_message(timeout_s: float, status: str) -> str:
    """``timed out after 5 s (timeout_s) while compiling``: the limit and the phase the run was in.

    ``status`` is the record's status when the timeout came: a worker phase (``warming_up``
    reads "warming up"), or ``queued``/``starting`` before the worker announced one.
    """
    doing = "starting" if status in (RunStatus.QUEUED, RunStatus.STARTING) else status.replace("_", " ")
    return f"timed out after {timeout_s:g} s (timeout_s) while {doing}"


def own_worker_pids() -> set[int]:
    """The pids of every worker (running, spare, or not yet reaped) of every runner in this process.

    Called from telemetry threads while the event loop changes the sets: a set changed mid-copy
    is read again.
    """
    for _ in range(3):
        try:
            return {pid for runner in list(_RUNNERS) for pid in tuple(runner._pgids)}
        except RuntimeError:  # changed size during the copy
            continue
    return set()


def _kill_all_runners() -> None:
    for runner in list(_RUNNERS):
        runner.kill_all()


atexit.register(_kill_all_runners)


async def _maybe_await(value: Any) -> None:
    if asyncio.iscoroutine(value):
        await value


@dataclass(eq=False)
class _RunState:
    """What one run() call tracks besides the record."""

    record: RunRecord
    on_event: EventCallback | None
    sampling: RunSampling
    gpu: str | None = None
    gpu_uuid: str | None = None
    worker: WorkerProcess | None = None
    lock_fd: int | None = None
    terminal: bool = False
    last_t: float = 0.0
    waited: bool = False
    """Whether the run waited for its GPU's lock (another run held it)."""


class WorkerRunner:
    """Runs one benchmark configuration per worker process and streams its events into a RunRecord.

    ``worker_argv``: the worker's command line (default ``[options.python or sys.executable,
    "-m", "tui.engine.worker"]``; tests pass a fake worker's argv). ``keep_spare``: start the
    next worker ahead of time (a mutable attribute: a caller may turn it off before its last
    run). ``telemetry``: a telemetry source (``NvmlSource``/``FakeSource``) for per-run GPU
    sampling and for resolving ``cuda:N`` to a GPU UUID. ``env``: extra environment variables
    for the worker, applied over the parent's environment (a value of None removes a variable).

    ``last_stderr`` holds the kept tail of the last run's stderr; ``last_pid`` its worker's pid.
    """

    def __init__(
        self,
        worker_argv: list[str] | None = None,
        keep_spare: bool = True,
        telemetry: Any = None,
        env: Mapping[str, str | None] | None = None,
        sample_host: bool = True,
    ) -> None:
        self.worker_argv = list(worker_argv) if worker_argv else None
        self.sample_host = sample_host
        """Sample other processes' CPU use while a run measures (tests of other things turn it off)."""
        self.keep_spare = keep_spare
        self.next_options: Any = None
        """The configuration the next run will have (the session sets it): the spare is started with
        its interpreter and environment, so an A/B sweep's alternating interpreters each find theirs.
        None: the next run is like this one."""
        self.last_from_spare = False
        """Whether the last run's worker was a waiting spare (not started for it)."""
        self.telemetry = telemetry
        self.env = dict(env or {})
        self.last_stderr = ""
        self.last_pid: int | None = None
        self._gpus = GpuResolver(telemetry)
        self._spares = SparePool(self._spawn, self._forget)
        self._running: set[WorkerProcess] = set()
        self._pgids: set[int] = set()
        self._closed = False
        _RUNNERS.add(self)

    # ----- public API -------------------------------------------------------------------------

    @property
    def spare_pid(self) -> int | None:
        """The pid of the waiting spare worker, or None."""
        return self._spares.pid

    async def run(self, record: RunRecord, on_event: EventCallback | None = None) -> RunRecord:
        """Drive ``record``'s run to its end in a fresh worker and return the record.

        Every typed event is applied to ``record`` and then passed to ``on_event`` (which may be
        async), in order. A line that is not an event becomes a :class:`WorkerWarning` with
        ``source="runner"``. Failures end up in ``record.fail``: ``timeout`` (options.timeout_s),
        ``crash`` (the worker died without finished/failed; stderr's tail is the detail),
        ``cancelled`` (the task was cancelled: the worker's process group is killed and
        CancelledError re-raised; no detail: the worker's stderr says nothing about why). A run its timeout or a
        cancel stops after the worker's ``measured`` event ends done instead (:mod:`tui.engine.run.kept`). A CUDA
        run first takes the GPU's lock, waiting (with a warning event to ``on_event``; the wall time's
        ``waiting`` part) while it is busy.
        """
        if self._closed:
            raise RuntimeError("the runner was closed")
        state = _RunState(record=record, on_event=on_event,
                          sampling=RunSampling(self.telemetry, record, own_pids=own_worker_pids,
                                               sample_host=self.sample_host))
        try:
            if await self._start(state):
                await self._supervise(state)
            return record
        except asyncio.CancelledError:
            await self._on_cancel(state)
            raise
        except BaseException as exc:
            await self._on_runner_error(state, exc)
            raise
        finally:
            self._release(state)

    async def prestart(self, options: Any, wait: bool = False, timeout: float = 120.0) -> int | None:
        """Start the spare for ``options``' configuration now, so the next such run skips the import.

        With ``wait``, return once the spare reported ``ready`` (or after ``timeout`` s).
        Returns the spare's pid (None when it could not be started).
        """
        if self._closed:
            raise RuntimeError("the runner was closed")
        gpu = await self._gpus.resolve_async(options.device)
        await self._spares.start(*self._launch(options, gpu))
        spare = self._spares.worker
        if spare is None:
            return None
        if wait:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(spare.ready.wait(), timeout)
        return spare.pid

    async def aclose(self) -> None:
        """Stop the spare and any running worker; the runner cannot run afterwards."""
        self._closed = True
        workers = list(self._running)
        spare = self._spares.release()
        if spare is not None:
            workers.append(spare)
        for worker in workers:
            await worker.stop()
            self._forget(worker)
        self._gpus.close()

    def kill_all(self) -> None:
        """SIGKILL every process group this runner started that may still exist, and what left them.

        Synchronous, safe from a signal handler or atexit, and safe to call more than once.
        """
        spare = self._spares.worker
        for worker in [*self._running, *([spare] if spare is not None else [])]:
            worker.killed = True
            worker.kill_leftovers()
        for pgid in list(self._pgids):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._pgids.discard(pgid)

    async def __aenter__(self) -> WorkerRunner:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()

    # ----- one run ----------------------------------------------------------------------------

    async def _start(self, state: _RunState) -> bool:
        """Lock the GPU, get a worker, send it the command, start the next spare; False when no worker started."""
        record, options = state.record, state.record.options
        state.gpu = await self._gpus.resolve_async(options.device)
        argv, env, key = self._launch(options, state.gpu)
        folder = _data_folder(record) if options.trace or options.torch_trace else None
        if state.gpu is not None:
            try:
                state.lock_fd = await acquire_gpu_lock(state.gpu, lambda: self._gpu_busy(state))
            except OSError as exc:  # a lock file that is a link or no regular file, a locks dir not writable
                why = exc.strerror or str(exc)
                record.fail("setup_error", f"the GPU's lock could not be taken: {why}" + (
                    f" ({exc.filename})" if exc.filename else ""))
                return False
            if state.waited:
                record.set_status(RunStatus.STARTING)  # the wait is its own part of the wall time: starting again
        try:
            self.last_from_spare = False
            if options.torch_trace:
                assert folder is not None
                run_env = launch_for(options, state.gpu, self.worker_argv, self.env,
                                     torch_trace=str(folder / TORCH_TRACE_DIR))[1]
                worker = state.worker = await self._spawn(argv, run_env, ("torch_trace", record.run_id))
            else:
                waiting = self._spares.worker
                worker = state.worker = await self._spares.take(argv, env, key)
                self.last_from_spare = worker is waiting
        except OSError as exc:
            record.fail("bad_options", f"the worker could not be started: {exc}", " ".join(argv))
            return False
        self._running.add(worker)
        self.last_pid = worker.pid
        if record.status == RunStatus.QUEUED:
            record.set_status(RunStatus.STARTING)
        await worker.send_command(record.run_id, options.to_dict(), str(folder) if options.trace else None)
        if self.keep_spare and not self._closed:
            await self._spares.start(*await self._spare_launch(options, state.gpu, (argv, env, key)))
        return True

    async def _spare_launch(self, options: Any, gpu: str | None, current: Launch) -> Launch:
        upcoming = self.next_options
        if upcoming is None or upcoming is options:
            return current
        if upcoming.device != options.device:
            gpu = await self._gpus.resolve_async(upcoming.device)
        return self._launch(upcoming, gpu)

    async def _gpu_busy(self, state: _RunState) -> None:
        state.waited = True
        state.record.wait_for_gpu()
        if state.on_event is not None:
            message = f"GPU {state.gpu} was busy with another compile-lab run; the run waited for it"
            await _maybe_await(state.on_event(WorkerWarning(message=message, source="runner")))

    async def _supervise(self, state: _RunState) -> None:
        """Stream the run's events under its timeout, then stop the worker and say how it ended."""
        worker, record = state.worker, state.record
        assert worker is not None
        timeout_s = float(record.options.timeout_s)
        try:
            await asyncio.wait_for(self._stream_to_exit(worker, state), timeout_s)
        except asyncio.TimeoutError:
            phase = record.status  # the phase the limit cut short, before stopping changes anything
            record.end_clock()  # stopping the worker is the run's ending, not that phase
            await state.sampling.stop()
            await worker.stop()
            # one that finished and then lingered keeps its results, and so does one stopped after its measurement
            if not state.terminal and not await self._keep_measured(state, timed_out(timeout_s)):
                record.fail("timeout", timeout_message(timeout_s, phase), worker.stderr_text())
            return
        exited = not worker.alive
        await worker.stop()  # reaps, and sweeps what the worker left in its group
        await state.sampling.stop()
        if state.terminal:
            return
        if worker.killed:  # kill_all ended it (its events may end before the cancel that follows comes)
            await self._end_stopped(state)
            return
        record.fail("crash", worker.crash_message(exited), worker.stderr_text())

    async def _stream_to_exit(self, worker: WorkerProcess, state: _RunState) -> None:
        await self._stream(worker, state)
        # A daemon the workload started outlives the worker and may hold its pipes open: it goes first.
        worker.kill_leftovers()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(worker.process.wait(), EXIT_GRACE_S)

    async def _on_cancel(self, state: _RunState) -> None:
        state.record.end_clock()  # stopping the worker is the run's ending, not the phase it was in
        try:
            if state.worker is not None:
                await state.sampling.stop(quick=True)
                await state.worker.stop()
        finally:
            if not state.terminal:
                await self._end_stopped(state)

    async def _end_stopped(self, state: _RunState) -> None:
        """A run a cancel or ``kill_all`` stopped: done with its measurement after ``measured``, else cancelled.

        No stderr detail: the worker did not end the run, so its last lines (a profiler's log, say) would stand
        where the reason goes; they are in the log (_copy_worker_log)."""
        if not await self._keep_measured(state, CANCELLED_THEN):
            cancel(state.record)

    async def _keep_measured(self, state: _RunState, stopped: str) -> bool:
        """End a run that ``stopped`` after its measurement as done, with the events that say why it lacks the rest
        (:mod:`tui.engine.run.kept`); False, and nothing changes, before its measurement."""
        for event in kept_events(state.record, stopped, state.last_t):
            await self._emit(state, event)
        return state.record.end_measured()

    async def _on_runner_error(self, state: _RunState, exc: BaseException) -> None:
        if state.worker is not None:
            state.worker.kill_now()
            await state.sampling.stop(quick=True)
        if not state.terminal and not isinstance(exc, (KeyboardInterrupt, SystemExit)):
            log.error("run %s: the runner failed", state.record.run_id, exc_info=exc)
            self._fail(state, "crash", f"the runner failed: {type(exc).__name__}: {exc}")

    def _release(self, state: _RunState) -> None:
        state.record.stop_clock()  # the worker was reaped (or never started): the run's ``ending`` ends
        if state.record.options.torch_trace and state.worker is not None:
            _note_torch_trace(state.record)
        worker = state.worker
        if worker is not None:
            if worker.alive:
                worker.kill_now()
            self.last_stderr = worker.stderr_text()
            _copy_worker_log(state.record.run_id, worker.pid, self.last_stderr)
            self._forget(worker)
            _note_leftovers(state.record, worker.leftover_count)
        self._spares.resume()
        if state.lock_fd is not None:
            release_gpu_lock(state.lock_fd)

    def _fail(self, state: _RunState, kind: str, message: str) -> None:
        detail = state.worker.stderr_text() if state.worker is not None else ""
        state.record.fail(kind, message, detail)

    # ----- streaming --------------------------------------------------------------------------

    async def _emit(self, state: _RunState, event: Event) -> None:
        state.record.apply(event)
        if state.on_event is not None:
            await _maybe_await(state.on_event(event))

    async def _stream(self, worker: WorkerProcess, state: _RunState) -> None:
        """Apply events until finished/failed (``state.terminal``) or the end of the stream."""
        while True:
            kind, payload = await worker.queue.get()
            if kind == "eof":
                state.record.end_clock()  # the worker closed its events (it ended, or died): its ending
                return
            if kind == "bad":
                message = f"the worker wrote a line that is not an event ({payload})"
                await self._emit(state, WorkerWarning(t=state.last_t, message=message, source="runner"))
                continue
            event = payload
            assert isinstance(event, Event)
            state.last_t = event.t or state.last_t
            await self._react(worker, state, event)
            await self._emit(state, event)
            if isinstance(event, (Finished, Failed)):
                state.terminal = True
                return

    async def _react(self, worker: WorkerProcess, state: _RunState, event: Event) -> None:
        """What the runner itself does on an event: the spare paused while measuring (and while compiling on a host
        too small to share, :meth:`SparePool.pause_for_compile`), the GPU sampled while measuring."""
        if isinstance(event, PhaseChanged):
            worker.note_descendants()  # a daemon started in the phase before is in the worker's tree now
        if isinstance(event, Started):
            state.gpu_uuid = event.env.gpu_uuid
        elif isinstance(event, PhaseChanged) and event.phase == RunStatus.MEASURING:
            self._spares.pause()
            await state.sampling.start(worker.pid, (state.gpu_uuid or state.gpu) if state.gpu is not None else None)
        elif isinstance(event, PhaseChanged) and event.phase == RunStatus.COMPILING:
            self._spares.pause_for_compile(worker.pid)
            state.sampling.lead_in(worker.pid)
        elif isinstance(event, (PhaseChanged, Finished, Failed)):
            self._spares.resume()
            if state.sampling.measuring or not isinstance(event, PhaseChanged):
                await state.sampling.stop()

    # ----- workers ----------------------------------------------------------------------------

    def _launch(self, options: Any, gpu: str | None) -> Launch:
        return launch_for(options, gpu, self.worker_argv, self.env)

    async def _spawn(self, argv: list[str], env: dict[str, str], key: tuple) -> WorkerProcess:
        worker = await WorkerProcess.spawn(argv, env, key)
        self._pgids.add(worker.pid)
        return worker

    def _forget(self, worker: WorkerProcess) -> None:
        self._running.discard(worker)
        if not worker.alive:
            self._pgids.discard(worker.pid)


def _data_folder(record: RunRecord) -> Path:
    """The run's data folder (made now: the worker and torch write into it)."""
    if record.data_dir is None:
        record.data_dir = run_folder(record.run_id)
    folder = Path(record.data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _note_leftovers(record: RunRecord, count: int) -> None:
    """The row says how many processes outside the worker's group its run left running (all killed)."""
    if count and count > record.leftover_processes:
        record.leftover_processes = count
        message = leftover_warning(count)
        if message not in record.warnings:
            record.warnings.append(message)


def _note_torch_trace(record: RunRecord) -> None:
    """Keep the TORCH_TRACE directory's name in the record when torch wrote into it (a run that failed
    before its worker said so too); else say why not."""
    directory = Path(record.data_dir or run_folder(record.run_id)) / TORCH_TRACE_DIR
    with contextlib.suppress(OSError):
        if any(directory.iterdir()):
            record.artifacts = dataclasses.replace(record.artifacts, torch_trace_dir=TORCH_TRACE_DIR)
            return
    message = f"torch_trace: torch wrote nothing to {directory} (the worker ended before compiling?)"
    if message not in record.warnings:
        record.warnings.append(message)
