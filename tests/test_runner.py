"""WorkerRunner against the torch-free fake worker: streaming, crashes, timeouts, cancel, spare.

Every wait is an asyncio await with a bound; nothing sleeps. Processes are checked by their
process group: ``os.killpg(pgid, 0)`` must raise ProcessLookupError once a worker is gone.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes.polling import group_alive, poll_until
from fakes import fake_worker_argv

from tui.engine.options import RunOptions
from tui.engine.protocol import BlockTimed, Event, PhaseChanged, Ready, Started, WorkerWarning
from tui.engine.store.results import RunRecord
from tui.engine.runner import STDERR_TAIL_BYTES, WorkerRunner
from tui.engine.runner import spare as spare_module
from tui.engine.runner.worker_runner import timeout_message
from tui.telemetry.fake import FakeSource
from tui.telemetry.model import GpuProcess

FAKE_WORKER = fake_worker_argv()


def _options(behaviour: str = "ok", **fields) -> RunOptions:
    fields.setdefault("iters", 20)
    fields.setdefault("block_size", 5)
    return RunOptions(workload="pointwise", params={"fake_behaviour": behaviour}, **fields)


def _record(options: RunOptions) -> RunRecord:
    return RunRecord.new(options)


def _runner(keep_spare: bool = False, **env: str) -> WorkerRunner:
    return WorkerRunner(worker_argv=FAKE_WORKER, keep_spare=keep_spare, env=env)


async def _group_gone(pgid: int, within: float = 1.0) -> bool:
    """Whether the group is gone within ``within`` seconds (killed members may take a moment to be reaped)."""
    return await poll_until(lambda: not group_alive(pgid), within)


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return "gone"


class _Collector:
    """on_event callback that keeps events with their arrival time, and can signal one."""

    def __init__(self, wait_for: str | None = None) -> None:
        self.events: list[Event] = []
        self.arrived: list[float] = []
        self.seen = asyncio.Event()
        self.wait_for = wait_for

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        self.arrived.append(time.monotonic())
        if event.NAME == self.wait_for:
            self.seen.set()

    def names(self) -> list[str]:
        return [e.NAME for e in self.events]

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]

    def pid(self) -> int:
        return self.of(Ready)[0].pid


async def test_events_reach_the_record_in_order_and_blocks_stream():
    runner = _runner(FAKE_WORKER_DELAY="0.05")
    collector = _Collector()
    record = _record(_options("slow"))
    try:
        await runner.run(record, collector)
    finally:
        await runner.aclose()
    names = collector.names()
    assert names[:3] == ["ready", "started", "phase"]
    assert names[-1] == "finished"
    phases = [e.phase for e in collector.of(PhaseChanged)]
    assert phases == ["building", "compiling", "warming_up", "checking_accuracy", "measuring", "diagnosing"]
    blocks = [e for e in collector.of(BlockTimed) if e.stage == "measure"]
    # Rounds alternate which side goes first, as the real worker's do (blocks.measure_round).
    order = [("eager", "compiled") if i % 2 == 0 else ("compiled", "eager") for i in range(4)]
    assert [(b.side, b.index) for b in blocks] == [(s, i) for i in range(4) for s in order[i]]
    first_block = collector.arrived[collector.events.index(blocks[0])]
    assert collector.arrived[-1] - first_block >= 0.1  # the first block came while the run was still going
    assert record.status == "done"
    assert record.summary().compiled.iter.median == pytest.approx(1.0, abs=0.05)
    assert await _group_gone(runner.last_pid)


async def test_a_worker_that_kills_itself_is_a_crash_with_its_stderr():
    runner = _runner()
    record = _record(_options("crash"))
    try:
        await runner.run(record)
    finally:
        await runner.aclose()
    assert record.status == "failed"
    assert record.error_kind == "crash"
    assert record.error_message.startswith("worker crashed (signal 9)")
    assert "Fatal Python error: Segmentation fault (fake)" in record.error_message
    assert "some noise" in record.error_detail


async def test_a_worker_that_exits_without_finishing_names_its_code_and_last_error():
    runner = _runner()
    record = _record(_options("exit"))
    try:
        await runner.run(record)
    finally:
        await runner.aclose()
    assert record.error_kind == "crash"
    assert record.error_message == "worker exited with code 3: RuntimeError: fake worker gave up"


@pytest.mark.parametrize("script, said", [
    ("exit 0", "worker exited with code 0 before it was ready (interpreter {program}); it wrote nothing on stderr"),
    ("echo 'No module named torch' >&2; exit 1",
     "worker exited with code 1 before it was ready (interpreter {program}): No module named torch"),
])
async def test_an_interpreter_that_never_became_the_worker_is_named(tmp_path, script, said):
    program = tmp_path / "not-a-python"  # what --python /bin/true, or a Python without torch, amounts to
    program.write_text(f"#!/bin/sh\n{script}\n")
    program.chmod(0o755)
    runner = WorkerRunner(worker_argv=[str(program)], keep_spare=False)
    record = _record(_options())
    try:
        await runner.run(record)
    finally:
        await runner.aclose()
    assert record.error_kind == "crash"
    assert record.error_message == said.format(program=program)


async def test_a_failed_event_is_the_workers_own_failure():
    runner = _runner()
    record = _record(_options("fail"))
    try:
        await runner.run(record)
    finally:
        await runner.aclose()
    assert record.error_kind == "compile_error"
    assert record.error_message == "compile failed: fake inductor error"


HANG_TIMEOUT_S = 2.0
"""The hanging worker's timeout: room for its start on a loaded 2-core box (under load 0.5 s ended a run still
warming up, before it reached the measuring it hangs in)."""


@pytest.mark.parametrize("behaviour", ["hang", "stubborn"])  # stubborn ignores SIGTERM
async def test_a_hanging_worker_times_out_and_its_group_is_killed(behaviour, timed):
    runner = _runner()
    record = _record(_options(behaviour, timeout_s=HANG_TIMEOUT_S))
    start = time.monotonic()
    try:
        await runner.run(record)
    finally:
        await runner.aclose()
    if timed:
        assert time.monotonic() - start < HANG_TIMEOUT_S + 2.0
    assert record.error_kind == "timeout"
    assert record.error_message == f"timed out after {HANG_TIMEOUT_S:g} s (timeout_s) while measuring"  # it hangs there
    assert await _group_gone(runner.last_pid)


async def test_cancelling_a_hanging_run_kills_the_whole_group_within_two_seconds(timed):
    runner = _runner()
    collector = _Collector(wait_for="block")
    record = _record(_options("stubborn"))  # ignores SIGTERM and has a grandchild in its group
    task = asyncio.create_task(runner.run(record, collector))
    await asyncio.wait_for(collector.seen.wait(), 10)
    pgid = collector.pid()
    assert group_alive(pgid)
    # the parent's stderr reader has the worker's profiler line before the cancel (it runs beside the events' reader)
    (worker,) = runner._running
    assert await poll_until(lambda: "profiler_start" in worker.stderr_text(), 10.0)
    start = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    if timed:
        assert time.monotonic() - start < 2.0
    assert (record.status, record.error_kind) == ("cancelled", "cancelled")
    # the worker did not end the run: its stderr (a profiler's log line here) is not the cancelled run's detail
    assert record.error_message == "cancelled" and not record.error_detail
    assert "profiler_start" in runner.last_stderr
    assert await _group_gone(pgid)
    await runner.aclose()


async def test_megabytes_on_stderr_neither_block_nor_corrupt_the_stream():
    runner = _runner()
    collector = _Collector()
    record = _record(_options("spam"))
    try:
        await asyncio.wait_for(runner.run(record, collector), 30)
    finally:
        await runner.aclose()
    assert record.status == "done"
    assert len([b for b in collector.of(BlockTimed) if b.stage == "measure"]) == 8
    assert len(runner.last_stderr.encode()) <= STDERR_TAIL_BYTES
    assert runner.last_stderr.endswith("spam done\n")


async def test_lines_that_are_not_events_become_warnings():
    runner = _runner()
    collector = _Collector()
    record = _record(_options("garbage"))
    try:
        await runner.run(record, collector)
    finally:
        await runner.aclose()
    assert record.status == "done"
    warnings = [e for e in collector.of(WorkerWarning)]
    assert len(warnings) == 2 and all("not an event" in w.message and w.source == "runner" for w in warnings)


async def test_the_spare_is_taken_by_the_next_run_and_every_run_gets_a_fresh_process():
    runner = _runner(keep_spare=True)
    first, second = _Collector(), _Collector()
    try:
        await runner.run(_record(_options()), first)
        spare = runner.spare_pid
        assert spare is not None and spare != first.pid()
        await runner.run(_record(_options()), second)
        assert second.pid() == spare
        assert runner.spare_pid not in (None, first.pid(), spare)
        last_spare = runner.spare_pid
    finally:
        await runner.aclose()
    for pid in (first.pid(), second.pid(), last_spare):
        assert await _group_gone(pid)


async def test_a_spare_for_another_configuration_is_replaced():
    runner = _runner(keep_spare=True)
    try:
        await runner.run(_record(_options()))
        old_spare = runner.spare_pid
        runner.env["SOME_SETTING"] = "changed"  # another environment: another key
        collector = _Collector()
        await runner.run(_record(_options()), collector)
        assert collector.pid() != old_spare
        assert await _group_gone(old_spare)
    finally:
        await runner.aclose()


async def test_a_spare_still_importing_is_paused_while_a_run_measures(tmp_path):
    runner = _runner(
        keep_spare=True,
        FAKE_WORKER_START_LOG=str(tmp_path / "starts"),
        FAKE_WORKER_READY_DELAY="0,1.5",
        FAKE_WORKER_DELAY="0.05",
    )
    states: list[str] = []

    def on_event(event: Event) -> None:
        if isinstance(event, BlockTimed) and runner.spare_pid is not None:
            states.append(_proc_state(runner.spare_pid))

    try:
        options = _options("slow")
        first = await runner.prestart(options, wait=True)  # start 0: ready at once
        collector = _Collector()
        await runner.run(_record(options), lambda e: (collector(e), on_event(e)))
        assert collector.pid() == first
        # The next spare (start 1) was still "importing" while the run measured: stopped
        # (SIGSTOP takes effect asynchronously, so the first look may still see it running).
        assert states[-1] == "T" and set(states) <= {"R", "S", "T"}
        assert _proc_state(runner.spare_pid) != "T"
    finally:
        await runner.aclose()


async def _spare_states_while_compiling(**env: str) -> list[str]:
    """The process states of the next spare (start 1, "importing" for 5 s) while a run of ``runner`` compiles for a
    second, looked at every 20 ms; asserts it is not stopped once the run is past compiling."""
    runner = _runner(keep_spare=True, FAKE_WORKER_READY_DELAY="0,5", FAKE_WORKER_COMPILE_S="1.0", **env)
    states: list[str] = []

    async def watch(spare_pid: int) -> None:
        while True:
            states.append(_proc_state(spare_pid))
            await asyncio.sleep(0.02)

    seen = asyncio.Event()
    watching: list[asyncio.Task] = []

    def on_event(event: Event) -> None:
        if isinstance(event, PhaseChanged) and event.phase == "compiling" and runner.spare_pid is not None:
            watching.append(asyncio.get_running_loop().create_task(watch(runner.spare_pid)))
        elif isinstance(event, PhaseChanged) and event.phase == "warming_up":
            seen.set()
            for task in watching:
                task.cancel()

    try:
        options = _options()
        await runner.prestart(options, wait=True)  # start 0: ready at once
        await runner.run(_record(options), on_event)
        assert seen.is_set() and watching and states
        assert _proc_state(runner.spare_pid) != "T"  # it goes on once the run is past compiling
        return states
    finally:
        await runner.aclose()


async def test_a_spare_still_importing_is_paused_while_a_run_that_may_use_one_core_compiles():
    # the worker and its spare pinned to one core (as a pooled lane pins them): the spare stopped for the second
    # the run compiled (SIGSTOP takes effect asynchronously, so the first looks may still see it running)
    states = await _spare_states_while_compiling(COMPILE_LAB_CPUS="0")
    assert states.count("T") >= len(states) // 2 and set(states) <= {"R", "S", "T"}, states


async def test_a_spare_still_importing_goes_on_while_a_run_that_may_use_two_cores_compiles(monkeypatch):
    # with two cores or more a spare's import beside a compile did not lengthen it (BENCHMARKS section 21): the
    # spare imports on, and is stopped only once the run measures (the test above that one)
    seen: list[int] = []

    def two_cores(pid: int) -> int:
        seen.append(pid)
        return 2

    monkeypatch.setattr(spare_module, "cores_of", two_cores)
    states = await _spare_states_while_compiling()
    assert "T" not in states and len(seen) == 1, (states, seen)


def test_the_cores_a_process_may_use_are_its_affinity_mask():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(child.pid, {min(os.sched_getaffinity(0))})
            assert spare_module.cores_of(child.pid) == 1
            assert spare_module.cores_of(os.getpid()) == len(os.sched_getaffinity(0))
        else:  # no affinity masks on this OS: the machine's count
            assert spare_module.cores_of(child.pid) == (os.cpu_count() or 1)
    finally:
        child.kill()
        child.wait()
    assert spare_module.cores_of(child.pid) == (os.cpu_count() or 1)  # gone: the machine's count


async def test_aclose_and_kill_all_leave_no_process():
    runner = _runner(keep_spare=True)
    await runner.run(_record(_options()))
    spare = runner.spare_pid
    assert spare is not None and group_alive(spare)
    runner.kill_all()
    runner.kill_all()  # twice is fine
    assert await _group_gone(spare)
    await runner.aclose()
    await runner.aclose()


async def test_a_cuda_run_takes_the_gpu_lock_and_samples_telemetry(compile_lab_home):
    source = FakeSource(gpus=2)
    gpu = source.uuids[1]
    runner = WorkerRunner(
        worker_argv=FAKE_WORKER, keep_spare=False, telemetry=source,
        env={"FAKE_WORKER_GPU_UUID": gpu, "FAKE_WORKER_DELAY": "0.05"},
    )
    source.script(1, throttle_reasons=[("GPU idle",), ("SW power cap",)])
    source.set_field(1, processes=(GpuProcess(pid=4242, name="someone-else", used_mb=512.0),))
    record = _record(_options("slow", device="cuda:1"))
    lock_held = []

    def on_event(event: Event) -> None:
        if isinstance(event, BlockTimed):
            lock_held.extend(p.name for p in (compile_lab_home / "data" / "locks").iterdir())

    try:
        await runner.run(record, on_event)
    finally:
        await runner.aclose()
    assert lock_held and lock_held[0] == f"gpu-{gpu.removeprefix('gpu-')}.lock"
    assert record.env.cuda_visible_devices == "GPU-" + gpu.removeprefix("gpu-")  # cuda:1 in NVML order
    assert record.status == "done"
    assert record.telemetry.samples >= 1
    assert record.telemetry.throttle_reasons == ("SW power cap",)
    assert any("throttled" in w for w in record.summary().warnings)
    assert any("other processes were using the GPU" in w and "4242 (someone-else)" in w for w in record.warnings)


async def test_a_busy_gpu_lock_makes_the_run_wait_and_say_so(compile_lab_home):
    import fcntl

    gpu = "GPU-fa4e0000-0000-4000-8000-000000000007"
    locks = compile_lab_home / "data" / "locks"
    locks.mkdir(parents=True)
    holder = open(locks / "gpu-fa4e0000-0000-4000-8000-000000000007.lock", "w")  # another compile-lab
    fcntl.flock(holder, fcntl.LOCK_EX)
    runner = _runner()
    collector = _Collector(wait_for="warning")
    record = _record(_options(device=f"cuda:{gpu}"))
    task = asyncio.create_task(runner.run(record, collector))
    try:
        await asyncio.wait_for(collector.seen.wait(), 10)
        assert "busy" in collector.events[0].message and collector.events[0].source == "runner"
        assert not task.done() and "ready" not in collector.names()
        fcntl.flock(holder, fcntl.LOCK_UN)
        await asyncio.wait_for(task, 10)
    finally:
        holder.close()
        await runner.aclose()
    assert record.status == "done"
    started = collector.of(Started)[0]
    assert started.env.device == f"cuda:{gpu}"
    assert started.env.cuda_visible_devices == gpu
    assert started.env.cuda_device_order == "PCI_BUS_ID"


@pytest.mark.parametrize(
    ("status", "phase_words"),
    [("queued", "starting"), ("starting", "starting"), ("building", "building"), ("compiling", "compiling"),
     ("warming_up", "warming up"), ("checking_accuracy", "checking accuracy"), ("measuring", "measuring"),
     ("diagnosing", "diagnosing")],
)
def test_a_timeout_says_which_phase_it_cut_short(status, phase_words):
    assert timeout_message(5.0, status) == f"timed out after 5 s (timeout_s) while {phase_words}"
    assert timeout_message(0.25, status).startswith("timed out after 0.25 s (timeout_s) while ")


def test_a_crash_message_never_quotes_a_profilers_log_line():
    from tui.engine.runner.process import _last_meaningful_line

    tail = ("RuntimeError: CUDA error: an illegal memory access\n"
            "USDT:2026-12-04 17:48:54 5711:5711 SyncActivityProfilerHandler.cpp:52] profiler_start\n")
    assert _last_meaningful_line(tail) == "RuntimeError: CUDA error: an illegal memory access"
