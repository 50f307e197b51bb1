"""ClusterRunner: a session's runner whose runs happen on the nodes of a cluster, one task each.

It implements the session's :class:`~tui.engine.run.session.Runner` protocol. One object serves every
cluster lane (``cluster:0``, ``cluster:1``, ...): :meth:`ClusterRunner.run` keeps each run's state
to itself, so runs go at once. The transport (:mod:`.ray_transport` for Ray; tests pass a fake)
submits a run and hands back its items as the node yields them (:mod:`.node` lists them); this
module turns them into the record, as :class:`~tui.engine.runner.WorkerRunner` does with a local
worker's events:

* the handshake: a node with another compile-lab, Ray or Python is refused (a failed row whose
  message names what differs); the node's hostname is the row's ``env.node`` from then on;
* the worker's events, decoded and checked here (:func:`tui.engine.protocol.decode`), applied to
  the record, then passed to ``on_event``, as they come;
* the node's end: the telemetry sampled there, the warnings its runner added, and how its runner
  judged a run that sent no ``finished``/``failed`` (a timeout, a worker that died; ``done`` for one its timeout
  stopped after its measurement, whose runner's events said so: :mod:`tui.engine.run.kept`);
* a task lost on the way (its node or its process died, Ray gave up) is a failed row (``crash``)
  naming the node and Ray's error in one line; what the record holds already stays;
* a lost head (the transport says so: :mod:`.head`) fails each run in flight (``crash``, the head and
  the node named) and cancels its task; a run that comes after it fails without being submitted;
* a cancel kills the worker's process group on its node, then the task; a run cancelled after its measurement
  keeps it, as a local one does (:mod:`tui.engine.run.kept`).

Before a tune's runs, :meth:`ClusterRunner.ask_torch` asks a node's torch which options it has
(:mod:`.torch_probe`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tui.engine.cluster.handshake import Hello, Versions, mismatch
from tui.engine.cluster.node import END, EVENTS, HELLO, WORKER
from tui.engine.cluster.transport import ClusterTask, TaskLost, Transport, lost_message
from tui.engine.protocol import FAILURE_KINDS, Event, ProtocolError, WorkerWarning, decode
from tui.engine.run.cancel import cancel
from tui.engine.run.kept import CANCELLED_THEN, kept_events
from tui.engine.store.results import RunRecord
from tui.engine.runner.torch_probe import TorchOptions
from tui.telemetry.model import RunTelemetry
from tui.typed import printable
from tui.engine.status import RunStatus

__all__ = ["ClusterRunner", "Placement"]

log = logging.getLogger(__name__)


@dataclass
class Placement:
    """Where a run's task is: what its hello said, and the worker process once it started."""

    hello: Hello | None = None
    worker_pid: int | None = None
    ended: bool = False
    killed: bool = False
    """:meth:`ClusterRunner.kill_all` sent its kill already (a signal): a cancel after it only cancels the task."""

    @property
    def node(self) -> str | None:
        """The node's hostname, once the task said it."""
        return self.hello.node if self.hello is not None else None


async def _maybe_await(value: Any) -> None:
    if asyncio.iscoroutine(value):
        await value


class ClusterRunner:
    """Runs each configuration as one task on a cluster (see the module docstring).

    ``transport``: submits the tasks. ``versions``: the caller's (compared with each node's).
    ``cpus``: the CPUs each run asks for (a CUDA run asks for one GPU too). ``worker_argv`` and
    ``env``: the worker's command line and extra environment on the node (tests: the fake worker).
    ``placements`` maps each running run's id to where it runs.
    """

    keep_spare = False

    def __init__(self, transport: Transport, versions: Versions, *, cpus: float = 1,
                 worker_argv: list[str] | None = None, env: Mapping[str, str] | None = None) -> None:
        self.transport = transport
        self.versions = versions
        self.cpus = cpus
        self.worker_argv = list(worker_argv) if worker_argv else None
        self.env = dict(env or {})
        self.placements: dict[str, Placement] = {}
        self._tasks: dict[str, ClusterTask] = {}
        self._closed = False

    async def run(self, record: RunRecord, on_event: Callable[[Event], Any] | None = None) -> RunRecord:
        """Run ``record``'s configuration on the cluster and return the record, ended.

        Cancelling the calling task kills the run on its node and re-raises CancelledError.
        """
        if self._closed:
            raise RuntimeError("the cluster runner was closed")
        lost = self.transport.head_lost
        if lost is not None:
            record.fail("crash", f"{lost}: the run was not started")
            return record
        cuda = record.options.device.startswith("cuda")
        task = self.transport.submit(self._request(record), num_cpus=self.cpus, num_gpus=1 if cuda else 0)
        placement = self.placements[record.run_id] = Placement()
        self._tasks[record.run_id] = task
        try:
            await self._follow(record, task, placement, on_event)
        except asyncio.CancelledError:
            record.end_clock()  # killing the run on its node is its ending
            await self._cancel(task, placement)
            for event in kept_events(record, CANCELLED_THEN):
                await self._apply(record, event, on_event)
            if not record.end_measured():
                cancel(record)
            raise
        finally:
            record.stop_clock()  # the task ended: the run's ``ending`` ends
            placement.ended = True
            self._tasks.pop(record.run_id, None)
            self.placements.pop(record.run_id, None)
        return record

    async def ask_torch(self, keys: Sequence[str], device: str) -> TorchOptions:
        """What the torch of a node that could run a run of ``device`` says about ``keys`` (the task asks for a
        run's resources); ``problem`` set when no node could be asked (:mod:`.torch_probe`)."""
        from tui.engine.cluster.torch_probe import ask_node

        return await ask_node(self.transport, self.versions, keys, self.cpus, 1 if device.startswith("cuda") else 0)

    async def aclose(self) -> None:
        """Let the cluster go once (the session calls this for each lane this runner serves)."""
        if self._closed:
            return
        self._closed = True
        await self.transport.aclose()

    def kill_all(self) -> None:
        """Kill every running run on its node now (no awaiting: a signal handler)."""
        for run_id, task in list(self._tasks.items()):
            placement = self.placements.get(run_id) or Placement()
            placement.killed = True
            try:
                task.kill_now(_node_id(placement), placement.worker_pid)
            except Exception:  # a cluster already gone: nothing left to kill
                log.debug("run %s: killing its task failed", run_id, exc_info=True)

    # ----- one run ----------------------------------------------------------------------------

    def _request(self, record: RunRecord) -> dict[str, Any]:
        request: dict[str, Any] = {"run_id": record.run_id, "options": record.options.to_dict(),
                                   "versions": self.versions.to_json()}
        if self.worker_argv:
            request["worker_argv"] = self.worker_argv
        if self.env:
            request["env"] = self.env
        return request

    async def _follow(self, record: RunRecord, task: ClusterTask, placement: Placement,
                      on_event: Callable[[Event], Any] | None) -> None:
        """Apply the task's items until its end, or until the cluster's head is lost (the run fails, its task
        is cancelled: nothing it sends can be trusted to arrive)."""
        items = asyncio.ensure_future(self._items(record, task, placement, on_event))
        lost = asyncio.ensure_future(self.transport.lost())
        try:
            await asyncio.wait({items, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for future in (items, lost):
                if not future.done():
                    future.cancel()
            await asyncio.gather(items, lost, return_exceptions=True)
        if items.done() and not items.cancelled() and items.exception() is None:
            return
        if lost.done() and not lost.cancelled() and lost.exception() is None:
            if not record.finished:
                record.fail("crash", _abandoned(lost.result(), placement))
            # Only the task is cancelled: a kill task would be a new function for Ray to register with the
            # lost head, which blocks. The Ray worker that ends with the task takes the run's worker along
            # (its parent-death signal), and so does its node's raylet when it gives up on the head.
            try:
                task.kill_now(None, None)
            except Exception:  # a cluster already gone: nothing left to cancel
                log.debug("cancelling a lost run's task failed", exc_info=True)
            return
        items.result()  # an error of the follower's own: raised, as before

    async def _items(self, record: RunRecord, task: ClusterTask, placement: Placement,
                     on_event: Callable[[Event], Any] | None) -> None:
        """Apply the task's items until its end; a lost task or a refused node fails the record."""
        try:
            async for item in task.items():
                if not await self._take(record, item, placement, on_event):
                    await self._cancel(task, placement)
                    return
        except TaskLost as exc:
            if not record.finished:
                record.fail("crash", lost_message(placement.hello, str(exc)), exc.detail)
            return
        if not record.finished:
            record.fail("crash", f"the task on node {placement.node or 'unknown'} ended without saying how the "
                                 "run ended")

    async def _take(self, record: RunRecord, item: Any, placement: Placement,
                    on_event: Callable[[Event], Any] | None) -> bool:
        """Apply one item; False when the run must stop here (a refused node)."""
        kind = item.get("kind") if isinstance(item, dict) else None
        if kind == HELLO:
            return self._hello(record, Hello.parse(item), placement)
        if kind == WORKER and isinstance(item.get("pid"), int):
            placement.worker_pid = item["pid"]
        elif kind == EVENTS:
            for line in item.get("lines") or ():
                await self._event(record, line, placement, on_event)
        elif kind == END:
            _end(record, item, placement.node)
        return True

    def _hello(self, record: RunRecord, hello: Hello, placement: Placement) -> bool:
        placement.hello = hello
        if record.env.node is None and hello.node:
            record.env = dataclasses.replace(record.env, node=printable(hello.node))
        refusal = mismatch(self.versions, hello.versions, hello.node) or hello.refused
        if refusal is not None:
            record.fail("bad_options", refusal)
            return False
        return True

    async def _event(self, record: RunRecord, line: Any, placement: Placement,
                     on_event: Callable[[Event], Any] | None) -> None:
        try:
            event = decode(line)
        except ProtocolError as exc:
            event = WorkerWarning(message=f"node {placement.node or 'unknown'} sent a line that is not an event "
                                          f"({exc})", source="runner")
        await self._apply(record, event, on_event)

    @staticmethod
    async def _apply(record: RunRecord, event: Event, on_event: Callable[[Event], Any] | None) -> None:
        record.apply(event)
        if on_event is not None:
            await _maybe_await(on_event(event))

    async def _cancel(self, task: ClusterTask, placement: Placement) -> None:
        try:
            if placement.killed:
                await task.cancel(None, None)
            else:
                await task.cancel(_node_id(placement), placement.worker_pid)
        except Exception:  # a cluster already gone: nothing left to kill
            log.debug("cancelling a task failed", exc_info=True)


def _abandoned(lost: str, placement: Placement) -> str:
    """The row's line when the head was lost while its run was in flight."""
    hello = placement.hello
    if hello is None:
        return f"{lost}: the run had not reached a node"
    where = hello.node or "unknown"
    if hello.node_ip:
        where += f" ({hello.node_ip})"
    return f"{lost}: the run on node {where} was abandoned"


def _node_id(placement: Placement) -> str | None:
    return placement.hello.node_id if placement.hello is not None else None


def _end(record: RunRecord, item: dict[str, Any], node: str | None) -> None:
    """The node's end: its runner's warnings, telemetry and leftover processes; its verdict when the run sent none."""
    for message in item.get("warnings") or ():
        if isinstance(message, str) and printable(message) not in record.warnings:
            record.warnings.append(printable(message))
    leftovers = item.get("leftover_processes")
    if isinstance(leftovers, int) and not isinstance(leftovers, bool) and leftovers > 0:
        record.leftover_processes = leftovers
    telemetry, _problems = RunTelemetry.decode(item.get("telemetry") or {}, where="telemetry")
    record.set_telemetry(telemetry)  # after the warnings: it renews the record's summary
    if record.finished:
        return
    status, kind = item.get("status"), item.get("error_kind")
    if status in (RunStatus.FAILED, RunStatus.CANCELLED) and kind in FAILURE_KINDS:
        record.fail(kind, str(item.get("error_message") or kind), str(item.get("error_detail") or ""))
    elif not (status == RunStatus.DONE and record.end_measured()):  # done: its runner kept the measurement
        record.fail("crash", f"the run on node {node or 'unknown'} ended {status!r} without its last event")
