"""Per-run GPU telemetry: the run's GPU sampled while it measures, summarised into its record.

Telemetry must never break a run: every failure here becomes a warning on the record.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from tui.engine.protocol import WorkerWarning
from tui.engine.runner.gpu_lock import uuid_of

if TYPE_CHECKING:
    from tui.engine.results import RunRecord

__all__ = ["RunSampling", "SAMPLE_HZ"]

SAMPLE_HZ = 10
"""Telemetry samples per second while a run measures."""


def _warn(record: RunRecord, message: str) -> None:
    record.apply(WorkerWarning(message=message, source="runner"))


class RunSampling:
    """Samples one run's GPU between :meth:`start` (measuring began) and :meth:`stop`.

    ``source``: a telemetry source (``NvmlSource``/``FakeSource``), or None for no sampling.
    """

    def __init__(self, source: Any, record: RunRecord) -> None:
        self.source = source
        self.record = record
        self.sampler: Any = None

    async def start(self, worker_pid: int, gpu: str | None) -> None:
        """Start sampling ``gpu`` (a uuid; a bare index cannot be sampled), noting other processes on it."""
        source = self.source
        if source is None or self.sampler is not None or not getattr(source, "available", False):
            return
        if not gpu or gpu.isdigit():
            return
        uuid = uuid_of(gpu)
        try:
            snap = await asyncio.to_thread(source.sample, uuid)
            others = [f"{p.pid} ({p.name})" if p.name else str(p.pid)
                      for p in (snap.processes_except({worker_pid}) if snap is not None else ())]
            if others:
                _warn(self.record, f"other processes were using the GPU when measuring started "
                                   f"(pid {', '.join(others)}): times may be inflated")
            from tui.telemetry.sampler import RunSampler

            self.sampler = RunSampler(source, uuid, hz=SAMPLE_HZ).start()
        except Exception as exc:  # telemetry must never break a run
            _warn(self.record, f"GPU telemetry was not sampled: {type(exc).__name__}: {exc}")

    async def stop(self, quick: bool = False) -> None:
        """Stop sampling and store the summary on the record (``quick``: without leaving the event loop)."""
        sampler, self.sampler = self.sampler, None
        if sampler is None:
            return
        try:
            summary = sampler.stop() if quick else await asyncio.to_thread(sampler.stop)
        except Exception as exc:
            _warn(self.record, f"GPU telemetry was not summarised: {type(exc).__name__}: {exc}")
            return
        # Throttle reasons other than idle become a warning in the record's summary itself,
        # from the telemetry stored here: adding one here would show it twice.
        self.record.set_telemetry(summary)
