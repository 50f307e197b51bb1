"""What a compiled run can tell about itself, read from dynamo's records.

:func:`snapshot` copies ``torch._dynamo.utils.counters`` and notes the time;
:func:`report` diffs two snapshots and reads the compilation metrics recorded since the
first one, as a :class:`~tui.engine.payloads.Diagnostics`. Counter names were checked on
torch 2.13: a data-dependent branch is not counted under ``counters["graph_break"]`` there,
its reason lands in ``counters["unimplemented"]`` (so both are read). Every private API is read defensively.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from tui.engine.payloads import CompileTimes, Diagnostics, Explain
from tui.engine.worker.failures import graph_break_summary, one_line

__all__ = ["Snapshot", "snapshot", "report", "explain_pass", "RECOMPILE_LIMIT_WARNING", "NO_GRAPH_WARNING",
           "no_graph"]

log = logging.getLogger(__name__)

RECOMPILE_LIMIT_WARNING = "hit the recompile limit: later calls ran eagerly"
NO_GRAPH_WARNING = ("nothing was compiled: dynamo captured no graph (no tensor operation to trace), so the compiled "
                    "side is the function run by Python behind dynamo's guard checks, and its time is that overhead")


def no_graph(report: Diagnostics) -> bool:
    """Whether the compiled function captured no graph at all: a function of no tensor operation (one that returns a
    string, or only reads Python values), or frames dynamo skipped. Its "speedup" is dynamo's overhead against a
    plain call, not a compiled model's; unknown (an older torch's counters) is not said."""
    return report.unique_graphs == 0
_LIMIT_MARKERS = ("recompile limit", "recompile_limit", "cache_size_limit", "cache size limit")


@dataclass
class Snapshot:
    """Dynamo's counters at one moment, and that moment (wall clock, for the metrics records)."""

    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    wall_time: float = 0.0


def _counters() -> dict[str, dict[str, int]]:
    try:
        from torch._dynamo.utils import counters
    except ImportError:  # a private module: a torch without it counts nothing
        return {}
    copied: dict[str, dict[str, int]] = {}
    for group, values in list(counters.items()):
        try:
            copied[str(group)] = {str(k): v for k, v in dict(values).items() if isinstance(v, (int, float))}
        except (TypeError, ValueError):  # a group that is not a mapping of counts
            log.debug("dynamo's counter group %r was not read", group, exc_info=True)
    return copied


def snapshot() -> Snapshot:
    """Copy dynamo's counters now."""
    return Snapshot(_counters(), time.time())


def _diff(before: Snapshot, after: Snapshot) -> dict[str, dict[str, int]]:
    result: dict[str, dict[str, int]] = {}
    for group, values in after.counters.items():
        old = before.counters.get(group, {})
        changed = {k: v - old.get(k, 0) for k, v in values.items() if v - old.get(k, 0)}
        if changed:
            result[group] = changed
    return result


def _metrics_since(wall_time: float) -> list[Any]:
    try:
        from torch._dynamo.utils import get_compilation_metrics

        records = list(get_compilation_metrics())
    except Exception:  # a private API that moves between torch versions
        log.debug("dynamo's compilation metrics were not read", exc_info=True)
        return []
    # start_time is epoch seconds; a small margin for clock granularity
    return [r for r in records if (getattr(r, "start_time", None) or 0.0) >= wall_time - 1e-3]


def _seconds(records: list[Any], name: str, scale: float) -> float | None:
    values = [v for v in (getattr(r, name, None) for r in records) if isinstance(v, (int, float))]
    return round(sum(values) * scale, 6) if values else None


def _is_limit(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in _LIMIT_MARKERS)


def report(before: Snapshot, after: Snapshot | None = None) -> Diagnostics:
    """Graph breaks, graphs, recompiles, CUDA-graph skips, cache hits and compile times since ``before``."""
    after = after or snapshot()
    diff = _diff(before, after)
    records = _metrics_since(before.wall_time)

    unimplemented = diff.get("unimplemented", {})
    explicit = diff.get("graph_break", {})
    break_keys = [k for k in list(explicit) + list(unimplemented) if not _is_limit(k)]
    reasons: list[str] = []
    for key in break_keys:
        summary = one_line(graph_break_summary(key), 300)
        if summary not in reasons:
            reasons.append(summary)

    recompile_reasons: list[str] = []
    for record in records:
        reason = getattr(record, "recompile_reason", None)
        if reason:
            recompile_reasons.append(one_line(str(reason), 300))

    limit_hit = any(_is_limit(k) for k in unimplemented) or any(
        _is_limit(str(getattr(r, "fail_reason", "") or "")) for r in records
    )
    skip_reasons = sorted({one_line(str(r.cudagraph_skip_reason), 200) for r in records
                           if getattr(r, "cudagraph_skip_reason", None)})
    inductor = diff.get("inductor", {})
    stats = diff.get("stats", {})
    frames = diff.get("frames", {})
    return Diagnostics(
        graph_breaks=len(reasons),
        graph_break_reasons=tuple(reasons),
        unique_graphs=int(stats.get("unique_graphs", 0)),
        calls_captured=int(stats.get("calls_captured", 0)),
        resumes=int(sum(diff.get("resumes", {}).values())),
        frames_total=int(frames.get("total", 0)),
        frames_ok=int(frames.get("ok", 0)),
        recompiles=len(recompile_reasons),
        recompile_reasons=tuple(recompile_reasons),
        recompile_limit_hit=bool(limit_hit),
        recompile_limit=_recompile_limit(),
        cudagraph_skips=int(inductor.get("cudagraph_skips", 0)),
        cudagraph_skip_reasons=tuple(skip_reasons),
        fxgraph_cache_hit=int(inductor.get("fxgraph_cache_hit", 0)),
        fxgraph_cache_miss=int(inductor.get("fxgraph_cache_miss", 0)),
        fxgraph_cache_bypass=int(inductor.get("fxgraph_cache_bypass", 0)),
        compilations=len(records),
        compile_times_s=_compile_times(records),
    )


def _compile_times(records: list[Any]) -> CompileTimes:
    """Summed compile-phase times; nested (dynamo includes aot_autograd includes inductor)."""
    return CompileTimes(
        dynamo=_seconds(records, "dynamo_cumulative_compile_time_us", 1e-6),
        aot_autograd=_seconds(records, "aot_autograd_cumulative_compile_time_us", 1e-6),
        inductor=_seconds(records, "inductor_cumulative_compile_time_us", 1e-6),
        inductor_code_gen=_seconds(records, "inductor_code_gen_cumulative_compile_time_us", 1e-6),
        triton=_seconds(records, "triton_compile_time_us", 1e-6),
        backward=_seconds(records, "backward_cumulative_compile_time_us", 1e-6),
    )


def _recompile_limit() -> int | None:
    config = getattr(getattr(torch, "_dynamo", None), "config", None)
    for name in ("recompile_limit", "cache_size_limit"):
        value = getattr(config, name, None)
        if isinstance(value, int):
            return value
    return None


def explain_pass(fn: Callable[..., Any], args: tuple) -> Explain:
    """A separate ``torch._dynamo.explain`` trace of ``fn(*args)``.

    It resets dynamo and compiles with its own backend: never call it inside a timed run.
    Returns graph_count, graph_break_count and break_reasons, or an ``error``.
    """
    try:
        output = torch._dynamo.explain(fn)(*args)
    except Exception as exc:  # explain itself can fail where the run did not
        log.info("torch._dynamo.explain failed", exc_info=True)
        return Explain(error=one_line(f"{type(exc).__name__}: {exc}", 300))
    reasons = []
    for item in getattr(output, "break_reasons", []) or []:
        text = str(getattr(item, "reason", item))
        stack = getattr(item, "user_stack", None) or []
        frame = stack[-1] if stack else None
        reasons.append(one_line(graph_break_summary(text, frame), 300))
    return Explain(
        graph_count=_int_or_none(getattr(output, "graph_count", None)),
        graph_break_count=_int_or_none(getattr(output, "graph_break_count", None)),
        break_reasons=tuple(reasons),
    )


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
