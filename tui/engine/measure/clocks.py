"""What the parent knows about the worker's clocks, without torch.

The worker's clocks (``tui.engine.worker.clocks``: ``CpuClock``, ``CudaClock``, both
implementations of its ``Clock`` protocol) name themselves with a :class:`ClockInfo` from
:data:`CLOCKS`, and every timing block carries that name. The parent reads the metadata here
(does this clock time the device alone? how fine is it?) instead of comparing string literals.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ClockInfo", "CLOCKS", "CUDA_EVENT", "PERF_COUNTER", "clock_info"]


@dataclass(frozen=True)
class ClockInfo:
    """One clock: its name on the wire, what it measures, and its resolution."""

    name: str
    label: str
    """How a sentence names it: ``CUDA event``."""
    device_time: bool
    """True when per-call times are the device's alone (host time is then measured apart)."""
    resolution_ms: float
    """Times near this are noise: the clock cannot tell them apart."""
    too_fast_ms: float
    """A median below this is flagged as too fast to time with this clock."""
    description: str


CUDA_EVENT = ClockInfo(
    name="cuda_event",
    label="CUDA event",
    device_time=True,
    resolution_ms=0.0005,
    too_fast_ms=0.01,
    description="a pair of CUDA events per call, device loops of both sides queued back to back (device time)",
)
PERF_COUNTER = ClockInfo(
    name="perf_counter",
    label="perf_counter",
    device_time=False,
    resolution_ms=1e-6,
    too_fast_ms=0.0,
    description="time.perf_counter_ns around each call (host wall time)",
)
CLOCKS: dict[str, ClockInfo] = {clock.name: clock for clock in (CUDA_EVENT, PERF_COUNTER)}


def clock_info(name: str | None) -> ClockInfo | None:
    """The metadata of the clock called ``name``, or None for an unknown or missing name."""
    return CLOCKS.get(name or "")
