"""The worker's clocks: the :class:`Clock` protocol and its CPU and CUDA implementations.

A clock runs timing blocks of a step and returns, per block, the per-call times, the
host-inclusive time per call and when the block ran (:class:`BlockRun`). Each clock names
itself with torch-free metadata from :mod:`tui.engine.measure.clocks` (``info``), which every timing
block carries as its ``clock``; the parent reads that metadata, never a string literal.

On the CPU one loop gives both numbers: ``perf_counter_ns`` around each call (about 0.1 us a
call, below 1% of anything worth timing) and the block's wall time around all of them. They are
one clock: the parent's statistics take the per-call times as the host-inclusive times too
(:attr:`tui.engine.measure.samples.Block.host_ms`); the wall time per call stays in the raw data.

On a GPU the two numbers come from two loops over the same calls (docs/METHOD.md, "Two
clocks"), because timing each call changes what the host pays:

* **host sub-block**: the calls and nothing else, the GPU idle at the start, one synchronize
  at the end; ``host_ms_per_call`` = wall time / calls. This *is* a plain loop with one
  synchronize per block. The block's calls run as many times over as it takes the loop to
  last ``HOST_BLOCK_MIN_MS`` (:func:`~tui.engine.worker.blocks.host_block_repeats`), so the
  start on an idle GPU and the final synchronize cost what they cost a long loop. No per-call
  events (an event pair adds tens of microseconds of host time to each call: docs/METHOD.md,
  "Two clocks"), no head start (nothing to subtract), nothing kept of the outputs (each
  is dropped when the call returns, as in ``for x in xs: f(x)``), the garbage collector as the
  workload would have it (on: a loop pays for the collections its own allocations cause; the
  worker collects the compiler's garbage once before warming up, so it is not collected inside
  a block).
* **device sub-block**: a CUDA event pair around each call, after a *head start* (a spin
  kernel, ``torch.cuda._sleep``) long enough that the GPU never waits for the host inside the
  block (:func:`head_start_ms`); without it an idle GPU records a call's start event at once
  and then waits for the host's guards and launches, and the events would time the host.

A measure round (:meth:`CudaClock.run_round`: one block per side) runs both host sub-blocks
first, then the device sub-blocks **pipelined**: block i+1 is queued before block i's
results are read, and block i is read (and streamed to the parent) while block i+1 runs, so
the GPU does not rest between the device sub-blocks of a round. The first one starts on an
idle GPU and gets a head start sized to need; the next one is queued behind the first one's
work and gets only the part of its head start that this backlog does not already cover
(none, for GPU-bound work). The card rests once per round: a synchronize's wake-up before
each host sub-block and the first device sub-block's head start (docs/METHOD.md).

Warm-up blocks (:meth:`CudaClock.run_block`) are single device sub-blocks, synchronised at
their end, and carry no host-inclusive time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import torch

from tui.engine.measure.clocks import CUDA_EVENT, PERF_COUNTER, ClockInfo
from tui.engine.worker.blocks import host_block_repeats

__all__ = ["Clock", "CpuClock", "CudaClock", "BlockRun", "BlockSpec", "head_start_ms", "L2_FLUSH_BYTES",
           "HEAD_START_FACTOR", "HEAD_START_MIN_MS", "HEAD_START_MAX_MS"]

Step = Callable[[tuple], Any]

#: Bytes zeroed before each iteration to flush L2 (as triton's do_bench does).
L2_FLUSH_BYTES = 256 * 2**20
#: Head start = this factor x the time the GPU would otherwise wait for the host...
HEAD_START_FACTOR = 1.5
#: ...within these bounds (ms).
HEAD_START_MIN_MS = 0.05
HEAD_START_MAX_MS = 200.0
#: A backlog estimate counts only this share of a spin's or a call's known device time: the spin's
#: calibration drifts with the clock, and a call can run a little faster than its fastest event pair.
BACKLOG_SURE = 0.9


class BlockRun(NamedTuple):
    """What a clock measured in one block."""

    ms: list[float]
    """Per-call times of the clock (device time on a GPU)."""
    host_ms_per_call: float | None
    """Host-inclusive time per call (None: not measured for this block)."""
    t_start: float | None = None
    """``time.monotonic()`` when the block's (device-timed) calls began to run."""
    t_end: float | None = None
    """``time.monotonic()`` when they had all run."""


@dataclass(frozen=True, eq=False)
class BlockSpec:
    """One block of a measure round: ``step`` on each input set of ``calls``.

    ``prepare()`` runs before each call, outside its timing; ``begin()`` before each loop over
    the block's calls, outside every timing (the worker notes which side runs, for a failure's
    kind). Nothing else runs between the loops: on a GPU every moment of host work there is a
    moment the card rests (docs/METHOD.md, "Pipelined device sub-blocks").
    """

    step: Step
    calls: list[tuple]
    prepare: Callable[[], None] | None = None
    begin: Callable[[], None] | None = None


class Clock(Protocol):
    """What :class:`~tui.engine.worker.measure.Benchmark` needs of a clock."""

    info: ClockInfo
    """The clock's name on the wire and what it measures."""

    def sync(self) -> None:
        """Wait until everything queued so far has run."""

    def run_block(self, step: Step, calls: list[tuple], prepare: Callable[[], None] | None = None) -> BlockRun:
        """One block on its own (warm-up): ``step`` on each input set in ``calls``."""

    def run_round(self, blocks: Sequence[BlockSpec], done: Callable[[int, BlockRun], None]) -> None:
        """A measure round: every block of ``blocks``; ``done(i, run)`` as soon as block i is read."""


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
    light load of a spin before each block into a higher clock for the block's kernels, and
    power-capped GEMMs then read faster than ``do_bench`` (docs/BENCHMARKS.md, section 1).
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

    def run_block(self, step: Step, calls: list[tuple], prepare: Callable[[], None] | None = None) -> BlockRun:
        """Run ``step`` on each input set in ``calls``: ms per call and the block's wall time per call.

        ``prepare()``, if given, runs before each call, outside the per-call timer.
        """
        ms: list[float] = []
        t_start = time.monotonic()
        start = time.perf_counter()
        for args in calls:
            if prepare is not None:
                prepare()
            t0 = time.perf_counter_ns()
            step(args)  # the output is dropped at once: nothing outlives the call
            ms.append((time.perf_counter_ns() - t0) / 1e6)
        wall_ms = (time.perf_counter() - start) * 1e3
        return BlockRun(ms, wall_ms / len(calls), t_start, time.monotonic())

    def run_round(self, blocks: Sequence[BlockSpec], done: Callable[[int, BlockRun], None]) -> None:
        """The blocks one after the other (on the CPU one loop gives both clocks)."""
        for index, spec in enumerate(blocks):
            if spec.begin is not None:
                spec.begin()
            done(index, self.run_block(spec.step, spec.calls, spec.prepare))


@dataclass
class _StepTimes:
    """What the last device sub-block of a step measured: the head start of its next one is sized from it."""

    queue_ms: float
    """Host queueing time per call, the first call left out (it may have waited for the GPU)."""
    first_ms: float
    """Queueing time of the first call, less the head start when it waited that long."""
    device_ms: float
    """The fastest call's device time: the GPU catches up with the host soonest on it."""


@dataclass
class _InFlight:
    """A device sub-block queued on the GPU, its events not read yet."""

    step: Step
    starts: list[Any]
    ends: list[Any]
    head: tuple[Any, Any] | None
    first_ms: float
    queued_ms: float


class _Anchor:
    """A CUDA event recorded on an idle GPU, with the host's monotonic time when it was queued.

    Any later event's time on the host's monotonic clock is then ``t + elapsed / 1000``
    (within the launch latency of one event, a few microseconds): how block times become
    ``t_start`` / ``t_end`` without a synchronize per block.
    """

    def __init__(self, event: Any) -> None:
        self.event = event
        self.t = time.monotonic()
        self.event.record()

    def at(self, event: Any) -> float:
        """``event``'s time on the monotonic clock (it must have completed)."""
        return self.t + self.event.elapsed_time(event) / 1e3


class CudaClock:
    """Device time from per-call CUDA events, host-inclusive time from plain loops (module docstring).

    With ``l2_flush`` a buffer larger than L2 is zeroed before each call, outside the events
    of a device sub-block and inside the wall time of a host sub-block (it is work the loop
    does; the run says so).
    """

    info = CUDA_EVENT

    def __init__(self, device: torch.device, l2_flush: bool = False) -> None:
        self.device = device
        self.flush_buffer = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=device) if l2_flush else None
        self._sleep = getattr(torch.cuda, "_sleep", None)
        self._cycles_per_ms: float | None = None
        # What the last device sub-block of each step measured, keyed by the step itself (a bound
        # method is a new object on every attribute access, but equal to the last one).
        self._times: dict[Step, _StepTimes] = {}
        # The last host sub-block's host-inclusive ms per call of each step (sizes the next one).
        self._host_ms: dict[Step, float] = {}
        # A lower bound, on the perf_counter clock (s), of when the GPU will have run everything queued.
        self._gpu_free = 0.0
        # Timing events are made once and recorded again once read: creating and destroying 40 events
        # a round is host work while the GPU rests, and it slows the host sub-block that follows
        # (docs/METHOD.md, "Known limits").
        self._pool: list[Any] = []
        self._anchor_event = torch.cuda.Event(enable_timing=True)
        #: The last device sub-block's head start, in ms (0 without one).
        self.last_head_ms = 0.0

    def sync(self) -> None:
        """Wait for all work queued on the device."""
        torch.cuda.synchronize(self.device)
        self._gpu_free = 0.0

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

    def backlog_ms(self) -> float:
        """At least how long the GPU will still be busy with what is queued now (0 when idle or unknown)."""
        return max(0.0, (self._gpu_free - time.perf_counter()) * 1e3)

    def _head_start(self, step: Step, n: int) -> tuple[Any, Any] | None:
        """Queue the spin kernel for a device sub-block of ``n`` calls; its event pair, or None without one.

        The spin covers what the GPU's backlog does not: work queued before it (the previous
        device sub-block of a pipelined round) keeps the GPU busy just as well, so a GPU-bound
        block queued behind another one needs no spin at all.
        """
        cycles_per_ms, sleep = self._calibrate(), self._sleep
        if cycles_per_ms is None or sleep is None:
            return None
        times = self._times.get(step)
        if times is None:
            need = head_start_ms(None, None, n)
        else:
            need = head_start_ms(times.queue_ms, times.device_ms, n, times.first_ms)
        wanted = need - self.backlog_ms()
        if wanted <= 0:
            return None
        wanted = max(wanted, HEAD_START_MIN_MS)
        begin, end = self._events(2)
        now = time.perf_counter()
        begin.record()
        sleep(int(wanted * cycles_per_ms))
        end.record()
        self._gpu_free = max(self._gpu_free, now) + BACKLOG_SURE * wanted / 1e3
        return begin, end

    def _events(self, n: int) -> list[Any]:
        """``n`` timing events from the pool (made when it runs short)."""
        pool = self._pool
        take = min(n, len(pool))
        events = pool[len(pool) - take:]
        del pool[len(pool) - take:]
        return events + [torch.cuda.Event(enable_timing=True) for _ in range(n - take)]

    def _event_pairs(self, n: int) -> tuple[list[Any], list[Any]]:
        return self._events(n), self._events(n)

    def _queue_device(self, step: Step, calls: list[tuple], prepare: Callable[[], None] | None,
                      events: tuple[list[Any], list[Any]] | None = None) -> _InFlight:
        """Queue a device sub-block (head start, then an event pair around each call); nothing is read."""
        starts, ends = events if events is not None else self._event_pairs(len(calls))
        flush = self.flush_buffer
        head = self._head_start(step, len(calls))
        start = time.perf_counter()
        first = None
        for args, begin, end in zip(calls, starts, ends, strict=True):
            if flush is not None:
                flush.zero_()
            if prepare is not None:
                prepare()
            begin.record()
            step(args)
            end.record()
            if first is None:
                first = time.perf_counter()
        queued = time.perf_counter()
        known = self._times.get(step)
        if known is not None:  # the GPU cannot finish these calls sooner than their fastest device time each
            self._gpu_free = max(self._gpu_free, start) + BACKLOG_SURE * len(calls) * known.device_ms / 1e3
        return _InFlight(step, starts, ends, head, ((first or queued) - start) * 1e3, (queued - start) * 1e3)

    def _read(self, flight: _InFlight, anchor: _Anchor) -> BlockRun:
        """Wait for a device sub-block's last event, read its times, learn for the step's next head start."""
        flight.ends[-1].synchronize()
        ms = [begin.elapsed_time(end) for begin, end in zip(flight.starts, flight.ends, strict=True)]
        head_ms = flight.head[0].elapsed_time(flight.head[1]) if flight.head is not None else 0.0
        self.last_head_ms = head_ms
        n = len(ms)
        first = flight.first_ms
        if head_ms and first >= head_ms:
            # The first call took as long as the whole spin: it waited for the GPU (a synchronize inside
            # the step, e.g. .item()). Counting that wait would size the next spin from this one, and
            # the spin would grow block after block (to 200 ms, reading host times 100x too high).
            first -= head_ms
        queue = (flight.queued_ms - flight.first_ms) / (n - 1) if n > 1 else first
        self._times[flight.step] = _StepTimes(queue, first, min(ms))
        run = BlockRun(ms, None, anchor.at(flight.starts[0]), anchor.at(flight.ends[-1]))
        # Every event of the block has completed (they precede its last one on the stream): reusable.
        self._pool += flight.starts + flight.ends + list(flight.head or ())
        return run

    def run_block(self, step: Step, calls: list[tuple], prepare: Callable[[], None] | None = None) -> BlockRun:
        """One device sub-block on its own (warm-up): device ms per call, no host-inclusive time.

        ``prepare()``, if given, runs before each call, outside its CUDA events.
        """
        self.sync()
        anchor = _Anchor(self._anchor_event)
        run = self._read(self._queue_device(step, calls, prepare), anchor)
        self._gpu_free = 0.0  # its last event was the last work queued
        return run

    def host_block(self, spec: BlockSpec) -> float:
        """A host sub-block: the calls alone, one synchronize; host-inclusive ms per call.

        The GPU is idle when the first call is queued and the wall time ends when the
        synchronize returns: exactly what a plain loop with one synchronize per block pays.
        """
        self.sync()
        if spec.begin is not None:
            spec.begin()
        flush, prepare, step = self.flush_buffer, spec.prepare, spec.step
        calls = spec.calls * host_block_repeats(len(spec.calls), self._host_estimate(step))
        start = time.perf_counter()
        for args in calls:
            if flush is not None:
                flush.zero_()
            if prepare is not None:
                prepare()
            step(args)  # the output is dropped at once, as in a plain loop
        self.sync()
        ms_per_call = (time.perf_counter() - start) * 1e3 / len(calls)
        self._host_ms[step] = ms_per_call
        return ms_per_call

    def _host_estimate(self, step: Step) -> float | None:
        """The step's host time per call: its last host sub-block's, else its device sub-block's slower side."""
        known = self._host_ms.get(step)
        if known is not None:
            return known
        times = self._times.get(step)
        return None if times is None else max(times.queue_ms, times.device_ms)

    def run_round(self, blocks: Sequence[BlockSpec], done: Callable[[int, BlockRun], None]) -> None:
        """Host sub-blocks first, then the device sub-blocks pipelined (module docstring).

        Block i+1's device sub-block is queued before block i's events are read; block i is
        read and handed to ``done`` while block i+1 runs on the GPU.
        """
        # Made first: between the last host sub-block and the first device sub-block the GPU rests.
        events = [self._event_pairs(len(spec.calls)) for spec in blocks]
        hosts = [self.host_block(spec) for spec in blocks]
        anchor = _Anchor(self._anchor_event)  # the GPU is idle: the host sub-blocks ended with a synchronize
        previous: tuple[int, _InFlight] | None = None
        for index, spec in enumerate(blocks):
            if spec.begin is not None:
                spec.begin()
            flight = self._queue_device(spec.step, spec.calls, spec.prepare, events[index])
            if previous is not None:
                self._done(previous, hosts, anchor, done)
            previous = (index, flight)
        if previous is not None:
            self._done(previous, hosts, anchor, done)
        self._gpu_free = 0.0  # the last block's last event was the last work queued

    def _done(self, item: tuple[int, _InFlight], hosts: list[float], anchor: _Anchor,
              done: Callable[[int, BlockRun], None]) -> None:
        index, flight = item
        done(index, self._read(flight, anchor)._replace(host_ms_per_call=hosts[index]))
