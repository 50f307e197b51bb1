"""A sweep on a real Ray cluster (``--cluster``): one Ray task per run, its worker on a node, its events streamed.

Every test here is ``slow``. The first ones start ONE local Ray cluster for the module (``ray.init`` with 4 CPUs,
no dashboard, ``RAY_AUTH_MODE=disabled``: Ray 2.60 turns token authentication on for a cluster it starts) and run
the fake worker on it, and once the real CPU worker (also ``torch``); the others start a Ray head of their own
(killed mid-sweep; connected to from a Textual app). The caller's side against fakes is tests/test_cluster.py,
the refusals and address checks tests/test_cluster_connect.py.
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
import time

import pytest

from fakes import fake_worker_argv
from fakes.polling import poll_until
from tui import __version__, cli
from tui.engine import cluster
from tui.engine.cluster.handshake import Versions
from tui.engine.cluster.runner import ClusterRunner
from tui.engine.store.history import History
from tui.engine.options import RunOptions
from tui.engine.store.results import RunRecord
from tui.engine.run.session import RunSession


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
