"""Writes tests/data/history_schema2/ with the code of commit e31a555 (history schema 2, the boolean ``tf32``).

Kept for the record of how the fixture was made; running it against newer code would write
the newer schema, so the committed files are the fixture, not this script's output. Made with
that commit's tree on PYTHONPATH: ``git archive e31a555 | tar -x -C /tmp/old`` then
``PYTHONPATH=/tmp/old:/tmp/old/tests python3 tests/data/make_history_schema2.py``.
"""

from __future__ import annotations

from pathlib import Path

from tui.engine.history import History
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.results import RunRecord

target = Path(__file__).resolve().parent / "history_schema2"
history = History(target / "history.jsonl", target / "runs")
_ENV = {"torch": "2.11.0+cu130", "cuda": "13.0", "device": "cuda:0", "gpu_name": "NVIDIA H200",
        "gpu_uuid": "GPU-12345678-1234-1234-1234-123456789abc", "driver": "580.159.04"}


def _done(run_id: str, options: RunOptions, tf32: bool, created: float) -> RunRecord:
    """A done CUDA run whose worker set both TF32 flags to the option, as the old worker did."""
    record = RunRecord(run_id, options, created=created)
    record.apply(make_event("started", 0.1, run_id=run_id, env={
        **_ENV, "tf32_matmul": tf32, "tf32_cudnn": tf32, "float32_matmul_precision": "high" if tf32 else "highest"}))
    record.apply(make_event("compiled", 2.0, compile_s=1.5, diagnostics={"graph_breaks": 0, "recompiles": 0}))
    record.apply(make_event("phase", 2.1, phase="measuring"))
    for index in range(3):
        for side, base in (("eager", 1.0), ("compiled", 0.8)):
            record.apply(make_event("block", 3.0 + index, side=side, stage="measure", index=index, clock="cuda_event",
                                    ms=[base + 0.01 * i for i in range(4)], host_ms_per_call=base + 0.2))
    record.apply(make_event("measured", 9.0, accuracy={"max_abs_err": 0.001, "max_rel_err": 0.001, "atol": 0.01,
                                                       "rtol": 0.01, "passed": True, "compared": 640},
                            memory={}, warnings=[]))
    record.apply(make_event("finished", 9.0))
    return record


# 1. a convolution run with TF32 off (the old default: cuDNN's TF32 turned off too)
history.append(_done("20261204-101010-aaaaaa", RunOptions(workload="cnn", params={"batch": 64}, device="cuda"),
                     tf32=False, created=1796378410.0))
# 2. a matmul run with the switch on
history.append(_done("20261204-101011-bbbbbb", RunOptions(workload="matmul", params={"n": 1024}, device="cuda",
                                                          tf32=True), tf32=True, created=1796378411.0))
# 3. a failed CPU run with no samples
failed = RunRecord("20261204-101012-cccccc", RunOptions(workload="graph_break", fullgraph=True), created=1796378412.0)
failed.apply(make_event("started", 0.1, env={"torch": "2.13.0+cpu", "device": "cpu", "tf32_matmul": False,
                                             "tf32_cudnn": False}))
failed.apply(make_event("failed", 1.0, kind="graph_break", message="the graph broke under fullgraph=True"))
history.append(failed)
print(f"wrote {history.path}")

# The summary CSV of the runs as schema-2 code wrote it: a migrated history must give the same cells.
from tui.engine.export import write_csv  # noqa: E402

loaded, _ = history.load()
for item in loaded:
    item.ensure_samples()
write_csv(loaded, target / "expected_summary.csv")
