"""The machine while a run measures: per-side SM clock, the GPU's other processes, the host's other CPU users.

Pure pieces on constructed blocks and samples (clock_per_side, RunSampler's rates and process
list), then whole runs of the fake worker through WorkerRunner (RunSampling's wiring).
"""

from __future__ import annotations

import os
import sys

import pytest

from fakes import fake_worker_argv
from tui.engine.options import RunOptions
from tui.engine.protocol import BlockTimed, Event, Started
from tui.engine.store.results import RunRecord
from tui.engine.runner import WorkerRunner
from tui.engine.runner.sampling import CLOCK_HZ, SAMPLE_HZ, measure_spans, with_side_clocks
from tui.engine.runner.worker_runner import own_worker_pids
from tui.telemetry import host_load
from tui.telemetry.fake import FakeSource
from tui.telemetry.model import MIN_CLOCK_SAMPLES, GpuProcess, RunTelemetry
from tui.telemetry.sampler import CLOCK_FIELDS, FIELDS, FIELDS_BETWEEN, RunSampler, clock_per_side

FAKE_WORKER = fake_worker_argv()


# -- clock_per_side ------------------------------------------------------------------------


def test_samples_inside_a_sides_blocks_give_its_clock_ends_included():
    times = [0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 2.0, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6]
    clocks = [1000, 1980, 1980, 1960, 1980, 1960, 1980, 999, 1500, 1500, 1490, 1500, 1510, 1500, 777]
    spans = {"eager": [(1.0, 1.5)], "compiled": [(2.0, 2.5)]}
    per_side = clock_per_side(times, clocks, spans)
    assert per_side["eager"] == (pytest.approx((1980 * 4 + 1960 * 2) / 6), 6)  # 1.0 and 1.5 count, 0.9/1.6 not
    assert per_side["compiled"] == (pytest.approx(1500.0), 6)


def test_fewer_than_five_samples_in_a_side_is_no_clock_but_the_count():
    assert MIN_CLOCK_SAMPLES == 5
    times = [0.0, 0.1, 0.2, 0.3, 1.0, 1.1, 1.2, 1.3, 1.4]
    clocks = [1800.0] * 4 + [1900.0] * 5
    per_side = clock_per_side(times, clocks, {"eager": [(0.0, 0.35)], "compiled": [(1.0, 1.4)]})
    assert per_side["eager"] == (None, 4)
    assert per_side["compiled"] == (1900.0, 5)


def test_several_blocks_unsorted_overlapping_or_reversed_spans():
    times = [i / 10 for i in range(40)]  # 0.0 .. 3.9
    clocks = [1000.0 + i for i in range(40)]
    spans = {"eager": [(3.0, 3.2), (0.0, 0.2), (0.1, 0.3), (2.0, 1.0)], "compiled": []}
    per_side = clock_per_side(times, clocks, spans)
    inside = [1000.0 + i for i in (0, 1, 2, 3, 30, 31, 32)]
    assert per_side["eager"] == (pytest.approx(sum(inside) / len(inside)), 7)
    assert per_side["compiled"] == (None, 0)  # blocks without spans (an old worker, the history)


def _record_with_blocks(spans: dict[str, list[tuple[float, float] | tuple[None, None]]]) -> RunRecord:
    record = RunRecord.new(RunOptions(workload="pointwise", iters=10, block_size=5))
    for side, side_spans in spans.items():
        for index, (t_start, t_end) in enumerate(side_spans):
            record.apply(BlockTimed(side=side, stage="measure", index=index, clock="perf_counter", ms=(1.0,) * 5,
                                    t_start=t_start, t_end=t_end))
    record.apply(BlockTimed(side="eager", stage="warmup", index=0, clock="perf_counter", ms=(1.0,),
                            t_start=0.0, t_end=100.0))  # warm-up blocks are not the measured clock
    return record


def test_the_records_measured_blocks_give_the_spans_and_the_telemetry_its_side_clocks():
    record = _record_with_blocks({"eager": [(1.0, 1.5), (None, None)], "compiled": [(2.0, 2.5)]})
    spans = measure_spans(record)
    assert spans == {"eager": [(1.0, 1.5)], "compiled": [(2.0, 2.5)]}
    times = [1.0 + i * 0.1 for i in range(6)] + [2.0 + i * 0.1 for i in range(6)]
    clocks = [1980.0] * 6 + [1900.0] * 6
    telemetry = with_side_clocks(RunTelemetry(samples=12), times, clocks, spans)
    assert (telemetry.sm_clock_eager_mhz, telemetry.sm_clock_eager_samples) == (1980.0, 6)
    assert (telemetry.sm_clock_compiled_mhz, telemetry.sm_clock_compiled_samples) == (1900.0, 6)
    assert telemetry.samples == 12
    none = with_side_clocks(
        RunTelemetry(), times, clocks, measure_spans(_record_with_blocks({"eager": [(None, None)]}))
    )
    assert none.sm_clock_eager_mhz is None and none.sm_clock_compiled_mhz is None


# -- RunSampler: the clock series, the rates, the GPU's other processes ----------------------


def test_the_sampler_keeps_the_clock_series():
    source = FakeSource(time_step_s=0.02)
    source.script(0, sm_clock_mhz=[1980, 1965, None, 1950])
    sampler = RunSampler(source, source.uuids[0])
    for _ in range(4):
        sampler.sample_once()
    times, clocks = sampler.clock_series()
    assert list(times) == pytest.approx([1000.0, 1000.02, 1000.06])
    assert list(clocks) == [1980.0, 1965.0, 1950.0]


def test_between_full_samples_the_thread_reads_the_clock_alone():
    class Recording(FakeSource):
        def __init__(self) -> None:
            super().__init__(time_step_s=0.02)
            self.asked: list = []

        def sample(self, uuid, fields=None):
            self.asked.append(tuple(fields))
            return super().sample(uuid, fields)

    source = Recording()
    sampler = RunSampler(source, source.uuids[0], hz=10, clock_hz=50, own_pids=lambda: set()).start()
    assert source.wait_for_calls(30, timeout=20)
    sampler.stop()
    asked = source.asked
    assert asked[0] == FIELDS + ("processes",)
    assert asked[1:5] == [CLOCK_FIELDS] * 4
    assert asked[5] == FIELDS_BETWEEN and asked[10] == FIELDS_BETWEEN
    assert asked[25] == FIELDS_BETWEEN + ("processes",)  # the process list every 0.5 s
    assert asked[-1] == FIELDS + ("processes",)
    assert sampler.summary().samples == len(asked)
    assert len(sampler.clock_series()[0]) == len(asked)


def test_a_source_without_fields_is_not_sampled_between_full_samples():
    source = FakeSource(time_step_s=0.02)

    class UuidOnly:
        calls = 0

        def sample(self, uuid):
            UuidOnly.calls += 1
            return source.sample(uuid)

    sampler = RunSampler(UuidOnly(), source.uuids[0], hz=10, clock_hz=50)
    assert sampler.sample_once()
    assert not sampler.sample_once(energy=False, clock_only=True)
    assert sampler.sample_once(energy=False)
    assert UuidOnly.calls == 2 and sampler.summary().samples == 2


def test_the_gpus_other_processes_are_collected_from_every_sample_own_ones_left_out():
    source = FakeSource(time_step_s=0.1)
    own = {4242}
    sampler = RunSampler(source, source.uuids[0], own_pids=lambda: own)
    sampler.sample_once(processes=True)  # only compile-lab's worker (the fake's default pid 4242)
    source.set_field(0, processes=(GpuProcess(pid=4242, name="python"), GpuProcess(pid=77, name="trainer")))
    sampler.sample_once(processes=False)  # not asked: not read
    assert sampler.summary().other_gpu_processes == ()
    sampler.sample_once(processes=True)
    source.set_field(0, processes=(GpuProcess(pid=78, name=None),))
    sampler.sample_once(processes=True)
    assert sampler.summary().other_gpu_processes == ("trainer (77)", "? (78)")
    plain = RunSampler(source, source.uuids[0])  # no own_pids: no process list
    plain.sample_once(processes=True)
    assert plain.summary().other_gpu_processes == ()


def test_the_runner_samples_the_clock_faster_than_the_rest():
    assert (SAMPLE_HZ, CLOCK_HZ) == (10, 50)


# -- whole runs through the runner ---------------------------------------------------------


def _options(**fields) -> RunOptions:
    fields.setdefault("iters", 20)
    fields.setdefault("block_size", 5)
    return RunOptions(workload="pointwise", params={"fake_behaviour": "ok"}, **fields)


async def _cpu_run(env: dict[str, str] | None = None) -> RunRecord:
    """One CPU run of the fake worker on a runner of its own (closed after), its record."""
    runner = WorkerRunner(worker_argv=FAKE_WORKER, keep_spare=False, **({"env": env} if env else {}))
    record = RunRecord.new(_options(device="cpu"))
    try:
        await runner.run(record)
    finally:
        await runner.aclose()
    return record


async def test_a_cuda_run_gets_per_side_clocks_the_gpus_other_processes_and_the_hosts_load(compile_lab_home):
    source = FakeSource(gpus=1)
    gpu = source.uuids[0]
    runner = WorkerRunner(worker_argv=FAKE_WORKER, keep_spare=False, telemetry=source,
                          env={"FAKE_WORKER_GPU_UUID": gpu, "FAKE_WORKER_BLOCK_S": "0.15"})
    seen: dict[str, int] = {}

    def on_event(event: Event) -> None:
        if isinstance(event, Started):  # the worker is on the GPU, and so is someone else
            seen["worker"] = runner.last_pid
            source.set_field(0, processes=(GpuProcess(pid=runner.last_pid, name="python"),
                                           GpuProcess(pid=4243, name="someone-else")))
        elif isinstance(event, BlockTimed) and event.stage == "measure" and event.index == 2:
            source.set_field(0, processes=(GpuProcess(pid=runner.last_pid, name="python"),
                                           GpuProcess(pid=4244, name="late-comer")))

    record = RunRecord.new(_options(device="cuda:0"))
    try:
        await runner.run(record, on_event)
    finally:
        await runner.aclose()
    assert record.status == "done"
    telemetry = record.telemetry
    # 4 blocks of 0.15 s per side at 50 Hz: about 30 samples each
    assert telemetry.sm_clock_eager_samples >= MIN_CLOCK_SAMPLES
    assert telemetry.sm_clock_compiled_samples >= MIN_CLOCK_SAMPLES
    assert 1935.0 <= telemetry.sm_clock_eager_mhz <= 1980.0  # the fake's clock pattern: 1980 - 15 * (tick % 4)
    assert 1935.0 <= telemetry.sm_clock_compiled_mhz <= 1980.0
    assert telemetry.other_gpu_processes == ("someone-else (4243)", "late-comer (4244)")
    started = [w for w in record.warnings if "other processes were using the GPU" in w]
    assert len(started) == 1 and "4243 (someone-else)" in started[0] and f"{seen['worker']} (python)" not in started[0]
    assert telemetry.other_cpu_cores is not None and telemetry.app_cpu_cores is not None


async def test_a_cpu_run_gets_the_hosts_load_and_no_gpu_figures(compile_lab_home):
    record = await _cpu_run({"FAKE_WORKER_BLOCK_S": "0.05"})
    assert record.status == "done"
    telemetry = record.telemetry
    assert telemetry.other_cpu_cores is not None and telemetry.other_cpu_cores >= 0.0
    assert telemetry.app_cpu_cores is not None
    assert not telemetry.measured and telemetry.sm_clock_eager_mhz is None
    assert not any("CPU use of other processes" in w for w in record.warnings)


async def test_a_run_too_short_to_say_leaves_the_figures_none(compile_lab_home):
    record = await _cpu_run()
    assert record.status == "done"
    assert record.telemetry.other_cpu_cores is None and record.telemetry.app_cpu_cores is None
    assert not any("CPU use of other processes" in w for w in record.warnings)


async def test_a_short_measuring_window_takes_the_figures_from_compiling_on(compile_lab_home):
    # A CPU run of 50 short calls measures for milliseconds: the sampler, started when the run
    # compiles, gives the whole window's figures instead of none (the verdict's machine check needs them).
    record = await _cpu_run({"FAKE_WORKER_COMPILE_S": "0.6"})
    assert record.status == "done"
    assert record.telemetry.other_cpu_cores is not None and record.telemetry.app_cpu_cores is not None


async def test_without_psutil_a_run_still_ends_done_with_a_warning(compile_lab_home, monkeypatch):
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil raises ImportError
    monkeypatch.setattr(host_load, "_shared", None)  # as if no window had read the table yet
    record = await _cpu_run({"FAKE_WORKER_BLOCK_S": "0.05"})
    assert record.status == "done" and record.telemetry.other_cpu_cores is None
    assert "the CPU use of other processes was not measured: psutil is not installed" in record.warnings


async def test_own_worker_pids_are_every_runners_workers(compile_lab_home):
    first = WorkerRunner(worker_argv=FAKE_WORKER, keep_spare=False)
    second = WorkerRunner(worker_argv=FAKE_WORKER, keep_spare=False)
    try:
        spare_a = await first.prestart(_options(), wait=True)
        spare_b = await second.prestart(_options(), wait=True)
        assert {spare_a, spare_b} <= own_worker_pids()
        assert os.getpid() not in own_worker_pids()
    finally:
        await first.aclose()
        await second.aclose()
    assert spare_a not in own_worker_pids() and spare_b not in own_worker_pids()
