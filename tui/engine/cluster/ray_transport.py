"""Ray as the cluster: connect, count the runs that fit at once, submit each run as a task, cancel.

Each run is a streaming generator task (``num_returns="streaming"``: every item the node yields
reaches the caller as it is yielded, no actor needed) running :func:`tui.engine.cluster.node.run_on_node`.
It asks for ``--cluster-cpus`` CPUs and, for a CUDA run, one GPU; Ray sets its CUDA_VISIBLE_DEVICES.
``max_retries=0``: Ray must never run a killed or lost run again behind the caller's back (the row
says it was lost); ``max_calls=1``: each run's task gets a fresh Ray worker process, which exits
after it (nothing one run changed in that process reaches the next).

A cancel runs a tiny task pinned to the run's node (``NodeAffinitySchedulingStrategy(soft=False)``,
no CPU asked, so a full node still runs it) that SIGKILLs the worker's process group, then
``ray.cancel(force=True)`` ends the task and its Ray worker process: a soft cancel would leave a
worker that does not listen running.

Everything here imports Ray inside functions: this module is imported only when ``--cluster`` is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import io
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from tui.engine.cluster.address import NEEDS_RAY, ClusterError, parse_address
from tui.engine.cluster.handshake import local_versions
from tui.engine.cluster.head import HeadWatch, keep_the_caller_alive
from tui.engine.cluster.node import kill_group, probe_on_node, run_on_node
from tui.engine.cluster.probe import GcsProbeError, check_gcs
from tui.engine.cluster.runner import ClusterRunner
from tui.engine.cluster.transport import TaskLost
from tui.engine.run.session import CLUSTER_LANE
from tui.logs import suppressed
from tui.typed import printable

__all__ = ["open_cluster", "require_ray", "connect", "run_slots", "RayTransport", "RayTask", "one_line",
           "KILL_WAIT_S", "SHUTDOWN_WAIT_S"]

log = logging.getLogger(__name__)

KILL_WAIT_S = 5.0
"""Seconds a cancel waits for the kill task on the node before it cancels the Ray task anyway."""
SHUTDOWN_WAIT_S = 20.0
"""Seconds the caller waits for Ray's shutdown (about 5 s once the head is lost) before it goes on."""


def require_ray() -> Any:
    """The ``ray`` module; ClusterError (one line: how to install it) when it is not installed."""
    try:
        import ray
    except ImportError:
        raise ClusterError(NEEDS_RAY) from None
    return ray


def open_cluster(address: str, device: str, cpus: float, worker_argv: list[str] | None = None,
                 env: Mapping[str, str] | None = None) -> tuple[ClusterRunner, tuple[str, ...]]:
    """Connect (or reuse this process's Ray), count the runs of ``device`` that fit at once, make the runner.

    Returns the runner and its lanes (``cluster:0`` ...). ClusterError for each refusal, one line.
    """
    address = parse_address(address)
    ray = require_ray()
    owns = connect(ray, address)
    try:
        slots = run_slots(ray, device, cpus, address)
    except ClusterError:
        if owns:
            ray.shutdown()
        raise
    runner = ClusterRunner(RayTransport(ray, owns, _gcs_address(ray, address)), local_versions(ray.__version__),
                           cpus=cpus, worker_argv=worker_argv, env=env)
    return runner, tuple(f"{CLUSTER_LANE}{index}" for index in range(slots))


def connect(ray: Any, address: str) -> bool:
    """``ray.init(address=...)`` unless Ray is initialised in this process already; True when it connected.

    ``log_to_driver=False``: the nodes' output would otherwise be printed over the progress display.
    """
    if ray.is_initialized():
        return False
    if address != "auto":
        _check_reachable(address)
    # Ray's C++ side would print each connection retry's warning over the progress display.
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "error")
    keep_the_caller_alive()  # a lost head must not end this process (tui.engine.cluster.head)
    faulthandler_on_a_real_file()
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    except Exception as exc:  # ConnectionError, an authentication or version error: each one line
        log.debug("ray.init(address=%r) failed", address, exc_info=True)
        raise ClusterError(f"--cluster {address}: could not connect to a Ray cluster: {one_line(exc)}") from None
    return True


def faulthandler_on_a_real_file() -> None:
    """Enable :mod:`faulthandler` on the process's own stderr when ``sys.stderr`` has no file descriptor.

    ``ray.init`` enables faulthandler on ``sys.stderr`` unless it is enabled already, and catches
    only ``io.UnsupportedOperation``. Inside a Textual app ``sys.stderr`` is the app's print
    capture, whose ``fileno()`` is -1, so ``ray.init`` raised "file.fileno() is not a valid file
    descriptor" and the app could not use a cluster. Enabled here first, on the terminal's own
    stderr (where a fatal crash's stack belongs), Ray finds it enabled and leaves it alone.
    """
    if faulthandler.is_enabled():
        return
    try:
        if sys.stderr is not None and sys.stderr.fileno() >= 0:
            return  # a real file: Ray enables it there itself
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        pass  # no descriptor at all: the same case as -1
    real = sys.__stderr__
    if real is None:
        return  # no terminal either (a daemon): Ray's own attempt then fails as one line
    try:
        faulthandler.enable(file=real, all_threads=False)
    except (RuntimeError, ValueError, OSError, io.UnsupportedOperation) as exc:
        logging.getLogger(__name__).warning("faulthandler could not be enabled on stderr: %s", exc)


def _check_reachable(address: str) -> None:
    """ClusterError unless a Ray head answers at ``HOST:PORT`` within seconds (Ray itself would retry for minutes)."""
    try:
        check_gcs(address)
    except GcsProbeError as exc:
        raise ClusterError(f"--cluster {address}: no Ray head answers there ({exc}); the address is the head's GCS "
                           "address, which `ray start --head` prints") from None


def _gcs_address(ray: Any, address: str) -> str:
    """The head's GCS address as Ray connected to it (``auto`` resolved), else ``address``."""
    try:
        found = ray.get_runtime_context().gcs_address
    except Exception:  # an older Ray, or one not connected: the address given
        log.debug("Ray did not say its GCS address", exc_info=True)
        found = None
    return found if isinstance(found, str) and ":" in found else address


def run_slots(ray: Any, device: str, cpus: float, address: str = "") -> int:
    """How many runs of ``device`` fit on the cluster's live nodes at once (each asks for ``cpus`` CPUs,
    a CUDA run for one GPU besides); ClusterError when none fits."""
    nodes = [node.get("Resources") or {} for node in ray.nodes() if node.get("Alive")]
    by_cpu = [int(float(res.get("CPU", 0)) // cpus) if cpus > 0 else 1 << 20 for res in nodes]
    if device.startswith("cuda"):
        slots = sum(min(int(float(res.get("GPU", 0))), fit) for res, fit in zip(nodes, by_cpu, strict=True))
        if not slots:
            gpus = sum(int(float(res.get("GPU", 0))) for res in nodes)
            why = ("shows no GPU (a CUDA run asks for one)" if not gpus
                   else f"has no node with a GPU and {cpus:g} CPUs (--cluster-cpus) for one run")
            raise ClusterError(f"--cluster {address}: the cluster {why}")
        return slots
    slots = sum(by_cpu)
    if not slots:
        most = max((float(res.get("CPU", 0)) for res in nodes), default=0)
        raise ClusterError(f"--cluster {address}: no node has {cpus:g} CPUs for a run (--cluster-cpus; the largest "
                           f"has {most:g})")
    return slots


def one_line(exc: BaseException) -> str:
    """``Type: the first meaningful line`` of an error (a task's own error stands for Ray's wrapper)."""
    cause = getattr(exc, "cause", None)
    source = cause if isinstance(cause, BaseException) else exc
    lines = [line.strip() for line in str(source).splitlines() if line.strip()]
    text = printable(lines[0])[:300] if lines else ""
    return f"{type(source).__name__}: {text}" if text else type(source).__name__


class RayTransport:
    """Submits runs as Ray tasks (see the module docstring); ``owns``: it connected, so it disconnects.

    ``address``: the head's GCS address, watched while runs are in flight (:mod:`.head`).
    """

    def __init__(self, ray: Any, owns: bool, address: str) -> None:
        self.ray = ray
        self.owns = owns
        self.watch = HeadWatch(address)
        self._run = ray.remote(num_returns="streaming", max_retries=0, max_calls=1)(run_on_node)
        self._kill = ray.remote(num_cpus=0, max_retries=0)(kill_group)
        self._probe = ray.remote(max_retries=0)(probe_on_node)
        self._kills: list[Any] = []

    @property
    def head_lost(self) -> str | None:
        """Why the head is lost (one line), or None while it answers."""
        return self.watch.reason

    async def lost(self) -> str:
        """Return (the reason) once the head is lost: :class:`~tui.engine.cluster.head.HeadWatch`."""
        return await self.watch.lost()

    def submit(self, request: dict[str, Any], num_cpus: float, num_gpus: float) -> RayTask:
        """Start ``request``'s task."""
        generator = self._run.options(num_cpus=num_cpus, num_gpus=num_gpus,
                                      name=f"compile-lab run {request.get('run_id')}").remote(request)
        return RayTask(self, generator)

    async def probe(self, request: dict[str, Any], num_cpus: float, num_gpus: float) -> Any:
        """Run the tune's torch probe as a task asking for a run's resources; the node's answer. TaskLost when
        Ray lost it; cancelled, the task is cancelled too."""
        ref = self._probe.options(num_cpus=num_cpus, num_gpus=num_gpus, name="compile-lab torch probe").remote(request)
        try:
            return await _future(ref)
        except asyncio.CancelledError:
            with suppressed(log, "cancelling the torch probe's task"):
                self.ray.cancel(ref, force=True)
            raise
        except Exception as exc:  # Ray's errors (worker crashed, node died, the task's own)
            log.info("the torch probe's task was lost", exc_info=True)
            raise TaskLost(one_line(exc), printable(str(exc))) from None

    def kill(self, node_id: str, pid: int) -> Any:
        """Start the task that SIGKILLs process group ``pid`` on node ``node_id``; its ObjectRef."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ref = self._kill.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote(pid)
        self._kills.append(ref)
        return ref

    async def aclose(self) -> None:
        """Wait a little for the kill tasks sent, then disconnect when this transport connected.

        Disconnecting waits at most :data:`SHUTDOWN_WAIT_S` (in a thread): with the head lost, Ray's
        shutdown may wait for it.
        """
        await self.watch.close()
        kills, self._kills = self._kills, []
        if kills:
            with suppressed(log, "waiting for the kill tasks"):
                await asyncio.wait_for(asyncio.gather(*(_future(ref) for ref in kills), return_exceptions=True),
                                       KILL_WAIT_S)
        if self.owns:
            self.owns = False
            with suppressed(log, "Ray's shutdown"):
                await asyncio.wait_for(_in_daemon_thread(self.ray.shutdown), SHUTDOWN_WAIT_S)


class RayTask:
    """One run's streaming generator task."""

    def __init__(self, transport: RayTransport, generator: Any) -> None:
        self.transport = transport
        self.generator = generator

    async def items(self) -> AsyncIterator[dict[str, Any]]:
        """The node's items as they come; TaskLost when the task, its process or its node failed."""
        try:
            async for ref in self.generator:
                yield await ref
        except Exception as exc:  # Ray's errors (worker crashed, node died, cancelled, the task's own)
            log.info("a cluster task was lost", exc_info=True)
            raise TaskLost(one_line(exc), printable(str(exc))) from None

    async def cancel(self, node_id: str | None, pid: int | None) -> None:
        """Kill the worker's process group on its node (waiting up to KILL_WAIT_S), then the task."""
        try:
            if node_id and pid:
                with suppressed(log, f"killing pid {pid} on node {node_id}"):
                    await asyncio.wait_for(_future(self.transport.kill(node_id, pid)), KILL_WAIT_S)
        finally:  # cancelled again while waiting (a session closing): the task still goes
            self.transport.ray.cancel(self.generator, force=True)

    def kill_now(self, node_id: str | None, pid: int | None) -> None:
        """Send the kill task and cancel the task at once, waiting for neither."""
        if node_id and pid:
            with suppressed(log, f"killing pid {pid} on node {node_id}"):
                self.transport.kill(node_id, pid)
        self.transport.ray.cancel(self.generator, force=True)


def _in_daemon_thread(call: Callable[[], Any]) -> asyncio.Future[None]:
    """Run ``call`` in a daemon thread; the future ends with it. A call that never returns keeps no one
    waiting at exit (the event loop's own threads would: they are joined when the interpreter ends)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not done.done():
            done.set_result(None)

    def body() -> None:
        try:
            call()
        except Exception as exc:  # Ray's shutdown failing leaves nothing to undo: logged, and the caller goes on
            log.warning("ray.shutdown failed: %s", one_line(exc), exc_info=True)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
                loop.call_soon_threadsafe(settle)

    threading.Thread(target=body, name="compile-lab-ray-shutdown", daemon=True).start()
    return done


def _future(ref: Any) -> asyncio.Future[Any]:
    return asyncio.wrap_future(ref.future())
