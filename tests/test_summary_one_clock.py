"""On the CPU one loop times both clocks: the host-inclusive figures are the per-call ones (issue 26, item 3).

The CPU worker sends each block's per-call times and its wall time per call (the mean of its calls).
The statistics once took the host figures from those block means: one stalled call in a block of ten
carried into its mean in full, and the median of five block means swung with three stalls, so one
summary read ``speedup 1.66x [1.56, 1.77]`` beside ``host-inclusive speedup 0.10x [0.07, 8.60]``.
The rule now lives in :attr:`tui.engine.measure.samples.Block.host_ms`, and the summary, ``--repeat`` groups
and ``compare`` all read it. Constructed samples: no worker, no torch.
"""

from __future__ import annotations

from array import array

import pytest

from fakes.timed import pointwise
from tui.engine.compare import CompareSettings
from tui.engine.compare.judge import side_values
from tui.engine.protocol import make_event
from tui.engine.store.repeats import summarize_group
from tui.engine.store.results import RunRecord
from tui.engine.measure.samples import Block

EAGER_MS, COMPILED_MS, STALL_MS = 0.30, 0.18, 50.0
#: Compiled blocks with one stalled call each: three of five, enough to move a median of block means.
STALLED = (0, 2, 4)


def _cpu_run(run_id: str, stalled: tuple[int, ...] = STALLED, blocks: int = 5, size: int = 10,
             group_id: str | None = None, repeat: int = 0, clock: str = "perf_counter") -> RunRecord:
    """A done run whose ``stalled`` compiled blocks hold one call of ``STALL_MS``; host time = each block's mean,
    as the CPU clock sends it (or, with ``clock="cuda_event"``, the same numbers as a GPU's host sub-block)."""
    record = RunRecord(run_id, pointwise(iters=blocks * size, block_size=size), group_id=group_id, repeat=repeat)
    record.apply(make_event("started", 0.0, env={"torch": "2.13.0"}))
    record.apply(make_event("phase", 0.2, phase="measuring"))
    for index in range(blocks):
        for side, ms in (("eager", EAGER_MS), ("compiled", COMPILED_MS)):
            values = [ms * (1 + 0.01 * ((call * 7 + index) % 5 - 2)) for call in range(size)]
            if side == "compiled" and index in stalled:
                values[3] = STALL_MS
            record.apply(make_event("block", 1.0 + index, side=side, stage="measure", index=index, clock=clock,
                                    ms=values, host_ms_per_call=sum(values) / size))  # fmt: skip
    record.apply(make_event("measured", 9.0, diagnostics={}, accuracy={"passed": True}, memory={}, warnings=[]))
    record.apply(make_event("finished", 9.0))
    return record


def test_a_cpu_block_s_host_times_are_its_per_call_times_and_a_gpu_block_s_its_host_loop():
    ms = array("d", [1.0, 2.0, 3.0])
    assert list(Block("measure", 0, "perf_counter", ms, host_ms_per_call=2.5).host_ms) == [1.0, 2.0, 3.0]
    assert list(Block("measure", 0, "cuda_event", ms, host_ms_per_call=2.5).host_ms) == [2.5]
    assert list(Block("measure", 0, "cuda_event", ms).host_ms) == []
    assert list(Block("measure", 0, "", ms, host_ms_per_call=2.5).host_ms) == [2.5]  # unknown clock: as sent


def test_with_stalls_the_cpu_host_speedup_is_the_speedup_with_its_interval():
    summary = _cpu_run("cpu").summary()
    assert summary.speedup == pytest.approx(EAGER_MS / COMPILED_MS, rel=0.03)
    assert summary.speedup_ci_low is not None and summary.speedup_ci_high is not None
    # the host figures are the per-call ones, not a median of block means (0.06x here before)
    assert summary.host_speedup == summary.speedup
    assert (summary.host_speedup_ci_low, summary.host_speedup_ci_high) == (summary.speedup_ci_low,
                                                                          summary.speedup_ci_high)
    for side in ("eager", "compiled"):
        assert summary.side(side).host == summary.side(side).iter
    assert summary.one_clock and summary.launch_bound is None and summary.host_verdict is None


def test_the_same_numbers_on_a_device_clock_keep_the_host_loop_s_own_figures():
    """A GPU's host sub-block is a separate loop: its block times stay the host figures, stalls and all."""
    summary = _cpu_run("gpu", clock="cuda_event").summary()
    assert not summary.one_clock
    assert summary.host_speedup is not None and summary.host_speedup < 0.5 * summary.speedup
    assert summary.compiled.host is not None and summary.compiled.host.n == 5  # one value per block


def test_a_cpu_repeat_group_s_host_speedup_and_interval_are_its_speedup_s():
    runs = [_cpu_run(f"r{i}", stalled=STALLED[: 1 + i], group_id="g", repeat=i) for i in range(3)]
    group = summarize_group(runs)
    assert group.speedup is not None and group.speedup_xproc_ci_low is not None
    assert group.host_speedup == group.speedup
    assert (group.host_speedup_xproc_ci_low, group.host_speedup_xproc_ci_high) == (group.speedup_xproc_ci_low,
                                                                                  group.speedup_xproc_ci_high)
    assert group.host_verdict is None


def test_compare_reads_a_cpu_run_s_host_time_as_its_per_call_time():
    _, values, _ = side_values([_cpu_run("cpu")], CompareSettings())
    assert values["host"] == values["compiled"] == pytest.approx(COMPILED_MS, rel=0.03)
