"""The profile pass's result as typed data, and the torch-free parsing that builds it.

The worker (:mod:`tui.engine.worker.profile`) runs a few calls of each side under
``torch.profiler`` after measuring, flattens the profiler's events into
:class:`~tui.engine.explain.profile_types.RawEvent` s
and hands them here: :func:`side_profile` counts a side's kernels, launches and kernel time,
:func:`kernel_diff` reads inductor's provenance mapping (compiled kernel -> post-grad FX
nodes) into which eager ops went into which compiled kernel. No torch here, so the parsing
is tested on plain lists.

What counts as a kernel:

* on a GPU, every device event (CUDA activity) is one kernel execution; launches are the host's
  ``cudaLaunchKernel`` / ``cuLaunchKernel`` calls, and CUDA-graph replays
  (``cudaGraphLaunch``) are counted apart;
* on the CPU, eager kernels are the top-level ``aten::`` ops (an op called by another op is
  part of it: ``aten::mul`` by a Python scalar calls ``aten::to``), allocation and view ops
  left out; inductor's C++ kernels are the ``graph_N_cpp_...`` ranges that
  ``cpp.enable_kernel_profile`` adds, plus the top-level aten ops the compiled graph calls
  (extern kernels such as ``aten::mm``). Each is one call from the host, so on the CPU
  launches equal kernels.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tui.engine.explain.host_time import HostSplit, totals_without_profiler
from tui.engine.explain.profile_types import RawEvent, RegionRow
from tui.typed import JsonRecord

__all__ = [
    "KernelRow", "SideProfile", "KernelGroup", "Profile", "side_profile", "kernel_diff",
    "regions", "provenance_ops", "top_kernels_text", "short_kernel_name", "LAUNCH_NAMES", "GRAPH_LAUNCH_NAMES",
    "NOT_KERNELS", "MAX_ROWS",
]  # fmt: skip

LAUNCH_NAMES = frozenset({"cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx",
                          "cudaLaunchCooperativeKernel"})  # fmt: skip
GRAPH_LAUNCH_NAMES = frozenset({"cudaGraphLaunch", "cuGraphLaunch"})
#: Top-level CPU ops that compute nothing (allocation, views): not kernels on either side.
NOT_KERNELS = frozenset({
    "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::as_strided", "aten::view", "aten::reshape",
    "aten::_reshape_alias", "aten::detach", "aten::detach_", "aten::alias", "aten::lift_fresh", "aten::t",
    "aten::transpose", "aten::permute", "aten::expand", "aten::squeeze", "aten::unsqueeze", "aten::resize_",
    "aten::set_", "aten::_unsafe_view", "aten::slice", "aten::select", "aten::split", "aten::chunk",
})  # fmt: skip
_CPP_KERNEL = re.compile(r"^(graph_\d+_)?cpp_")
_GRAPH_PREFIX = re.compile(r"^graph_\d+_")
_HANDLE = re.compile(r":\d+$")
_NODE_SUFFIX = re.compile(r"_\d+$")
_EXTERN = "extern_kernels."
_FUSED = re.compile(r"^(?:cpp|triton_[a-z]+)_fused_(.+)_\d+$")
_REGION = "Torch-Compiled Region: "
_GRAPH_CALL = "## Call CompiledFxGraph"
#: The most kernel rows (and diff groups) a profile keeps, largest first: a history line stays small.
MAX_ROWS = 200


@dataclass(frozen=True)
class KernelRow(JsonRecord):
    """One kernel (by name) of one side: executions over the profiled calls, total time, share of the side's."""

    name: str = ""
    calls: int = 0
    total_ms: float = 0.0
    share: float = 0.0


@dataclass(frozen=True)
class SideProfile(JsonRecord):
    """One side under the profiler: per-call counts and times, and its kernels by time (largest first, all of
    them up to :data:`MAX_ROWS`; the counts and times per call include every kernel).

    ``kernel_ms_per_call``: the kernels' device time per call on a GPU, their CPU time on the CPU.
    ``launches_per_call``: kernel launches from the host; ``graph_launches_per_call``: CUDA-graph
    replays (0 on the CPU). ``wall_ms_per_call``: the profiled loop per call, profiler overhead included.
    ``ops``: every ``aten::`` op (nested ones too) with its inclusive time: CPU time on the CPU, the
    device time of the kernels it and the ops it called launched on a GPU; what the kernel diff
    reads an eager op's cost from (an FX node is named after ``aten::convolution``, which eager
    calls under ``aten::conv2d``).
    """

    calls: int = 0
    kernels_per_call: float | None = None
    launches_per_call: float | None = None
    graph_launches_per_call: float | None = None
    kernel_ms_per_call: float | None = None
    wall_ms_per_call: float | None = None
    kernels: tuple[KernelRow, ...] = ()
    ops: tuple[KernelRow, ...] = ()


@dataclass(frozen=True)
class KernelGroup(JsonRecord):
    """One compiled kernel and the eager ops inductor made it from (its provenance tracking).

    ``nodes``: the post-grad FX nodes; ``ops``: their ``aten::`` ops; ``eager_ms_per_call``: what
    those ops took per eager call (an op in two groups counts in both), or where eager ran none of them
    (it ran the op they decompose, ``aten::gelu`` for ``mul``, ``erf`` and ``add``) what the ops the kernel's
    name lists took (``cpp_fused_gelu_0``: inductor names a kernel after the original ops it fuses);
    ``compiled_ms_per_call``: the kernel's own time per compiled call (None when the profile did not see it).
    """

    kernel: str = ""
    ops: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    eager_ms_per_call: float | None = None
    compiled_ms_per_call: float | None = None


@dataclass(frozen=True)
class Profile(JsonRecord):
    """The profile pass of one configuration, after measuring (never part of the timings).

    ``available`` False: ``why`` says why (skipped, or the profiler raised). ``profile_s``: the pass's
    own cost in seconds, its re-compile included; ``compile_s``: that re-compile alone (on the CPU
    inductor compiles once more with ``cpp.enable_kernel_profile``, another FX-graph cache key).
    ``diff_why``: why the kernel diff is empty (provenance tracking missing from this torch, ...).
    ``regions``: the compiled side's regions (two or more after a graph break);
    ``eager_between_ms_per_call``: the top-level aten ops of a compiled call that ran outside every
    compiled graph call (the eager code between graphs; None without any graph call).
    ``host``: where the compiled call's host time goes (:mod:`tui.engine.explain.host_time`; None when the
    profiler showed none of torch.compile's ranges, or for a record older than the split).
    """

    available: bool = False
    why: str | None = None
    activities: tuple[str, ...] = ()
    calls: int = 0
    profile_s: float | None = None
    compile_s: float | None = None
    eager: SideProfile = field(default_factory=SideProfile)
    compiled: SideProfile = field(default_factory=SideProfile)
    diff: tuple[KernelGroup, ...] = ()
    diff_why: str | None = None
    regions: tuple[RegionRow, ...] = ()
    eager_between_ms_per_call: float | None = None
    host: HostSplit | None = None

    def side(self, name: str) -> SideProfile:
        """``eager`` or ``compiled``."""
        return self.eager if name == "eager" else self.compiled


def _is_kernel(event: RawEvent, cuda: bool) -> bool:
    if cuda:
        return event.device != "cpu"
    if _CPP_KERNEL.match(event.name):
        return True
    return event.top_op and event.name.startswith("aten::") and event.name not in NOT_KERNELS


def side_profile(events: Iterable[RawEvent], calls: int, cuda: bool, wall_s: float | None = None,
                 top: int = MAX_ROWS) -> SideProfile:
    """Count one side's kernels over ``calls`` profiled calls (``cuda``: a GPU run's events)."""
    if calls <= 0:
        raise ValueError("calls must be positive")
    events = list(events)
    count: dict[str, int] = defaultdict(int)
    total_us: dict[str, float] = defaultdict(float)
    launches = graph_launches = 0
    for event in events:
        if event.device == "cpu" and event.name in LAUNCH_NAMES:
            launches += 1
        elif event.device == "cpu" and event.name in GRAPH_LAUNCH_NAMES:
            graph_launches += 1
        if _is_kernel(event, cuda):
            count[event.name] += 1
            # a CPU op's total includes the ops it called (aten::to under aten::mul): its own work
            total_us[event.name] += event.total_us
    executions = sum(count.values())
    all_us = sum(total_us.values())
    rows = sorted(count, key=lambda name: (-total_us[name], name))[:top]
    kernels = tuple(KernelRow(name=name, calls=count[name], total_ms=total_us[name] / 1e3,
                              share=total_us[name] / all_us if all_us > 0 else 0.0) for name in rows)  # fmt: skip
    return SideProfile(
        calls=calls,
        kernels_per_call=executions / calls,
        launches_per_call=(launches if cuda else executions) / calls,
        graph_launches_per_call=graph_launches / calls,
        kernel_ms_per_call=all_us / 1e3 / calls,
        wall_ms_per_call=None if wall_s is None else wall_s * 1e3 / calls,
        kernels=kernels,
        ops=_op_rows(events, cuda, top),
    )


def _op_rows(events: Sequence[RawEvent], cuda: bool, top: int) -> tuple[KernelRow, ...]:
    """Every aten op by inclusive time (see :attr:`SideProfile.ops`)."""
    count: dict[str, int] = defaultdict(int)
    spent_us: dict[str, float] = defaultdict(float)
    for event in events:
        if event.device != "cpu" or not event.name.startswith("aten::") or event.name in NOT_KERNELS:
            continue
        count[event.name] += 1
        if not cuda:
            spent_us[event.name] += event.total_us
    if cuda:
        for index, event in enumerate(events):
            if event.device_us <= 0:
                continue
            chain = [index, *_ancestors(events, index)]
            for name in {events[i].name for i in chain if events[i].name in count}:
                spent_us[name] += event.device_us
    tops = {event.name for event in events if event.top_op}
    all_us = sum(spent_us[name] for name in count if name in tops)
    rows = sorted(count, key=lambda name: (-spent_us[name], name))[:top]
    return tuple(KernelRow(name=name, calls=count[name], total_ms=spent_us[name] / 1e3,
                           share=spent_us[name] / all_us if all_us > 0 else 0.0) for name in rows)  # fmt: skip


def provenance_ops(node: str) -> str:
    """The ``aten::`` op of a post-grad FX node name (``mul_1`` -> ``aten::mul``): FX names a node after its op."""
    return "aten::" + _NODE_SUFFIX.sub("", node)


def _kernel_ms(rows: Sequence[KernelRow], kernel: str, calls: int) -> float | None:
    """A provenance kernel's time per call in a side's rows (``graph_N_`` prefixes of kernel-profile ranges allowed;
    an extern kernel, ``extern_kernels.addmm``, is the aten op the profiler names, ``aten::addmm``)."""
    names = {kernel}
    if kernel.startswith(_EXTERN):
        names.add("aten::" + kernel.removeprefix(_EXTERN))
    found = [row.total_ms for row in rows if row.name in names or _GRAPH_PREFIX.sub("", row.name) in names]
    return sum(found) / calls if found and calls else None


def named_ops(kernel: str, ops: Iterable[str]) -> tuple[str, ...]:
    """The ``aten::`` ops among ``ops`` that a fused kernel's name lists, in its order: ``cpp_fused_gelu_0`` ->
    ``aten::gelu``, ``triton_per_fused__softmax_1`` -> ``aten::_softmax``. The names between ``fused_`` and the
    number are read left to right, the longest op name first (``max_pool2d_with_indices``, not ``max``)."""
    match = _FUSED.match(kernel)
    if match is None:
        return ()
    names = {tuple(op.removeprefix("aten::").split("_")): op for op in ops if op.startswith("aten::")}
    tokens, found, at = tuple(match.group(1).split("_")), [], 0
    while at < len(tokens):
        name = max((n for n in names if tokens[at:at + len(n)] == n), key=len, default=None)
        if name is not None and names[name] not in found:
            found.append(names[name])
        at += len(name) if name else 1
    return tuple(found)


def _kernel_nodes(mapping: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each kernel's post-grad nodes (its ``:handle`` dropped, several entries merged); ValueError without any."""
    kernels: dict[str, list[str]] = {}
    found = False
    for key, value in mapping.items():
        if not (key.endswith("ToPost") and key != "preToPost" and isinstance(value, dict)):
            continue
        found = True
        for name, nodes in value.items():
            if isinstance(name, str) and isinstance(nodes, list):
                merged = kernels.setdefault(_HANDLE.sub("", name), [])
                merged.extend(n for n in nodes if isinstance(n, str) and n not in merged)
    if not found:
        raise ValueError("the provenance mapping has no kernel entries")
    return kernels


def kernel_diff(mapping: Mapping[str, Any], eager: SideProfile, compiled: SideProfile) -> tuple[KernelGroup, ...]:
    """The kernel diff from inductor's provenance mapping (``cppCodeToPost`` / ``triton...ToPost`` entries).

    ``mapping``: a ``inductor_provenance_tracking_node_mappings`` payload (or several merged): for
    each ``kernel:handle`` the post-grad nodes it was generated from. Kernels without nodes (a
    wrapper's own entries) are left out. Groups come by compiled time, largest first (at most
    :data:`MAX_ROWS`). ValueError when the payload has no kernel mapping.
    """
    kernels = _kernel_nodes(mapping)
    eager_ms = {row.name: row.total_ms for row in eager.ops or eager.kernels}  # old records: no ops
    groups = []
    for kernel, nodes in kernels.items():
        if not nodes:
            continue
        ops = tuple(sorted({provenance_ops(n) for n in nodes}))
        seen = [eager_ms[op] for op in ops if op in eager_ms] or [eager_ms[op] for op in named_ops(kernel, eager_ms)]
        groups.append(KernelGroup(
            kernel=kernel, ops=ops, nodes=tuple(nodes),
            eager_ms_per_call=sum(seen) / eager.calls if seen and eager.calls else None,
            compiled_ms_per_call=_kernel_ms(compiled.kernels, kernel, compiled.calls),
        ))
    groups.sort(key=lambda g: (-(g.compiled_ms_per_call or 0.0), g.kernel))
    return tuple(groups[:MAX_ROWS])


def _ancestors(events: Sequence[RawEvent], index: int) -> Iterator[int]:
    parent = events[index].parent
    while parent is not None:
        yield parent
        parent = events[parent].parent


def regions(events: Sequence[RawEvent], calls: int,
            host_ms_per_call: float | None = None) -> tuple[tuple[RegionRow, ...], float | None]:
    """The compiled side's regions by exclusive time, and its eager time between graphs (per call).

    ``host_ms_per_call``: the compiled call's host time (a :class:`HostSplit`'s total), for the rows' shares.
    The profiler's own ranges inside a region are no part of it (:func:`totals_without_profiler`).
    """
    totals = totals_without_profiler(events)  # CUPTI's buffer request took ms inside a GPU run's first graph call
    nested_us: dict[int, float] = defaultdict(float)
    graph_us: dict[int, float] = defaultdict(float)
    between_us, graphs = 0.0, False
    for index, event in enumerate(events):
        is_region, is_graph = event.name.startswith(_REGION), event.name.startswith(_GRAPH_CALL)
        graphs = graphs or is_graph
        above = [events[i].name for i in _ancestors(events, index)]
        outer = [i for i in _ancestors(events, index) if events[i].name.startswith(_REGION)]
        if is_region and outer:
            nested_us[outer[0]] += totals[index]
        if is_graph and outer:
            graph_us[outer[0]] += totals[index]
        in_graph = any(name.startswith(_GRAPH_CALL) for name in above)
        if event.top_op and event.name not in NOT_KERNELS and not in_graph:
            between_us += totals[index]
    rows: dict[str, list[float]] = {}
    for index, event in enumerate(events):
        if event.name.startswith(_REGION):
            row = rows.setdefault(event.name, [0, 0.0, 0.0])
            row[0] += 1
            row[1] += totals[index] - nested_us[index]
            row[2] += graph_us[index]
    ranked = sorted(rows.items(), key=lambda item: (-item[1][1], item[0]))
    table = tuple(_region_row(name, int(n), ex / 1e3 / calls, graph / 1e3 / calls, host_ms_per_call)
                  for name, (n, ex, graph) in ranked)
    return table, (between_us / 1e3 / calls if graphs else None)


def _region_row(name: str, calls: int, exclusive_ms: float, graph_ms: float, host_ms: float | None) -> RegionRow:
    share = graph_share = None
    if host_ms is not None and host_ms > 0:
        share, graph_share = exclusive_ms / host_ms, graph_ms / host_ms
    return RegionRow(name=name, calls=calls, exclusive_ms_per_call=exclusive_ms, graph_ms_per_call=graph_ms,
                     share=share, graph_share=graph_share)


_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_OP_HINT = re.compile(r"CUDAFunctor_(\w+?)<|launch_(\w+?)\(|native::(Copy)<")


def short_kernel_name(name: str) -> str:
    """A C++ kernel's name without its return type, template and argument lists and namespaces, with the op
    a generic kernel runs (``void at::native::elementwise_kernel<128, 2, ...CUDAFunctor_add<float>...>(...)``
    -> ``elementwise_kernel (add)``). Triton kernels, aten ops and plain names stay as they are."""
    if not any(mark in name for mark in "<(") and not name.startswith("void "):
        return name
    text = name.removeprefix("void ").replace("(anonymous namespace)::", "")
    while True:
        shorter = _TEMPLATE_ARGS.sub("", text)
        if shorter == text:
            break
        text = shorter
    text = text.split("(", 1)[0].strip().rsplit("::", 1)[-1] or name
    hint = _OP_HINT.search(name)
    op = next((group.lower() for group in hint.groups() if group), None) if hint else None
    return f"{text} ({op})" if op and op not in text else text


def top_kernels_text(profile: Profile | None, per_side: int = 3) -> str | None:
    """The CSV's compact top-kernel cell: ``eager: aten::sin 80%, ...; compiled: cpp_fused_... 100%``."""
    if profile is None or not profile.available:
        return None
    parts = []
    for name in ("eager", "compiled"):
        rows = profile.side(name).kernels[:per_side]
        parts.append(f"{name}: " + ", ".join(f"{short_kernel_name(row.name)} {row.share:.0%}" for row in rows))
    return "; ".join(parts)
