"""The GPU suite: real workers on a real CUDA GPU, through the runner, at small sizes.

Run with ``pytest -m gpu``; everything here is skipped (and reported as skipped) without CUDA.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tui.engine.catalog import WORKLOADS
from tui.engine.options import RunOptions
from tui.engine.store.results import RunRecord
from tui.engine.runner import WorkerRunner

pytestmark = [pytest.mark.gpu, pytest.mark.slow]
HERE = Path(__file__).parent

SMALL = {
    "matmul": {"n": 1024},
    "pointwise": {"n": 1024},
    "cnn": {"batch": 16},
    "mlp": {"batch": 64, "width": 256, "depth": 2},
    "transformer_block": {"batch": 2, "seq": 128, "width": 256, "heads": 4},
    "graph_break": {"n": 512},
    "dynamic_shapes": {"shapes": 3, "batch": 16, "width": 128},
}


def _options(workload: str, **changes) -> RunOptions:
    params = changes.pop("params", SMALL.get(workload, {}))
    base = dict(workload=workload, params=params, device="cuda", warmup=3, iters=20, block_size=5, timeout_s=300)
    base.update(changes)
    return RunOptions(**base).validated()


def run_all(options_list: list[RunOptions], telemetry=None) -> list[RunRecord]:
    """Run configurations one after another with one runner, return their records.

    The warm spare is on when there is a next run for it to serve.
    """

    async def go() -> list[RunRecord]:
        runner = WorkerRunner(telemetry=telemetry, keep_spare=len(options_list) > 1)
        records = []
        try:
            for options in options_list:
                records.append(await runner.run(RunRecord.new(options)))
        finally:
            await runner.aclose()
        return records

    return asyncio.run(go())


def _ok(record: RunRecord) -> None:
    assert record.status == "done", (record.options.label(), record.error_kind, record.error_message)


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_every_builtin_workload_runs_and_matches_eager(workload, mode):
    (record,) = run_all([_options(workload, mode=mode)])
    _ok(record)
    summary = record.summary()
    assert summary.clock == "cuda_event"
    assert summary.compiled.iter.median > 0 and summary.eager.iter.median > 0
    assert record.accuracy.passed is True, (workload, record.accuracy)
    assert record.env.gpu_uuid.startswith("GPU-")
    if mode == "reduce-overhead" and workload != "graph_break":
        assert (record.diagnostics.cudagraph_skips or 0) == 0, (workload, record.warnings)


def test_training_steps_compile_and_match_in_both_modes():
    configs = [_options(name, train=True, mode=mode) for name in ("cnn", "mlp", "transformer_block")
               for mode in ("default", "reduce-overhead")]
    configs.append(_options("mlp", train=True, compile_optimizer=True))
    for record in run_all(configs):
        _ok(record)
        assert record.accuracy.passed is True, (record.options.label(), record.accuracy)


def test_max_autotune_modes_on_one_small_workload():
    records = run_all([_options("matmul", params={"n": 512}, mode=m)
                       for m in ("max-autotune", "max-autotune-no-cudagraphs")])
    for record in records:
        _ok(record)
        assert record.accuracy.passed is True


def test_fullgraph_and_dynamic_on_graph_break_and_dynamic_shapes():
    broke, fell_back, dynamic = run_all([
        _options("graph_break", fullgraph=True),
        _options("dynamic_shapes", dynamic=False, params={"shapes": 10, "batch": 8, "width": 64}),
        _options("dynamic_shapes", dynamic=True, params={"shapes": 4, "batch": 8, "width": 64}),
    ])
    assert broke.status == "failed" and broke.error_kind == "graph_break"
    assert "data-dependent" in broke.error_message.lower() or "branch" in broke.error_message.lower()
    _ok(fell_back)
    assert any("recompile limit" in w for w in fell_back.warnings), fell_back.warnings
    _ok(dynamic)
    assert (dynamic.diagnostics.recompiles or 0) <= 1
    assert set(dynamic.summary().per_label) == {"batch=8", "batch=16", "batch=24", "batch=32"}


def test_reduce_overhead_replays_cuda_graphs():
    """The compiled calls launch CUDA graphs (seen by the profiler as cudaGraphLaunch)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from tui.engine.worker.measure import make_compile_fn
    from tui.engine.worker.workloads import build_workload

    options = _options("cnn", mode="reduce-overhead")
    built = build_workload(options, torch.device("cuda:0"), torch.float32)
    step = built.compile_step(make_compile_fn(options))
    args = built.input_sets[0]
    for _ in range(3):
        torch.compiler.cudagraph_mark_step_begin()
        step(args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(5):
            torch.compiler.cudagraph_mark_step_begin()
            step(args)
        torch.cuda.synchronize()
    launches = [e for e in prof.events() if e.name == "cudaGraphLaunch"]
    assert len(launches) >= 5
    torch._dynamo.reset()


def test_a_run_whose_cuda_graphs_were_skipped_says_so():
    (record,) = run_all([_options(str(HERE / "workloads" / "mutates_input.py"), mode="reduce-overhead", params={})])
    _ok(record)
    assert (record.diagnostics.cudagraph_skips or 0) >= 1
    assert any("CUDA graphs were skipped" in w for w in record.warnings), record.warnings


@pytest.mark.parametrize(
    ("dtype", "precision"),
    [("float32", "default"), ("float32", "ieee"), ("float32", "tf32"), ("bfloat16", "default"), ("float16", "default")],
)
def test_accuracy_passes_in_every_precision(dtype, precision):
    records = run_all([_options(name, dtype=dtype, precision=precision)
                       for name in ("matmul", "cnn", "transformer_block")])
    for record in records:
        _ok(record)
        assert record.accuracy.passed is True, (record.options.label(), record.accuracy)
        # default: torch's own flags (cuDNN TF32 on, matmul TF32 off); ieee and tf32 set both
        assert (record.env.tf32_matmul, record.env.tf32_cudnn) == {
            "default": (False, True), "ieee": (False, False), "tf32": (True, True)}[precision]


def test_nvml_reads_real_values_and_matches_the_run_gpu_by_uuid():
    from tui.telemetry.model import normalize_uuid
    from tui.telemetry.nvml import NvmlSource

    source = NvmlSource()
    assert source.available, source.reason
    (record,) = run_all([_options("matmul", iters=200, params={"n": 4096})], telemetry=source)
    _ok(record)
    snap = source.sample(record.env.gpu_uuid)
    assert snap is not None and normalize_uuid(snap.uuid) == normalize_uuid(record.env.gpu_uuid)
    assert snap.mem_total_mb and snap.mem_total_mb > 1000
    assert snap.temp_c is not None and snap.sm_clock_max_mhz
    tele = record.telemetry
    assert tele.samples >= 2, tele
    assert tele.sm_clock_mean_mhz and tele.power_mean_w, tele
    row = record.to_row()
    assert row["sm_clock_mean_mhz"] != "" and row["power_mean_w"] != ""
    source.close()


def test_out_of_memory_fails_cleanly_and_the_next_run_works():
    oom, after = run_all([
        _options(str(HERE / "workloads" / "too_big.py"), params={}),
        _options("pointwise", params={"n": 512}),
    ])
    assert oom.status == "failed" and oom.error_kind == "out_of_memory", (oom.error_kind, oom.error_message)
    assert "memory" in oom.error_message.lower()
    _ok(after)
