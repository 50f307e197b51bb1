"""One worker per GPU (``--device cuda:all``): the session's dealing, with fake GPUs and the fake worker.

The telemetry fake gives the GPUs their UUIDs; a real WorkerRunner per lane starts the fake
worker with the GPU's CUDA_VISIBLE_DEVICES and the lane's CPU cores, as it would the real one.
"""

from __future__ import annotations

import time
from itertools import pairwise

import pytest

from tests.fakes import fake_worker_argv
from tui.engine.options import OptionsError, RunOptions
from tui.engine.cpu_list import CPUS_ENV, cpu_list_text, parse_cpu_list
from tui.engine.run.placement import (
    allowed_cpus,
    lane_cpu_env,
    parse_device_pool,
    physical_cores,
    plan_cores,
    split_cpus,
)
from tui.engine.runner import WorkerRunner
from tui.engine.runner.gpu_lock import pool_cpu_env, visible_devices_value
from tui.engine.run.session import RETIRE_AFTER, RunSession, SessionListener
from tui.telemetry.fake import FakeSource


class Timeline(SessionListener):
    """When each run started and ended (the session's own calls), by the GPU it got."""

    def __init__(self) -> None:
        self.spans: dict[str, list[tuple[float, float, str]]] = {}
        self._started: dict[str, float] = {}

    def run_started(self, record):
        self._started[record.run_id] = time.monotonic()

    def run_finished(self, record):
        start = self._started.get(record.run_id, time.monotonic())
        self.spans.setdefault(record.options.device, []).append((start, time.monotonic(), record.run_id))


def _configs(count: int) -> list[RunOptions]:
    return [RunOptions(workload="pointwise", device="cuda:0", iters=8, block_size=4, warmup=1, seed=n)
            for n in range(count)]


def _session(gpus: int, listener: SessionListener, cpus=None) -> tuple[RunSession, FakeSource, tuple[str, ...]]:
    telemetry = FakeSource(gpus=gpus)
    pool = tuple(f"cuda:{i}" for i in range(gpus))
    envs = lane_cpu_env(pool, cpus)
    session = RunSession(lambda lane: WorkerRunner(fake_worker_argv(), keep_spare=False, telemetry=telemetry,
                                                   env=envs[lane], sample_host=False), listener=listener)
    return session, telemetry, pool


@pytest.fixture(autouse=True)
def _no_visible_devices(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("FAKE_WORKER_BLOCK_S", "0.02")  # runs long enough to overlap


async def test_runs_are_dealt_to_every_gpu_and_never_two_on_one():
    timeline = Timeline()
    session, telemetry, pool = _session(4, timeline)
    records = session.submit(_configs(8), pool=pool)
    await session.wait_settled()
    await session.aclose()
    assert [r.status for r in records] == ["done"] * 8
    assert set(timeline.spans) == set(pool)  # every GPU was used
    for device, spans in timeline.spans.items():
        ordered = sorted(spans)
        assert all(end <= next_start for (_, end, _), (next_start, _, _) in pairwise(ordered)), device
    for record in records:  # the worker was given the GPU its device names, and says so
        index = int(record.options.device.split(":")[1])
        assert record.env.cuda_visible_devices == visible_devices_value(telemetry.uuids[index])
    assert max(r.concurrent_runs for r in records) >= 1  # they did run side by side
    assert all(r.env.node for r in records)


async def test_a_broken_gpu_is_left_out_and_the_sweep_goes_on(monkeypatch):
    timeline = Timeline()
    session, telemetry, pool = _session(3, timeline)
    monkeypatch.setenv("FAKE_WORKER_BROKEN_GPU", visible_devices_value(telemetry.uuids[1]))
    records = session.submit(_configs(9), pool=pool)
    await session.wait_settled()
    await session.aclose()
    failed = [r for r in records if r.status == "failed"]
    assert failed and all(r.options.device == "cuda:1" for r in failed)
    assert len(failed) <= RETIRE_AFTER
    assert all(r.status == "done" for r in records if r not in failed)
    assert "cuda:1" in session.retired and "before the worker could report its GPU" in session.retired["cuda:1"]
    assert any("left out of the rest" in w for w in failed[-1].warnings)


async def test_each_lane_pins_its_worker_to_its_own_cores():
    cpus = allowed_cpus()
    timeline = Timeline()
    session, _, pool = _session(2, timeline, cpus)
    records = session.submit(_configs(2), pool=pool)
    await session.wait_settled()
    await session.aclose()
    plan = plan_cores(pool, cpus)
    by_device = {r.options.device: r for r in records}
    for lane in pool:
        env = by_device[lane].env
        assert env.cpu_affinity is not None and parse_cpu_list(env.cpu_affinity) == plan[lane]
        assert env.num_threads == len(plan[lane])  # OMP_NUM_THREADS follows the share
    if len(physical_cores(cpus)) >= 2:
        assert not set(plan["cuda:0"]) & set(plan["cuda:1"])


async def test_a_serial_session_runs_one_at_a_time_over_the_pool():
    timeline = Timeline()
    telemetry = FakeSource(gpus=2)
    session = RunSession(lambda lane: WorkerRunner(fake_worker_argv(), keep_spare=False, telemetry=telemetry,
                                                   sample_host=False), listener=timeline, max_running=1)
    records = session.submit(_configs(3), pool=("cuda:0", "cuda:1"))
    await session.wait_settled()
    await session.aclose()
    assert [r.status for r in records] == ["done"] * 3
    assert all(r.concurrent_runs == 0 for r in records)


def test_device_pools_parse_and_refuse_in_one_line():
    assert parse_device_pool("cuda:all", 3) == ("cuda:0", "cuda:1", "cuda:2")
    assert parse_device_pool(" cuda:2, cuda:0 ", 4) == ("cuda:2", "cuda:0")
    refusals = {
        ("cuda:all", 0): "names no GPU",
        ("cuda:0,cuda:0", 2): "named twice",
        ("cuda:0,cpu", 2): "'cpu' is not allowed in a GPU list",
        ("cuda:0,cuda:7", 2): "cuda:7 does not exist (this machine shows 2 GPUs: cuda:0 to cuda:1)",
    }
    for (text, count), words in refusals.items():
        with pytest.raises(OptionsError) as caught:
            parse_device_pool(text, count)
        assert caught.value.args and words in str(caught.value) and "\n" not in str(caught.value)


def test_cores_are_split_into_disjoint_consecutive_shares():
    assert split_cpus(range(10), 3) == [(0, 1, 2, 3), (4, 5, 6), (7, 8, 9)]
    assert split_cpus([0, 1], 4) == [(0, 1)] * 4  # fewer cores than lanes: nobody is starved
    assert cpu_list_text([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert parse_cpu_list("0-2,5,7-8") == (0, 1, 2, 5, 7, 8)
    assert lane_cpu_env(["cuda:0"]) == {"cuda:0": {}}  # a lane alone keeps the whole host
    assert lane_cpu_env(["cuda:0", "cuda:1"], [0, 1, 2, 3]) == {
        "cuda:0": {CPUS_ENV: "0-1"}, "cuda:1": {CPUS_ENV: "2-3"}}


async def test_runs_side_by_side_are_never_each_others_other_processes(monkeypatch):
    """The verdict's machine check: a busy neighbour of the same session is compile-lab's own."""
    monkeypatch.setenv("FAKE_WORKER_BLOCK_S", "0.15")
    monkeypatch.setenv("FAKE_WORKER_BURN", "1")
    telemetry = FakeSource(gpus=2)
    runners: dict[str, WorkerRunner] = {}

    def runner_for(lane: str) -> WorkerRunner:
        return runners.setdefault(lane, WorkerRunner(fake_worker_argv(), keep_spare=False, telemetry=telemetry))

    session = RunSession(runner_for)
    configs = [RunOptions(workload="pointwise", device="cuda:0", iters=16, block_size=4, warmup=1, seed=n)
               for n in range(2)]
    records = session.submit(configs, pool=("cuda:0", "cuda:1"))
    await session.wait_settled()
    pids = {lane: runner.last_pid for lane, runner in runners.items()}
    await session.aclose()
    assert [r.status for r in records] == ["done", "done"] and all(r.concurrent_runs == 1 for r in records)
    for record in records:
        neighbour = next(pid for lane, pid in pids.items() if lane != record.options.device)
        assert record.telemetry.samples, "the host was sampled while it measured"
        assert not any(f"({neighbour})" in entry for entry in record.telemetry.other_cpu_top)
        assert record.telemetry.app_cpu_cores is not None


def _two_sockets(cpu: int) -> tuple[int, int]:
    """16 logical CPUs: physical core c has hyperthreads c and c + 8; cores 0-3 socket 0, 4-7 socket 1."""
    return (cpu % 8, cpu % 8 + 8)


def test_lanes_get_whole_cores_near_their_gpu():
    socket0, socket1 = {0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15}
    # GPUs 0 and 1 hang off socket 1, GPUs 2 and 3 off socket 0 (NVML's CPU affinity)
    near = {"cuda:0": socket1, "cuda:1": socket1, "cuda:2": socket0, "cuda:3": socket0}
    plan = plan_cores(["cuda:0", "cuda:1", "cuda:2", "cuda:3"], range(16), near, _two_sockets)
    assert plan == {"cuda:0": (4, 5, 12, 13), "cuda:1": (6, 7, 14, 15),
                    "cuda:2": (0, 1, 8, 9), "cuda:3": (2, 3, 10, 11)}
    # without NVML's word: still whole cores, never one core's two hyperthreads in two lanes
    blind = plan_cores(["cuda:0", "cuda:1"], range(16), None, _two_sockets)
    assert blind == {"cuda:0": (0, 1, 2, 3, 8, 9, 10, 11), "cuda:1": (4, 5, 6, 7, 12, 13, 14, 15)}
    # neighbourhoods that overlap without being one: a single even split of every core
    odd = plan_cores(["cuda:0", "cuda:1"], range(16), {"cuda:0": {0, 1, 2}, "cuda:1": {2, 3}}, _two_sockets)
    assert odd == blind


def test_the_pool_env_asks_telemetry_which_cores_are_near_each_gpu():
    telemetry = FakeSource(gpus=2, near_cpus={0: [1], 1: [0]})
    envs = pool_cpu_env(("cuda:0", "cuda:1"), telemetry)
    if len(allowed_cpus()) >= 2 and {0, 1} <= set(allowed_cpus()):
        assert envs == {"cuda:0": {CPUS_ENV: "1"}, "cuda:1": {CPUS_ENV: "0"}}
    assert pool_cpu_env(("cuda:0",), telemetry) == {"cuda:0": {}}


def _cli_on_fake_gpus(monkeypatch, names):
    """The CLI with the fake worker and a telemetry fake of ``names`` GPUs (this machine's NVML is not asked)."""
    from tui import cli
    from tui.cli import run as cli_run

    from tui.engine.runner import torch_probe

    telemetry = FakeSource(gpus=len(names), names=names)
    monkeypatch.setattr(torch_probe, "cpu_build_here", lambda: None)  # a GPU machine's torch may have CUDA
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", ",".join(str(i) for i in range(len(names))))
    monkeypatch.setattr(cli_run, "_telemetry", lambda configs: telemetry)
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None, env=None: WorkerRunner(
        fake_worker_argv(), keep_spare=False, telemetry=telemetry, env=env, sample_host=False))
    return cli


SWEEP = ["sweep", "--workload", "pointwise", "--mode", "default,reduce-overhead", "--iters", "8", "--block-size", "4",
         "--warmup", "1", "--device", "cuda:all", "--no-history"]


def test_each_gpu_kind_runs_every_configuration_on_each_kind(monkeypatch, tmp_path, capsys):
    import csv

    cli = _cli_on_fake_gpus(monkeypatch, ["Fake H100", "Fake H100", "Fake A100"])
    out = tmp_path / "kinds.csv"
    assert cli.main([*SWEEP, "--each-gpu-kind", "--quiet", "--csv", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    by_kind = {}
    for row in rows:
        kind = "Fake A100" if row["device"] == "cuda:2" else "Fake H100"
        by_kind.setdefault(kind, []).append(row["mode"])
    assert {kind: sorted(modes) for kind, modes in by_kind.items()} == {
        "Fake H100": ["default", "reduce-overhead"], "Fake A100": ["default", "reduce-overhead"]}


def test_each_gpu_kind_counts_each_configuration_once_on_each_kind(monkeypatch, capsys):
    """Under --repeat auto (the default) the counter counts configurations: it read [3/2] and [4/2] once every
    configuration ran on a second kind."""
    import re

    cli = _cli_on_fake_gpus(monkeypatch, ["Fake H100", "Fake A100"])
    assert cli.main([*SWEEP, "--each-gpu-kind"]) == 0
    counters = re.findall(r"^\[(\d+)/(\d+)\] .*: started$", capsys.readouterr().err, re.M)
    assert sorted(counters) == [("1", "4"), ("2", "4"), ("3", "4"), ("4", "4")], counters


def test_a_pool_of_several_kinds_says_so_and_refuses_repeats_without_each_gpu_kind(monkeypatch, capsys):
    cli = _cli_on_fake_gpus(monkeypatch, ["Fake H100", "Fake A100"])
    assert cli.main([*SWEEP, "--repeat", "2"]) == 2
    err = capsys.readouterr().err
    assert (
        "--repeat: more than one process per configuration with GPUs of several kinds (Fake H100 x1, Fake A100 x1)"
        in err
    )
    assert len(err.splitlines()) == 1
    assert cli.main([*SWEEP, "--repeat", "1"]) == 0
    assert "each configuration runs on whichever is free" in capsys.readouterr().err
    # The default, auto, is not refused: each configuration runs once (a row's processes share a kind).
    assert cli.main([*SWEEP]) == 0
    assert "each configuration runs once on whichever is free (--repeat auto adds" in capsys.readouterr().err
    assert cli.main(["sweep", "--device", "cuda:0", "--each-gpu-kind", "--no-history"]) == 2
    assert "--each-gpu-kind needs a GPU list" in capsys.readouterr().err


def test_pinning_counts_the_cores_it_got_and_says_which_it_could_not_have():
    import json
    import subprocess
    import sys

    first = allowed_cpus()[0]
    code = ("import json, os; from tui.engine.worker.affinity import pin_to_lane_cpus; env = {'COMPILE_LAB_CPUS': "
            f"'{first},4095'}}; problem = pin_to_lane_cpus(env); "
            "print(json.dumps([problem, env.get('OMP_NUM_THREADS'), sorted(os.sched_getaffinity(0)), "
            "pin_to_lane_cpus({'COMPILE_LAB_CPUS': 'x'})]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    problem, threads, mask, bad = json.loads(out)
    assert mask == [first] and threads == "1"  # OMP_NUM_THREADS is the mask it got, not the cores it named
    assert problem == f"COMPILE_LAB_CPUS={first},4095: only cores {first} of those may be used here"
    assert bad.startswith("COMPILE_LAB_CPUS='x' was ignored")


def test_the_apps_pool_names_follow_cuda_visible_devices(monkeypatch):
    from tui.app.gpu_pool import pool_names

    source = FakeSource(gpus=4, names=["A100", "A100", "H100", "H100"])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,2")  # cuda:0 is the second A100, cuda:1 the first H100
    assert pool_names(("cuda:0", "cuda:1"), source.snapshot()) == {"cuda:0": "A100", "cuda:1": "H100"}


async def test_the_apps_second_pool_never_shares_cores_with_the_first():
    from types import SimpleNamespace

    from tui.app.gpu_pool import LaneRunners

    app = SimpleNamespace(runner=SimpleNamespace(env={}, telemetry=FakeSource(gpus=4)), telemetry=None)
    lanes = LaneRunners(app)
    await lanes.pin(("cuda:0", "cuda:1", "cuda:2", "cuda:3"))
    first = dict(lanes._envs)
    await lanes.pin(("cuda:0", "cuda:1"))  # a sweep over two of them later
    assert lanes._envs == first  # the plan stands: cuda:2 and cuda:3 keep theirs, nobody doubles up
    cores = [set(parse_cpu_list(env[CPUS_ENV])) for env in first.values() if env]
    assert all(not a & b for i, a in enumerate(cores) for b in cores[i + 1:]) or len(allowed_cpus()) < 4
