"""A sweep on a Ray cluster (``--cluster``): one Ray task per run, its worker on a node, its events streamed.

The first tests need no Ray: a fake transport plays the node's side (the handshake, a lost task,
the node's end), and the CLI's refusals are one line. The ``slow`` ones start ONE local Ray cluster
for the module (``ray.init`` with 4 CPUs, no dashboard, ``RAY_AUTH_MODE=disabled``: Ray 2.60 turns
token authentication on for a cluster it starts) and run the fake worker on it, and once the real
CPU worker (also ``torch``).
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import functools
import json
import os
import re
import signal
import socket
import sys
from pathlib import Path
import threading
import time

import pytest

from fakes import fake_worker_argv
from fakes.cluster import FakeHead
from fakes.polling import poll_until
from tui import __version__, cli
from tui.engine import cluster
from tui.engine.cluster.address import NEEDS_RAY, RAY_CLIENT_REFUSED
from tui.engine.cluster.handshake import Hello, Versions
from tui.engine.cluster.node import END, EVENTS, HELLO, WORKER
from tui.engine.cluster.runner import ClusterRunner
from tui.engine.cluster.transport import TaskLost
from tui.engine.store.history import History
from tui.engine.options import RunOptions
from tui.engine.protocol import BlockTimed, PhaseChanged, Started, encode
from tui.engine.payloads import Env
from tui.engine.store.results import RunRecord
from tui.engine.run.session import RunSession
from tui.telemetry.model import RunTelemetry

HERE = Versions(compile_lab=__version__, ray="2.60.0", python=f"{sys.version_info[0]}.{sys.version_info[1]}")


def _error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


# ----- the caller's side, against a fake node (no Ray) ---------------------------------------------


class FakeTask:
    """A task whose node answers with ``items`` (then raises ``lost`` when given)."""

    def __init__(self, items: list[dict], lost: TaskLost | None = None) -> None:
        self._items, self.lost = items, lost
        self.cancelled: list[tuple] = []

    async def items(self):
        for item in self._items:
            await asyncio.sleep(0)
            yield item
        if self.lost is not None:
            raise self.lost

    async def cancel(self, node_id, pid) -> None:
        self.cancelled.append((node_id, pid))

    def kill_now(self, node_id, pid) -> None:
        self.cancelled.append((node_id, pid))


class FakeTransport(FakeHead):
    """A cluster whose head answers, until ``lose(reason)`` is called."""

    def __init__(self, task: FakeTask) -> None:
        super().__init__()
        self.task, self.submitted = task, []

    def submit(self, request, num_cpus, num_gpus):
        self.submitted.append((request, num_cpus, num_gpus))
        return self.task



class HungTask(FakeTask):
    """A task whose node sent ``items`` and then nothing more: its head is gone, and nothing tells."""

    async def items(self):
        for item in self._items:
            await asyncio.sleep(0)
            yield item
        await asyncio.Event().wait()


def _hello(versions: Versions = HERE, refused: str | None = None) -> dict:
    hello = Hello(versions=versions, node="n1", node_id="ab12", node_ip="10.0.0.1", pid=4242, refused=refused)
    return {"kind": HELLO, **hello.to_json()}


def _events(*events) -> dict:
    return {"kind": EVENTS, "lines": [encode(event).decode() for event in events]}


STARTED = Started(run_id="r", env=Env(node="n1", torch="2.13.0", gpu_name="H200", gpu_uuid="gpu-1", driver="580"))
BLOCK = BlockTimed(side="eager", stage="measure", index=0, clock="perf_counter", ms=(2.0, 2.1))


async def _run_fake(task: FakeTask) -> RunRecord:
    record = RunRecord.new(RunOptions(device="cuda"))
    runner = ClusterRunner(FakeTransport(task), HERE)
    await runner.run(record)
    return record


async def test_a_node_with_another_compile_lab_is_refused_in_one_line_and_its_task_stopped():
    task = FakeTask([_hello(Versions(compile_lab="9.9.9", ray="2.60.0", python=HERE.python)), _events(STARTED)])
    record = await _run_fake(task)
    assert (record.status, record.error_kind) == ("failed", "bad_options")
    assert record.error_message == (f"node n1 was refused: compile-lab 9.9.9 there, {__version__} here (every node "
                                    "needs the caller's compile-lab, Ray and Python minor version: docs/CLUSTER.md)")
    assert record.env.node == "n1" and record.env.torch is None  # nothing it sent after the refusal was applied
    assert task.cancelled == [("ab12", None)]


async def test_a_task_lost_mid_run_is_a_failed_row_naming_the_node_and_keeps_what_arrived():
    lost = TaskLost("WorkerCrashedError: The worker died unexpectedly while executing this task.", "the whole text")
    task = FakeTask([_hello(), {"kind": WORKER, "pid": 99}, _events(STARTED, PhaseChanged(phase="measuring"), BLOCK)],
                    lost)
    record = await _run_fake(task)
    assert (record.status, record.error_kind, record.error_detail) == ("failed", "crash", "the whole text")
    assert record.error_message == ("node n1 (10.0.0.1) lost the run: WorkerCrashedError: The worker died "
                                    "unexpectedly while executing this task.")
    assert (record.env.node, record.env.gpu_uuid, record.env.driver, record.env.torch) == (
        "n1",
        "gpu-1",
        "580",
        "2.13.0",
    )
    assert len(record.samples["eager"]) == 1


async def test_the_nodes_end_brings_its_runners_verdict_telemetry_and_warnings():
    end = {"kind": END, "status": "failed", "error_kind": "timeout", "error_message": "timed out after 5 s (timeout_s) "
           "while measuring", "error_detail": "stderr tail", "warnings": ["the CPU use of other processes was not "
           "measured: psutil missing"], "telemetry": RunTelemetry(samples=12, sm_clock_mean_mhz=1980.0).to_json(),
           "leftover_processes": 2}
    record = await _run_fake(FakeTask([_hello(), _events(STARTED, PhaseChanged(phase="measuring")), end]))
    assert (record.status, record.error_kind, record.error_message) == (
        "failed", "timeout", "timed out after 5 s (timeout_s) while measuring")
    assert record.leftover_processes == 2  # what the node's runner killed outside the worker's group
    assert (record.telemetry.samples, record.telemetry.sm_clock_mean_mhz) == (12, 1980.0)
    assert "the CPU use of other processes was not measured: psutil missing" in record.warnings


async def test_a_node_that_cannot_link_compile_lab_for_its_worker_fails_the_row_with_the_reason(monkeypatch, tmp_path):
    """The node's task links its compile-lab into a temp directory for the worker's import path; where that fails (a
    full or read-only temp directory) the row says so, with the OS's reason, rather than a runner that broke or a
    task that was lost, and no directory is left behind."""
    from tui.engine.cluster import node as node_module

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(node_module, "_hello", lambda caller: Hello.parse(_hello()))
    monkeypatch.setattr(node_module.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(os, "symlink", no_space)
    request = {"run_id": "r", "options": RunOptions(device="cpu").to_dict(), "versions": HERE.to_json()}
    items = await asyncio.to_thread(lambda: list(node_module.run_on_node(request)))  # its own loop: as on a node
    items = json.loads(json.dumps(items, default=str))  # what crosses the cluster is plain data
    record = await _run_fake(FakeTask(items))
    assert (record.status, record.error_kind) == ("failed", "crash")
    assert record.error_message == (f"node {node_module.hostname()} could not link compile-lab for the worker in "
                                    f"{tmp_path}: OSError: [Errno 28] No space left on device")
    assert list(tmp_path.iterdir()) == []


async def test_a_task_lost_before_it_reached_a_node_without_compile_lab_says_how_to_install_it():
    record = await _run_fake(FakeTask([], TaskLost("ModuleNotFoundError: No module named 'tui'")))
    assert record.error_message.startswith("compile-lab could not be imported on the node (ModuleNotFoundError")
    assert "docs/CLUSTER.md" in record.error_message and "\n" not in record.error_message


LOST = ("the Ray head at 10.0.0.9:6379 was lost (no answer for 10 s: ConnectionRefusedError: [Errno 111] Connection "
        "refused)")


async def test_a_run_in_flight_when_the_head_is_lost_is_a_crash_naming_the_head_and_its_node():
    task = HungTask([_hello(), {"kind": WORKER, "pid": 99}, _events(STARTED, PhaseChanged(phase="measuring"), BLOCK)])
    transport = FakeTransport(task)
    record = RunRecord.new(RunOptions(device="cuda"))
    run = asyncio.ensure_future(ClusterRunner(transport, HERE).run(record))
    assert await poll_until(lambda: record.samples["eager"], within=5)
    transport.lose(LOST)
    await asyncio.wait_for(run, 5)
    assert (record.status, record.error_kind) == ("failed", "crash")
    assert record.error_message == f"{LOST}: the run on node n1 (10.0.0.1) was abandoned"
    assert len(record.samples["eager"]) == 1 and record.env.gpu_uuid == "gpu-1"  # what arrived stays
    assert task.cancelled == [(None, None)]  # the task is cancelled; no kill task goes to a cluster without its head


async def test_a_run_that_comes_after_the_head_was_lost_fails_without_being_submitted():
    transport = FakeTransport(FakeTask([_hello()]))
    transport.lose(LOST)
    record = await ClusterRunner(transport, HERE).run(RunRecord.new(RunOptions(device="cuda")))
    assert (record.status, record.error_kind, record.error_message) == ("failed", "crash",
                                                                      f"{LOST}: the run was not started")
    assert transport.submitted == []


async def test_the_head_watch_loses_a_head_only_after_it_stayed_silent():
    from tui.engine.cluster.head import HeadWatch
    from tui.engine.cluster.probe import GcsProbeError

    answers = iter([True, False, True] + [False] * 1000)  # one miss, an answer again, then silence

    def probe(address: str) -> None:
        if not next(answers):
            raise GcsProbeError("ConnectionRefusedError: [Errno 111] Connection refused")

    watch = HeadWatch("10.0.0.9:6379", probe=probe, interval=0.01, lost_after=0.2)
    started = asyncio.get_running_loop().time()
    reason = await asyncio.wait_for(watch.lost(), 5)
    assert asyncio.get_running_loop().time() - started >= 0.2
    assert reason == ("the Ray head at 10.0.0.9:6379 was lost (no answer for 0.2 s: ConnectionRefusedError: "
                      "[Errno 111] Connection refused)")
    assert watch.reason == reason and await watch.lost() == reason
    await watch.close()


def test_the_caller_raises_rays_gcs_reconnect_timeout_so_a_lost_head_cannot_end_it(monkeypatch):
    """Ray ends a driver (std::_Exit(1)) once the GCS has not answered for this many seconds (60 by default)."""
    from tui.engine.cluster.head import CALLER_RECONNECT_S, RECONNECT_ENV, keep_the_caller_alive

    monkeypatch.delenv(RECONNECT_ENV, raising=False)
    keep_the_caller_alive()
    assert os.environ[RECONNECT_ENV] == str(CALLER_RECONNECT_S)
    monkeypatch.setenv(RECONNECT_ENV, "60")
    keep_the_caller_alive()
    assert os.environ[RECONNECT_ENV] == str(CALLER_RECONNECT_S)
    monkeypatch.setenv(RECONNECT_ENV, str(CALLER_RECONNECT_S * 2))  # a larger one is kept
    keep_the_caller_alive()
    assert os.environ[RECONNECT_ENV] == str(CALLER_RECONNECT_S * 2)


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["sweep", "--cluster", "ray://head:10001"], RAY_CLIENT_REFUSED),
        (["sweep", "--cluster", "head"], "--cluster: 'head' is not allowed (allowed: auto, the Ray cluster this "
                                         "machine is configured for, or HOST:PORT, its head's GCS address, e.g. "
                                         "10.0.0.1:6379)"),
        (["sweep", "--cluster", "auto", "--trace", "traces"],
         "--cluster: --trace is not supported with a cluster (its files would be written on the node)"),
        (["run", "--cluster", "auto", "--torch-trace"],
         "--cluster: --torch-trace is not supported with a cluster (its files would be written on the node)"),
        (["run", "--cluster", "auto", "--tlparse"],
         "--cluster: --tlparse is not supported with a cluster (its files would be written on the node)"),
        (["sweep", "--cluster", "auto", "--python", sys.executable],
         "--cluster: --python is not supported with a cluster (the worker runs in the node's interpreter)"),
        (["run", "--cluster", "auto", "--device", "cuda:all"],
         "--cluster: --device cuda:all is not allowed (allowed: cpu, or cuda: Ray gives each run its GPU)"),
        (["run", "--cluster-cpus", "2"], "--cluster-cpus applies with --cluster only"),
        (["run", "--cluster", "auto", "--cluster-cpus", "0"],
         "--cluster-cpus: 0 is not allowed (allowed: a number of CPUs above 0, at most 1024)"),
    ],
)
def test_what_a_cluster_run_refuses_is_one_line_before_anything_runs(capsys, argv, line):
    assert cli.main(argv) == 2
    assert _error_lines(capsys) == [f"compile-lab: error: {line}"]


def test_cluster_without_ray_installed_is_one_line_exit_2(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if Ray were not installed
    assert cli.main(["sweep", "--param", "n=64,128", "--cluster", "auto"]) == 2
    assert _error_lines(capsys) == [f"compile-lab: error: {NEEDS_RAY}"]


class NodesOnly:
    """Ray as :func:`run_slots` and :func:`connect` see it: its nodes, and never initialised."""

    def __init__(self, *resources: dict) -> None:
        self._nodes = [{"Alive": True, "Resources": res} for res in resources] + [{"Alive": False, "Resources":
                                                                                   {"CPU": 64.0, "GPU": 8.0}}]

    def nodes(self):
        return self._nodes

    def is_initialized(self) -> bool:
        return False

    def init(self, **kwargs):
        raise AssertionError("ray.init must not be reached")


def test_the_runs_that_fit_at_once_count_live_nodes_gpus_and_cpus():
    from tui.engine.cluster.ray_transport import run_slots

    ray = NodesOnly({"CPU": 4.0, "GPU": 2.0}, {"CPU": 3.0}, {"CPU": 16.0, "GPU": 8.0})
    assert run_slots(ray, "cuda", 1) == 10
    assert run_slots(ray, "cuda", 4) == 1 + 4  # a GPU run needs its CPUs on the GPU's node
    assert run_slots(ray, "cpu", 2) == 2 + 1 + 8
    with pytest.raises(cluster.ClusterError, match=r"^--cluster h:1: the cluster shows no GPU \(a CUDA run asks"):
        run_slots(NodesOnly({"CPU": 8.0}), "cuda", 1, "h:1")
    with pytest.raises(cluster.ClusterError, match=r"no node has 32 CPUs for a run \(--cluster-cpus; the largest "
                                                   r"has 16\)$"):
        run_slots(ray, "cpu", 32, "h:1")


def test_an_address_where_no_head_listens_is_one_line_at_once():
    from tui.engine.cluster.ray_transport import connect

    with socket.socket() as probe:  # a port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(cluster.ClusterError) as refused:
        connect(NodesOnly(), f"127.0.0.1:{port}")
    assert str(refused.value).startswith(f"--cluster 127.0.0.1:{port}: no Ray head answers there "
                                         "(ConnectionRefusedError: ")


class LoopbackServer:
    """A TCP server on 127.0.0.1 that is not Ray: each connection gets ``answer`` (bytes, or None: silence)
    after the client's first bytes, then ``close`` decides whether it is closed. Never beyond the loopback."""

    def __init__(self, answer: bytes | None, close: bool = False, echo: bool = False) -> None:
        self.answer, self.close, self.echo = answer, close, echo
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed by stop()
                return
            self.held.append(connection)
            try:
                first = connection.recv(64)
            except OSError:  # shut down by stop()
                return
            if self.echo:
                connection.sendall(first)
            elif self.answer is not None:
                connection.sendall(self.answer)
            if self.close:
                connection.close()

    def stop(self) -> None:
        for sock in (self.listener, *self.held):  # shutdown wakes the thread's accept() or recv()
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self.thread.join(5)


@pytest.fixture
def loopback_server():
    servers: list[LoopbackServer] = []

    def start(answer: bytes | None, close: bool = False, echo: bool = False) -> LoopbackServer:
        servers.append(LoopbackServer(answer, close, echo))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


HTTP2_SETTINGS = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00" + b"\x00\x03\x00\x00\x00\x64"  # SETTINGS, max streams 100


@pytest.mark.parametrize(
    ("answer", "close", "echo", "why"),
    [
        (None, False, False, "the server there said nothing within 0.5 s after an HTTP/2 preface, which Ray's GCS "
                             "(a gRPC server) answers at once"),
        (None, True, False, "the server there closed the connection after an HTTP/2 preface, which Ray's GCS (a gRPC "
                            "server) answers at once"),
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", True, False,
         "the server there does not speak HTTP/2, as Ray's GCS (a gRPC server) does: it answered 'HTTP/1.1 '"),
        (None, False, True, "the server there does not speak HTTP/2, as Ray's GCS (a gRPC server) does: it answered "
                            "'PRI * HTT'"),
        (b"SSH-2.0-OpenSSH_9.6\r\n", False, False,
         "the server there does not speak HTTP/2, as Ray's GCS (a gRPC server) does: it answered 'SSH-2.0-O'"),
    ],
    ids=["silent", "closes", "http1", "echo", "ssh"],
)
def test_a_tcp_server_that_is_not_ray_is_refused_within_seconds(loopback_server, answer, close, echo, why, timed):
    from tui.engine.cluster.probe import GcsProbeError, check_gcs

    server = loopback_server(answer, close, echo)
    start = time.monotonic()
    with pytest.raises(GcsProbeError) as refused:
        check_gcs(server.address, answer_timeout=0.5)
    assert str(refused.value) == why
    if timed:
        assert time.monotonic() - start < 3


def test_a_server_that_answers_http2_passes_the_check(loopback_server):
    from tui.engine.cluster.probe import check_gcs

    check_gcs(loopback_server(HTTP2_SETTINGS).address, answer_timeout=5)  # returns: a gRPC server answers so


def test_the_cli_refuses_a_cluster_address_that_is_not_ray_in_one_line_exit_2(loopback_server, monkeypatch, capsys,
                                                                             timed):
    """It hung for minutes with Ray's reconnection errors (Ray rewrote 127.0.0.1 to this machine's interface)."""
    ray = pytest.importorskip("ray")
    from tui.engine.cluster import probe

    monkeypatch.setattr(probe, "ANSWER_TIMEOUT_S", 1.0)
    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: pytest.fail("ray.init was reached"))
    server = loopback_server(None)  # accepts, then says nothing
    start = time.monotonic()
    assert cli.main(["sweep", "--param", "n=64,128", "--cluster", server.address]) == 2
    if timed:
        assert time.monotonic() - start < 10
    assert _error_lines(capsys) == [
        f"compile-lab: error: --cluster {server.address}: no Ray head answers there (the server there said nothing "
        "within 1 s after an HTTP/2 preface, which Ray's GCS (a gRPC server) answers at once); the address is the "
        "head's GCS address, which `ray start --head` prints"]


# ----- on a local Ray cluster ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """One local Ray cluster for the module (about 3-5 s and 350 MiB to start on 2 cores)."""
    ray = pytest.importorskip("ray")
    patch = pytest.MonkeyPatch()
    patch.setenv("RAY_AUTH_MODE", "disabled")  # before Ray starts: 2.60 would turn token auth on
    patch.setenv("COMPILE_LAB_HOME", str(tmp_path_factory.mktemp("node-home")))  # the nodes' locks dir
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, object_store_memory=80 * 1024 * 1024)
    try:
        yield ray
    finally:
        ray.shutdown()
        patch.undo()


def _open(**env) -> tuple[ClusterRunner, tuple[str, ...]]:
    return cluster.open_cluster("auto", "cpu", worker_argv=fake_worker_argv(), env=env)


def _configs(count: int) -> list[RunOptions]:
    return [RunOptions(workload="pointwise", params={"n": 64 * (1 + i)}, device="cpu", iters=40, block_size=10,
                       timeout_s=120).validated() for i in range(count)]


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"  # killed, not yet reaped
    except FileNotFoundError:
        return True


def _group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid and not _gone(int(entry)):
                    members.append(int(entry))
            except (ProcessLookupError, PermissionError):
                pass
    return members


@pytest.mark.slow
async def test_a_cpu_sweep_runs_as_ray_tasks_streams_its_events_and_a_killed_task_fails_alone(ray_cluster, tmp_path):
    gate = tmp_path / "gate"
    runner, lanes = _open(FAKE_WORKER_GATE=str(gate))
    assert lanes == ("cluster:0", "cluster:1", "cluster:2", "cluster:3")
    session = RunSession(lambda lane: runner, History())
    records = session.submit(_configs(4), pool=lanes)
    # The fake workers wait at the gate after their first measured round: blocks applied here while
    # every task still runs are events streamed as they happened.
    streamed = await poll_until(lambda: all(r.samples["eager"] and r.status == "measuring" for r in records)
                                and all(runner.placements.get(r.run_id) and runner.placements[r.run_id].worker_pid
                                        for r in records), within=90)
    assert streamed, [(r.status, r.error_message) for r in records]
    assert not any(r.finished for r in records)
    victim = records[1]
    placement = runner.placements[victim.run_id]
    os.kill(placement.hello.pid, signal.SIGKILL)  # the Ray worker process running the task
    assert await poll_until(lambda: victim.finished, within=30)
    gate.touch()
    await asyncio.wait_for(session.wait_settled(), 90)
    await session.aclose()
    assert [r.status for r in records] == ["done", "failed", "done", "done"]
    host = socket.gethostname()
    assert victim.error_kind == "crash"
    assert victim.error_message.startswith(f"node {host} ("), victim.error_message
    assert "lost the run: WorkerCrashedError" in victim.error_message and "\n" not in victim.error_message
    assert all(r.env.node == host for r in records)
    assert await poll_until(lambda: _gone(placement.worker_pid), within=10)  # its worker died with its task
    stored, problems = History().load()
    assert not problems
    assert {r.run_id: r.status for r in stored} == {r.run_id: r.status for r in records}


@pytest.mark.slow
async def test_a_cancel_kills_the_workers_process_group_on_its_node(ray_cluster, tmp_path):
    runner, _lanes = _open(FAKE_WORKER_BEHAVIOUR="hang")  # one block, then a grandchild in its group, then sleep
    record = RunRecord.new(_configs(1)[0])
    run = asyncio.ensure_future(runner.run(record))
    pid = await poll_until(lambda: record.samples["eager"] and runner.placements[record.run_id].worker_pid,
                           within=60)
    assert pid, (record.status, record.error_message)
    assert await poll_until(lambda: len(_group(pid)) >= 2, within=10)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert (record.status, record.error_kind) == ("cancelled", "cancelled")
    assert await poll_until(lambda: not _group(pid), within=15), _group(pid)
    await runner.aclose()


@pytest.mark.slow
def test_a_real_ray_head_passes_the_protocol_check(ray_cluster):
    from tui.engine.cluster.probe import check_gcs

    check_gcs(ray_cluster.get_runtime_context().gcs_address)  # returns: the GCS answered the HTTP/2 preface


@pytest.mark.slow
async def test_a_node_with_another_compile_lab_refuses_the_run_before_starting_a_worker(ray_cluster):
    runner, _lanes = _open()
    runner.versions = Versions(compile_lab="0.0.1", ray=runner.versions.ray, python=runner.versions.python)
    record = await runner.run(RunRecord.new(_configs(1)[0]))
    assert (record.status, record.error_kind) == ("failed", "bad_options")
    assert record.error_message == (f"node {socket.gethostname()} was refused: compile-lab {__version__} there, "
                                    "0.0.1 here (every node needs the caller's compile-lab, Ray and Python minor "
                                    "version: docs/CLUSTER.md)")
    assert not record.samples["eager"]
    await runner.aclose()


@pytest.mark.slow
def test_the_cli_sweeps_on_the_cluster_and_each_row_names_its_node(ray_cluster, monkeypatch, tmp_path,
                                                                    compile_lab_home):
    monkeypatch.setattr(
        cluster, "open_cluster", functools.partial(cluster.open_cluster, worker_argv=fake_worker_argv())
    )
    out = tmp_path / "sweep.csv"
    code = cli.main(["sweep", "--workload", "pointwise", "--param", "n=64,128", "--device", "cpu", "--iters", "40",
                     "--cluster", "auto", "--csv", str(out), "--quiet"])
    assert code == 0
    rows = list(csv.DictReader(out.open()))
    assert [(row["status"], row["node"]) for row in rows] == [("done", socket.gethostname())] * 2
    assert len(History().load()[0]) == 2


@pytest.mark.slow
@pytest.mark.torch  # in the node's interpreter: the probe imports it there, never here
async def test_a_real_nodes_torch_answers_the_probe(ray_cluster):
    """The tune's torch probe runs in a node's worker interpreter: the torch installed there answers."""
    runner, _lanes = cluster.open_cluster("auto", "cpu")
    try:
        found = await runner.ask_torch(["freezing", "no_such_option_here"], "cpu")
    finally:
        await runner.aclose()
    assert found.problem is None, found.problem
    assert found.asked == f"node {socket.gethostname()}'s torch" and found.torch and "freezing" in found.defaults
    assert found.missing == ("no_such_option_here",)


@pytest.mark.slow
@pytest.mark.torch
def test_one_real_cpu_run_on_the_cluster(ray_cluster, tmp_path, compile_lab_home):
    out = tmp_path / "run.json"
    code = cli.main(["run", "--workload", "pointwise", "--param", "n=64", "--backend", "eager", "--device", "cpu",
                     "--iters", "20", "--no-profile", "--cluster", "auto", "--json", str(out), "--quiet"])
    assert code == 0
    (run,) = json.loads(out.read_text())["runs"]
    assert run["status"] == "done", run["error_message"]
    assert run["env"]["node"] == socket.gethostname()
    assert run["env"]["torch"] and "fake" not in run["env"]["torch"]


# ----- a Ray head of its own, killed mid-sweep ----------------------------------------------------------

#: The CLI with the fake worker on the nodes; the nodes' worker environment comes as JSON in an env variable.
CLI_ON_FAKE_NODES = """
import functools, json, os, sys
from fakes import fake_worker_argv
from fakes.cluster import FakeHead
from tui import cli
from tui.engine import cluster
cluster.open_cluster = functools.partial(cluster.open_cluster, worker_argv=fake_worker_argv(),
                                         env=json.loads(os.environ["NODE_WORKER_ENV"]))
sys.exit(cli.main(sys.argv[1:]))
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _session_of(sid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == sid:
                    found.append(int(entry))
            except OSError:
                pass
    return found


@pytest.fixture
def ray_head():
    """A Ray head (``ray start --head``) in a session of its own on the loopback, with Ray's default reconnect
    timeout (its raylet outlives a killed GCS by 60 s): (its GCS port, its gcs_server's pid). Not ``--block``:
    that supervisor would end every other process of the head as soon as the GCS died."""
    pytest.importorskip("ray")
    import shutil
    import subprocess
    import tempfile

    temp = tempfile.mkdtemp(prefix="cl-ray-", dir="/tmp")  # Ray's socket paths must stay short
    port = _free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    env["RAY_AUTH_MODE"] = "disabled"
    # The `ray` beside this interpreter: another one on PATH (a venv not activated) is another Ray and Python.
    beside = Path(sys.executable).with_name("ray")
    ray_cli = str(beside) if beside.exists() else (shutil.which("ray") or "ray")
    start = subprocess.Popen([ray_cli, "start", "--head", f"--port={port}", "--num-cpus=2",
                              "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp}"],
                             env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    session = start.pid  # the head's processes stay in the session `ray start` opened
    try:
        assert start.wait(timeout=120) == 0, "ray start --head failed"
        gcs = next((pid for pid in _session_of(session) if b"gcs_server" in _command(pid).split(b"\0")[0]), None)
        assert gcs is not None, "the Ray head has no gcs_server"
        from tui.engine.cluster.probe import GcsProbeError, check_gcs

        deadline = time.monotonic() + 60
        while True:  # the GCS answers once it listens
            try:
                check_gcs(f"127.0.0.1:{port}", answer_timeout=2)
                break
            except GcsProbeError:
                assert time.monotonic() < deadline, "the Ray head's GCS does not answer"
                time.sleep(0.5)
        yield port, gcs
    finally:
        for pid in _session_of(session):  # every process of the head: raylet, agents, monitors, Ray workers
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)


def _command(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read()
    except OSError:
        return b""


@pytest.mark.slow
def test_losing_the_ray_head_mid_sweep_ends_the_runs_in_flight_and_the_cli_writes_what_finished(
        ray_head, tmp_path, compile_lab_home):
    """Killing gcs_server mid-sweep: Ray ended the CLI about 60 s later (exit 1, no table, no CSV, the third run
    unrecorded). Now the run in flight and the one not started are crash rows naming the lost head, the table and
    the CSV have all three, the history too, and the CLI exits 1 (a failed run) well before Ray's 60 s."""
    import subprocess

    port, gcs = ray_head
    starts, out = tmp_path / "starts.log", tmp_path / "sweep.csv"
    # The first worker is ready at once; the second waits 600 s before its "ready": in flight when the head goes.
    node_env = {"FAKE_WORKER_START_LOG": str(starts), "FAKE_WORKER_READY_DELAY": "0,600"}
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    env.update(RAY_AUTH_MODE="disabled", NODE_WORKER_ENV=json.dumps(node_env),
               PYTHONPATH=os.pathsep.join([repo, os.path.join(repo, "tests")]))
    cli_process = subprocess.Popen(
        [sys.executable, "-c", CLI_ON_FAKE_NODES, "sweep", "--workload", "pointwise", "--param", "n=64,128,256",
         "--device", "cpu", "--iters", "40", "--serial", "--cluster", f"127.0.0.1:{port}", "--csv", str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (starts.exists() and len(starts.read_text().split()) >= 2):  # run 1 done, run 2's worker started
            assert cli_process.poll() is None and time.monotonic() < deadline, cli_process.communicate()
            time.sleep(0.2)
        os.kill(gcs, signal.SIGKILL)
        killed = time.monotonic()
        stdout, stderr = cli_process.communicate(timeout=120)
        ended = time.monotonic()
    finally:
        if cli_process.poll() is None:
            cli_process.kill()
            cli_process.communicate()
    assert cli_process.returncode == 1, stderr
    assert ended - killed < 50, ended - killed  # Ray's own end of the caller would have come at 60 s
    assert "Traceback" not in stderr, stderr
    # the GCS address as Ray connected to it (Ray puts this machine's own interface for 127.0.0.1)
    lost = rf"the Ray head at \S+:{port} was lost \(no answer for 10 s: ConnectionRefusedError: [^)]*\): "
    rows = list(csv.DictReader(out.open()))
    assert [(row["status"], row["error_kind"]) for row in rows] == [("done", ""), ("failed", "crash"),
                                                                    ("failed", "crash")], rows
    assert re.fullmatch(lost + r"the run on node \S+ \(\S+\) was abandoned", rows[1]["error"]), rows[1]["error"]
    assert re.fullmatch(lost + "the run was not started", rows[2]["error"]), rows[2]["error"]
    assert re.search(r"\[2/3\] .*: failed: crash: " + lost, stderr), stderr  # each run's line as it ends
    assert re.search(r"\[3/3\] .*: failed: crash: " + lost, stderr), stderr
    assert stdout.count("failed") >= 2 and "done" in stdout  # the table
    assert sorted(r.status for r in History().load()[0]) == ["done", "failed", "failed"]


# ----- Ray inside a Textual app -------------------------------------------------------------------------------


class _TextualCapture:
    """What Textual puts in sys.stdout / sys.stderr while an app runs: a writer whose fileno() is -1."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        return -1


@pytest.fixture
def faulthandler_off():
    """faulthandler disabled for the test (pytest enables it), re-enabled on the real stderr after."""
    import faulthandler

    was = faulthandler.is_enabled()
    faulthandler.disable()
    yield faulthandler
    faulthandler.disable()
    if was:
        faulthandler.enable(file=sys.__stderr__)


def test_ray_init_finds_faulthandler_enabled_under_a_textual_capture(faulthandler_off, monkeypatch):
    """ray.init runs ``faulthandler.enable()`` on sys.stderr unless it is enabled; under Textual that raised
    "file.fileno() is not a valid file descriptor" and the app could not connect to a cluster."""
    from tui.engine.cluster.ray_transport import faulthandler_on_a_real_file

    monkeypatch.setattr(sys, "stderr", _TextualCapture())
    with pytest.raises(RuntimeError, match="fileno"):  # the cause, as Ray met it
        faulthandler_off.enable(all_threads=False)
    faulthandler_on_a_real_file()
    assert faulthandler_off.is_enabled()  # so Ray's own `if not faulthandler.is_enabled()` skips it


def test_faulthandler_is_left_to_ray_when_stderr_is_a_real_file(faulthandler_off):
    from tui.engine.cluster.ray_transport import faulthandler_on_a_real_file

    faulthandler_on_a_real_file()  # pytest's stderr has a descriptor: Ray enables it there itself
    assert not faulthandler_off.is_enabled()


APP_CONNECTS = """
import sys, threading
from textual.app import App
import ray
from tui.engine.cluster.ray_transport import connect

class Probe(App):
    async def on_mount(self):
        assert sys.stderr.fileno() == -1, "not under Textual's capture"
        result = []
        def attach():
            try:
                result.append(("connected", connect(ray, sys.argv[1]), len(ray.nodes())))
            except Exception as exc:
                result.append(("error", repr(exc)))
        thread = threading.Thread(target=attach)  # off the UI thread, as the app connects
        thread.start()
        while thread.is_alive():
            await __import__("asyncio").sleep(0.05)
        self.exit(result[0])

async def main():
    app = Probe()
    async with app.run_test() as pilot:
        await pilot.pause()
    return app.return_value

import asyncio
outcome = asyncio.run(main())
ray.shutdown()
print("OUTCOME", outcome)
"""


@pytest.mark.slow
def test_a_textual_app_connects_to_a_real_ray_head(ray_head):
    """Under Textual's replaced stdout/stderr the app's connection failed with "file.fileno() is not a valid file
    descriptor"; now it connects to a loopback head and sees its node."""
    import subprocess

    port, _ = ray_head
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {
        key: value for key, value in os.environ.items() if not key.startswith("RAY_") and key != "PYTHONFAULTHANDLER"
    }
    env.update(RAY_AUTH_MODE="disabled", PYTHONPATH=repo)
    done = subprocess.run([sys.executable, "-c", APP_CONNECTS, f"127.0.0.1:{port}"], env=env, capture_output=True,
                          text=True, timeout=180)
    assert "OUTCOME ('connected', True, 1)" in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])
