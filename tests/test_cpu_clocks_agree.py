"""A real CPU worker: its per-call and host-inclusive speedups agree (issue 26: both clocks are one on the CPU).

The worker times each call inside the one loop whose wall time is the host-inclusive time; the
parent's statistics take the per-call times as the host-inclusive ones (``Block.host_ms``). This
checks both ends against a real run: the worker's loop adds next to nothing to its calls, and the
two speedups and intervals of the summary agree.
"""

from __future__ import annotations

import asyncio
import statistics

import pytest

from tui.engine.options import RunOptions
from tui.engine.store.results import RunRecord
from tui.engine.runner import WorkerRunner

pytest.importorskip("torch")
pytestmark = [pytest.mark.slow, pytest.mark.torch]  # every test starts a real worker process


async def _run(options: RunOptions) -> RunRecord:
    record = RunRecord.new(options.validated())
    runner = WorkerRunner(keep_spare=False, sample_host=False)
    try:
        await runner.run(record)
    finally:
        await runner.aclose()
    return record


@pytest.mark.parametrize(("workload", "params", "mode", "fullgraph"),
                         [("pointwise", {"n": 512}, "default", False),
                          ("mlp", {}, "reduce-overhead", True)])  # fmt: skip
def test_per_call_and_host_inclusive_speedups_agree_on_the_cpu(workload, params, mode, fullgraph, compile_lab_home):
    options = RunOptions(workload=workload, params=params, device="cpu", mode=mode, fullgraph=fullgraph, iters=40,
                         block_size=10, warmup=2, profile=False)
    record = asyncio.run(_run(options))
    assert record.status == "done", record.error_message
    summary = record.summary()
    low, high = summary.speedup_ci_low, summary.speedup_ci_high
    host_low, host_high = summary.host_speedup_ci_low, summary.host_speedup_ci_high
    assert None not in (low, high, host_low, host_high)
    assert host_low <= summary.speedup <= host_high and low <= summary.host_speedup <= high
    assert summary.host_speedup == pytest.approx(summary.speedup) and summary.host_verdict is None
    # The one loop: a block's wall time per call is the mean of its calls plus the loop's own little
    # (a median over blocks: a preemption between two calls of one block is not the loop's).
    gaps = [(block.host_ms_per_call - statistics.fmean(block.ms)) / statistics.fmean(block.ms)
            for side in ("eager", "compiled") for block in record.samples[side] if block.stage == "measure"]
    assert -1e-3 <= statistics.median(gaps) <= 0.05, gaps
