"""A sweep on a Ray cluster (``--cluster``), the caller's side against a fake node (no Ray): the handshake, a task
lost on the way, the node's end, a node that cannot prepare its worker, a lost head, a run stopped after its
measurement.

The other subjects: what a cluster run refuses and how an address is checked before Ray is asked
(tests/test_cluster_connect.py), and the runs on a real local Ray cluster (tests/test_cluster_ray.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest
from fakes import fake_worker_argv
from fakes.cluster import FakeHead
from fakes.polling import poll_until
from tui import __version__
from tui.engine.cluster.handshake import Hello, Versions
from tui.engine.cluster.node import END, EVENTS, HELLO, WORKER
from tui.engine.cluster.runner import ClusterRunner
from tui.engine.cluster.transport import TaskLost
from tui.engine.options import RunOptions
from tui.engine.protocol import BlockTimed, Event, Measured, PhaseChanged, Started, encode
from tui.engine.payloads import Accuracy, Env
from tui.engine.store.results import RunRecord
from tui.telemetry.model import RunTelemetry

HERE = Versions(compile_lab=__version__, ray="2.60.0", python=f"{sys.version_info[0]}.{sys.version_info[1]}")


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


async def test_a_nodes_run_its_timeout_stopped_in_the_profile_pass_is_kept_on_the_caller_too(monkeypatch):
    """The node's runner keeps the measurement (tui.engine.run.kept) and says why in events; the caller's record
    ends done from them and the node's end, as the local one would."""
    from tui.engine.cluster import node as node_module

    monkeypatch.setattr(node_module, "_hello", lambda caller: Hello.parse(_hello()))
    options = RunOptions(workload="pointwise", params={"fake_behaviour": "hang_profiling"}, iters=20, block_size=5,
                         timeout_s=1.5)
    request = {"run_id": "r", "options": options.to_dict(), "versions": HERE.to_json(),
               "worker_argv": fake_worker_argv()}
    items = await asyncio.to_thread(lambda: list(node_module.run_on_node(request)))  # its own loop: as on a node
    items = json.loads(json.dumps(items))  # what crosses the cluster is plain data
    assert items[-1]["kind"] == END and items[-1]["status"] == "done"
    record = await _run_fake(FakeTask(items))
    why = "the profile pass did not end within the run's timeout (1.5 s)"
    assert (record.status, record.error_kind) == ("done", None)
    assert record.profile is not None and (record.profile.available, record.profile.why) == (False, why)
    assert record.warnings.count(f"profile unavailable: {why}") == 1  # the event's and the end's, once
    assert len([b for b in record.samples["compiled"] if b.stage == "measure"]) == 4


MEASURED = Measured(compile_s=0.25, accuracy=Accuracy(passed=True))


async def test_a_run_cancelled_in_its_profile_pass_on_a_node_keeps_its_measurement():
    task = HungTask([_hello(), {"kind": WORKER, "pid": 99},
                     _events(STARTED, PhaseChanged(phase="measuring"), BLOCK, PhaseChanged(phase="diagnosing"),
                             MEASURED)])
    record = RunRecord.new(RunOptions(device="cuda"))
    measured = asyncio.Event()

    def heard(event: Event) -> None:
        if isinstance(event, Measured):
            measured.set()

    run = asyncio.ensure_future(ClusterRunner(FakeTransport(task), HERE).run(record, heard))
    await asyncio.wait_for(measured.wait(), 5)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert task.cancelled == [("ab12", 99)]  # its worker was killed on its node all the same
    assert (record.status, record.compile_s, record.accuracy.passed) == ("done", 0.25, True)
    assert record.profile is not None and record.profile.why == "the profile pass was stopped by a cancel"
    assert "profile unavailable: the profile pass was stopped by a cancel" in record.warnings


async def test_a_node_that_says_done_without_the_measurement_is_still_a_crash():
    end = {"kind": END, "status": "done", "warnings": [], "telemetry": {}}
    record = await _run_fake(FakeTask([_hello(), _events(STARTED, PhaseChanged(phase="measuring"), BLOCK), end]))
    assert (record.status, record.error_kind) == ("failed", "crash")
    assert record.error_message == "the run on node n1 ended 'done' without its last event"
