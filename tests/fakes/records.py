"""Ready-made records for tests that show results (CLI table, app table, details screen).

Import as ``from fakes.records import cuda_run_record`` (pytest puts ``tests/`` on sys.path).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Union

from tui.engine.explain.artifacts import GraphCode
from tui.engine.options import RunOptions
from tui.engine.payloads import Accuracy, Diagnostics, Env, Memory
from tui.engine.explain.host_time import HostRow, HostSplit
from tui.engine.explain.kernels import Profile
from tui.engine.protocol import (
    ArtifactWritten,
    BlockTimed,
    Compiled,
    Finished,
    GraphCoded,
    Measured,
    PhaseChanged,
    Profiled,
    Started,
    WorkerWarning,
    make_event,
)
from tui.engine.store.wall_time import WallTime
from tui.engine.store.results import RunRecord
from tui.telemetry.model import RunTelemetry

__all__ = [
    "base_type", "cuda_run_record", "full_group", "full_instance", "full_record", "unset_fields", "EAGER_HOST",
    "GROUP_ONLY",
]


def base_type(hint: Any) -> Any:
    """``X`` for ``X | None``."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else Any
    return hint


def _full_value(hint: Any, name: str, seed: int) -> Any:
    hint = base_type(hint)
    origin = typing.get_origin(hint)
    if hint is bool:
        return True
    if hint is int:
        return seed + 2
    if hint is float:
        return seed + 0.25
    if hint is str:
        return f"{name} {seed}"
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return tuple(_full_value(item, f"{name}[{i}]", seed + i) for i in range(2))
    if origin is dict:
        item = typing.get_args(hint)[1]
        return {f"{name} key": _full_value(item, name, seed) if item is not Any else {"any": [1, "two"]}}
    if dataclasses.is_dataclass(hint):
        return full_instance(hint, seed)
    return {"any": [seed, "two"]}  # Any


def full_instance(cls: Any, seed: int = 0, **overrides: Any) -> Any:
    """An instance of the dataclass ``cls`` with EVERY field set to a value other than its default.

    Built from the annotations, so a field added later is set too (bools True, numbers from
    ``seed``, strings naming their field, two items in every tuple, one key in every dict,
    nested dataclasses filled the same way); ``overrides`` replace fields that need a value
    from a fixed set (a phase, a side).
    """
    hints = typing.get_type_hints(cls)
    values = {}
    for number, spec in enumerate(dataclasses.fields(cls)):
        if not spec.init:
            continue
        values[spec.name] = overrides[spec.name] if spec.name in overrides else _full_value(
            hints[spec.name], spec.name, seed + number)
    return cls(**values)


def unset_fields(instance: Any) -> list[str]:
    """The fields of a dataclass instance that still hold their default value (nested ones by path)."""
    unset = []
    for spec in dataclasses.fields(instance):
        value = getattr(instance, spec.name)
        if spec.default is not dataclasses.MISSING:
            default = spec.default
        elif spec.default_factory is not dataclasses.MISSING:
            default = spec.default_factory()
        else:
            default = dataclasses.MISSING
        if value == default:
            unset.append(spec.name)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            unset += [f"{spec.name}.{name}" for name in unset_fields(value)]
    return unset


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
                                    ms=ms, host_ms_per_call=host))  # fmt: skip
    record.apply(make_event("measured", 9.0, diagnostics={"graph_breaks": 0, "recompiles": 0},
                            accuracy={"passed": True, "max_abs_err": 0.0}, memory={}, warnings=[]))  # fmt: skip
    record.apply(make_event("finished", 9.0))
    return record


#: CSV columns only a configuration repeated across processes fills (tui.engine.store.repeats.GroupRecord).
GROUP_ONLY = ("speedup_xproc_ci_low", "speedup_xproc_ci_high", "host_speedup_xproc_ci_low",
              "host_speedup_xproc_ci_high", "speedup_process_spread", "host_speedup_process_spread")  # fmt: skip
LABELS = ("batch=8", "batch=16", "batch=8", "batch=16", "batch=8")
EAGER_HOST = (1.61, 1.72, 1.55, 1.68, 1.64, 1.59)  # host-inclusive ms per call, one per block


def full_record(run_id: str, *, failed: bool, group_id: str | None = None, repeat: int = 1,
                scale: float = 1.0) -> RunRecord:
    """A CUDA-event run with every field of the record, its payloads and its summary set.

    It is repeat ``repeat`` of the group ``group_id`` (default: its own id); ``scale``
    multiplies its compiled times (another process of the same configuration).
    """
    options = full_instance(RunOptions, 1, workload="dynamic_shapes", device="cuda:0", dtype="bfloat16",
                            mode="max-autotune", backend="aot_eager", profile=False, precision="ieee",
                            params={"batch_sizes": "8,16", "width": 64})  # fmt: skip
    record = RunRecord(run_id, options, created=1764583810.25, group_id=group_id or run_id, repeat=repeat,
                       session_id="20261201-101000-5e5510", tune_id="20261201-101000-70e001", tune_stage="confirmation",
                       concurrent_runs=3,
                       notes=("precision from the old TF32 switch: tf32 false read as ieee", "a second note"),
                       leftover_processes=2)
    record.apply(Started(t=0.1, run_id=run_id, env=full_instance(Env, 10), options={"as": "sent"}))
    record.apply(PhaseChanged(t=0.2, phase="compiling"))
    record.apply(BlockTimed(t=0.3, side="compiled", stage="compile", index=0, clock="perf_counter", ms=(2250.5,),
                            host_ms_per_call=2250.5))  # fmt: skip
    record.apply(Compiled(t=2.5, compile_s=2.25, diagnostics=full_instance(Diagnostics, 20)))
    record.apply(WorkerWarning(t=2.6, message="a worker\nwarning"))
    record.apply(BlockTimed(t=2.7, side="eager", stage="warmup", index=0, clock="cuda_event", ms=(1.4, 1.1, 1.05)))
    record.apply(PhaseChanged(t=3.0, phase="measuring"))
    for index, eager_host in enumerate(EAGER_HOST):
        for side, base, host in (("eager", 1.0, eager_host), ("compiled", 0.5 * scale, (0.9 + 0.01 * index) * scale)):
            ms = tuple(base + 0.01 * ((i + index) % 5) for i in range(5))
            record.apply(BlockTimed(t=3.0 + index, side=side, stage="measure", index=index, clock="cuda_event", ms=ms,
                                    host_ms_per_call=host, labels=LABELS, l2_flush=True))  # fmt: skip
    # One sample beyond each of Tukey's four fences (quartiles about base + 0.01 and + 0.03; the fences'
    # IQR is at least 3% of the median: 0.03 for eager, 0.02 itself for compiled).
    deltas = {"eager": (-0.06, -0.15, 0.10, 0.5), "compiled": (-0.035, -0.10, 0.075, 0.5)}
    for side, base in (("eager", 1.0), ("compiled", 0.5 * scale)):
        record.apply(BlockTimed(t=9.0, side=side, stage="measure", index=len(EAGER_HOST), clock="cuda_event",
                                ms=tuple(base + d for d in deltas[side]), host_ms_per_call=1.6,
                                labels=LABELS[:4], t_start=8.5, t_end=8.9))  # fmt: skip
    record.set_telemetry(full_instance(RunTelemetry, 40))
    accuracy, memory = full_instance(Accuracy, 30), full_instance(Memory, 50)
    guards = (HostRow("guards", 0.012, 0.1), HostRow("other", 0.108, 0.9))  # a category the CSV reads
    record.apply(Profiled(t=8.95, profile=full_instance(Profile, 70, host=full_instance(HostSplit, 80, rows=guards))))
    for index in range(2):
        record.apply(GraphCoded(t=8.96, graph=full_instance(GraphCode, 80 + 10 * index, index=index)))
    record.apply(ArtifactWritten(t=8.97, kind="trace", name="trace.json", size_bytes=1234))
    record.artifacts = dataclasses.replace(record.artifacts, torch_trace_dir="torch_trace")  # the runner sets it
    if failed:
        record.accuracy, record.memory = accuracy, memory
        record.flops_per_call, record.bytes_per_call = 2.5e9, 4.0e6
        record.fail("runtime_error", "the workload raised\nat the end", "Traceback (most recent call last):\n  ...\n")
    else:
        record.apply(Measured(t=9.0, compile_s=2.25, diagnostics=full_instance(Diagnostics, 60), accuracy=accuracy,
                              memory=memory, flops_per_call=2.5e9, bytes_per_call=4.0e6,
                              warnings=("a finished warning",), iters={"eager": 30, "compiled": 30}))  # fmt: skip
        record.apply(Finished(t=9.0))
    record.stop_clock()
    record.wall_time = full_instance(WallTime, 90)  # each part set, whatever the test's own clock read
    return record


def full_group(
    group_id: str = "20261201-101010-aaaaaa", scales: tuple[float, ...] = (1.0, 1.06, 0.97)
) -> list[RunRecord]:
    """Done :func:`full_record` runs of one configuration, one per process (compiled times scaled)."""
    run_ids = [group_id, *(f"{group_id[:-6]}{n:06x}" for n in range(1, len(scales)))]
    return [full_record(run_id, failed=False, group_id=group_id, repeat=number, scale=scale)
            for number, (run_id, scale) in enumerate(zip(run_ids, scales, strict=True))]
