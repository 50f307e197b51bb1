"""The node's side of a cluster run: the body of the Ray task, and the task that kills a worker.

:func:`run_on_node` is a generator (Ray runs it as a streaming generator task, so each item
reaches the caller as it is yielded). It runs compile-lab's own :class:`WorkerRunner` on the node,
exactly as a local run does: one fresh worker process per configuration, in its own process
group, the GPU's lock, the run's timeout, the telemetry sampled while it measures. Its items are
JSON-ready dicts, in this order:

``{"kind": "hello", ...}``   a :class:`~tui.engine.cluster.handshake.Hello`: versions, node, pids;
                             with ``refused`` set nothing else follows.
``{"kind": "worker", "pid"}`` the worker process started (its pid leads its process group): what a
                             cancel kills (:func:`kill_group`, run on this node).
``{"kind": "events", "lines"}`` the worker's events as protocol lines, in order, as they came.
``{"kind": "end", ...}``     the node's record at the end: how the run ended by the runner's own
                             judgement (a timeout, a worker that died), its telemetry, the
                             warnings the runner added and the processes it killed that the run
                             left outside the worker's group; none of these is a worker event.

:func:`probe_on_node` is the tune's torch probe on a node (a plain task): the node's hello, then,
unless it refuses, what :func:`tui.engine.runner.torch_probe.run_probe` left when it asked this node's
worker interpreter, the very question a probe on the caller's machine asks.

Nothing here imports Ray at module level: Ray imports this module on the node to run the task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from tui.engine.cluster.handshake import Hello, Versions, hostname, local_versions, mismatch
from tui.engine.options import RunOptions
from tui.engine.protocol import encode
from tui.engine.store.results import RunRecord
from tui.engine.runner.worker_runner import WorkerRunner
from tui.engine.runner.torch_probe import PROBE_TIMEOUT_S, ProbeOutput, run_probe
from tui.logs import suppressed

__all__ = [
    "run_on_node", "probe_on_node", "kill_group", "end_item", "NodeSetupError", "HELLO", "WORKER", "EVENTS", "END",
]  # fmt: skip

log = logging.getLogger(__name__)

HELLO, WORKER, EVENTS, END = "hello", "worker", "events", "end"


def run_on_node(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Run one configuration on this node, yielding the items the module docstring lists.

    ``request``: ``run_id``, ``options`` (``RunOptions.to_dict()``), ``versions`` (the caller's),
    and for tests ``worker_argv`` and ``env`` (extra worker environment).
    """
    hello = _hello(Versions.from_json(request.get("versions")))
    yield {"kind": HELLO, **hello.to_json()}
    if hello.refused is None:
        yield from _pump(request)


def probe_on_node(request: dict[str, Any]) -> dict[str, Any]:
    """Ask this node's torch which of ``request["keys"]`` it has: ``{"hello": ..., "output": ...}``.

    ``hello``: a :class:`~tui.engine.cluster.handshake.Hello` (with ``refused`` set, nothing else
    follows); ``output``: the :class:`~tui.engine.runner.torch_probe.ProbeOutput` of the probe run in this
    node's worker interpreter (the one :func:`run_on_node`'s worker runs in), within
    ``request["timeout"]`` seconds. ``request["versions"]``: the caller's.
    """
    hello = _hello(Versions.from_json(request.get("versions")))
    answer: dict[str, Any] = {"hello": hello.to_json()}
    if hello.refused is not None:
        return answer
    keys = [key for key in request.get("keys") or () if isinstance(key, str)]
    timeout = request.get("timeout")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        timeout = PROBE_TIMEOUT_S
    try:
        link_dir = _package_link_dir()  # the probe's interpreter imports the compile-lab that answered the hello
    except NodeSetupError as exc:  # the tune's answer says why, rather than Ray's error reading as a lost task
        answer["output"] = ProbeOutput(problem=str(exc)).to_json()
        return answer
    try:
        path = os.pathsep.join(p for p in (link_dir, os.environ.get("PYTHONPATH")) if p)
        answer["output"] = run_probe(keys, None, timeout, env={"PYTHONPATH": path}).to_json()
    finally:
        shutil.rmtree(link_dir, ignore_errors=True)
    return answer


def kill_group(pid: int) -> bool:
    """SIGKILL the process group ``pid`` leads on this node (a cancelled run's worker); False when none.

    A pid that does not lead its own group is not a worker (the worker is started in a session of
    its own), so a pid reused since is left alone.
    """
    try:
        if os.getpgid(pid) != pid:
            return False
        os.killpg(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _hello(caller: Versions) -> Hello:
    import ray

    context = ray.get_runtime_context()
    versions, name = local_versions(ray.__version__), hostname()
    return Hello(versions=versions, node=name, node_id=context.get_node_id(), node_ip=ray.util.get_node_ip_address(),
                 pid=os.getpid(), refused=mismatch(caller, versions, name))


def _pump(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Drive the run on an event loop of this thread, yielding what it queued each time it waits.

    The loop runs only between yields; a yield is quick (Ray sends the item on), and the worker's
    pipes hold what it writes meanwhile.
    """
    loop = asyncio.new_event_loop()
    out: asyncio.Queue = asyncio.Queue()
    drive = loop.create_task(_drive(request, out))
    try:
        while True:
            batch = loop.run_until_complete(_next_batch(out))
            yield from _items(batch)
            if batch and batch[-1] is None:
                return
    finally:
        if not drive.done():
            drive.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(drive)
        loop.close()


async def _next_batch(out: asyncio.Queue) -> list[Any]:
    """What is queued: at least one entry, waited for, then whatever followed it."""
    batch = [await out.get()]
    while not out.empty() and batch[-1] is not None:
        batch.append(out.get_nowait())
    return batch


def _items(batch: list[Any]) -> Iterator[dict[str, Any]]:
    """Queue entries as items: consecutive event lines as one ``events`` item."""
    lines: list[str] = []
    for entry in batch:
        if entry is not None and entry[0] == "event":
            lines.append(entry[1])
            continue
        if lines:
            yield {"kind": EVENTS, "lines": lines}
            lines = []
        if entry is not None:
            yield entry[1]
    if lines:
        yield {"kind": EVENTS, "lines": lines}


async def _drive(request: dict[str, Any], out: asyncio.Queue) -> None:
    """Run the configuration in a local WorkerRunner; queue its events, its worker's pid, then its end."""
    record = RunRecord(run_id=str(request.get("run_id") or "cluster-run"))
    link_dir = None
    try:
        record.options = RunOptions.from_dict(request.get("options") or {})
        env = dict(request.get("env") or {})
        if not request.get("worker_argv"):
            link_dir = _package_link_dir()
            env["PYTHONPATH"] = os.pathsep.join(p for p in (link_dir, os.environ.get("PYTHONPATH")) if p)
        await _run_locally(record, request.get("worker_argv"), env, out)
    except NodeSetupError as exc:  # the row says what the node could not do, not that its runner broke
        log.warning("run %s: %s", record.run_id, exc)
        record.fail("crash", str(exc))
    except Exception as exc:  # the run must end with a row, whatever broke here
        log.exception("run %s: the runner on node %s failed", record.run_id, hostname())
        if not record.finished:
            record.fail("crash", f"the runner on node {hostname()} failed: {type(exc).__name__}: {exc}")
    finally:
        if link_dir is not None:
            shutil.rmtree(link_dir, ignore_errors=True)
        out.put_nowait(("end", end_item(record)))
        out.put_nowait(None)


async def _run_locally(record: RunRecord, worker_argv: list[str] | None, env: dict[str, str],
                       out: asyncio.Queue) -> None:
    telemetry = None
    if record.options.device.startswith("cuda"):
        from tui.telemetry.nvml import NvmlSource

        telemetry = NvmlSource()
    # Ray set CUDA_VISIBLE_DEVICES to the GPU it gave this task: the runner resolves cuda:0 through it
    # to the GPU's UUID (NVML's PCI order), locks that GPU and starts the worker on it alone.
    runner = _NodeRunner(worker_argv=worker_argv, keep_spare=False, telemetry=telemetry, env=env,
                         on_spawn=lambda pid: out.put_nowait(("worker", {"kind": WORKER, "pid": pid})))
    try:
        await runner.run(record, on_event=lambda event: out.put_nowait(("event", encode(event).decode())))
    finally:
        await runner.aclose()
        if telemetry is not None:
            with suppressed(log, "closing the node's telemetry"):
                telemetry.close()


def end_item(record: RunRecord) -> dict[str, Any]:
    """The ``end`` item of ``record``: its status and error, its telemetry, warnings and leftover processes."""
    return {"kind": END, "status": record.status, "error_kind": record.error_kind,
            "error_message": record.error_message, "error_detail": record.error_detail,
            "warnings": list(record.warnings), "telemetry": record.telemetry.to_json(),
            "leftover_processes": record.leftover_processes}


class NodeSetupError(Exception):
    """The node could not prepare a worker's start (one line: which node, what, and the OS's reason)."""


def _package_link_dir() -> str:
    """A directory holding only a ``tui`` link to this node's compile-lab, for the worker's PYTHONPATH.

    Ray may have put compile-lab on the task's ``sys.path`` alone (a ``runtime_env``, the driver's
    directory); the worker process then finds the very compile-lab that answered the handshake.
    :class:`NodeSetupError` when the directory or the link cannot be made (a full or read-only temp
    directory); nothing is left behind then.
    """
    import tui

    link_dir = None
    try:
        link_dir = tempfile.mkdtemp(prefix="compile-lab-pkg-")
        os.symlink(os.path.dirname(os.path.abspath(tui.__file__)), os.path.join(link_dir, "tui"))
    except OSError as exc:
        if link_dir is not None:
            shutil.rmtree(link_dir, ignore_errors=True)
        raise NodeSetupError(f"node {hostname()} could not link compile-lab for the worker in "
                             f"{tempfile.gettempdir()}: {type(exc).__name__}: {exc}") from exc
    return link_dir


class _NodeRunner(WorkerRunner):
    """A WorkerRunner that says when its worker process started (``on_spawn(pid)``): a cancel needs the pid."""

    def __init__(self, *args: Any, on_spawn: Callable[[int], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_spawn = on_spawn

    async def _spawn(self, argv: list[str], env: dict[str, str], key: tuple) -> Any:
        worker = await super()._spawn(argv, env, key)
        self._on_spawn(worker.pid)
        return worker
