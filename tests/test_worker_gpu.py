"""The worker on a CUDA GPU: CUDA-event clock, peak memory, CUDA graphs, uuid devices, L2 flush.

Marked ``gpu``: skipped (and reported as skipped) where there is no CUDA device.
"""

from __future__ import annotations

import pytest

from tui.engine.measure.clocks import CUDA_EVENT
from tui.engine.options import RunOptions
from tui.engine.protocol import BlockTimed, Finished, Measured

torch = pytest.importorskip("torch")

import test_worker_process  # noqa: E402  (after the torch skip)

# The worker fixtures, shared with test_worker_process (pytest finds them as module attributes).
next_worker = test_worker_process.next_worker
worker_factory = test_worker_process.worker_factory

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def _run(worker_factory, options: RunOptions, env=None) -> list:
    worker = worker_factory(env=env)
    worker.send(options)
    events = worker.events_until_end(timeout=400)
    code = worker.finish()
    assert isinstance(events[-1], Finished), (events[-1], worker.stderr()[-4000:])
    assert code == 0
    return events


def _results(events) -> Measured:
    """The run's ``measured`` event: what it measured besides its blocks."""
    return next(e for e in events if isinstance(e, Measured))


def _measured(events, side=None):
    return [e for e in events if isinstance(e, BlockTimed) and e.stage == "measure" and side in (None, e.side)]


def test_inductor_matmul_on_cuda_uses_cuda_events_and_reports_the_gpu(worker_factory):
    n = 1024
    events = _run(worker_factory, RunOptions(workload="matmul", device="cuda", params={"n": n},
                                             warmup=2, iters=20, block_size=5))
    started, results = events[1], _results(events)
    env = started.env
    assert env.gpu_uuid.startswith("GPU-") and env.gpu_name and env.compute_capability
    assert env.tf32_matmul is False and env.tf32_cudnn is True  # precision default: torch's own flags, untouched
    blocks = _measured(events)
    assert all(b.clock == CUDA_EVENT.name for b in blocks)
    assert all(0 < ms < 1000 for b in blocks for ms in b.ms)
    assert results.memory.eager_peak_mb > 0 and results.memory.compiled_peak_mb > 0
    assert results.flops_per_call == 2 * n**3
    assert results.accuracy.passed is True


def test_reduce_overhead_records_cuda_graphs_on_the_gpu(worker_factory):
    events = _run(worker_factory, RunOptions(workload="cnn", device="cuda", mode="reduce-overhead",
                                             params={"batch": 8}, warmup=3, iters=20, block_size=5))
    results = _results(events)
    assert results.diagnostics.cudagraph_skips == 0
    assert not any("CUDA graphs were skipped" in w for w in results.warnings)
    assert results.accuracy.passed is True, results.accuracy


def test_a_uuid_device_with_l2_flush_in_bf16(worker_factory):
    uuid = str(torch.cuda.get_device_properties(0).uuid)
    uuid = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
    # as the runner starts it: only that GPU visible
    events = _run(worker_factory, RunOptions(workload="pointwise", backend="eager", device=f"cuda:{uuid}",
                                             dtype="bfloat16", l2_flush=True, params={"n": 256},
                                             iters=4, block_size=2),
                  env={"CUDA_VISIBLE_DEVICES": uuid, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert events[1].env.gpu_uuid.lower() == uuid.lower()
    assert all(b.l2_flush is True for b in _measured(events))
    results = _results(events)
    assert any(w.startswith("l2_flush") for w in results.warnings)
    assert results.memory.l2_flush_buffer_mb == 256
    assert results.accuracy.passed is True and results.accuracy.atol >= 2e-2


def test_a_compiled_training_step_matches_eager_on_the_gpu(worker_factory):
    """reduce-overhead with a compiled optimizer: needs cudagraph_mark_step_begin() before each step."""
    events = _run(worker_factory, RunOptions(workload="mlp", device="cuda", train=True, mode="reduce-overhead",
                                             compile_optimizer=True, params={"batch": 32, "width": 64, "depth": 2},
                                             warmup=3, iters=10, block_size=5))
    results = _results(events)
    assert results.accuracy.passed is True, results.accuracy
    assert results.accuracy.compared > 64 * 64


def test_dynamic_shapes_on_the_gpu_label_every_iteration(worker_factory):
    events = _run(worker_factory, RunOptions(workload="dynamic_shapes", device="cuda",
                                             params={"shapes": 3, "batch": 16, "width": 64},
                                             warmup=1, iters=6, block_size=3))
    blocks = _measured(events)
    assert all(len(b.labels) == len(b.ms) for b in blocks)
    assert {label for b in blocks for label in b.labels} == {"batch=16", "batch=32", "batch=48"}
    assert _results(events).diagnostics.recompiles >= 1
    assert _results(events).diagnostics.recompiles_during_measure == 0
