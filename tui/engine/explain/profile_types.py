"""The profile's shared types: the profiler's events as the worker flattens them, and a compiled region's row.

:mod:`tui.engine.explain.kernels` and :mod:`tui.engine.explain.host_time` both read them, so neither
imports the other for its types.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.typed import JsonRecord

__all__ = ["RawEvent", "RegionRow"]


@dataclass(frozen=True)
class RawEvent:
    """One profiler event, flattened by the worker (times in microseconds).

    ``device``: ``cpu`` (a host range: an op, a kernel-profile range, a runtime call) or
    ``cuda`` (a kernel on the GPU). ``top_op``: an ``aten::`` op with no ``aten::`` op above it.
    ``parent``: the index of the host range it ran inside, in the same list (None: at the top).
    ``device_us``: see below.
    """

    name: str
    device: str = "cpu"
    self_us: float = 0.0
    total_us: float = 0.0
    top_op: bool = False
    parent: int | None = None
    device_us: float = 0.0
    """A host op's: the device time of the kernels it launched itself (not those of the ops it called)."""


@dataclass(frozen=True)
class RegionRow(JsonRecord):
    """One compiled region (``Torch-Compiled Region: N/M``: dynamo frame N, its compile M) per compiled call.

    Regions nest (after a graph break the next frame's region runs inside the first one's), so
    ``exclusive_ms_per_call`` is the region's range less the regions nested in it: its graph call,
    dynamo's and AOT's wrappers, and the eager code after its graph. ``graph_ms_per_call``: its
    compiled graph calls (``## Call CompiledFxGraph ... ##``) alone. ``share`` / ``graph_share``:
    those times as shares of the compiled call's host time
    (:class:`~tui.engine.explain.host_time.HostSplit`'s total; None without one).
    """

    name: str = ""
    calls: int = 0
    exclusive_ms_per_call: float = 0.0
    graph_ms_per_call: float = 0.0
    share: float | None = None
    graph_share: float | None = None
