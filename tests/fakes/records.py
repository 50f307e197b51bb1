"""Ready-made records for tests that show results (CLI table, app table, details screen).

Import as ``from fakes.records import cuda_run_record`` (pytest puts ``tests/`` on sys.path).
"""

from __future__ import annotations

from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.results import RunRecord

__all__ = ["cuda_run_record"]


def cuda_run_record(run_id: str = "20250101-000000-lbound", eager_host_ms: float = 0.155) -> RunRecord:
    """A finished CUDA-event run shaped like the seed's CNN on an H200 with reduce-overhead.

    Device time per call: eager 0.100 ms, compiled 0.116 ms (about 0.86x). Host-inclusive:
    eager ``eager_host_ms``, compiled 0.118 ms. By default (1.31x) eager's host time is over
    1.25x its device time, so the run is launch-bound; ``eager_host_ms=0.11`` makes it not.
    """
    options = RunOptions(workload="pointwise", params={"n": 4096}, mode="reduce-overhead", device="cuda", iters=20,
                         block_size=5)  # fmt: skip
    record = RunRecord(run_id, options, created=0.0)
    record.apply(make_event("started", 0.0, env={"torch": "2.13.0", "device": "cuda:0", "gpu_name": "Fake H200"}))
    record.apply(make_event("compiled", 0.1, compile_s=3.2, diagnostics={"graph_breaks": 0, "recompiles": 0}))
    record.apply(make_event("phase", 0.2, phase="measuring"))
    for index in range(4):
        for side, ms, host in (("eager", [0.099, 0.100, 0.101, 0.100, 0.100], eager_host_ms),
                               ("compiled", [0.115, 0.116, 0.117, 0.116, 0.116], 0.118)):  # fmt: skip
            record.apply(make_event("block", 1.0 + index, side=side, stage="measure", index=index, clock="cuda_event",
                                    ms=ms, wall_ms_per_call=host))  # fmt: skip
    record.apply(make_event("finished", 9.0, diagnostics={"graph_breaks": 0, "recompiles": 0},
                            accuracy={"passed": True, "max_abs_err": 0.0}, memory={}, warnings=[]))  # fmt: skip
    return record
