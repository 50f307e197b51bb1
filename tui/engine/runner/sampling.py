"""Per-run telemetry: the machine while a run measures, summarised into its record.

Between measuring's start and its end, every run (CPU and CUDA) samples the host's CPU use by
process (:class:`~tui.telemetry.host_load.HostLoadSampler`: other processes, the app's own; the
sampler starts when the run compiles, and a measuring window under 0.2 s takes the figures of the
whole window instead of none), and a
CUDA run samples its GPU too (:class:`~tui.telemetry.sampler.RunSampler`: clocks, power, throttle
reasons, the GPU's other processes; the SM clock at :data:`CLOCK_HZ`, averaged per side over the
samples inside each side's measured blocks). compile-lab's own processes are the run's worker, the
other workers and spares of every runner in this process (``own_pids``: lanes run in parallel),
their process trees, and the app.

Telemetry must never break a run: every failure here becomes a warning on the record, or a figure
left None.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tui.engine.protocol import SIDES, WorkerWarning
from tui.engine.runner.gpu_lock import uuid_of
from tui.telemetry import host_load
from tui.telemetry.host_load import HostLoad, HostLoadSampler, union_roots
from tui.telemetry.model import RunTelemetry

if TYPE_CHECKING:
    from tui.engine.store.results import RunRecord

__all__ = ["CLOCK_HZ", "RunSampling", "SAMPLE_HZ", "measure_spans", "with_host_load", "with_side_clocks"]

log = logging.getLogger(__name__)

SAMPLE_HZ = 10
"""Telemetry samples per second while a run measures (clock, temperature, power, throttle reasons)."""

CLOCK_HZ = 50
"""SM clock samples per second while a run measures: at 10 Hz a block under 100 ms gets no sample,
and a side needs :data:`~tui.telemetry.model.MIN_CLOCK_SAMPLES` inside its blocks. One NVML clock
query costs microseconds; the sampler's own Python ~30 us a clock sample, ~45 us a full one, ~100 us
with the process list (measured on the fake sources): ~2 ms a second, 0.2 % of a core."""


def _warn(record: RunRecord, message: str) -> None:
    record.apply(WorkerWarning(message=message, source="runner"))


def measure_spans(record: RunRecord) -> dict[str, list[tuple[float, float]]]:
    """Per side, the (t_start, t_end) of the record's measured blocks that carry them."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for side in SIDES:
        blocks = record.samples.get(side, ())
        spans[side] = [span for block in blocks if block.stage == "measure" and (span := block.span) is not None]
    return spans


def with_side_clocks(telemetry: RunTelemetry, times: Iterable[float], clocks: Iterable[float],
                     spans: dict[str, list[tuple[float, float]]]) -> RunTelemetry:
    """``telemetry`` with the per-side SM clock of the samples inside each side's spans."""
    from tui.telemetry.sampler import clock_per_side

    per_side = clock_per_side(times, clocks, spans)
    eager, eager_n = per_side.get("eager", (None, 0))
    compiled, compiled_n = per_side.get("compiled", (None, 0))
    return replace(telemetry, sm_clock_eager_mhz=eager, sm_clock_eager_samples=eager_n,
                   sm_clock_compiled_mhz=compiled, sm_clock_compiled_samples=compiled_n)


def with_host_load(telemetry: RunTelemetry, load: HostLoad) -> RunTelemetry:
    """``telemetry`` with the host's figures (others' CPU, the busiest others, the app's CPU)."""
    return replace(telemetry, other_cpu_cores=load.other_cpu_cores, other_cpu_top=load.other_cpu_top,
                   app_cpu_cores=load.app_cpu_cores)


class RunSampling:
    """Samples one run's machine between :meth:`start` (measuring began) and :meth:`stop`.

    ``source``: a telemetry source (``NvmlSource``/``FakeSource``), or None for no GPU sampling.
    ``own_pids``: returns the pids of every compile-lab worker of this process (the run's siblings).
    """

    def __init__(self, source: Any, record: RunRecord, own_pids: Callable[[], Iterable[int]] | None = None,
                 sample_host: bool = True) -> None:
        self.source = source
        self.record = record
        self.own_pids = own_pids
        self.sample_host = sample_host
        self.sampler: Any = None
        self.host: HostLoadSampler | None = None
        self._started = False
        host_load.warm_up()  # the first window of the session would start with 50-100 ms of reading

    @property
    def measuring(self) -> bool:
        """Whether :meth:`start` ran (measuring began): a later phase ends the sampling."""
        return self._started

    def lead_in(self, worker_pid: int) -> None:
        """Start sampling the host when the run compiles: its figures fall back on this window.

        A CPU run of short calls measures for milliseconds, too short for CPU times that tick in
        10 ms; its figures then cover compiling, warming up and measuring (:meth:`HostLoadSampler.mark`).
        """
        if self.host is not None or self._started or not self.sample_host:
            return
        try:
            self.host = HostLoadSampler(union_roots({worker_pid}, self.own_pids or ())).start()
        except Exception as exc:  # telemetry must never break a run
            log.warning("run %s: sampling failed", self.record.run_id, exc_info=True)
            _warn(self.record, f"the CPU use of other processes was not sampled: {type(exc).__name__}: {exc}")

    async def start(self, worker_pid: int, gpu: str | None) -> None:
        """Start sampling the host (or mark the lead-in's window), and ``gpu`` (a uuid; a bare index cannot be sampled).

        Other processes on the GPU at this moment become a warning; all those seen while measuring
        are kept in the telemetry's ``other_gpu_processes``.
        """
        if self._started:
            return
        self._started = True
        roots = union_roots({worker_pid}, self.own_pids or ())
        try:
            if self.host is not None:
                await asyncio.to_thread(self.host.mark)
            elif self.sample_host:
                self.host = HostLoadSampler(roots).start()
        except Exception as exc:  # telemetry must never break a run
            log.warning("run %s: sampling failed", self.record.run_id, exc_info=True)
            _warn(self.record, f"the CPU use of other processes was not sampled: {type(exc).__name__}: {exc}")
        await self._start_gpu(gpu, roots)

    def _own_pids(self, roots: Callable[[], set[int]]) -> set[int]:
        own = roots() | {os.getpid()}
        if self.host is not None:
            own |= self.host.own_pids()
        return own

    async def _start_gpu(self, gpu: str | None, roots: Callable[[], set[int]]) -> None:
        source = self.source
        if source is None or self.sampler is not None or not getattr(source, "available", False):
            return
        if not gpu or gpu.isdigit():
            return
        uuid = uuid_of(gpu)
        try:
            snap = await asyncio.to_thread(source.sample, uuid)
            own = self._own_pids(roots)
            others = [f"{p.pid} ({p.name})" if p.name else str(p.pid)
                      for p in (snap.processes_except(own) if snap is not None else ())]
            if others:
                _warn(self.record, f"other processes were using the GPU when measuring started "
                                   f"(pid {', '.join(others)}): times may be inflated")
            from tui.telemetry.sampler import RunSampler

            self.sampler = RunSampler(source, uuid, hz=SAMPLE_HZ, clock_hz=CLOCK_HZ,
                                      own_pids=lambda: self._own_pids(roots)).start()
        except Exception as exc:  # telemetry must never break a run
            log.warning("run %s: sampling failed", self.record.run_id, exc_info=True)
            _warn(self.record, f"GPU telemetry was not sampled: {type(exc).__name__}: {exc}")

    async def stop(self, quick: bool = False) -> None:
        """Stop sampling and store the figures on the record (``quick``: without leaving the event loop)."""
        sampler, self.sampler = self.sampler, None
        host, self.host = self.host, None
        if sampler is None and host is None:
            return
        telemetry = await self._stop_gpu(sampler, quick) if sampler is not None else RunTelemetry()
        if host is not None:
            try:
                load = host.stop(timeout=0.0) if quick else await asyncio.to_thread(host.stop)
            except Exception as exc:
                log.warning("run %s: host load sampling failed to stop", self.record.run_id, exc_info=True)
                load = HostLoad(reason=f"{type(exc).__name__}: {exc}", failed=True)
            if load.failed:
                how = "was not measured" if load.other_cpu_cores is None else "was measured until polling failed"
                _warn(self.record, f"the CPU use of other processes {how}: {load.reason}")
            telemetry = with_host_load(telemetry, load)
        # Throttle reasons other than idle, like other users of the machine, become warnings in the
        # record's summary itself, from the telemetry stored here: adding one here would show it twice.
        self.record.set_telemetry(telemetry)

    async def _stop_gpu(self, sampler: Any, quick: bool) -> RunTelemetry:
        try:
            summary = sampler.stop() if quick else await asyncio.to_thread(sampler.stop)
            times, clocks = sampler.clock_series()
            # The blocks are read here, on the event loop, where the record is changed.
            return with_side_clocks(summary, times, clocks, measure_spans(self.record))
        except Exception as exc:
            log.warning("run %s: sampling failed", self.record.run_id, exc_info=True)
            _warn(self.record, f"GPU telemetry was not summarised: {type(exc).__name__}: {exc}")
            return RunTelemetry()
