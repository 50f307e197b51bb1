"""The details screen's tabs that explain the number: Kernels, Host time, Graphs and breaks.

They read the profile pass (:class:`tui.engine.explain.kernels.Profile`) and the diagnostics
(:class:`tui.engine.payloads.Diagnostics`); nothing here computes a statistic.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from tui.app.components.details.fields import Field, count, field_rows, kv_table, section, seconds, yes_no
from tui.present.format import MISSING, fmt_ms, fmt_speedup, times
from tui.engine.explain.host_time import HOST_LABELS, HostSplit, graph_break_rows
from tui.engine.explain.kernels import Profile, SideProfile, short_kernel_name
from tui.engine.payloads import Diagnostics
from tui.engine.store.results import RunRecord
from tui.engine.measure.summary import RunSummary

__all__ = ["kernels_tab", "host_tab", "graphs_tab", "host_line", "TOP_KERNELS", "DIAGNOSTIC_FIELDS"]

#: Kernels listed per side in the Kernels tab (the JSON keeps them all).
TOP_KERNELS = 10

DIAGNOSTIC_FIELDS = (
    Field("graph_breaks", "graph breaks", count),
    Field("unique_graphs", "compiled graphs", count),
    Field("calls_captured", "ops captured in graphs", count),
    Field("resumes", "resume functions after a break", count),
    Field("compilations", "compilations", count),
    Field("recompiles", "recompiles", count),
    Field("recompiles_during_measure", "recompiles while measuring", count),
    Field("recompile_limit", "recompile limit", count),
    Field("recompile_limit_hit", "recompile limit hit", yes_no),
    Field("fail_on_recompile_stance", "measured with recompiles refused", yes_no),
    Field("cudagraph_skips", "CUDA-graph skips", count),
)


def _table(*headings: str, left: int = 1) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for number, heading in enumerate(headings):
        table.add_column(heading, justify="left" if number < left else "right",
                         overflow="fold" if number < left else "ellipsis", ratio=3 if number < left else None)
    return table


def _per_call(value: float | None, digits: int = 1) -> str:
    return MISSING if value is None else f"{value:.{digits}f}"


def _ratio(eager: float | None, compiled: float | None) -> str:
    """Compiled as a multiple of eager (``0.25×``: a quarter of eager's)."""
    if eager is None or compiled is None or eager <= 0:
        return MISSING
    return times(compiled / eager)


def _not_profiled(profile: Profile | None) -> list[RenderableType] | None:
    if profile is None:
        return [Text("no profile: the run did not get that far, or it was recorded before the profile pass",
                     style="dim")]
    if not profile.available:
        return [Text(f"no profile: {profile.why or 'not recorded'}", style="dim")]
    return None


def _measured(summary: RunSummary) -> tuple[float | None, float | None]:
    """Each side's measured median per call (the run's timing, no profiler), None where not measured."""
    eager, compiled = summary.eager.iter, summary.compiled.iter
    return None if eager is None else eager.median, None if compiled is None else compiled.median


def _sides_table(profile: Profile, summary: RunSummary) -> Table:
    eager, compiled = profile.eager, profile.compiled
    table = _table("per call", "eager", "compiled", "compiled/eager")
    rows = (("kernels", "kernels_per_call", 1), ("kernel launches", "launches_per_call", 1),
            ("CUDA-graph launches", "graph_launches_per_call", 1))  # fmt: skip
    for label, name, digits in rows:
        a, b = getattr(eager, name), getattr(compiled, name)
        table.add_row(label, _per_call(a, digits), _per_call(b, digits), _ratio(a, b))
    device = "kernel time, profiled (device)" if "cuda" in profile.activities else "kernel time, profiled (CPU)"
    for label, name in ((device, "kernel_ms_per_call"), ("wall time, profiled", "wall_ms_per_call")):
        a, b = getattr(eager, name), getattr(compiled, name)
        table.add_row(label, f"{fmt_ms(a)} ms", f"{fmt_ms(b)} ms", _ratio(a, b))
    a, b = _measured(summary)
    if a is not None or b is not None:
        table.add_row(Text("median, measured", style="bold"), Text(f"{fmt_ms(a)} ms", style="bold"),
                      Text(f"{fmt_ms(b)} ms", style="bold"), _ratio(a, b))
    return table


UNEVEN_OVERHEAD = 2.0
"""Profiled/measured factors of the two sides further apart than this: the profiler weighed the sides unequally,
and their profiled times do not compare (above what quiet runs showed: docs/BENCHMARKS.md §23)."""


def _overhead(profile: Profile, summary: RunSummary) -> Text:
    """The note under the table: the profiled times carry the profiler's overhead, by how much against the medians,
    and whether the sides' profiled times compare (they do not where the overhead weighed them unequally)."""
    factors: dict[str, float] = {}
    for side, median in zip(("eager", "compiled"), _measured(summary), strict=True):
        wall = profile.side(side).wall_ms_per_call
        if wall is not None and median:
            factors[side] = wall / median
    shown = ", ".join(f"{factor:.3g}× {side}" for side, factor in factors.items())
    against = f" (profiled wall time / measured median: {shown})" if factors else ""
    uneven = len(factors) == 2 and max(factors.values()) > UNEVEN_OVERHEAD * min(factors.values())
    advice = ("the profiler weighed the sides unequally, so compare each side's shares, not the sides' profiled "
              "times" if uneven else "compare the sides with each other")
    return Text(f"profiled: the profiler's overhead is in these times, and whatever else ran during the "
                f"{profile.calls} profiled calls{against}: {advice}; the measured medians are the run's timing",
                style="dim")


def _top_kernels(side: SideProfile) -> Table:
    table = _table("kernel", "per call", "profiled ms", "share")
    for row in side.kernels[:TOP_KERNELS]:
        calls = side.calls or 1
        table.add_row(Text(short_kernel_name(row.name)), f"{row.calls / calls:g}", fmt_ms(row.total_ms / calls),
                      f"{row.share:.0%}")
    return table


def _diff(profile: Profile) -> list[RenderableType]:
    parts: list[RenderableType] = [section("Which eager ops went into which compiled kernel")]
    if not profile.diff:
        return parts + [Text(profile.diff_why or "inductor mapped no kernel to eager ops", style="dim")]
    table = _table("compiled kernel", "eager ops", "eager ms", "compiled ms", "compiled/eager", left=2)
    groups_of = Counter(op for group in profile.diff for op in group.ops)
    for group in profile.diff[:TOP_KERNELS * 2]:
        ops = ", ".join(op.removeprefix("aten::") + ("*" if groups_of[op] > 1 else "") for op in group.ops)
        shared = any(groups_of[op] > 1 for op in group.ops)
        ratio = "shared*" if shared else _ratio(group.eager_ms_per_call, group.compiled_ms_per_call)
        table.add_row(Text(group.kernel), Text(ops), fmt_ms(group.eager_ms_per_call),
                      fmt_ms(group.compiled_ms_per_call), ratio)
    more = len(profile.diff) - TOP_KERNELS * 2
    notes = [f"and {more} more in the JSON export"] if more > 0 else []
    notes.append("per call, from inductor's provenance tracking; eager ms: those ops' whole time. * an op split over "
                 "several compiled kernels (a convolution's GEMM and its bias) counts in each: no ratio for those")
    return parts + [table] + [Text(note, style="dim") for note in notes]


def _cost(profile: Profile) -> Text:
    parts = [f"{profile.calls} calls per side profiled after measuring ({', '.join(profile.activities)})"]
    if profile.profile_s is not None:
        parts.append(f"the pass took {seconds(profile.profile_s)}")
    if profile.compile_s is not None:
        parts.append(f"its re-compile {seconds(profile.compile_s)}")
    return Text("; ".join(parts) + "; never part of the timings", style="dim")


def kernels_tab(record: RunRecord) -> list[RenderableType]:
    """Kernels per call, launches, kernel time beside the measured medians, the top kernels of each side, and the
    kernel diff."""
    profile = record.profile
    missing = _not_profiled(profile)
    if missing is not None:
        return [section("Kernels"), *missing]
    assert profile is not None
    summary = record.summary()
    parts: list[RenderableType] = [section("Kernels"), _sides_table(profile, summary), _overhead(profile, summary),
                                   _cost(profile)]
    for name in ("eager", "compiled"):
        parts += [section(f"Top kernels, {name}"), _top_kernels(profile.side(name))]
    return parts + _diff(profile)


def _split(record: RunRecord) -> HostSplit | None:
    profile = record.profile
    return profile.host if profile is not None and profile.available else None


def host_line(record: RunRecord) -> str | None:
    """One line for the launch-bound mark: the compiled call's host time and its two largest parts."""
    split = _split(record)
    if split is None or not split.rows:
        return None
    largest = sorted(split.rows, key=lambda row: -row.ms_per_call)[:2]
    parts = ", ".join(f"{HOST_LABELS.get(row.category, row.category)} {row.share:.0%}" for row in largest)
    return f"compiled call {fmt_ms(split.total_ms_per_call)} ms on the host: {parts} (Host time tab)"


def _split_table(split: HostSplit) -> RenderableType:
    table = _table("per compiled call", "ms", "share")
    for row in split.rows:
        table.add_row(HOST_LABELS.get(row.category, row.category), fmt_ms(row.ms_per_call), f"{row.share:.0%}")
    table.add_row(Text("compiled call, all", style="bold"), Text(fmt_ms(split.total_ms_per_call), style="bold"), "100%")
    if split.eager_ms_per_call is not None:
        table.add_row("eager call, for comparison", fmt_ms(split.eager_ms_per_call), "")
    return table


def host_tab(record: RunRecord, summary: RunSummary) -> list[RenderableType]:
    """Host time per call on each side, the host-inclusive speedup and where the compiled call's host time goes."""
    host = (summary.eager.host, summary.compiled.host)
    rows: list[tuple[str, Any]] = [
        ("eager, host per call", None if host[0] is None else f"{fmt_ms(host[0].median)} ms (median)"),
        ("compiled, host per call", None if host[1] is None else f"{fmt_ms(host[1].median)} ms (median)"),
        ("host-inclusive speedup", None if summary.host_speedup is None else
         fmt_speedup(summary.host_speedup, summary.host_speedup_ci_low, summary.host_speedup_ci_high)),
        ("launch-bound", summary.launch_bound),
    ]
    parts: list[RenderableType] = [section("Host time"), kv_table(rows)]
    if summary.one_clock:
        parts.append(Text("on the CPU one loop times both clocks: the host time per call is the measured "
                          "per-call time", style="dim"))
    if summary.launch_bound:
        parts.append(Text("launch-bound: the host's time per call exceeds the device's by 1.25× or more, so a "
                          "loop that never synchronises pays the host side", style="dim"))
    parts.append(section("Where the compiled call's host time goes (profile pass)"))
    split = _split(record)
    if split is None or not split.rows:
        profile = record.profile
        if profile is None:
            why = "no profile of this run"
        elif not profile.available:
            why = f"no profile: {profile.why or 'not recorded'}"  # as the Kernels tab says it
        else:
            why = "the profile pass recorded no host split"
        return parts + [Text(f"not known: {why}", style="dim")]
    parts.append(_split_table(split))
    parts.append(Text("exclusive times per call in the profiled calls, profiler overhead included: read the shares",
                      style="dim"))
    return parts


def _regions(profile: Profile | None) -> list[RenderableType]:
    parts: list[RenderableType] = [section("Compiled regions at run time (per compiled call)")]
    if profile is None or not profile.available or not profile.regions:
        why = "no profile" if profile is None or not profile.available else "the profiler saw no compiled region"
        return parts + [Text(why, style="dim")]
    table = _table("region", "exclusive ms", "in its graph ms")
    for row in profile.regions:
        table.add_row(Text(row.name.replace("Torch-Compiled Region: ", "frame ")), fmt_ms(row.exclusive_ms_per_call),
                      fmt_ms(row.graph_ms_per_call))
    parts.append(table)
    shares = graph_break_rows(profile.regions, profile.host)
    if len(profile.regions) > 1 and shares:
        words = ", ".join(f"{row.label} {fmt_ms(row.ms_per_call)} ms ({row.share:.0%})" for row in shares)
        parts.append(Text("per compiled call: " + words))
    if profile.eager_between_ms_per_call is not None:
        parts.append(Text(f"eager ops outside every compiled graph: {fmt_ms(profile.eager_between_ms_per_call)} ms"))
    parts.append(Text("frame N/M: dynamo's frame N, its compile M; exclusive: less the regions nested in it",
                      style="dim"))
    return parts


def _frames(diagnostics: Diagnostics) -> str | None:
    total, ok = diagnostics.frames_total, diagnostics.frames_ok
    if total is None:
        return None
    if total == 0 and (diagnostics.calls_captured or diagnostics.unique_graphs):
        return "not counted (dynamo's frame counter stayed at 0 for this run)"
    return f"{ok or 0} of {total} compiled"


def _compile_phases(diagnostics: Diagnostics, device: str) -> str | None:
    """Each phase's seconds, leaving out a phase at zero (one that did not run). Torch counts its wait for the
    generated kernels' compile as triton's whatever they are: on the CPU they are C++, and the label says so."""
    times = diagnostics.compile_times_s
    kernels = "kernel compile (triton)" if device.startswith("cuda") else "kernel compile (C++)"
    names = (("dynamo", "dynamo"), ("aot_autograd", "AOT autograd"), ("inductor", "inductor"),
             ("inductor_code_gen", "inductor code generation"), ("triton", kernels), ("backward", "backward"))
    parts = [f"{label} {seconds(getattr(times, name))}" for name, label in names if getattr(times, name)]
    return ", ".join(parts) + " (each includes the next)" if parts else None


def _cache(diagnostics: Diagnostics) -> str | None:
    values = (diagnostics.fxgraph_cache_hit, diagnostics.fxgraph_cache_miss, diagnostics.fxgraph_cache_bypass)
    if all(v is None for v in values):
        return None
    hit, miss, bypass = (v or 0 for v in values)
    return f"{hit} hit, {miss} miss, {bypass} bypassed"


def _reasons(heading: str, items: tuple[str, ...], expected: int | None = None) -> list[RenderableType]:
    if expected and not items:
        body = Text(f"  {expected} counted, but this torch recorded no reason", style="dim")
    else:
        body = Text("\n".join(f"  • {r}" for r in items), style="") if items else Text("  none", style="dim")
    return [Text(heading, style="bold"), body]


def graphs_tab(record: RunRecord) -> list[RenderableType]:
    """Graph breaks, recompiles and CUDA-graph skips with their reasons, and what each compiled region costs."""
    diagnostics = record.diagnostics
    parts: list[RenderableType] = [section("Graph breaks and recompiles")]
    if diagnostics == Diagnostics():
        return parts + [Text("no diagnostics (the run did not get that far)", style="dim")] + _regions(record.profile)
    rows = field_rows(diagnostics, DIAGNOSTIC_FIELDS)
    phases = _compile_phases(diagnostics, record.options.device)
    rows += [(label, value) for label, value in (("frames", _frames(diagnostics)),
                                                 ("FX-graph cache", _cache(diagnostics)),
                                                 ("compile time by phase", phases))
             if value is not None]  # fmt: skip
    parts.append(kv_table(rows))
    parts += _reasons("graph-break reasons:", diagnostics.graph_break_reasons)
    parts += _reasons("recompile reasons:", diagnostics.recompile_reasons, diagnostics.recompiles)
    parts += _reasons("CUDA-graph skip reasons:", diagnostics.cudagraph_skip_reasons, diagnostics.cudagraph_skips)
    if diagnostics.explain is not None:
        explain = diagnostics.explain
        parts += [section("torch._dynamo.explain"), kv_table([
            ("graphs", explain.graph_count), ("graph breaks", explain.graph_break_count),
            ("break reasons", explain.break_reasons), ("error", explain.error)])]
    return parts + _regions(record.profile)

