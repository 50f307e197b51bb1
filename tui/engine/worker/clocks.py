"""The worker's clocks: the :class:`Clock` protocol and its CPU and CUDA implementations.

A clock runs one timing block of a step and returns the per-call times and the block's
host-inclusive time per call. Each names itself with torch-free metadata from
:mod:`tui.engine.clocks` (``info``), which every timing block carries as its ``clock``; the
parent reads that metadata, never a string literal. docs/BENCHMARKS.md, section 1, explains
the head start's sizing.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Protocol

import torch

from tui.engine.clocks import CUDA_EVENT, PERF_COUNTER, ClockInfo

__all__ = ["Clock", "CpuClock", "CudaClock", "head_start_ms", "L2_FLUSH_BYTES", "HEAD_START_FACTOR",
           "HEAD_START_MIN_MS", "HEAD_START_MAX_MS"]

Step = Callable[[tuple], Any]

#: Bytes zeroed before each iteration to flush L2 (as triton's do_bench does).
L2_FLUSH_BYTES = 256 * 2**20
#: Head start = this factor x the time the GPU would otherwise wait for the host...
HEAD_START_FACTOR = 1.5
#: ...within these bounds (ms).
HEAD_START_MIN_MS = 0.05
HEAD_START_MAX_MS = 200.0


class Clock(Protocol):
    """What :class:`~tui.engine.worker.measure.Benchmark` needs of a clock."""

    info: ClockInfo
    """The clock's name on the wire and what it measures."""

    def sync(self) -> None:
        """Wait until everything queued so far has run."""

    def run_block(self, step: Step, calls: list[tuple], prepare: Callable[[], None] | None = None
                  ) -> tuple[list[float], float]:
        """Run ``step`` on each input set in ``calls``: (ms per call, host-inclusive ms per call).

        ``prepare()``, if given, runs before each call, outside the call's own timing.
        """


def head_start_ms(queue_ms_per_call: float | None, device_ms_per_call: float | None, calls: int,
                  first_queue_ms: float | None = None) -> float:
    """How long to keep the GPU busy before a block of ``calls`` calls, from the last block's times.

    With q the host's queueing time per call, f the time it took to queue the first call
    (often the slowest; taken as at least 2q) and d the device time of the fastest call:
    call k is queued after about f + (k-1)q ms and the GPU reaches it after head + (k-1)d ms
    at the earliest. The GPU never waits while head >= f + (k-1)(q-d) for every k: f when
    the GPU is the slower side, f + (calls-1)(q-d) when the host is (launch-bound). Times
    the margin ``HEAD_START_FACTOR``, within the bounds. With nothing measured yet: 1 ms
    per call, the GPU assumed never to catch up.

    The head start is sized to what is needed, not generously: a power-capped GPU turns the
    light load of a spin before each block into a higher clock for the block's kernels (on
    an H200, bf16 GEMMs with the earlier, generous head start read 3-4% faster than
    do_bench; docs/BENCHMARKS.md, section 1).
    """
    q = 1.0 if queue_ms_per_call is None else queue_ms_per_call
    if device_ms_per_call is None:
        need = q * calls
    else:
        first = max(2 * q, first_queue_ms or 0.0)
        need = first + (calls - 1) * max(0.0, q - device_ms_per_call)
    return min(max(need * HEAD_START_FACTOR, HEAD_START_MIN_MS), HEAD_START_MAX_MS)


class CpuClock:
    """``perf_counter_ns`` around each call; the block's wall time around all of them."""

    info = PERF_COUNTER

    def sync(self) -> None:
        """Nothing to wait for on the CPU."""

    def run_block(self, step: Step, calls: list[tuple], prepare: Callable[[], None] | None = None
                  ) -> tuple[list[float], float]:
        """Run ``step`` on each input set in ``calls``: (ms per call, the block's wall time per call).

        ``prepare()``, if given, runs before each call, outside the per-call timer.
        """
        ms: list[float] = []
        start = time.perf_counter()
        for args in calls:
            if prepare is not None:
                prepare()
            t0 = time.perf_counter_ns()
            step(args)  # the output is dropped at once: nothing outlives the call
            ms.append((time.perf_counter_ns() - t0) / 1e6)
        wall_ms = (time.perf_counter() - start) * 1e3
        return ms, wall_ms / len(calls)


class CudaClock:
    """A pair of CUDA events per call, no synchronize between calls, one per block.

    Each block starts with a *head start*: a spin kernel (``torch.cuda._sleep``) long
    enough that the GPU never waits for the host inside the block (see
    :func:`head_start_ms`). Without it, an idle GPU records a call's start event at
    once and then waits for the host's guards and launches, so per-call events of
    launch-bound work would measure the host, not the device. The host-inclusive time
    per call is then ``max(queueing time, synchronised wall time - head start) / calls``:
    what a loop that never synchronises pays per call, limited by whichever side is slower.

    With ``l2_flush`` a buffer larger than L2 is zeroed before each call, outside the events.
    """

    info = CUDA_EVENT

    def __init__(self, device: torch.device, l2_flush: bool = False) -> None:
        self.device = device
        self.flush_buffer = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=device) if l2_flush else None
        self._sleep = getattr(torch.cuda, "_sleep", None)
        self._cycles_per_ms: float | None = None
        # What the last block of each step measured, keyed by the step itself (a bound method
        # is a new object on every attribute access, but equal to the last one).
        self._queue_ms_per_call: dict[Step, float] = {}
        self._device_ms_per_call: dict[Step, float] = {}
        self._first_queue_ms: dict[Step, float] = {}
        #: The last block's head start, in ms (0 without one).
        self.last_head_ms = 0.0

    def sync(self) -> None:
        """Wait for all work queued on the device."""
        torch.cuda.synchronize(self.device)

    def _calibrate(self) -> float | None:
        """Spin-kernel cycles per millisecond on this GPU (measured once)."""
        if self._cycles_per_ms is None and self._sleep is not None:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self._sleep(1000)  # first launch loads the kernel
            begin.record()
            self._sleep(2_000_000)
            end.record()
            self.sync()
            elapsed = begin.elapsed_time(end)
            self._cycles_per_ms = 2_000_000 / elapsed if elapsed > 0 else None
        return self._cycles_per_ms

    def _head_start(self, step: Step, n: int) -> tuple[torch.cuda.Event, torch.cuda.Event] | None:
        """Queue the spin kernel for this block; its event pair, or None without one."""
        cycles_per_ms = self._calibrate()
        if cycles_per_ms is None:
            return None
        wanted = head_start_ms(self._queue_ms_per_call.get(step), self._device_ms_per_call.get(step), n,
                               self._first_queue_ms.get(step))
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        self._sleep(int(wanted * cycles_per_ms))
        end.record()
        return begin, end

    def run_block(self, step: Step, calls: list[tuple], prepare: Callable[[], None] | None = None
                  ) -> tuple[list[float], float]:
        """Run ``step`` on each input set in ``calls``: (device ms per call, host-inclusive ms per call).

        ``prepare()``, if given, runs before each call, outside its CUDA events.
        """
        starts = [torch.cuda.Event(enable_timing=True) for _ in calls]
        ends = [torch.cuda.Event(enable_timing=True) for _ in calls]
        flush = self.flush_buffer
        self.sync()
        head = self._head_start(step, len(calls))
        start = time.perf_counter()
        first_ms = None
        for args, begin, end in zip(calls, starts, ends):
            if flush is not None:
                flush.zero_()
            if prepare is not None:
                prepare()
            begin.record()
            step(args)
            end.record()
            if first_ms is None:
                first_ms = (time.perf_counter() - start) * 1e3
        queued_ms = (time.perf_counter() - start) * 1e3
        self.sync()
        wall_ms = (time.perf_counter() - start) * 1e3
        self._queue_ms_per_call[step] = queued_ms / len(calls)
        self._first_queue_ms[step] = first_ms or 0.0
        head_ms = head[0].elapsed_time(head[1]) if head is not None else 0.0
        self.last_head_ms = head_ms
        host_ms = max(queued_ms, wall_ms - head_ms)
        ms = [begin.elapsed_time(end) for begin, end in zip(starts, ends)]
        self._device_ms_per_call[step] = min(ms)  # the fastest call: the GPU catches up soonest
        return ms, host_ms / len(calls)
