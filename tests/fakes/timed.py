"""Finished runs with made-up, seeded per-iteration times: what ``compare`` tests compare.

Import as ``from fakes.timed import timed_run`` (pytest puts ``tests/`` on sys.path).
"""

from __future__ import annotations

import random
from typing import Any

from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.store.results import RunRecord
from tui.telemetry.model import RunTelemetry

__all__ = ["timed_run", "pointwise"]


def pointwise(**changes: Any) -> RunOptions:
    """The CPU pointwise configuration the tests compare (n=512, inductor unless changed)."""
    values: dict[str, Any] = dict(workload="pointwise", params={"n": 512}, iters=80, block_size=10)
    values.update(changes)
    return RunOptions(**values)


def timed_run(run_id: str, options: RunOptions | None = None, *, eager: float = 2.0, compiled: float = 1.0,
              blocks: int = 8, size: int = 10, jitter: float = 0.005, seed: int = 0, torch: str = "2.13.0",
              host: tuple[float, float] | None = None, other_cpu_cores: float | None = None,
              created: float = 1764583810.0, session_id: str | None = None, group_id: str | None = None,
              repeat: int = 0, failed: bool = False, drift: float = 0.0, accurate: bool | None = True) -> RunRecord:
    """A done run: ``blocks`` interleaved blocks of ``size`` times per side around ``eager`` / ``compiled`` ms.

    Each time is its median times ``1 + uniform(-jitter, jitter)`` (seeded). ``host``: each side's
    host-inclusive ms per call (the device clock, CUDA events, is used then); else the CPU clock, its
    host time the block's mean. ``other_cpu_cores``: what other processes used while it measured.
    ``drift``: the compiled side's times grow evenly by this share from the first block to the last.
    ``accurate``: the accuracy check's ``passed`` (None: not checked).
    """
    options = options or pointwise()
    rng = random.Random(seed)
    record = RunRecord(run_id, options, created=created, session_id=session_id, group_id=group_id, repeat=repeat)
    env = {"torch": torch, "gpu_name": "Fake H200"} if host else {"torch": torch}
    record.apply(make_event("started", 0.0, env=env))
    if failed:
        record.fail("compile_error", "compile failed: fake inductor error")
        return record
    record.apply(make_event("phase", 0.2, phase="measuring"))
    clock = "cuda_event" if host else "perf_counter"
    for index in range(blocks):
        grown = compiled * (1 + drift * index / max(1, blocks - 1))
        for number, (side, ms) in enumerate((("eager", eager), ("compiled", grown))):
            values = [ms * (1 + rng.uniform(-jitter, jitter)) for _ in range(size)]
            per_call = host[number] * (1 + rng.uniform(-jitter, jitter)) if host else sum(values) / size
            record.apply(make_event("block", 1.0 + index, side=side, stage="measure", index=index, clock=clock,
                                    ms=values, host_ms_per_call=per_call))  # fmt: skip
    if other_cpu_cores is not None:
        record.set_telemetry(RunTelemetry(other_cpu_cores=other_cpu_cores))
    record.apply(make_event("measured", 9.0, diagnostics={}, accuracy={"passed": accurate}, memory={}, warnings=[]))
    record.apply(make_event("finished", 9.0))
    return record
