"""Where a compiled call's host time goes, from the profile pass's ranges (torch-free).

The worker flattens the profiler's events (:class:`tui.engine.explain.profile_types.RawEvent`: name, device,
total time, parent) and :func:`host_split` gives every host range one category, then adds up
exclusive times: a range's own time less the ranges nested in it, so nothing counts twice and
the rows add up to the compiled call's host time per call. Times are those of the profiled
calls, so the profiler's cost per range is in them (several times the measured host time:
docs/BENCHMARKS.md, "Figures behind the code"); shares are what to read.

A range takes the category of the first pattern in :data:`HOST_PATTERNS` its name matches;
one that matches none takes its parent's. Torch 2.13 on the CPU shows, per call (nested as
indented)::

    TorchDynamo Cache Lookup                         guards: the cache lookup and guard checks
    Torch-Compiled Region: 0/0                       region_python: dynamo's, AOTAutograd's and
      Pregraph bytecode                              aot_wrappers     inductor's Python wrappers
      AOTDispatcher Runtime Wrapper Prologue         aot_wrappers
      ## Call CompiledFxGraph <key> ##               graph (its kernels and aten ops with it)
        graph_0_cpp_fused_add_mul_sin_0
      aten::is_nonzero                               between_graphs (after a graph break)
      TorchDynamo Cache Lookup                       guards (the next frame's)
      Torch-Compiled Region: 1/0 ...

A training step adds ``CompiledFunction`` and ``autograd::engine::evaluate_function:
CompiledFunctionBackward`` around its graphs (aot_wrappers). On a GPU the graph call holds
inductor's kernel launches (``triton_...`` ranges, ``cuLaunchKernel``, aten ops for extern
kernels): graph. A CUDA-graph replay (reduce-overhead) is a graph call with a ``cudaGraphLaunch``
(or ``cuGraphLaunch``) in it, which holds ``aten::_foreach_copy_`` (the inputs into the graph's
buffers), ``cudaStreamIsCapturing`` and ``cudaGraphLaunch``. That whole graph call
counts as ``cudagraph_replay``: the CUDA-graph tree's Python, its input copies and the launch.
Aten ops take a category by where they run: in a region outside any graph call
``between_graphs`` (the eager code between graphs: for a data-dependent branch its
``aten::item`` with its ``cudaMemcpyAsync`` and ``cudaStreamSynchronize``, the wait for the GPU;
in a graph when the backend has no graph-call range, eager and aot_eager), outside every region
``outside_regions`` with any other range there (a training step's loss, backward and optimizer;
on a GPU about 1 us of a top-level ``cudaDeviceSynchronize`` at the profiler's edge). ``other`` is
the rest of the host time, which no range covers: mostly torch.compile's entry (dynamo's Python
wrapper and eval-frame hook before the cache lookup), the step's own Python, the profiled loop.
The profiler's own ranges (:data:`PROFILER_RANGES`) and the worker's final synchronize
(:data:`SYNC_RANGE`) are no call's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tui.engine.explain.profile_types import RawEvent, RegionRow
from tui.typed import JsonRecord

__all__ = [
    "HostRow", "HostSplit", "BreakRow", "HOST_PATTERNS", "HOST_CATEGORIES", "HOST_LABELS", "SYNC_RANGE",
    "PROFILER_RANGES", "host_split", "profiler_s", "totals_without_profiler", "graph_break_rows",
]  # fmt: skip

#: (category, pattern on a range's name), first match first. Data, not code: a torch that names its
#: ranges differently gets a line here.
HOST_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("guards", re.compile(r"^TorchDynamo Cache Lookup")),
    ("cudagraph_replay", re.compile(r"^cu(da)?GraphLaunch")),
    ("graph", re.compile(r"^## Call CompiledFxGraph")),
    ("aot_wrappers", re.compile(r"^(AOTDispatcher|Pregraph bytecode|CompiledFunction"
                                r"|autograd::engine::evaluate_function: CompiledFunction)")),
    ("region_python", re.compile(r"^Torch-Compiled Region: ")),
)
#: Every category, in the order rows come.
HOST_CATEGORIES = ("guards", "aot_wrappers", "graph", "cudagraph_replay", "region_python", "between_graphs",
                   "outside_regions", "other")  # fmt: skip
HOST_LABELS = {
    "guards": "guards", "aot_wrappers": "AOT wrappers", "graph": "graph", "cudagraph_replay": "CUDA-graph replay",
    "region_python": "region Python", "between_graphs": "between graphs", "outside_regions": "outside regions",
    "other": "other",
}  # fmt: skip
#: The range the worker puts around its own synchronize after the profiled calls: not a call's host time.
SYNC_RANGE = "compile-lab: synchronize"
#: Ranges of the profiler's own inside the calls, taken out of the host time: CUPTI's buffer allocation
#: inside the first profiled call can take longer than the call itself (docs/BENCHMARKS.md, "Figures behind the code").
PROFILER_RANGES = re.compile(r"^Activity Buffer Request")
_COMPILED = frozenset({"guards", "graph", "aot_wrappers", "region_python", "cudagraph_replay"})
_REGION = "Torch-Compiled Region: "
_GRAPH_CALL = "## Call CompiledFxGraph"


@dataclass(frozen=True)
class HostRow(JsonRecord):
    """One category of the compiled call's host time (:data:`HOST_CATEGORIES`): ms per call, share of the call."""

    category: str = ""
    ms_per_call: float = 0.0
    share: float = 0.0


@dataclass(frozen=True)
class HostSplit(JsonRecord):
    """Where a compiled call's host time goes, per call, in the profile pass (the profiler's own ranges taken out,
    its cost per range left in: shares are what to read).

    ``total_ms_per_call``: the compiled side's host time per profiled call (the loop's wall time
    before its final synchronize; the ranges' sum where that is larger). ``rows``: the categories
    seen (``other`` always), in :data:`HOST_CATEGORIES` order; they add up to the total.
    ``eager_ms_per_call``: the eager side's host time per call, measured alike, for comparison.
    """

    total_ms_per_call: float = 0.0
    eager_ms_per_call: float | None = None
    rows: tuple[HostRow, ...] = ()

    def ms(self, category: str) -> float | None:
        """A category's ms per call (None: the profile saw none of it)."""
        return next((row.ms_per_call for row in self.rows if row.category == category), None)


@dataclass(frozen=True)
class BreakRow:
    """One line of what graph breaks cost at run time: a graph, the eager code between graphs, or the rest."""

    label: str
    ms_per_call: float
    share: float


def _own_categories(events: Sequence[RawEvent]) -> list[str | None]:
    """Each event's category by its own name (None: no pattern matches); graph calls that replay a CUDA graph."""
    own: list[str | None] = [None] * len(events)
    for index, event in enumerate(events):
        if event.device == "cpu":
            own[index] = next((category for category, pattern in HOST_PATTERNS if pattern.match(event.name)), None)
    for index, category in enumerate(own):
        if category == "cudagraph_replay":
            parent = events[index].parent
            while parent is not None and own[parent] != "graph":
                parent = events[parent].parent
            if parent is not None:
                own[parent] = "cudagraph_replay"
    return own


def _categories(events: Sequence[RawEvent], has_graph_calls: bool) -> list[str | None]:
    """Each host event's category: its own, else its parent's; aten ops (and ranges) by where they run.

    None: the worker's synchronize, or a device event; ``profiler``: the profiler's own ranges.
    """
    own = _own_categories(events)
    inside = "between_graphs" if has_graph_calls else "graph"
    result: list[str | None] = [None] * len(events)
    done = [False] * len(events)
    for index in range(len(events)):
        chain: list[int] = []
        node: int | None = index
        while node is not None and not done[node]:
            chain.append(node)
            node = events[node].parent
        above = result[node] if node is not None else "outside_regions"
        for i in reversed(chain):  # from the outermost event not yet resolved inwards
            above = _inherited(events[i], own[i], above, inside)
            result[i], done[i] = above, True
    return result


def _inherited(event: RawEvent, own: str | None, above: str | None, inside: str) -> str | None:
    """An event's category from its own (by name) and its parent's; ``inside``: what aten ops in a region are."""
    if event.device != "cpu" or event.name == SYNC_RANGE or above is None:
        return None
    if above != "profiler" and PROFILER_RANGES.match(event.name):
        return "profiler"
    if own is not None:
        return own
    if above == "region_python" and event.name.startswith("aten::"):
        return inside
    return above


def _exclusive_us(events: Sequence[RawEvent]) -> list[float]:
    """Each host event's own time: its total less its children's totals (never below 0)."""
    children_us = [0.0] * len(events)
    for event in events:
        if event.device == "cpu" and event.parent is not None:
            children_us[event.parent] += event.total_us
    return [max(0.0, e.total_us - children_us[i]) if e.device == "cpu" else 0.0 for i, e in enumerate(events)]


def profiler_s(events: Sequence[RawEvent]) -> float:
    """Seconds of the profiler's own ranges (:data:`PROFILER_RANGES`) among ``events`` (none under the worker's
    synchronize: that is after the calls)."""
    spent = zip(_categories(events, has_graph_calls=True), _exclusive_us(events), strict=True)
    return sum(us for category, us in spent if category == "profiler") / 1e6


def totals_without_profiler(events: Sequence[RawEvent]) -> list[float]:
    """Each event's total time less the profiler's own ranges (:data:`PROFILER_RANGES`) nested in it."""
    totals = [event.total_us for event in events]
    for event in events:
        if event.device == "cpu" and PROFILER_RANGES.match(event.name):
            parent = event.parent
            while parent is not None:
                totals[parent] -= event.total_us
                parent = events[parent].parent
    return totals


def host_split(events: Sequence[RawEvent], calls: int, host_s: float | None,
               eager_host_s: float | None = None) -> HostSplit | None:
    """The compiled side's host time per call by category (:data:`HOST_PATTERNS`), or None.

    ``host_s``: the wall time of the ``calls`` profiled compiled calls on the host, before the
    final synchronize (the profiler's own ranges in it, :data:`PROFILER_RANGES`, are taken out
    here); ``eager_host_s`` the eager side's, those already taken out (:func:`profiler_s`). None
    when there is no call or time to split, or no range of torch.compile's among the events
    (nothing honest to say).
    """
    if calls <= 0 or host_s is None:
        return None
    categories = _categories(events, any(e.name.startswith(_GRAPH_CALL) for e in events))
    if not _COMPILED.intersection(categories):
        return None
    spent_us: dict[str, float] = {}
    for category, exclusive in zip(categories, _exclusive_us(events), strict=True):
        if category is not None:
            spent_us[category] = spent_us.get(category, 0.0) + exclusive
    profiler_us = spent_us.pop("profiler", 0.0)
    ranges_us = sum(spent_us.values())
    total_us = max(host_s * 1e6 - profiler_us, ranges_us)
    spent_us["other"] = total_us - ranges_us
    rows = tuple(HostRow(category=name, ms_per_call=spent_us[name] / 1e3 / calls,
                         share=spent_us[name] / total_us if total_us > 0 else 0.0)
                 for name in HOST_CATEGORIES if name in spent_us)  # fmt: skip
    eager_ms = None if eager_host_s is None else eager_host_s * 1e3 / calls
    return HostSplit(total_ms_per_call=total_us / 1e3 / calls, eager_ms_per_call=eager_ms, rows=rows)


def _frame_order(name: str) -> tuple[int, ...]:
    """``Torch-Compiled Region: 1/0`` -> (1, 0): regions in frame order, then compile."""
    return tuple(int(n) for n in re.findall(r"\d+", name[len(_REGION):])) if name.startswith(_REGION) else ()


def graph_break_rows(regions: Sequence[RegionRow], split: HostSplit | None) -> tuple[BreakRow, ...]:
    """What a compiled call spends inside each compiled graph and in eager code between graphs, ready to show.

    ``regions``: a profile's :class:`~tui.engine.explain.profile_types.RegionRow` s. Rows: ``graph N/M`` per
    region (its graph calls, CUDA-graph replays included), ``between graphs`` (eager aten ops
    outside every graph call inside the regions), then ``rest`` (guards, wrappers, Python, other):
    they add up to the compiled call's host time. Empty without a host split or a region.
    """
    if split is None or not regions or split.total_ms_per_call <= 0:
        return ()
    total = split.total_ms_per_call
    rows = [BreakRow(f"graph {row.name[len(_REGION):]}", row.graph_ms_per_call, row.graph_ms_per_call / total)
            for row in sorted(regions, key=lambda r: _frame_order(r.name))]
    between = split.ms("between_graphs") or 0.0
    rows.append(BreakRow("between graphs", between, between / total))
    rest = max(0.0, total - sum(row.ms_per_call for row in rows))
    rows.append(BreakRow("rest", rest, rest / total))
    return tuple(rows)
