"""The timing method in-process on the CPU, with a tiny local BuiltWorkload-shaped object."""

from __future__ import annotations

import os
from dataclasses import dataclass
import statistics
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from tui.engine.measure.clocks import PERF_COUNTER  # noqa: E402
from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.protocol import BlockTimed, WorkerWarning, decode  # noqa: E402
from tui.engine.worker import envinfo  # noqa: E402
from tui.engine.worker.channel import EventChannel  # noqa: E402
from tui.engine.worker.clocks import BlockRun  # noqa: E402
from tui.engine.worker.measure import HEAD_START_MAX_MS, HEAD_START_MIN_MS, Benchmark, head_start_ms, make_compile_fn  # noqa: E402,E501


@dataclass
class TinyWorkload:
    """The BuiltWorkload contract, locally (docs/ARCHITECTURE.md)."""

    eager_step: Callable[[tuple], Any]
    compile_step: Callable[[Callable], Callable[[tuple], Any]]
    input_sets: list[tuple]
    labels: list[str] | None = None
    flops_fn: Callable[[tuple], Any] | None = None
    bytes_per_call: int | None = None
    train: bool = False


def _workload(fn, input_sets, labels=None) -> TinyWorkload:
    def compile_step(compile_fn):
        compiled = compile_fn(fn)
        return lambda args: compiled(*args)

    return TinyWorkload(lambda args: fn(*args), compile_step, input_sets, labels)


class Recorder:
    def __init__(self):
        self.events: list = []
        self.warnings: list[str] = []

    def emit(self, event):
        self.events.append(event)

    def warn(self, message):
        self.warnings.append(message)

    def blocks(self, stage=None) -> list[BlockTimed]:
        return [e for e in self.events if isinstance(e, BlockTimed) and (stage is None or e.stage == stage)]


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch.compiler.set_stance("default")
    torch._dynamo.reset()


def _run(workload, **option_fields) -> tuple[Benchmark, Recorder]:
    # The blocks of ``iters`` alone: a time budget turns off the CPU's default interval target.
    option_fields.setdefault("time_budget_s", 3600.0)
    options = RunOptions(backend="eager", **option_fields)
    recorder = Recorder()
    bench = Benchmark(workload, options, torch.device("cpu"), recorder.emit, recorder.warn)
    bench.eager_setup()
    bench.compile(make_compile_fn(options))
    bench.warm_up()
    bench.accuracy_outputs()
    bench.measure()
    return bench, recorder


def test_blocks_alternate_and_cover_iters_per_side_with_labels_cycling():
    sets = [(torch.ones(n, 4),) for n in (1, 2, 3)]
    bench, rec = _run(_workload(lambda x: x * 2, sets, ["b=1", "b=2", "b=3"]), warmup=2, iters=7, block_size=3)
    measured = rec.blocks("measure")
    assert [b.side for b in measured] == ["eager", "compiled", "compiled", "eager", "eager", "compiled"]  # ABBA
    assert [len(b.ms) for b in measured if b.side == "compiled"] == [3, 3, 1]
    assert bench.measured == {"eager": 7, "compiled": 7}
    compile_block = rec.blocks("compile")[0]
    assert compile_block.side == "compiled" and len(compile_block.ms) == 1 and compile_block.labels == ("b=1",)
    assert compile_block.clock == PERF_COUNTER.name
    # compiled warm-up covers every input set three times; labels follow the cycle
    compiled_warmup = [b for b in rec.blocks("warmup") if b.side == "compiled"]
    assert sum(len(b.ms) for b in compiled_warmup) == 9
    assert compiled_warmup[0].labels[:3] == ("b=2", "b=3", "b=1")
    assert all(len(b.labels) == len(b.ms) for b in rec.blocks())
    assert not bench.stance_used  # labelled workloads change shape on purpose
    assert bench.compile_s > 0 and bench.peak_mb == {"eager": None, "compiled": None}


def test_at_least_three_compiled_warmup_calls_even_with_warmup_zero():
    bench, rec = _run(_workload(lambda x: x + 1, [(torch.ones(4),)]), warmup=0, iters=2, block_size=2)
    warm = rec.blocks("warmup")
    assert sum(len(b.ms) for b in warm if b.side == "compiled") == 3
    assert sum(len(b.ms) for b in warm if b.side == "eager") == 2  # the set-up calls after the first


class ScriptedClock:
    """A clock whose blocks take the medians scripted per side (the calls still run)."""

    info = PERF_COUNTER

    def __init__(self, bench: Benchmark, medians: dict[str, list[float]]) -> None:
        self.bench = bench
        self.medians = {side: iter(values) for side, values in medians.items()}

    def sync(self) -> None:
        pass

    def run_block(self, step, calls, prepare=None):
        side = "eager" if step is self.bench.built.eager_step else "compiled"
        for args in calls:
            step(args)
        value = next(self.medians[side])
        if isinstance(value, list):  # the block's calls, one by one
            return BlockRun(list(value), statistics.median(value))
        return BlockRun([value] * len(calls), value)


def _warmed(medians: dict[str, list[float]], **option_fields) -> tuple[Benchmark, Recorder]:
    options = RunOptions(backend="eager", **option_fields)
    recorder = Recorder()
    bench = Benchmark(_workload(lambda x: x + 1, [(torch.ones(4),)]), options, torch.device("cpu"),
                      recorder.emit, recorder.warn)
    bench.eager_setup()
    bench.compile(make_compile_fn(options))
    bench.clock = ScriptedClock(bench, medians)
    bench.warm_up()
    return bench, recorder


def _warmup_blocks(rec: Recorder, side: str) -> list[float]:
    return [b.ms[0] for b in rec.blocks("warmup") if b.side == side]


def test_warm_up_goes_on_until_two_blocks_agree():
    # compiled: fixed block 10 ms, then 5 (-50%), 3 (-40%), 2.9 (-3%: settled); eager settles at once
    bench, rec = _warmed({"compiled": [10.0, 5.0, 3.0, 2.9, 99.0], "eager": [2.0, 2.02, 99.0]},
                         warmup=4, block_size=4)
    assert _warmup_blocks(rec, "compiled") == [10.0, 5.0, 3.0, 2.9]
    assert _warmup_blocks(rec, "eager")[-2:] == [2.0, 2.02]
    assert rec.warnings == []


def test_a_side_that_never_settles_is_measured_anyway_with_a_warning():
    flapping = [1.0, 2.0] * 10
    bench, rec = _warmed({"compiled": [1.0, 1.0], "eager": flapping}, warmup=3, block_size=3)
    # after the set-up calls: the fixed block, then at most 6 extra blocks
    assert _warmup_blocks(rec, "eager")[1:] == [1.0] + [2.0, 1.0] * 3
    assert len(rec.warnings) == 1
    assert rec.warnings[0].startswith("eager warm-up did not settle within 18 extra calls")
    assert "differed by 50%, more than the 5% their spread allows" in rec.warnings[0]


def test_a_change_inside_the_calls_own_spread_counts_as_settled():
    # the fixed block reads 10 ms; the next one's calls jitter by +-25% around 12 ms:
    # its median moved 20%, inside that spread (IQR/median 25%), so eager is settled
    noisy = [9.0, 12.0, 15.0]
    bench, rec = _warmed({"compiled": [1.0, 1.0], "eager": [10.0, noisy, [99.0] * 3]}, warmup=3, block_size=3)
    assert [list(b.ms) for b in rec.blocks("warmup") if b.side == "eager"][-2:] == [[10.0] * 3, noisy]
    assert rec.warnings == []


def test_a_shift_larger_than_the_spread_is_not_settled():
    # the same +20% with steady calls is a shift, not noise: eager goes on until it levels off
    bench, rec = _warmed({"compiled": [1.0, 1.0], "eager": [10.0, 12.0, 12.1, 99.0]}, warmup=3, block_size=3)
    assert _warmup_blocks(rec, "eager")[-3:] == [10.0, 12.0, 12.1]
    assert rec.warnings == []


def test_times_below_the_clocks_resolution_count_as_settled():
    # a step with no measurable work: medians of 0 ms cannot be compared as a ratio
    bench, rec = _warmed({"compiled": [0.0, 0.0, 99.0], "eager": [0.0, 0.0005, 99.0]}, warmup=3, block_size=3)
    assert _warmup_blocks(rec, "compiled") == [0.0, 0.0]
    assert _warmup_blocks(rec, "eager")[-2:] == [0.0, 0.0005]
    assert rec.warnings == []


def test_warmup_zero_means_the_fixed_minimum_only():
    bench, rec = _warmed({"compiled": [1.0, 5.0, 9.0]}, warmup=0, block_size=3)
    assert _warmup_blocks(rec, "compiled") == [1.0]  # 3 calls in one block, no settling
    assert len(_warmup_blocks(rec, "eager")) == 1 and rec.warnings == []  # only the set-up calls


SCALE = 2.0


def scaled(x):
    return x * SCALE


def test_a_recompile_during_measurement_is_caught_by_the_stance_and_warned():
    """A global the compiled code guards on changes mid-run: the recompile runs untimed, with a warning."""
    global SCALE
    calls = {"n": 0}

    def eager(args):
        global SCALE
        calls["n"] += 1
        if calls["n"] == 8:  # inside measuring: 3 set-up + 1 accuracy + a first block of 3 eager calls
            SCALE = 3.0
        return scaled(*args)

    workload = _workload(scaled, [(torch.ones(4),)])
    workload.eager_step = eager
    try:
        bench, rec = _run(workload, warmup=0, iters=6, block_size=3)
    finally:
        SCALE = 2.0
    assert bench.measured == {"eager": 6, "compiled": 6}
    assert len(rec.warnings) == 1 and rec.warnings[0].startswith("recompiled during measurement")
    assert "SCALE" in rec.warnings[0]
    assert sum(len(b.ms) for b in rec.blocks("measure") if b.side == "compiled") == 6


def test_the_time_budget_stops_measuring_with_a_warning():
    bench, rec = _run(_workload(lambda x: x + 1, [(torch.ones(4),)]), warmup=0, iters=100_000, block_size=5,
                      time_budget_s=1e-6)
    assert bench.measured == {"eager": 5, "compiled": 5}
    assert rec.warnings and "time budget" in rec.warnings[0]


def test_event_channel_writes_decodable_lines():
    read_fd, write_fd = os.pipe()
    try:
        channel = EventChannel(write_fd)
        channel.emit(WorkerWarning(message="a warning"))
        channel.emit(BlockTimed(side="eager", stage="measure", index=0, clock=PERF_COUNTER.name,
                                ms=(float("nan"), 1.0), host_ms_per_call=1.0))
        os.close(write_fd)
        lines = os.read(read_fd, 65536).splitlines()
    finally:
        os.close(read_fd)
    events = [decode(line) for line in lines]
    assert [type(e) for e in events] == [WorkerWarning, BlockTimed]
    assert events[1].ms == (None, 1.0) and events[0].t >= 0


def test_envinfo_reports_the_cpu_side():
    env = envinfo.collect(torch.device("cpu"))
    assert env.torch == torch.__version__ and env.device == "cpu"
    assert env.gpu_uuid is None and env.python
    assert isinstance(env.tf32_matmul, bool) and isinstance(env.tf32_cudnn, bool)
    assert env.float32_matmul_precision in ("highest", "high", "medium")


@pytest.mark.parametrize(("raw", "expected"), [
    ("ba2fb2e1-e13f-855e-a2da-7a7eab16b60f", "GPU-ba2fb2e1-e13f-855e-a2da-7a7eab16b60f"),
    ("GPU-BA2FB2E1-e13f-855e-a2da-7a7eab16b60f", "GPU-ba2fb2e1-e13f-855e-a2da-7a7eab16b60f"),
    ("MIG-0d0e0f00-1111-2222-3333-444455556666", "MIG-0d0e0f00-1111-2222-3333-444455556666"),
    (None, None),
])  # fmt: skip
def test_envinfo_writes_torchs_gpu_uuid_the_way_nvml_does(monkeypatch, raw, expected):
    class Properties:
        uuid = raw

    monkeypatch.setattr(envinfo.torch.cuda, "get_device_properties", lambda index: Properties())
    assert envinfo.gpu_uuid(0) == expected


def _gpu_waits(head: float, queue_ms: float, device_ms: float, calls: int) -> bool:
    """Whether the GPU would wait for the host inside a block: the first call is queued at
    2*queue_ms (a slow first call), call k at (k+1)*queue_ms, and each takes device_ms on the GPU."""
    gpu_free = head
    for k in range(1, calls + 1):
        queued = (k + 1) * queue_ms if k > 1 else 2 * queue_ms
        if queued > gpu_free + 1e-12:
            return True
        gpu_free += device_ms
    return False


@pytest.mark.parametrize("calls", [1, 3, 10, 100])
@pytest.mark.parametrize("queue_ms", [0.005, 0.03, 0.4, 1.0])
@pytest.mark.parametrize("device_ms", [0.001, 0.1, 1.6, 22.0])
def test_the_head_start_keeps_the_gpu_busy_for_the_whole_block(calls, queue_ms, device_ms):
    head = head_start_ms(queue_ms, device_ms, calls)
    assert head < HEAD_START_MAX_MS  # (no case of the grid is cut by the cap)
    assert not _gpu_waits(head, queue_ms, device_ms, calls), head


def test_the_head_start_of_gpu_bound_work_is_short():
    # a 1.6 ms GEMM queued in 20 us: only the first call needs covering (was 1.5 x the whole block's queueing)
    assert head_start_ms(0.02, 1.6, 10) == pytest.approx(0.06)
    assert head_start_ms(0.001, 1.6, 10) == HEAD_START_MIN_MS
    # launch-bound: the host falls behind by (q - d) per call
    assert head_start_ms(0.5, 0.1, 20) == pytest.approx(1.5 * (2 * 0.5 + 19 * 0.4))
    # nothing measured yet: 1 ms per call, the GPU assumed never to catch up
    assert head_start_ms(None, None, 10) == pytest.approx(15.0)
    assert head_start_ms(5.0, 0.0, 100) == HEAD_START_MAX_MS

    # a first call slower than 2q is covered by what it took
    assert head_start_ms(0.02, 1.6, 10, first_queue_ms=0.5) == pytest.approx(0.75)


def test_every_block_says_when_it_ran_on_the_monotonic_clock():
    import time

    before = time.monotonic()
    bench, rec = _run(_workload(lambda x: x * 3, [(torch.ones(8),)]), warmup=3, iters=9, block_size=3)
    after = time.monotonic()
    blocks = rec.blocks()
    assert {b.stage for b in blocks} == {"compile", "warmup", "measure"}
    assert all(b.t_start is not None and before <= b.t_start <= b.t_end <= after for b in blocks)
    starts = [b.t_start for b in blocks]
    assert starts == sorted(starts)  # emitted in the order they ran (the CPU runs one block at a time)
    compile_block = rec.blocks("compile")[0]
    assert compile_block.t_end - compile_block.t_start == pytest.approx(bench.compile_s, abs=0.05)
