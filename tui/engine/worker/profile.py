"""The profile pass: a few calls of each side under ``torch.profiler``, after the last timing block.

It never touches the timings: it runs once measuring has ended, on its own compiled function.
Inductor compiles once more for it, with provenance tracking on (which eager ops went into which
kernel) and, on the CPU, ``cpp.enable_kernel_profile`` (without it inductor's C++ kernels are
invisible to the profiler), and without its FX-graph cache (:func:`_lowering_caches_off`), so it
lowers the graph afresh; that compile is timed apart. The mapping is read from inductor's
structured-trace artifact ``inductor_provenance_tracking_node_mappings``.

A profiler that raises leaves a :class:`~tui.engine.explain.kernels.Profile` with ``available`` False
and why; the run still finishes. The counting itself is :mod:`tui.engine.explain.kernels` (no torch).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from tui.engine.explain.host_time import SYNC_RANGE, host_split, profiler_s
from tui.engine.explain.kernels import KernelGroup, Profile, kernel_diff, regions, side_profile
from tui.engine.explain.profile_types import RawEvent
from tui.engine.worker.failures import one_line

__all__ = ["PROFILE_CALLS", "PROFILE_WARM_S", "OnTrace", "run_profile", "flatten", "provenance_supported", "warm_calls"]

log = logging.getLogger(__name__)

#: Profiled calls per side (after one unprofiled call each).
PROFILE_CALLS = 5
#: On a GPU, each side's calls run this long under the profiler's warm-up steps (recorded, then
#: dropped) before the profiled ones: a power-capped card then runs at the clock it holds under
#: load, as in the timing loop, not at the boost clock of a card rested by the compile.
PROFILE_WARM_S = 0.5
#: At most this many warm-up calls (a launch-bound call of microseconds barely loads the card).
PROFILE_WARM_MAX_CALLS = 500
#: On the CPU, each side's profiled calls follow this long of the profiler's warm-up steps, and at least
#: PROFILE_WARM_CPU_MIN of them: the first traced calls of a process carry the profiler's own start-up, which
#: fell on eager, profiled first (docs/BENCHMARKS.md §23).
PROFILE_WARM_CPU_S = 0.05
PROFILE_WARM_CPU_MIN = 3
_MAPPING_ARTIFACT = "inductor_provenance_tracking_node_mappings"


def provenance_supported() -> str | None:
    """None when this torch has inductor provenance tracking, else why not (one line)."""
    trace = getattr(getattr(torch._inductor, "config", None), "trace", None)
    if not hasattr(trace, "provenance_tracking_level"):
        return f"torch {torch.__version__} has no inductor provenance tracking (trace.provenance_tracking_level)"
    try:
        from torch._logging._internal import trace_log  # noqa: F401
    except ImportError:
        return f"torch {torch.__version__} has no structured trace log to read the provenance from"
    return None


def _inductor_patch(cuda: bool) -> dict[str, Any]:
    import torch._inductor.config as config

    patch: dict[str, Any] = {}
    if provenance_supported() is None:
        patch["trace.provenance_tracking_level"] = 1
        patch.update(_lowering_caches_off(config))
    if not cuda and hasattr(config, "cpp") and hasattr(config.cpp, "enable_kernel_profile"):
        patch["cpp.enable_kernel_profile"] = True
    return patch


def _lowering_caches_off(config: Any) -> dict[str, Any]:
    """The inductor settings that make the profile pass lower its graph afresh.

    A cache hit skips the lowering that emits the provenance mapping, and the level is not in every
    torch's cache key: a re-compile that hits the FX graph cache (or the AOTAutograd cache, which
    bypasses itself when the FX graph cache is off) leaves the kernel diff empty. The autotuning
    caches stay on: they hold which kernel configuration won, not the lowering, so max-autotune's
    benchmarks of the timed compile are not run a second time. A torch without the FX graph cache
    switch gets every cache off, and so does one whose FX graph cache stays on under the patch:
    ``TORCHINDUCTOR_FX_GRAPH_CACHE=1`` in the environment (which workers inherit) overrides any patch.
    """
    if hasattr(config, "fx_graph_cache"):
        patch = {"fx_graph_cache": False}
        if hasattr(config, "fx_graph_remote_cache"):
            patch["fx_graph_remote_cache"] = False
        with config.patch(patch):
            honoured = not config.fx_graph_cache
        if honoured:
            return patch
    return {"force_disable_caches": True} if hasattr(config, "force_disable_caches") else {}


class _ArtifactCatcher(logging.Handler):
    """Keeps the payloads of inductor's provenance artifacts from the structured trace log."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.mappings: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        artifact = (getattr(record, "metadata", None) or {}).get("artifact") or {}
        if artifact.get("name") == _MAPPING_ARTIFACT:
            try:
                payload = json.loads(getattr(record, "payload", None) or "null")
            except ValueError:
                return
            if isinstance(payload, dict):
                self.mappings.append(payload)


@contextmanager
def _catch_provenance() -> Iterator[_ArtifactCatcher]:
    # trace_structured only builds its records while trace_log has a handler
    from torch._logging._internal import trace_log

    catcher = _ArtifactCatcher()
    level = trace_log.level
    trace_log.addHandler(catcher)
    trace_log.setLevel(logging.DEBUG)
    try:
        yield catcher
    finally:
        trace_log.removeHandler(catcher)
        trace_log.setLevel(level)


def flatten(events: Any) -> list[RawEvent]:
    """The profiler's FunctionEvents as :class:`RawEvent` s (device kernels apart from host ranges).

    Kineto lists each device kernel as an event of its own (device_type CUDA) and also under its
    launching op (``kernels``): the former is counted as a kernel, the latter gives the op its
    ``device_us`` (what an eager op cost on the GPU, for the kernel diff).
    """
    events = list(events)
    index = {id(event): i for i, event in enumerate(events)}
    result = []
    for event in events:
        time_us = float(event.time_range.elapsed_us())
        if "CPU" not in str(getattr(event, "device_type", "CPU")):
            result.append(RawEvent(name=event.name, device="cuda", self_us=time_us, total_us=time_us))
            continue
        parent, top = getattr(event, "cpu_parent", None), True
        while parent is not None:
            if parent.name.startswith("aten::"):
                top = False
                break
            parent = getattr(parent, "cpu_parent", None)
        parent = getattr(event, "cpu_parent", None)
        launched_us = sum(float(kernel.duration) for kernel in getattr(event, "kernels", None) or ())
        result.append(RawEvent(name=event.name, device="cpu", self_us=float(event.self_cpu_time_total),
                               total_us=time_us, top_op=top and event.name.startswith("aten::"),
                               parent=None if parent is None else index.get(id(parent)), device_us=launched_us))
    return result


def _one_call(step: Callable[[tuple], Any], args: tuple, cuda: bool, prepare: Callable[[], None] | None) -> None:
    """One call of ``step``, finished on the device."""
    if prepare is not None:
        prepare()
    step(args)
    if cuda:
        torch.cuda.synchronize()


#: Called with ``("eager" | "compiled", profiler)`` after each side's profile (e.g. to export a trace).
OnTrace = Callable[[str, Any], None]


@dataclass(frozen=True)
class _Side:
    """One side's profiled calls: their events, the loop's wall time, and its host time (before the synchronize)."""

    events: list[RawEvent]
    wall_s: float
    host_s: float


def warm_calls(call_s: float, cuda: bool) -> int:
    """How many warm-up calls keep the card busy for :data:`PROFILE_WARM_S`; on the CPU, the calls of
    :data:`PROFILE_WARM_CPU_S` (at least :data:`PROFILE_WARM_CPU_MIN`)."""
    if not cuda:
        return max(PROFILE_WARM_CPU_MIN, min(PROFILE_WARM_MAX_CALLS, math.ceil(PROFILE_WARM_CPU_S / max(call_s, 1e-6))))
    return max(1, min(PROFILE_WARM_MAX_CALLS, math.ceil(PROFILE_WARM_S / max(call_s, 1e-6))))


def _timed_call(step: Callable[[tuple], Any], args: tuple, cuda: bool, prepare: Callable[[], None] | None) -> float:
    start = time.perf_counter()
    _one_call(step, args, cuda, prepare)
    return time.perf_counter() - start


def _profiled(step: Callable[[tuple], Any], args: tuple, calls: int, cuda: bool,
              prepare: Callable[[], None] | None, side: str = "eager", on_trace: OnTrace | None = None,
              warm: int | None = None) -> _Side:
    """``calls`` profiled calls after one unprofiled call and ``warm`` warm-up calls (default: :func:`warm_calls`).

    The warm-up calls are the profiler's own warm-up steps (``torch.profiler.schedule``): traced, then
    dropped, so only the ``calls`` calls are in the events, and no rest lies between them.
    """
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    _one_call(step, args, cuda, prepare)  # unprofiled: lazy initialisation stays out of the profile
    if warm is None:
        warm = warm_calls(_timed_call(step, args, cuda, prepare), cuda)
    plan = schedule(wait=0, warmup=warm, active=calls, repeat=1) if warm else None
    with profile(activities=activities, schedule=plan) as prof:
        for _ in range(warm):
            if prepare is not None:
                prepare()
            step(args)
            prof.step()
        start = time.perf_counter()
        for _ in range(calls):
            if prepare is not None:
                prepare()
            step(args)
        host_s = time.perf_counter() - start
        if cuda:
            # named, so the host split can leave the wait for the GPU out of the calls' host time
            with record_function(SYNC_RANGE):
                torch.cuda.synchronize()
        wall_s = time.perf_counter() - start
    if on_trace is not None:
        on_trace(side, prof)
    # the schedule's step range would enclose the profiled calls: left out, they are top level as without one
    kept = [event for event in prof.events() if not event.name.startswith("ProfilerStep")]
    return _Side(flatten(kept), wall_s, host_s)


def run_profile(built: Any, compile_fn: Callable, cuda: bool, prepare: Callable[[], None] | None = None,
                calls: int = PROFILE_CALLS, on_trace: OnTrace | None = None) -> Profile:
    """Profile ``calls`` calls of each side of ``built``; never raises for the profiler's sake.

    ``on_trace``: called with each side's name and its finished ``torch.profiler.profile``.
    """
    started = time.perf_counter()
    activities = ("cpu", "cuda") if cuda else ("cpu",)
    try:
        return _run(built, compile_fn, cuda, prepare, calls, started, activities, on_trace)
    except Exception as exc:  # the profile says why it is missing
        log.info("the profile pass failed", exc_info=True)
        return Profile(available=False, activities=activities, calls=calls,
                       why=f"the profile pass raised {type(exc).__name__}: {one_line(str(exc), 200)}",
                       profile_s=time.perf_counter() - started)


def _run(built: Any, compile_fn: Callable, cuda: bool, prepare: Callable[[], None] | None, calls: int,
         started: float, activities: tuple[str, ...], on_trace: OnTrace | None = None) -> Profile:
    import torch._inductor.config as config

    args = built.input_sets[0]
    eager_side = _profiled(built.eager_step, args, calls, cuda, None, "eager", on_trace)
    eager = side_profile(eager_side.events, calls, cuda, eager_side.wall_s)

    # a fresh dynamo cache: the measured function's code was compiled without the patch
    torch._dynamo.reset()
    compile_start = time.perf_counter()
    with config.patch(_inductor_patch(cuda)), _catch_provenance() as catcher:
        step = built.compile_step(compile_fn)
        _one_call(step, args, cuda, prepare)  # compiles
        compile_s = time.perf_counter() - compile_start
        compiled_side = _profiled(step, args, calls, cuda, prepare, "compiled", on_trace)
    compiled = side_profile(compiled_side.events, calls, cuda, compiled_side.wall_s)
    eager_host_s = eager_side.host_s - profiler_s(eager_side.events)
    host = host_split(compiled_side.events, calls, compiled_side.host_s, eager_host_s)
    region_rows, between_ms = regions(compiled_side.events, calls, host.total_ms_per_call if host else None)

    diff: tuple[KernelGroup, ...] = ()
    diff_why = provenance_supported()
    if diff_why is None:
        try:
            diff = kernel_diff(_joined(catcher.mappings), eager, compiled)
        except ValueError as exc:
            diff_why = f"no provenance from inductor ({exc})" if catcher.mappings else \
                "inductor emitted no provenance mapping (no inductor graph?)"
    return Profile(available=True, activities=activities, calls=calls, profile_s=time.perf_counter() - started,
                   compile_s=compile_s, eager=eager, compiled=compiled, diff=diff, diff_why=diff_why,
                   regions=region_rows, eager_between_ms_per_call=between_ms, host=host)


def _joined(mappings: list[dict]) -> dict[str, dict[str, list]]:
    """Inductor's provenance mappings, one per graph, joined node by node.

    A kernel name two graphs share becomes one group with both graphs' nodes (a dict update
    would keep only the last graph's).
    """
    joined: dict[str, dict[str, list]] = {}
    for mapping in mappings:
        for key, value in mapping.items():
            for name, nodes in (value.items() if isinstance(value, dict) else ()):
                kept = joined.setdefault(key, {}).setdefault(name, [])
                kept.extend(n for n in (nodes if isinstance(nodes, list) else ()) if n not in kept)
    return joined
