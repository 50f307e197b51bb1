"""A history of many runs, written fast, for the big-history tests and ``benchmarks/history_perf.py``.

Eight real, ended records (several workloads, modes, statuses) give genuine lines (what
:meth:`~tui.engine.store.history.History.append` writes); the file repeats them with fresh run ids (no
samples files), so 20,000 lines take about a second to write.
"""

from __future__ import annotations

import json
from pathlib import Path

from tui.engine.store.history import SCHEMA
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.store.results import RunRecord

__all__ = ["write_big_history", "big_run_id"]

_TEMPLATES = (
    ("pointwise", {"n": 4096}, "default", None),
    ("pointwise", {"n": 512}, "reduce-overhead", None),
    ("mlp", {}, "default", None),
    ("mlp", {}, "max-autotune", None),
    ("pointwise", {"n": 1024}, "default", "timeout"),
    ("mlp", {}, "reduce-overhead", None),
    ("pointwise", {"n": 64}, "default", "runtime_error"),
    ("mlp", {}, "default", None),
)


def big_run_id(index: int) -> str:
    """The run id of line ``index`` (0-based) of a big history."""
    return f"20250101-000000-big{index:06d}"


def _template(index: int, workload: str, params: dict, mode: str, fail: str | None) -> dict:
    options = RunOptions(workload=workload, params=params, mode=mode).validated()
    record = RunRecord(f"template-{index}", options, created=1735689600.0 + index)
    record.apply(make_event("started", 0.0, env={"torch": "2.13.0", "device": "cpu"}))
    record.apply(
        make_event("compiled", 0.5, compile_s=1.5 + index, diagnostics={"graph_breaks": index % 3, "recompiles": 0})
    )
    speed = 1.0 + index / 4
    for block in range(3):
        for side, base in (("eager", speed), ("compiled", 1.0)):
            record.apply(make_event("block", 1.0 + block, side=side, stage="measure", index=block, clock="perf_counter",
                                    ms=[base, base * 1.05, base * 0.95] * 4, host_ms_per_call=base))  # fmt: skip
    if fail:
        record.fail(fail, f"{fail} in the template")
    else:
        record.apply(make_event("measured", 5.0, accuracy={"passed": True, "max_abs_err": 0.0}, warnings=[]))
        record.apply(make_event("finished", 5.0))
    return record.to_json(samples=False)


def write_big_history(path: Path, count: int) -> list[str]:
    """Write ``count`` history lines to ``path`` (a fresh file); returns their run ids in order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"schema": SCHEMA, **_template(i, *spec), "samples_file": None} for i, spec in enumerate(_TEMPLATES)]
    run_ids = [big_run_id(i) for i in range(count)]
    with path.open("w") as handle:
        for index, run_id in enumerate(run_ids):
            line = lines[index % len(lines)]
            line["run_id"] = run_id
            handle.write(json.dumps(line, separators=(",", ":"), allow_nan=False) + "\n")
    return run_ids
