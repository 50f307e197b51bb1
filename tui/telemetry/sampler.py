"""Fast sampling of the run's GPU while a benchmark runs, summarised when it ends.

The runner starts a :class:`RunSampler` on the run's GPU (matched by uuid) and stops it when
the worker finishes. Samples are folded into running aggregates as they arrive, so memory does
not grow with the length of the run. A source that raises is survived: a field whose handling
raises is dropped from the summary, and after ``max_errors`` failed polls in a row (or when the
GPU is lost or unknown) the sampler stops polling. ``stop()`` never raises.

Two more things are kept for the run's record. The SM clock's time series (8 bytes a sample
and a timestamp: a 10-minute run at 50 Hz is 0.5 MB), so that :func:`clock_per_side` can
average the clock over the samples inside each side's measured blocks: a block under 100 ms
gets no sample at 10 Hz, hence ``clock_hz``, a faster rate for the clock alone (the runner uses
50 Hz; the other fields stay at ``hz``). And, given ``own_pids``, the processes other than
compile-lab's own seen on the GPU, read every :data:`PROCESSES_EVERY_S`.
"""

from __future__ import annotations

import logging
import threading
import time
from array import array
from bisect import bisect_right
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol

from tui.telemetry.model import IDLE_REASON, MIN_CLOCK_SAMPLES, GpuSnapshot, RunTelemetry

__all__ = ["CLOCK_FIELDS", "FIELDS", "FIELDS_BETWEEN", "PROCESSES_EVERY_S", "RunSampler", "SampleSource",
           "clock_per_side"]

log = logging.getLogger(__name__)


#: The snapshot fields a run's summary needs; sources that take ``fields`` read only these.
FIELDS = ("sm_clock_mhz", "temp_c", "power_w", "energy_mj", "throttle_reasons")
#: What the samples between the first and the last read: the energy counter is left out, since
#: its difference needs only the two ends and NVML's read of it costs ~4 ms of CPU (the others ~1 µs).
FIELDS_BETWEEN = tuple(f for f in FIELDS if f != "energy_mj")
#: What the samples between two full ones read when ``clock_hz`` is above ``hz``.
CLOCK_FIELDS = ("sm_clock_mhz",)
#: Seconds between two reads of the GPU's process list (with ``own_pids``): one NVML call and a
#: /proc read per process, for a list that rarely changes.
PROCESSES_EVERY_S = 0.5


class SampleSource(Protocol):
    """What the sampler needs from a source (NvmlSource, FakeSource).

    ``fields`` is optional for a source: one whose ``sample`` takes only a uuid works too.
    """

    def sample(self, uuid: Any, fields: Any = None) -> GpuSnapshot | None:  # pragma: no cover - protocol
        """The GPU with this uuid now, reading only ``fields`` (all when None); None when it is not there."""
        ...


class RunSampler:
    """Samples one GPU at ``hz`` in a daemon thread until :meth:`stop`.

    Use it as ``sampler = RunSampler(source, uuid).start(); ...; summary = sampler.stop()``
    or as a context manager (then read :meth:`summary`). :meth:`sample_once` takes one sample
    synchronously, which is what the thread calls and what tests drive directly.

    The thread polls once at start and once more when stopped, so even a short run has a first
    and a last sample; only these two read the energy counter (its difference is the run's
    energy), the samples between read clocks, temperature, power and throttle reasons.

    Args:
        source: anything with ``sample(uuid) -> GpuSnapshot | None``.
        uuid: the GPU's uuid, in any form :func:`~tui.telemetry.model.normalize_uuid` accepts.
        hz: samples per second (10 by default; NVML updates most fields at about that rate).
        clock_hz: samples per second of the SM clock alone, when above ``hz`` (default: ``hz``).
        own_pids: returns compile-lab's own pids; with it, the GPU's other processes are collected.
        max_errors: failed polls in a row after which the sampler gives up.
    """

    def __init__(
        self,
        source: SampleSource,
        uuid: Any,
        hz: float = 10.0,
        *,
        clock_hz: float | None = None,
        own_pids: Callable[[], Collection[int]] | None = None,
        max_errors: int = 3,
    ) -> None:
        if hz <= 0 or (clock_hz is not None and clock_hz <= 0):
            raise ValueError("hz must be positive")
        self.source = source
        self.uuid = uuid
        self.hz = hz
        self.clock_hz = max(hz, clock_hz or hz)
        self.own_pids = own_pids
        self.max_errors = max_errors
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._halted = False
        self._with_fields = True
        self._errors = 0
        self._errors_in_row = 0
        self._last_error: str | None = None
        self._lost = False
        self._dead: set[str] = set()
        self._count = 0
        self._clock_sum = 0.0
        self._clock_n = 0
        self._clock_min: float | None = None
        self._temp_max: float | None = None
        self._power_sum = 0.0
        self._power_n = 0
        self._power_prev: tuple[float, float] | None = None  # (timestamp, watts)
        self._power_joules = 0.0
        self._power_spans = 0
        self._energy_first: float | None = None
        self._energy_last: float | None = None
        self._reasons: set[str] = set()
        self._clock_times = array("d")
        self._clock_values = array("d")
        self._others: dict[int, str | None] = {}

    # -- control -------------------------------------------------------------------------

    def start(self) -> RunSampler:
        """Start the sampling thread (once); returns ``self``."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="compile-lab-gpu-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> RunTelemetry:
        """Stop sampling (waits up to ``timeout`` s for the thread) and return :meth:`summary`.

        Blocks for about one poll: call it from a thread (e.g. ``asyncio.to_thread``) when the
        source is slow.
        """
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        return self.summary()

    def __enter__(self) -> RunSampler:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the sampling thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        period = 1.0 / self.clock_hz
        full_every = max(1, round(self.clock_hz / self.hz))
        processes_every = max(1, round(self.clock_hz * PROCESSES_EVERY_S))
        next_at = time.monotonic()
        tick = 0
        while not self._halted:
            self.sample_once(energy=tick == 0, clock_only=tick % full_every != 0,
                             processes=tick % processes_every == 0)
            tick += 1
            next_at += period
            delay = next_at - time.monotonic()
            if delay < 0:  # a slow poll: do not burst to catch up
                next_at = time.monotonic()
                delay = 0.0
            if self._stop.wait(delay):
                break
        if not self._halted:
            self.sample_once(processes=True)  # the last sample, at the end of the run

    # -- sampling ------------------------------------------------------------------------

    def sample_once(self, energy: bool = True, *, clock_only: bool = False, processes: bool = False) -> bool:
        """Take one sample now; ``True`` if it was recorded. Never raises.

        ``energy=False`` skips the (costly) energy counter; the thread reads it only in its first
        and last samples. ``clock_only`` reads the SM clock alone (between full samples);
        ``processes`` reads the GPU's process list too (when the sampler has ``own_pids``).
        """
        if self._halted or (clock_only and not self._with_fields):
            return False  # a source that reads every field each time is sampled at ``hz`` only
        fields = FIELDS if energy else CLOCK_FIELDS if clock_only else FIELDS_BETWEEN
        if processes and self.own_pids is not None:
            fields += ("processes",)
        try:
            snap = self._sample(fields)
        except Exception as exc:  # a broken source must not end the run: the summary says why
            with self._lock:
                self._errors += 1
                self._errors_in_row += 1
                if self._errors_in_row == 1:
                    log.warning("sampling the GPU failed", exc_info=True)
                self._last_error = f"{type(exc).__name__}: {exc}"
                if self._errors_in_row >= self.max_errors:
                    self._halted = True
            return False
        with self._lock:
            if snap is None:
                self._errors += 1
                self._last_error = "GPU not found"
                self._halted = True
                return False
            self._errors_in_row = 0
            if snap.lost:
                self._lost = True
                self._halted = True
                return False
            self._count += 1
            for name, fold in self._FOLDS:
                if name in self._dead:
                    continue
                try:
                    fold(self, snap)
                except Exception:  # a field with a value the sampler cannot use: no longer folded
                    log.warning("the GPU field %s was dropped", name, exc_info=True)
                    self._dead.add(name)
            return True

    def _sample(self, fields: tuple[str, ...]) -> GpuSnapshot | None:
        if self._with_fields:
            try:
                return self.source.sample(self.uuid, fields=fields)
            except TypeError as exc:
                if "fields" not in str(exc):
                    raise
                self._with_fields = False  # a source without the fields argument
        return self.source.sample(self.uuid)

    def _fold_clock(self, snap: GpuSnapshot) -> None:
        if snap.sm_clock_mhz is not None:
            clock = float(snap.sm_clock_mhz)
            self._clock_sum += clock
            self._clock_n += 1
            self._clock_min = clock if self._clock_min is None else min(self._clock_min, clock)
            if snap.timestamp is not None:
                self._clock_times.append(float(snap.timestamp))
                self._clock_values.append(clock)

    def _fold_temp(self, snap: GpuSnapshot) -> None:
        if snap.temp_c is not None:
            temp = float(snap.temp_c)
            self._temp_max = temp if self._temp_max is None else max(self._temp_max, temp)

    def _fold_power(self, snap: GpuSnapshot) -> None:
        if snap.power_w is None:
            return
        watts = float(snap.power_w)
        self._power_sum += watts
        self._power_n += 1
        if snap.timestamp is None:
            return
        if self._power_prev is not None:
            t0, w0 = self._power_prev
            self._power_joules += (w0 + watts) / 2.0 * max(0.0, snap.timestamp - t0)
            self._power_spans += 1
        self._power_prev = (float(snap.timestamp), watts)

    def _fold_energy(self, snap: GpuSnapshot) -> None:
        if snap.energy_mj is not None:
            energy = float(snap.energy_mj)
            if self._energy_first is None:
                self._energy_first = energy
            self._energy_last = energy

    def _fold_reasons(self, snap: GpuSnapshot) -> None:
        for reason in snap.throttle_reasons or ():
            if reason != IDLE_REASON:
                self._reasons.add(str(reason))

    def _fold_processes(self, snap: GpuSnapshot) -> None:
        if snap.processes is None or self.own_pids is None:
            return
        own = None
        for proc in snap.processes:
            if proc.pid in self._others:
                continue
            own = set(self.own_pids()) if own is None else own
            if proc.pid not in own:
                self._others[proc.pid] = proc.name

    _FOLDS = (
        ("sm_clock", _fold_clock),
        ("temp", _fold_temp),
        ("power", _fold_power),
        ("energy", _fold_energy),
        ("throttle_reasons", _fold_reasons),
        ("processes", _fold_processes),
    )

    # -- results -------------------------------------------------------------------------

    def summary(self) -> RunTelemetry:
        """The run's GPU figures so far (``None`` where nothing was measured)."""
        with self._lock:
            energy_j: float | None = None
            energy_from: str | None = None
            if (
                "energy" not in self._dead
                and self._energy_first is not None
                and self._energy_last is not None
                and self._energy_last > self._energy_first
            ):
                energy_j = (self._energy_last - self._energy_first) / 1000.0
                energy_from = "counter"
            elif "power" not in self._dead and self._power_spans > 0:
                energy_j = self._power_joules
                energy_from = "power"
            clock_ok = "sm_clock" not in self._dead and self._clock_n > 0
            power_ok = "power" not in self._dead and self._power_n > 0
            return RunTelemetry(
                sm_clock_mean_mhz=self._clock_sum / self._clock_n if clock_ok else None,
                sm_clock_min_mhz=float(self._clock_min) if clock_ok and self._clock_min is not None else None,
                temp_max_c=float(self._temp_max) if "temp" not in self._dead and self._temp_max is not None else None,
                power_mean_w=self._power_sum / self._power_n if power_ok else None,
                energy_j=energy_j,
                energy_from=energy_from,
                throttle_reasons=tuple(sorted(self._reasons)) if "throttle_reasons" not in self._dead else (),
                samples=self._count,
                errors=self._errors,
                last_error=self._last_error,
                gpu_lost=self._lost,
                other_gpu_processes=tuple(f"{name or '?'} ({pid})" for pid, name in self._others.items()),
            )

    def clock_series(self) -> tuple[array, array]:
        """Copies of the SM clock samples so far: (``time.monotonic()`` seconds, MHz), in time order."""
        with self._lock:
            return array("d", self._clock_times), array("d", self._clock_values)


def clock_per_side(
    times: Iterable[float],
    clocks: Iterable[float],
    spans: Mapping[str, Iterable[tuple[float, float]]],
    min_samples: int = MIN_CLOCK_SAMPLES,
) -> dict[str, tuple[float | None, int]]:
    """Per side, the mean SM clock of the samples inside one of its spans, and their count.

    ``spans[side]`` lists (start, end) in the samples' clock (``time.monotonic()``; a sample at
    either end counts); the mean is None below ``min_samples`` samples (n/a), as for a side
    without spans (blocks from a worker that did not time them).
    """
    pairs = list(zip(times, clocks, strict=False))
    result: dict[str, tuple[float | None, int]] = {}
    for side, side_spans in spans.items():
        merged = _merged(side_spans)
        starts = [start for start, _ in merged]
        inside = [mhz for t, mhz in pairs if (i := bisect_right(starts, t) - 1) >= 0 and t <= merged[i][1]]
        count = len(inside)
        result[side] = (sum(inside) / count if count >= max(1, min_samples) else None, count)
    return result


def _merged(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Spans sorted and overlapping ones joined, so one bisect finds the span of a time."""
    out: list[tuple[float, float]] = []
    for start, end in sorted((float(a), float(b)) for a, b in spans if b >= a):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
