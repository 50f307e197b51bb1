"""The CUDA clock's arithmetic on the CPU, with faked CUDA events on a virtual clock (tests/fakes/fake_cuda.py).

What is pinned: the host-inclusive time is exactly a plain loop of the same calls with one
synchronize (per-call events cost the host nothing there), also for launch-bound work and a
workload that synchronises inside its call; device times are the kernels alone; the device
sub-blocks of a round are pipelined (block i+1 queued before block i is read, no rest between
them for GPU-bound work) and each block's times go to the right block and side; the head start
of a workload with an inner synchronize stays bounded; blocks carry their GPU time span.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from tests.fakes.fake_cuda import MONOTONIC_OFFSET_S, FakeCuda  # noqa: E402
from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.protocol import BlockTimed  # noqa: E402
from tui.engine.worker import clocks  # noqa: E402
from tui.engine.worker.blocks import host_block_repeats  # noqa: E402
from tui.engine.worker.clocks import BlockRun, BlockSpec  # noqa: E402
from tui.engine.worker.measure import Benchmark  # noqa: E402

CALLS = 10


@pytest.fixture
def fake(monkeypatch) -> FakeCuda:
    gpu = FakeCuda(event_host_ms=0.03)  # an event record costs the host 30 us (H200: 25-30 us per pair)
    gpu.install(monkeypatch, clocks)
    return gpu


def _round(clock: Any, steps: list[Callable], calls: int = CALLS) -> dict[int, BlockRun]:
    results: dict[int, BlockRun] = {}
    clock.run_round([BlockSpec(step, [()] * calls) for step in steps], results.__setitem__)
    assert sorted(results) == list(range(len(steps)))
    return results


def _plain_loop(device_ms: float, host_ms: float, inner_sync: bool = False, calls: int = CALLS) -> float:
    reference = FakeCuda()  # a fresh GPU and host, no event costs: nothing but the loop
    return reference.plain_loop_ms(reference.step("x", device_ms, host_ms, inner_sync), calls)


CASES = {
    "gpu-bound": (2.0, 0.2, False),
    "launch-bound": (0.1, 0.5, False),
    "inner synchronize": (0.3, 0.4, True),
}


@pytest.mark.parametrize("case", CASES)
def test_host_inclusive_time_is_a_plain_loop_of_the_same_calls(fake, case):
    device_ms, host_ms, inner = CASES[case]
    clock = fake.clock(clocks)
    eager = fake.step("E", device_ms, host_ms, inner)
    compiled = fake.step("C", device_ms / 2, host_ms / 2, inner)
    sides = [(device_ms, host_ms), (device_ms / 2, host_ms / 2)]
    last: list[float | None] = [None, None]  # no warm-up: the first host sub-block runs its calls once
    for _ in range(8):
        results = _round(clock, [eager, compiled])
        for index, (device, host) in enumerate(sides):
            calls = CALLS * host_block_repeats(CALLS, last[index])
            expected = _plain_loop(device, host, inner, calls=calls)
            assert results[index].host_ms_per_call == pytest.approx(expected, abs=1e-9)
            last[index] = results[index].host_ms_per_call
    # for the record: the launch-bound plain loop pays the host's 0.5 ms a call plus the last kernel's tail
    if case == "launch-bound":
        assert _plain_loop(device_ms, host_ms) == pytest.approx(0.5 + 0.1 / CALLS)


@pytest.mark.parametrize("device_ms, host_ms", [(2.0, 0.5), (0.3, 0.2), (0.05, 0.4)])
def test_a_host_sub_block_pays_its_start_and_end_as_a_long_loop_does(fake, device_ms, host_ms):
    # On an idle GPU the first call's launch and the final synchronize are a fixed cost per host
    # sub-block: over 10 calls of a GPU-bound step it read 2.5% above the steady state (2.05 ms for
    # 2 ms of kernels). Repeated to HOST_BLOCK_MIN_MS, the block reads the steady state within 1%.
    clock = fake.clock(clocks)
    step = fake.step("C", device_ms, host_ms)
    _warm(clock, step)
    steady = max(device_ms, host_ms)
    assert _plain_loop(device_ms, host_ms) > steady * 1.005 or device_ms < host_ms  # the bias being removed
    for _ in range(3):
        host = _round(clock, [step])[0].host_ms_per_call
        assert host == pytest.approx(steady, rel=0.01)
        assert host >= steady  # never faster than the slower side


@pytest.mark.parametrize("case", ["gpu-bound", "launch-bound"])
def test_device_times_are_the_kernels_alone(fake, case):
    device_ms, host_ms, _ = CASES[case]
    clock = fake.clock(clocks)
    eager, compiled = fake.step("E", device_ms, host_ms), fake.step("C", device_ms / 2, host_ms)
    for _ in range(6):
        results = _round(clock, [eager, compiled])
        assert results[0].ms == pytest.approx([device_ms] * CALLS, abs=1e-9)
        assert results[1].ms == pytest.approx([device_ms / 2] * CALLS, abs=1e-9)


def _warm(clock: Any, *steps: Callable) -> None:
    for step in steps:  # as the worker's warm-up blocks do: the clock learns each step's times
        clock.run_block(step, [()] * CALLS)
        clock.run_block(step, [()] * CALLS)


def test_gpu_bound_device_blocks_of_a_round_run_back_to_back(fake):
    clock = fake.clock(clocks)
    eager, compiled = fake.step("E", 2.0, 0.2), fake.step("C", 1.0, 0.2)
    _warm(clock, eager, compiled)
    for order in ([eager, compiled], [compiled, eager], [eager, compiled]):
        spins_before = len(fake.spins)
        results = _round(clock, order)
        # one head start per round, before the first device sub-block; the second one is queued
        # behind the first one's work and starts the moment it ends: the GPU does not rest
        assert len(fake.spins) - spins_before == 1
        assert results[1].t_start == pytest.approx(results[0].t_end, abs=1e-12)
        assert results[0].t_start < results[0].t_end < results[1].t_end
        first = 2.0 if order[0] is eager else 1.0
        assert results[0].ms == pytest.approx([first] * CALLS) and results[1].ms == pytest.approx([3.0 - first] * CALLS)


def test_the_next_block_is_queued_before_the_last_one_is_read(fake):
    clock = fake.clock(clocks)
    eager, compiled = fake.step("E", 2.0, 0.2), fake.step("C", 1.0, 0.2)
    _warm(clock, eager, compiled)
    fake.log.clear()
    read_at: dict[int, tuple[int, float]] = {}

    def done(index: int, run: BlockRun) -> None:
        read_at[index] = (len(fake.log), fake.host)

    clock.run_round([BlockSpec(eager, [()] * CALLS), BlockSpec(compiled, [()] * CALLS)], done)
    kernels = [(i, entry) for i, entry in enumerate(fake.log) if entry[0] == "kernel"]
    # the log: host sub-blocks (E, then C, each ended by a synchronize), then the device sub-blocks
    device_c = [i for i, entry in kernels if entry[1] == "C"][-CALLS:]
    device_e = [i for i, entry in kernels if entry[1] == "E"][-CALLS:]
    assert max(device_e) < min(device_c)
    # eager was read (and handed on) after every compiled call was queued, while they ran on the GPU
    assert read_at[0][0] > max(device_c)
    assert read_at[0][1] < fake.gpu_free
    assert read_at[1][0] > read_at[0][0]
    waits = [i for i, entry in enumerate(fake.log) if entry[0] in ("wait", "sync")]
    syncs_before_device = [i for i in waits if i < min(device_e)]
    assert len(syncs_before_device) >= 2  # each host sub-block ended with its synchronize
    assert not [i for i in waits if min(device_e) < i < max(device_c)]  # none between the device sub-blocks


def test_a_launch_bound_second_block_gets_the_head_start_its_backlog_does_not_cover(fake):
    clock = fake.clock(clocks)
    eager, compiled = fake.step("E", 0.1, 0.5), fake.step("C", 0.05, 0.5)
    _warm(clock, eager, compiled)
    spins_before = len(fake.spins)
    results = _round(clock, [eager, compiled])
    assert len(fake.spins) - spins_before == 2
    assert results[0].ms == pytest.approx([0.1] * CALLS) and results[1].ms == pytest.approx([0.05] * CALLS)


def test_the_head_start_of_a_workload_that_synchronises_inside_stays_bounded(fake):
    """With .item() inside the step, the first call waits for the whole spin; counting that
    wait made each spin 2.5x the last, up to 200 ms, and host times 100x too high."""
    clock = fake.clock(clocks)
    eager, compiled = fake.step("E", 0.3, 0.4, inner_sync=True), fake.step("C", 0.2, 0.4, inner_sync=True)
    per_call = _plain_loop(0.3, 0.4, True)
    device = []
    last = None
    for _ in range(30):
        results = _round(clock, [eager, compiled])
        device.append(results[0].ms)
        calls = CALLS * host_block_repeats(CALLS, last)
        assert results[0].host_ms_per_call == pytest.approx(_plain_loop(0.3, 0.4, True, calls=calls), abs=1e-9)
        last = results[0].host_ms_per_call
    assert max(fake.spins[5:]) < 10 * per_call
    # its device time is the GPU's whole call, waits for the host included (docs/METHOD.md)
    assert device[-1] == pytest.approx(device[-2]) and min(device[-1]) >= 0.3


def test_blocks_carry_their_gpu_span_on_the_monotonic_clock(fake):
    clock = fake.clock(clocks)
    eager, compiled = fake.step("E", 2.0, 0.2), fake.step("C", 1.0, 0.2)
    _warm(clock, eager, compiled)
    fake.kernels.clear()
    results = _round(clock, [eager, compiled])
    device_e = [k for k in fake.kernels if k[0] == "E"][-CALLS:]
    device_c = [k for k in fake.kernels if k[0] == "C"][-CALLS:]
    assert results[0].t_start == pytest.approx(device_e[0][1] / 1e3 + MONOTONIC_OFFSET_S)
    assert results[0].t_end == pytest.approx(device_e[-1][2] / 1e3 + MONOTONIC_OFFSET_S)
    assert results[1].t_start == pytest.approx(device_c[0][1] / 1e3 + MONOTONIC_OFFSET_S)
    assert results[1].t_end == pytest.approx(device_c[-1][2] / 1e3 + MONOTONIC_OFFSET_S)
    warm = clock.run_block(eager, [()] * 3)
    assert warm.host_ms_per_call is None and warm.t_start < warm.t_end  # warm-up blocks: device time only


def test_timing_events_are_made_once_and_reused(fake):
    clock = fake.clock(clocks)
    eager, compiled = fake.step("E", 0.1, 0.5), fake.step("C", 0.05, 0.5)
    _warm(clock, eager, compiled)
    _round(clock, [eager, compiled])
    made = fake.events_made
    for _ in range(5):
        results = _round(clock, [eager, compiled])
        assert results[0].ms == pytest.approx([0.1] * CALLS) and results[1].ms == pytest.approx([0.05] * CALLS)
    assert fake.events_made == made


def test_head_starts_are_sized_from_that_steps_last_block(fake):
    clock = fake.clock(clocks)
    step = fake.step("E", 0.0, 0.0)  # per-call (device ms, host ms) come from the calls' args
    other = fake.step("O", 0.0, 0.0)
    fake.event_host_ms = 0.0
    # launch-bound: the host needs 0.3 ms per call (1.5 for the first), the GPU 0.1-0.3 ms
    run = clock.run_block(step, [(0.2, 1.5), (0.1, 0.3), (0.3, 0.3)])
    assert run.ms == pytest.approx([0.2, 0.1, 0.3])
    assert fake.spins[-1] == pytest.approx(1.5 * 3 * 1.0)  # nothing known yet: 1 ms per call
    clock.run_block(step, [(0.2, 0.5)] * 4)
    # q = 0.3 (the calls after the first), first call 1.5, fastest call 0.1: 1.5 x (1.5 + 3 x (0.3 - 0.1))
    assert fake.spins[-1] == pytest.approx(1.5 * (1.5 + 3 * 0.2))
    assert clock.last_head_ms == pytest.approx(fake.spins[-1])
    # GPU-bound now (2 ms per call, queued in 0.5 ms): only 2q = 1 ms to cover
    clock.run_block(step, [(2.0, 0.5)] * 4)
    clock.run_block(step, [(2.0, 0.5)] * 4)
    assert fake.spins[-1] == pytest.approx(1.5 * 2 * 0.5, abs=2e-3)  # (whole spin cycles)
    clock.run_block(other, [(2.0, 0.5)] * 4)  # a step the clock has not seen
    assert fake.spins[-1] == pytest.approx(1.5 * 4 * 1.0, abs=2e-3)


# ----- through the Benchmark --------------------------------------------------


@dataclass
class _Built:
    eager_step: Callable
    compile_step: Callable
    input_sets: list
    labels: list | None = None
    train: bool = False


class _Recorder:
    def __init__(self) -> None:
        self.blocks: list[BlockTimed] = []
        self.warnings: list[str] = []

    def emit(self, event: Any) -> None:
        if isinstance(event, BlockTimed):
            self.blocks.append(event)

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def test_the_benchmark_attributes_each_block_to_its_side_in_abba_rounds(fake):
    eager, compiled = fake.step("E", 2.0, 0.3), fake.step("C", 0.5, 0.6)
    built = _Built(eager, lambda compile_fn: compiled, [()])
    recorder = _Recorder()
    bench = Benchmark(built, RunOptions(iters=20, block_size=5, warmup=0), torch.device("cpu"),
                      recorder.emit, recorder.warn)
    bench.clock = fake.clock(clocks)
    bench.compiled_step = compiled
    for side in ("eager", "compiled"):
        bench._block(side, "warmup", 5)
    bench.measure()
    measured = [b for b in recorder.blocks if b.stage == "measure"]
    assert [b.side for b in measured] == ["eager", "compiled", "compiled", "eager"] * 2
    assert [b.index for b in measured if b.side == "compiled"] == [0, 1, 2, 3]
    for block in measured:
        device, host = (2.0, 0.3) if block.side == "eager" else (0.5, 0.6)
        assert block.ms == pytest.approx((device,) * 5)
        # a plain loop's steady state (the host sub-block repeats its 5 calls to last HOST_BLOCK_MIN_MS)
        assert max(device, host) <= block.host_ms_per_call <= max(device, host) * 1.015
        assert block.t_start is not None and block.t_start < block.t_end
    spans = sorted((b.t_start, b.t_end) for b in measured)
    assert all(a[1] <= b[0] + 1e-12 for a, b in pairwise(spans))  # no two blocks' spans overlap
    assert bench.measured == {"eager": 20, "compiled": 20} and recorder.warnings == []
