"""A GPU and a host on one virtual clock, for testing the worker's CUDA clock on the CPU.

:class:`FakeCuda` stands in for ``torch.cuda.Event``, ``torch.cuda.synchronize`` and the spin
kernel (``torch.cuda._sleep``), and gives the clock module a ``time`` whose ``perf_counter``
and ``monotonic`` read the virtual host clock. Everything is in milliseconds:

* the host advances when a step does host work (``host_ms`` per call, before its kernel is
  queued), when an event is recorded (``event_host_ms``, the cost of ``Event.record`` that
  made per-call events bias the old host clock) and when it waits for the GPU;
* the GPU runs what is queued in order: an operation starts when it is queued or when the GPU
  has finished the one before, whichever is later. An event is stamped when the GPU reaches
  it; reading ``elapsed_time`` of an event the GPU has not reached yet (from the host's point
  of view) raises, as CUDA does, so a clock that reads a block before waiting for it fails.

Every operation is appended to :attr:`FakeCuda.log` as ``(what, tag, host_ms, gpu_ms)`` so tests
can check the order of queueing and waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

__all__ = ["FakeCuda"]

MONOTONIC_OFFSET_S = 5000.0
"""The fake ``time.monotonic()`` is the host clock in seconds plus this (a different origin than perf_counter)."""


class FakeCuda:
    """Virtual host and GPU clocks (ms); see the module docstring."""

    def __init__(self, event_host_ms: float = 0.0) -> None:
        self.host = 0.0
        self.gpu_free = 0.0
        self.event_host_ms = event_host_ms
        self.log: list[tuple[str, str, float, float]] = []
        self.kernels: list[tuple[str, float, float]] = []
        self.spins: list[float] = []
        self.events_made = 0
        self.Event = self._event_class()
        self.time = SimpleNamespace(perf_counter=self.perf_counter, monotonic=self.monotonic,
                                    perf_counter_ns=lambda: int(self.host * 1e6))

    # ----- what replaces torch and time ---------------------------------------

    def _event_class(self) -> type:
        fake = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.t: float | None = None
                fake.events_made += 1

            def record(self, stream: Any = None) -> None:
                fake.host += fake.event_host_ms
                self.t = max(fake.gpu_free, fake.host)
                fake.gpu_free = self.t
                fake.log.append(("record", "", fake.host, self.t))

            def query(self) -> bool:
                return self.t is not None and self.t <= fake.host

            def synchronize(self) -> None:
                assert self.t is not None, "waiting for an event that was never recorded"
                fake.host = max(fake.host, self.t)
                fake.log.append(("wait", "", fake.host, self.t))

            def elapsed_time(self, end: Event) -> float:
                if not (self.query() and end.query()):
                    raise RuntimeError("CUDA error: device not ready (event read before it completed)")
                return end.t - self.t

        return Event

    def synchronize(self, device: Any = None) -> None:
        """``torch.cuda.synchronize``: the host waits until the GPU has run everything queued."""
        self.host = max(self.host, self.gpu_free)
        self.log.append(("sync", "", self.host, self.gpu_free))

    def sleep(self, cycles: int) -> None:
        """``torch.cuda._sleep`` at 1000 cycles per ms (set the clock's ``_cycles_per_ms`` to 1000)."""
        ms = cycles / 1000.0
        start = max(self.gpu_free, self.host)
        self.gpu_free = start + ms
        self.spins.append(ms)
        self.log.append(("spin", f"{ms:g}", self.host, start))

    def perf_counter(self) -> float:
        return self.host / 1e3

    def monotonic(self) -> float:
        return self.host / 1e3 + MONOTONIC_OFFSET_S

    def install(self, monkeypatch: Any, clock_module: Any) -> None:
        """Patch ``torch.cuda`` and ``clock_module.time`` for the duration of a test."""
        import torch

        monkeypatch.setattr(torch.cuda, "Event", self.Event)
        monkeypatch.setattr(torch.cuda, "synchronize", self.synchronize)
        monkeypatch.setattr(clock_module, "time", self.time)

    def clock(self, clock_module: Any, **kwargs: Any) -> Any:
        """A ``CudaClock`` on these fakes (``install`` first), spinning 1000 cycles per ms."""
        import torch

        clock = clock_module.CudaClock(torch.device("cpu"), **kwargs)
        clock._sleep, clock._cycles_per_ms = self.sleep, 1000.0
        return clock

    # ----- workloads -----------------------------------------------------------

    def kernel(self, tag: str, device_ms: float, host_ms: float) -> None:
        """Host work of ``host_ms``, then one kernel of ``device_ms`` queued."""
        self.host += host_ms
        start = max(self.gpu_free, self.host)
        self.gpu_free = start + device_ms
        self.kernels.append((tag, start, self.gpu_free))
        self.log.append(("kernel", tag, self.host, start))

    def step(self, tag: str, device_ms: float, host_ms: float, inner_sync: bool = False) -> Callable[[tuple], None]:
        """A call of ``host_ms`` on the host and ``device_ms`` on the GPU.

        With ``inner_sync`` the call is two halves with a synchronize between them (as
        ``.item()`` inside a forward): half the host work, half the kernels, a wait for the
        GPU, then the other halves. ``args`` of ``(device_ms, host_ms)`` override the defaults.
        """

        def call(args: tuple) -> None:
            device, host = args if len(args) == 2 else (device_ms, host_ms)
            if inner_sync:
                self.kernel(tag, device / 2, host / 2)
                self.synchronize()
                self.kernel(tag, device / 2, host / 2)
            else:
                self.kernel(tag, device, host)

        call.__name__ = f"step_{tag}"
        return call

    def plain_loop_ms(self, step: Callable[[tuple], None], calls: int) -> float:
        """What a plain loop of ``calls`` calls with one synchronize at the end costs per call, from an idle GPU."""
        self.synchronize()
        start = self.host
        for _ in range(calls):
            step(())
        self.synchronize()
        return (self.host - start) / calls
