"""RunSession: the queue, the runs, their end and their history, for any front end.

The app and the command line both drive one :class:`RunSession`: they submit configurations,
listen to what happens (:class:`SessionListener`), cancel, and export what
:meth:`RunSession.ended` returns. The policies live here, once:

* **Units.** Each submitted configuration becomes ``repeats`` units (configuration, repeat,
  lane), each with its own :class:`~tui.engine.store.results.RunRecord` and its own fresh worker.
  Repeats are interleaved: repeat 0 of every configuration, then repeat 1 of every one, ...,
  so a slow change of the machine spreads over all configurations rather than landing on one.
  The repeats of a configuration share a ``group_id`` (:mod:`tui.engine.store.repeats`); only the
  first runs the profile pass (later ones get ``profile=False``: once per configuration), and
  only it writes the traces asked for (``trace``, ``torch_trace``). Each record's ``data_dir`` is
  its folder under the history's runs directory (:mod:`tui.engine.explain.artifacts`).
* **Repeat auto** (the front ends' default). ``repeats="auto"`` runs one process per
  configuration, then rounds: once every run of the submission has ended and been saved, each
  configuration that :func:`~tui.engine.store.repeats.wants_another_process` (on a GPU:
  launch-bound, across-process interval wider than the target; on the CPU: inconclusive; under
  the cap) gets one more unit, in submission order. Under auto every configuration is a group
  from its first unit.
* **Lanes.** A unit runs in the lane :func:`lane_of` gives it; a lane runs one unit at a time,
  and different lanes run at once. By default every unit shares one lane (runs never overlap,
  as a benchmark on a shared machine needs); ``parallel=True`` gives each GPU its own lane
  while CPU runs keep the host to themselves.
* **Pools.** ``submit(..., pool=("cuda:0", "cuda:1"))`` (``--device cuda:all``) deals units to
  the pool's lanes: each starts in the first free one, its record's device set to that GPU,
  one run per GPU at once (``max_running`` caps all lanes: ``--serial``). A GPU whose runs
  fail :data:`RETIRE_AFTER` times in a row before the worker reports its GPU is retired while
  another lane of the pool remains. Each record's ``concurrent_runs`` is the most other local runs beside it.
  Lanes named ``cluster:N`` run on other machines and never hold this host.
* **Ending.** Every record ends done, failed or cancelled. A queued unit dropped by a cancel
  ends ``cancelled`` ("cancelled before it started"). Every ended record, cancelled ones
  included, gets its final summary (the bootstrap interval, off the event loop), is appended
  to the history in the order the runs ended, and is exportable. Then the runs directory is
  kept under its size cap (:class:`~tui.engine.store.prune.CapKeeper`: the oldest runs' files go, the
  listener hears ``data_pruned``).
* **Session id.** Every record a session queues carries its ``session_id`` (a sortable id made
  when the session is, like a run id): one per app or CLI start, kept in the history.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections import deque
from collections.abc import Callable, Collection, Sequence
from typing import Any, Protocol

from tui.engine.explain.artifacts import run_folder
from tui.engine.options import RunOptions
from tui.engine.protocol import Event, Started
from tui.engine.run.cancel import CANCELLED_BEFORE_START, cancel
from tui.engine.store.prune import CapKeeper, PruneResult
from tui.engine.store.repeats import AUTO, auto_round, later_repeat, parse_repeat
from tui.engine.run.lanes import (CLUSTER_LANE, RETIRE_AFTER, SHARED_LANE, LaneHealth, RunUnit, is_local, lane_of,
                                  options_in)
from tui.engine.store.results import RunRecord
from tui.engine.store.run_ids import new_run_id
from tui.logs import suppressed
from tui.engine.status import RunStatus

__all__ = ["RunSession", "RunUnit", "SessionListener", "Runner", "lane_of", "is_local", "SHARED_LANE",
           "CLUSTER_LANE", "RETIRE_AFTER"]

log = logging.getLogger(__name__)


class Runner(Protocol):
    """What a session needs from a runner (:class:`tui.engine.runner.WorkerRunner` is one)."""

    keep_spare: bool

    async def run(self, record: RunRecord, on_event: Callable[[Event], Any] | None = None) -> RunRecord: ...

    async def aclose(self) -> None: ...

    def kill_all(self) -> None: ...


class SessionListener:
    """What a front end hears from a session; every method is called on the event loop's thread."""

    def run_started(self, record: RunRecord) -> None:
        """A unit left the queue and its worker is starting."""

    def run_event(self, record: RunRecord, event: Event) -> None:
        """The runner applied ``event`` to ``record`` (called for every event: keep it cheap)."""

    def run_finished(self, record: RunRecord) -> None:
        """The run ended (done, failed or cancelled); its final summary and history line follow."""

    def run_saved(self, record: RunRecord, problem: str | None) -> None:
        """The final summary is computed and the history append was tried (``problem`` if it failed)."""

    def runs_queued(self, records: list[RunRecord]) -> None:
        """The session queued runs by itself (``--repeat auto``'s next round)."""

    def data_pruned(self, result: Any) -> None:
        """The size cap deleted older runs' files (a :class:`~tui.engine.store.prune.PruneResult`); their lines stay."""


class RunSession:
    """Queue, run, end and save runs; see the module docstring for the policies.

    ``runner_for(lane)`` returns the runner of a lane (one runner object may serve every lane
    of a sequential session). ``history`` (or None) stores ended runs. ``spare``: ``"auto"``
    keeps a warm spare worker only while the lane has more units queued (a script that ends
    needs none); ``"runner"`` leaves the runner's own setting alone (the app keeps one warm).
    """

    def __init__(
        self,
        runner_for: Callable[[str], Runner],
        history: Any = None,
        listener: SessionListener | None = None,
        *,
        parallel: bool = False,
        spare: str = "auto",
        max_running: int | None = None,
    ) -> None:
        self._runner_for = runner_for
        self._runners: dict[str, Runner] = {}
        self.history = history
        self.listener = listener or SessionListener()
        self.parallel = parallel
        self.spare = spare
        self.max_running = max_running
        """At most this many runs at once (``--serial``: 1); None: one per free lane."""
        self.health = LaneHealth()
        self._began: set[str] = set()
        """Run ids whose task has begun its body (a task cancelled before that never runs it)."""
        self._pools: dict[str, tuple[str, ...]] = {}
        self.records: list[RunRecord] = []
        """Every record this session made, in submission order."""
        self.queue: deque[RunUnit] = deque()
        """Units waiting for their lane, in order."""
        self.running: dict[str, RunUnit] = {}
        """The unit each busy lane runs."""
        self._tasks: dict[str, asyncio.Task] = {}
        self._cancel_reasons: dict[str, str | None] = {}
        """Lane -> what cancelled its running unit (:meth:`cancel_running`), until that unit ends."""
        self._to_save: asyncio.Queue[RunRecord] | None = None
        self._saver: asyncio.Task | None = None
        self._unsaved: set[str] = set()
        self._closing = False
        self._auto: list[list[str]] = []
        """``repeats="auto"`` submissions still deciding: the group ids of each, in order."""
        self._cap = CapKeeper(history)
        self.session_id = new_run_id()
        """Names this session (one per app or CLI start) on every record it queues: ``compare session:ID``."""

    # ----- submitting ---------------------------------------------------------------------

    def submit(self, options_list: Sequence[RunOptions], repeats: int | str = 1,
               pool: Sequence[str] | None = None) -> list[RunRecord]:
        """Queue ``repeats`` units of each (validated) configuration; returns their records, in queue order.

        ``repeats``: a count (interleaved: every configuration's repeat 0, then every repeat 1, ...)
        or ``"auto"`` (see the module docstring). ``pool``: lanes the units are dealt to, each to
        the first free one when it starts (``cuda:0``, ``cuda:1``, ...: one run per GPU at a time,
        the record's device set to the GPU it got; or a cluster's lanes). Must be called with a running event loop: the
        units start from it, right after this returns, where a lane is free (so a caller sees its
        records before any has started).
        """
        if self._closing:
            raise RuntimeError("the session is closing")
        count = parse_repeat(repeats)
        auto = count == AUTO
        rounds = 1 if auto else int(count)
        first = [RunRecord.new(options) for options in options_list]
        later = [later_repeat(options) for options in options_list]
        records = [*first, *(RunRecord.new(options) for _ in range(1, rounds) for options in later)]
        grouped = [rounds > 1 or auto for _ in options_list]
        for number, record in enumerate(records):
            if grouped[number % len(first)]:
                record.group_id, record.repeat = first[number % len(first)].run_id, number // len(first)
        growing = [record.run_id for record, group in zip(first, grouped, strict=True) if auto and group]
        if growing:
            self._auto.append(growing)
        if pool:
            for record in records:
                self._pools[record.group_id or record.run_id] = tuple(pool)
        self._queue(records)
        return records

    def _queue(self, records: list[RunRecord]) -> None:
        for record in records:
            record.data_dir = run_folder(record.run_id, getattr(self.history, "runs_dir", None))
            record.session_id = self.session_id
        self.records.extend(records)
        self.queue.extend(self._unit(r) for r in records)
        asyncio.get_running_loop().call_soon(self._start_ready)

    def _unit(self, record: RunRecord) -> RunUnit:
        pool = self._pools.get(record.group_id or record.run_id, ())
        if pool and record.options.device == "cpu" and all(is_local(lane) for lane in pool):
            pool = ()  # a CPU run of a GPU pool takes the host, as any CPU run does
        lane = pool[0] if pool else lane_of(record.options, self.parallel)
        return RunUnit(record, record.repeat, lane, pool)

    def _start_ready(self) -> None:
        """Start, in queue order, every unit whose lane is free (host lane and GPU lanes never overlap).

        A CPU unit that has to wait holds back the GPU units queued after it, or they could
        keep the host busy for ever.
        """
        host_waits = False
        for unit in list(self.queue):
            if self._closing or (self.max_running is not None and len(self.running) >= self.max_running):
                return
            lane = None if host_waits else self._free_lane(unit)
            if lane is None:
                host_waits = host_waits or unit.lane == SHARED_LANE
                continue
            self.queue.remove(unit)
            self._start(self._placed(unit, lane))

    def _free_lane(self, unit: RunUnit) -> str | None:
        """The lane ``unit`` can start in now: its own, or its pool's first free one still in use."""
        lanes = self.health.lanes_for(unit)
        return next((lane for lane in lanes if self._lane_free(lane)), None)

    def _lane_free(self, lane: str) -> bool:
        if lane in self.running:
            return False
        if not is_local(lane):
            return True
        # A CPU run needs the host to itself, and no GPU run starts while one measures.
        if lane == SHARED_LANE:
            return not any(is_local(busy) for busy in self.running)
        return SHARED_LANE not in self.running

    @staticmethod
    def _placed(unit: RunUnit, lane: str) -> RunUnit:
        """``unit`` in ``lane``; a pooled CUDA run's device becomes the GPU it got."""
        unit.record.options = options_in(unit, lane)
        return dataclasses.replace(unit, lane=lane)

    def _start(self, unit: RunUnit) -> None:
        runner = self.runner(unit.lane)
        upcoming = next((u for u in self.queue if u.lane == unit.lane or unit.lane in u.pool), None)
        if self.spare == "auto" and hasattr(runner, "keep_spare"):
            runner.keep_spare = upcoming is not None
        if hasattr(runner, "next_options"):
            # The spare is for the next unit of this lane: with alternating interpreters (an A/B
            # sweep) a spare for this run's would be the wrong one every time.
            runner.next_options = None if upcoming is None else options_in(upcoming, unit.lane)
        with contextlib.suppress(ValueError):
            unit.record.set_status(RunStatus.STARTING)
        self.running[unit.lane] = unit
        self._count_neighbours()
        self._unsaved.add(unit.record.run_id)
        task = asyncio.get_running_loop().create_task(self._run(unit, runner))
        # A task cancelled before its first step never runs _run's body, so its finally would not end the
        # run or free the lane: the callback does it then.
        task.add_done_callback(lambda done: self._never_began(done, unit))
        self._tasks[unit.lane] = task
        self.listener.run_started(unit.record)

    def _count_neighbours(self) -> None:
        """Each running run's ``concurrent_runs``: the most other runs beside it on its host so far.

        Local runs share this host from their start. A cluster's runs share a node once their
        workers have said which (``env.node``, from the ``started`` event), so they are counted
        again as each worker reports; a run whose node is not known yet is counted with none.
        """
        hosts: dict[str, list[RunRecord]] = {}
        for lane, unit in self.running.items():
            host = "" if is_local(lane) else unit.record.env.node
            if host is not None:
                hosts.setdefault(host, []).append(unit.record)
        for records in hosts.values():
            for record in records:
                record.concurrent_runs = max(record.concurrent_runs, len(records) - 1)

    def _heard(self, lane: str, record: RunRecord, event: Event) -> None:
        """A worker's event, passed on; a cluster worker's ``started`` names its node: the neighbours are recounted."""
        if isinstance(event, Started) and not is_local(lane):
            self._count_neighbours()
        self.listener.run_event(record, event)

    def runner(self, lane: str = SHARED_LANE) -> Runner:
        """The runner of ``lane`` (made on first use)."""
        if lane not in self._runners:
            self._runners[lane] = self._runner_for(lane)
        return self._runners[lane]

    async def _run(self, unit: RunUnit, runner: Runner) -> None:
        record = unit.record
        self._began.add(record.run_id)
        try:
            await runner.run(record, on_event=lambda event: self._heard(unit.lane, record, event))
        except asyncio.CancelledError:
            cancel(record, self._cancel_reasons.get(unit.lane))  # the runner's plain "cancelled" takes the reason
        except Exception as exc:  # a runner bug must not lose the run or stop the queue
            log.exception("run %s: the run task failed", record.run_id)
            record.fail("crash", f"the run task failed: {type(exc).__name__}: {exc}")
        finally:
            self._began.discard(record.run_id)
            self._lane_done(unit)

    def _never_began(self, task: asyncio.Task, unit: RunUnit) -> None:
        if task.cancelled() and self.running.get(unit.lane) is unit and self._tasks.get(unit.lane) is task \
                and unit.record.run_id not in self._began:
            self._lane_done(unit)

    def _lane_done(self, unit: RunUnit) -> None:
        """The run of ``unit`` ended (or was cancelled before it began): end it, free its lane, start the next."""
        record = unit.record
        reason = self._cancel_reasons.pop(unit.lane, None)
        if not record.finished:
            cancel(record, reason)
        self.running.pop(unit.lane, None)
        self._tasks.pop(unit.lane, None)
        if unit.pool and is_local(unit.lane):  # a cluster's lane is a slot, not a GPU
            self.health.judge(unit)
        self._ended(record)
        if not self._closing:
            self._start_ready()

    def set_max_running(self, count: int | None) -> None:
        """At most ``count`` runs at once from now on (1: ``--serial``; None: one per free lane)."""
        self.max_running = count
        with contextlib.suppress(RuntimeError):  # no running loop: the next start applies it
            asyncio.get_running_loop().call_soon(self._start_ready)

    # ----- ending and saving ----------------------------------------------------------------

    def _ended(self, record: RunRecord) -> None:
        self._unsaved.add(record.run_id)
        self.listener.run_finished(record)
        if self._to_save is None:
            self._to_save = asyncio.Queue()
        self._to_save.put_nowait(record)
        if self._saver is None or self._saver.done():
            self._saver = asyncio.get_running_loop().create_task(self._save_in_order())

    async def _save_in_order(self) -> None:
        """One run at a time, in the order runs ended: so the history keeps that order."""
        assert self._to_save is not None
        while not self._to_save.empty():
            record = self._to_save.get_nowait()
            try:
                problem, pruned = await asyncio.to_thread(self._save, record)
                # Still unsaved while the next round is decided, so the session never looks settled between rounds.
                more = await self._next_round(record)
            except Exception as exc:  # the record must still end as handled, or wait_settled waits for ever
                log.exception("run %s: saving failed", record.run_id)
                problem, pruned, more = f"run {record.run_id}: saving failed: {type(exc).__name__}: {exc}", None, []
            self._unsaved.discard(record.run_id)
            self.listener.run_saved(record, problem)
            if pruned is not None:
                self.listener.data_pruned(pruned)
            if more and not self._closing:
                self._queue(more)
                self.listener.runs_queued(more)

    async def _next_round(self, record: RunRecord) -> list[RunRecord]:
        """``repeats="auto"``: once a submission's runs all ended and were saved, its next round."""
        batch = next((ids for ids in self._auto if record.group_id in ids), None)
        if batch is None or self._closing:
            return []
        members = [r for r in self.records if r.group_id in batch]
        if any(not r.finished or (r.run_id in self._unsaved and r is not record) for r in members):
            return []
        self._auto.remove(batch)
        more = await asyncio.to_thread(auto_round, batch, members)
        if more:
            self._auto.append(batch)
        return more

    def _save(self, record: RunRecord) -> tuple[str | None, Any]:
        """(why the run was not saved or None, what the size cap pruned or None); in the saving thread."""
        with suppressed(log, f"summarising run {record.run_id}", logging.WARNING):  # the row shows what it can
            record.summary()
        if self.history is None:
            return None, None
        try:
            self.history.append(record)
        except Exception as exc:  # HistoryError, SamplesUnavailable, OSError; shown, and the traceback logged
            log.warning("run %s was not saved to the history", record.run_id, exc_info=True)
            return f"run {record.run_id} was not saved to the history: {exc}", None
        try:
            return None, self._cap.after_save(record.run_id)
        except Exception as exc:  # an unreadable runs dir or history line: the run is saved, the cap is not kept
            log.warning("the data dir's size cap was not applied after run %s", record.run_id, exc_info=True)
            return None, PruneResult(notes=(f"the data dir's size cap was not applied after run {record.run_id}: "
                                            f"{type(exc).__name__}: {exc}",))

    # ----- cancelling -------------------------------------------------------------------------

    def cancel_running(self, lane: str | None = None, reason: str | None = None) -> bool:
        """Cancel the running unit of ``lane`` (every lane when None); False when none runs. ``reason``: what
        cancelled it, the message of each record it ends (``cancelled: the tune was stopped (Ctrl-C)``; none:
        ``cancelled``, :func:`~tui.engine.run.cancel.cancel`)."""
        tasks = {key: task for key, task in self._tasks.items() if lane is None or key == lane}
        for key, task in tasks.items():
            self._cancel_reasons.setdefault(key, reason)
            task.cancel()
        return bool(tasks)

    def drop_queued(self, only: Collection[str] | None = None) -> list[RunRecord]:
        """End every queued unit (``only``: those of these run ids) as cancelled before it started; their records."""
        dropped = []
        for unit in [u for u in self.queue if only is None or u.record.run_id in only]:
            self.queue.remove(unit)
            cancel(unit.record, CANCELLED_BEFORE_START)
            dropped.append(unit.record)
            self._ended(unit.record)
        return dropped

    def cancel_all(self, reason: str | None = None) -> tuple[int, bool]:
        """Drop the queue and cancel what runs (``reason``: :meth:`cancel_running`'s): (queued runs dropped,
        whether a run was cancelled)."""
        dropped = self.drop_queued()
        return len(dropped), self.cancel_running(reason=reason)

    # ----- state ---------------------------------------------------------------------------------

    @property
    def retired(self) -> dict[str, str]:
        """Pooled GPUs left out after runs that failed in a row before the worker reported its GPU: lane -> why."""
        return self.health.retired

    @property
    def active(self) -> bool:
        """A unit runs or waits."""
        return bool(self.running or self.queue)

    @property
    def settled(self) -> bool:
        """Nothing runs, waits or waits to be saved."""
        return not self.active and not self._unsaved

    def ended(self) -> list[RunRecord]:
        """Every record that ended and was saved, in submission order (what an export writes)."""
        return [r for r in self.records if r.finished and r.run_id not in self._unsaved]

    def still_saving(self) -> list[RunRecord]:
        """The records that ended but whose save had not finished (after :meth:`aclose`: one that outlasted its
        wait). An export writes them too, with :meth:`ended`: the saver only writes them out, and a record's code
        moves to disk after its folder is recorded, so it reads whole at either moment."""
        return [r for r in self.records if r.finished and r.run_id in self._unsaved]

    async def wait_settled(self) -> None:
        """Wait until every unit ran and every ended record was saved."""
        while not self.settled:
            await self._next_change()

    async def wait_ended(self, records: Sequence[RunRecord], *, every: bool = True) -> list[RunRecord]:
        """Wait until every one of ``records`` (``every=False``: one) ended and was saved; those that have, in order.
        A caller keeping several runs going (the tuner on a pool) hears each as it ends."""
        while len(done := [r for r in records if r.finished and r.run_id not in self._unsaved]) < (
                len(records) if every else min(1, len(records))):
            await self._next_change()
        return done

    async def _next_change(self) -> None:
        """Until a run or the saver ends (one turn of the loop when none is going: one is about to be created).
        A run queued just before starts from the loop, so one turn goes first; what ended in it is a change too."""
        going = [t for t in (*self._tasks.values(), self._saver) if t is not None and not t.done()]
        await asyncio.sleep(0)
        waiting = {*going, *(t for t in (*self._tasks.values(), self._saver) if t is not None and not t.done())}
        await (asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED) if waiting else asyncio.sleep(0))

    def stop_starting(self) -> None:
        """Start nothing more (:meth:`aclose` does it first); a signal handler, before it cancels: a run whose cancel
        needs no await (one waiting for the GPU's lock) would end first, and its end start the next."""
        self._closing = True

    async def aclose(self, timeout: float = 3.0, reason: str | None = None) -> None:
        """Cancel (``reason``: :meth:`cancel_running`'s) and await the runs, then drop the queue (runs end as queued:
        the ones that ran, then those never started), save what ended, close the runners; start nothing new."""
        self.stop_starting()
        self.cancel_running(reason=reason)
        tasks = list(self._tasks.values())
        if tasks:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout)
        self.drop_queued()
        if self._saver is not None and not self._saver.done():
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._saver), timeout)
        for runner in self._runners.values():
            with suppressed(log, "closing a runner"):
                await asyncio.wait_for(runner.aclose(), timeout)
            self._kill(runner)

    def kill_all(self) -> None:
        """Kill every worker process now (a signal handler: no awaiting)."""
        for runner in self._runners.values():
            self._kill(runner)

    @staticmethod
    def _kill(runner: Runner) -> None:
        with suppressed(log, "killing a runner's workers"):
            runner.kill_all()

