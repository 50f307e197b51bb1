"""``tune --cluster`` asks the nodes' torch which options it has, not this machine's: the node's probe asks the
question a local probe asks and its answer is read by the same code; a cluster that cannot be asked (no node in time,
a lost task or head, a refused node, a node without torch) is one line, and this machine's torch is asked instead
with a note saying why. Fakes of the cluster's transport (no Ray), as tests/test_cluster.py's (the real local Ray
cluster of tests/test_cluster_ray.py runs the probe once: test_a_real_nodes_torch_answers_the_probe)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from fakes.cluster import FakeHead
from tui import __version__
from tui.engine.cluster import node as node_module
from tui.engine.cluster.handshake import Hello, Versions
from tui.engine.cluster.runner import ClusterRunner
from tui.engine.cluster.transport import TaskLost
from tui.engine.cluster.torch_probe import ask_node, read_answer
from tui.engine.options import RunOptions
from tui.engine.tune import probe as probe_module
from tui.engine.runner.torch_probe import PROBE_MODULE, THIS_MACHINE, ProbeOutput, TorchOptions, probe_torch
from tui.engine.tune.probe import ask_torch
from tui.engine.tune.request import plan_search

HERE = Versions(compile_lab=__version__, ray="2.60.0", python=f"{sys.version_info[0]}.{sys.version_info[1]}")
KEYS = ["freezing", "cpp.simdlen", "layout_optimization"]
NODE_REPORT = {"torch": "2.99.0+node", "options": {"freezing": False, "layout_optimization": True},
               "missing": ["cpp.simdlen"], "modes": {"max-autotune": {"max_autotune": True}}}


def node_answer(report: dict | None = None, versions: Versions = HERE, returncode: int = 0,
                stderr: str = "") -> dict:
    """What :func:`probe_on_node` sends back from node ``n1`` whose probe printed ``report``."""
    hello = Hello(versions=versions, node="n1", node_id="ab12", node_ip="10.0.0.1", pid=4242)
    output = ProbeOutput(returncode=returncode, stdout=json.dumps(report or NODE_REPORT) + "\n", stderr=stderr)
    return {"hello": hello.to_json(), "output": output.to_json()}


class ProbeTransport(FakeHead):
    """A cluster whose node answers the probe's task with ``answer`` (a dict), raises it (an exception), or never
    answers (None); its head is lost when ``lose`` is called. ``asked``: (request, CPUs, GPUs) of each task."""

    def __init__(self, answer: dict | BaseException | None) -> None:
        super().__init__()
        self.answer = answer
        self.asked: list[tuple[dict, float, float]] = []
        self.cancelled = asyncio.Event()
        self.called = asyncio.Event()
        """Set once a probe's task was sent."""

    async def probe(self, request, num_cpus, num_gpus):
        self.asked.append((request, num_cpus, num_gpus))
        self.called.set()
        await asyncio.sleep(0)
        if isinstance(self.answer, BaseException):
            raise self.answer
        if self.answer is None:
            try:
                await asyncio.Event().wait()
            finally:
                self.cancelled.set()
        return json.loads(json.dumps(self.answer))  # what crosses the cluster is plain data



class _Link:
    """A ClusterLink connected to ``runner``."""

    def __init__(self, runner) -> None:
        self.runner = runner

    async def ask_torch(self, keys, device):
        return await self.runner.ask_torch(keys, device)


def _fake_subprocess(monkeypatch, report: dict) -> list[list[str]]:
    """``subprocess.Popen`` answers as a probe printing ``report``; the command lines it was given."""
    argvs: list[list[str]] = []

    class Probe:
        def __init__(self, argv, **kwargs) -> None:
            argvs.append(list(argv))
            self.returncode: int | None = None

        def communicate(self, timeout=None):
            self.returncode = 0
            return json.dumps(report) + "\n", ""

    monkeypatch.setattr(subprocess, "Popen", Probe)
    return argvs


def test_a_nodes_probe_asks_the_local_question_and_its_answer_is_read_as_a_local_one(monkeypatch):
    argvs = _fake_subprocess(monkeypatch, NODE_REPORT)
    hello = Hello(versions=HERE, node="n1", node_id="ab12", node_ip="10.0.0.1", pid=4242)
    monkeypatch.setattr(node_module, "_hello", lambda caller: hello)
    local = probe_torch(KEYS)
    answer = node_module.probe_on_node({"keys": KEYS, "versions": HERE.to_json(), "timeout": 5})
    assert argvs[0] == argvs[1] == [sys.executable, "-m", PROBE_MODULE, *KEYS]  # one question
    from_node = read_answer(json.loads(json.dumps(answer)), HERE)
    assert from_node.asked == "node n1's torch" and local.asked == THIS_MACHINE
    assert from_node == TorchOptions(torch="2.99.0+node", defaults={"freezing": False, "layout_optimization": True},
                                     missing=("cpp.simdlen",), modes={"max-autotune": {"max_autotune": True}},
                                     asked="node n1's torch")
    assert from_node.torch == local.torch and from_node.missing == local.missing and from_node.modes == local.modes


def test_a_node_with_another_compile_lab_answers_its_refusal_and_runs_no_probe(monkeypatch):
    argvs = _fake_subprocess(monkeypatch, NODE_REPORT)
    other = Versions(compile_lab="9.9.9", ray=HERE.ray, python=HERE.python)
    monkeypatch.setattr(node_module, "_hello", lambda caller: Hello(versions=other, node="n1", refused="refused"))
    answer = node_module.probe_on_node({"keys": KEYS, "versions": HERE.to_json()})
    assert argvs == [] and "output" not in answer


def test_a_node_that_cannot_link_compile_lab_answers_why_and_runs_no_probe(monkeypatch, tmp_path):
    """A temp directory the node cannot write made the probe's task raise, which the caller read as a lost task;
    the answer says what the node could not do, and the tune says it."""
    import os

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    argvs = _fake_subprocess(monkeypatch, NODE_REPORT)
    monkeypatch.setattr(node_module, "_hello", lambda caller: Hello(versions=HERE, node="n1", node_id="ab12"))
    monkeypatch.setattr(node_module.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(os, "symlink", read_only)
    answer = node_module.probe_on_node({"keys": KEYS, "versions": HERE.to_json(), "timeout": 5})
    found = read_answer(json.loads(json.dumps(answer)), HERE)
    assert argvs == [] and found.asked == "node n1's torch"
    assert found.problem == (f"node {node_module.hostname()} could not link compile-lab for the worker in {tmp_path}: "
                             "OSError: [Errno 30] Read-only file system")


@pytest.mark.parametrize("device, gpus", [("cuda", 1), ("cpu", 0)])
async def test_the_cluster_runner_asks_a_node_that_could_run_a_run(device, gpus):
    transport = ProbeTransport(node_answer())
    found = await ClusterRunner(transport, HERE, cpus=2).ask_torch(KEYS, device)
    assert found.problem is None and found.torch == "2.99.0+node" and found.missing == ("cpp.simdlen",)
    assert found.asked == "node n1's torch"
    ((request, cpus, asked_gpus),) = transport.asked
    assert request["keys"] == KEYS and request["versions"] == HERE.to_json()
    assert (cpus, asked_gpus) == (2, gpus)  # a run's resources: the probe lands where a run could


@pytest.mark.parametrize("answer, problem", [
    (node_answer(versions=Versions(compile_lab="9.9.9", ray=HERE.ray, python=HERE.python)),
     f"node n1 was refused: compile-lab 9.9.9 there, {__version__} here"),
    (node_answer(returncode=1, stderr="Traceback ...\nModuleNotFoundError: No module named 'torch'\n"),
     "torch's options could not be read (exit code 1: ModuleNotFoundError: No module named 'torch')"),
    (TaskLost("RayTaskError: the node died"), "the task was lost before it started on a node: RayTaskError: the "
                                              "node died"),
    (TaskLost("ModuleNotFoundError: No module named 'tui'"), "compile-lab could not be imported on the node"),
    ({"hello": "garbage"}, "node unknown was refused"),
])
async def test_a_node_that_cannot_say_is_one_line(answer, problem):
    found = await ClusterRunner(ProbeTransport(answer), HERE).ask_torch(KEYS, "cpu")
    assert found.problem is not None and found.problem.startswith(problem), found.problem
    assert "\n" not in found.problem and found.torch is None


async def test_no_node_in_time_is_one_line_and_the_probes_task_is_cancelled():
    transport = ProbeTransport(None)
    found = await ask_node(transport, HERE, KEYS, 1, 0, timeout=0.05, start_s=0.05)
    assert found.problem == "no node answered within 0.1 s"
    assert transport.asked[0][0]["timeout"] == 0.05  # the node's own limit ends before the caller's wait
    await asyncio.wait_for(transport.cancelled.wait(), 5)


async def test_a_head_lost_while_the_probe_waits_is_its_problem():
    transport = ProbeTransport(None)
    asking = asyncio.ensure_future(ask_node(transport, HERE, KEYS, 1, 0))
    await asyncio.wait_for(transport.called.wait(), 5)
    transport.lose("the Ray head at 10.0.0.1:6379 was lost (no answer for 10 s)")
    found = await asyncio.wait_for(asking, 5)
    assert found.problem == "the Ray head at 10.0.0.1:6379 was lost (no answer for 10 s)"
    assert transport.cancelled.is_set()
    transport.answer = node_answer()  # a head lost before asking: no task is sent
    assert (await ask_node(transport, HERE, KEYS, 1, 0)).problem.startswith("the Ray head")
    assert len(transport.asked) == 1


def _local_probe(monkeypatch) -> list[list[str]]:
    asked: list[list[str]] = []

    def probe(keys, python=None, timeout=0):
        asked.append(list(keys))
        return TorchOptions(torch="0.0.0+here", defaults={}, missing=())

    monkeypatch.setattr(probe_module, "probe_torch", probe)
    return asked


async def test_ask_torch_takes_the_nodes_answer_and_leaves_this_machines_torch_alone(monkeypatch):
    here = _local_probe(monkeypatch)
    found = await ask_torch(KEYS, None, _Link(ClusterRunner(ProbeTransport(node_answer()), HERE)), "cpu")
    assert here == [] and found.torch == "2.99.0+node" and found.fallback is None
    plan = plan_search(RunOptions(workload="pointwise", device="cpu").validated(), ("cpp.simdlen", "freezing"), found)
    assert plan.asked == "node n1's torch" and plan.torch == "2.99.0+node" and not plan.fallback
    assert "cpp.simdlen: left out (this torch has no cpp.simdlen)" in plan.notes  # the node's torch lacks it
    assert [c.name for c in plan.candidates] == ["default", "freezing=True"]


async def test_a_cluster_that_cannot_be_asked_falls_back_to_this_machines_torch_saying_why(monkeypatch):
    here = _local_probe(monkeypatch)
    link = _Link(ClusterRunner(ProbeTransport(TaskLost("RayTaskError: the node died")), HERE))
    found = await ask_torch(KEYS, None, link, "cpu")
    assert here == [KEYS] and found.torch == "0.0.0+here" and found.asked == THIS_MACHINE
    assert found.fallback == ("the cluster's torch could not be asked (the task was lost before it started on a "
                              "node: RayTaskError: the node died); this machine's torch was asked instead")
    plan = plan_search(RunOptions(workload="pointwise", device="cpu").validated(), ("freezing",), found)
    assert plan.notes[0] == found.fallback and plan.fallback


async def test_a_cancelled_probe_is_killed_even_one_its_thread_starts_after_the_cancel(tmp_path, monkeypatch):
    """Ctrl-C while ``tune`` asked torch: the exit waited for the probe's torch import (the loop's shutdown joins
    its thread), and a Ctrl-C in the first instant came before the probe's process existed to be killed."""
    from tui.engine.runner import torch_probe

    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexec sleep 600\n")  # an interpreter whose torch import never ends
    python.chmod(0o755)
    started: list[subprocess.Popen] = []

    class Recorded(subprocess.Popen):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(torch_probe.subprocess, "Popen", Recorded)
    for again in (False, True):  # Ctrl-C, and Ctrl-C twice (the second used to end the killing early)
        started.clear()
        task = asyncio.ensure_future(torch_probe.probing(torch_probe.run_probe, KEYS, str(python), 60))
        await asyncio.sleep(0)  # the thread is asked for; the probe's process may or may not exist yet
        task.cancel()
        if again:
            await asyncio.sleep(0)
            task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert started and all(process.returncode is not None for process in started)  # killed and reaped
        assert not torch_probe._running
