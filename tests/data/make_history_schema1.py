"""Writes tests/data/history_schema1/ with the code of commit 2791984 (history schema 1).

Kept for the record of how the fixture was made; running it against newer code would write
the newer schema, so the committed files are the fixture, not this script's output.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakes.records import cuda_run_record  # noqa: E402
from tui.engine.history import History  # noqa: E402
from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.protocol import make_event  # noqa: E402
from tui.engine.results import RunRecord  # noqa: E402

target = Path(__file__).resolve().parent / "history_schema1"
history = History(target / "history.jsonl", target / "runs")

# 1. a full CUDA run: every summary field set, per-label stats, telemetry, env, diagnostics
options = RunOptions(workload="dynamic_shapes", params={"batch_sizes": "8,16", "width": 64}, backend="inductor",
                     mode="max-autotune", fullgraph=True, dynamic=True, dtype="bfloat16", tf32=True,
                     device="cuda", warmup=2, iters=20, block_size=5, l2_flush=True, cold_compile=True,
                     timeout_s=120.0, seed=7)
record = RunRecord("20261201-101010-aaaaaa", options, created=1764583810.25)
record.apply(make_event("ready", 0.0, pid=4242, python="3.11.7", torch="2.11.0+cu130"))
record.apply(make_event("started", 0.1, run_id=record.run_id, env={
    "torch": "2.11.0+cu130", "cuda": "13.0", "triton": "3.6.0", "python": "3.11.7", "device": "cuda:0",
    "gpu_name": "NVIDIA H200", "gpu_uuid": "GPU-12345678-1234-1234-1234-123456789abc", "driver": "580.159.04",
    "compute_capability": "9.0", "gpu_memory_mb": 143771, "num_threads": 16, "tf32_matmul": True, "tf32_cudnn": True}))
record.apply(make_event("phase", 0.2, phase="compiling"))
record.apply(make_event("compiled", 2.5, compile_s=2.25, diagnostics={
    "graph_breaks": 1, "graph_break_reasons": ["Data-dependent branching at x.py:3"], "unique_graphs": 2,
    "recompiles": 1, "recompile_reasons": ["size mismatch at index 0"], "cudagraph_skips": 0,
    "fxgraph_cache_hit": 0, "fxgraph_cache_miss": 2}))
record.apply(make_event("warning", 2.6, message="a worker warning"))
record.apply(make_event("phase", 3.0, phase="measuring"))
for index in range(4):
    for side, base, host in (("eager", 1.0, 1.4), ("compiled", 0.5, 0.9)):
        ms = [base + 0.01 * i for i in range(5)]
        labels = ["batch=8", "batch=16", "batch=8", "batch=16", "batch=8"]
        record.apply(make_event("block", 3.0 + index, side=side, stage="measure", index=index, clock="cuda_event",
                                ms=ms, wall_ms_per_call=host + 0.01 * index, labels=labels))
record.telemetry = {"sm_clock_mean_mhz": 1980.0, "sm_clock_min_mhz": 1755.0, "temp_max_c": 61.0,
                    "power_mean_w": 512.5, "energy_j": 1234.5, "energy_from": "counter",
                    "throttle_reasons": ["sw power cap"], "samples": 40, "errors": 0, "last_error": None,
                    "gpu_lost": False}
record.apply(make_event("measured", 9.0, compile_s=2.25, diagnostics={
    "graph_breaks": 1, "graph_break_reasons": ["Data-dependent branching at x.py:3"], "unique_graphs": 2,
    "recompiles": 1, "recompile_reasons": ["size mismatch at index 0"], "cudagraph_skips": 0,
    "fxgraph_cache_hit": 0, "fxgraph_cache_miss": 2, "recompiles_during_measure": 0},
    accuracy={"max_abs_err": 0.0123, "max_rel_err": 0.004, "atol": 0.05, "rtol": 0.05, "passed": True,
              "compared": 2048, "worst": "output", "problem": None, "reference": "eager"},
    memory={"eager_peak_mb": 120.5, "compiled_peak_mb": 98.25, "l2_flush_buffer_mb": 256},
    flops_per_call=2.5e9, bytes_per_call=4.0e6, warnings=["a worker warning"]))
record.apply(make_event("finished", 9.0))
history.append(record)

# 2. a launch-bound run from the shared fixture
history.append(cuda_run_record("20261201-101011-bbbbbb"))

# 3. a failed CPU run with no samples
failed = RunRecord("20261201-101012-cccccc", RunOptions(workload="graph_break", fullgraph=True), created=1764583812.0)
failed.apply(make_event("started", 0.1, env={"torch": "2.13.0+cpu", "device": "cpu", "cxx": "g++"}))
failed.apply(make_event("failed", 1.0, kind="graph_break", message="the graph broke under fullgraph=True",
                        detail="Traceback (most recent call last):\n  ...\n"))
history.append(failed)

# 4. a cancelled CPU run with some samples
cancelled = RunRecord("20261201-101013-dddddd", RunOptions(workload="matmul", params={"n": 64}), created=1764583813.0)
cancelled.apply(make_event("phase", 0.5, phase="measuring"))
cancelled.apply(make_event("block", 1.0, side="eager", stage="measure", index=0, clock="perf_counter",
                           ms=[0.2, 0.21, 0.19], wall_ms_per_call=0.2))
cancelled.fail("cancelled", "cancelled by the user")
history.append(cancelled)
print(f"wrote {history.path}")

# The summary CSV of the four runs as schema-1 code wrote it: a migrated history must give the same cells.
from tui.engine.export import write_csv  # noqa: E402

loaded, _ = history.load()
for item in loaded:
    item.ensure_samples()
write_csv(loaded, target / "expected_summary.csv")
