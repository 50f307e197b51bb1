"""Deterministic fake GPUs with the same interface as :class:`tui.telemetry.nvml.NvmlSource`.

For tests, demos and benchmarks on machines without a GPU. Values follow a fixed pattern of
the GPU's index and of how many times that GPU was polled (its *tick*), so two runs of a test
see the same numbers. Faults can be injected mid-run:

* ``set_field(gpu, temp_c=None)``: a field goes n/a (what NvmlSource reports after NVML says
  "Not Supported" or fails for that field);
* ``script(gpu, sm_clock_mhz=[1980, 1500, ...])``: the next polls of that GPU take these values
  (the last one then stays);
* ``raise_on_poll(exc, count)``: the next ``count`` polls raise ``exc`` (a broken source);
* ``lose(gpu)``: the GPU falls off the bus (``lost=True``, live fields n/a);
* ``make_unavailable(reason)``: telemetry goes away as if NVML were missing.

``cost_s`` makes every poll cost that much time, burning CPU by default (``busy=True``)
the way NVML's ioctl calls do, to measure what polling costs a UI.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from tui.telemetry.model import GpuProcess, GpuSnapshot, normalize_uuid

__all__ = ["FakeSource"]

_FIELDS = {f for f in GpuSnapshot.__dataclass_fields__} - {"uuid", "index", "timestamp", "lost"}
_LIVE = _FIELDS - {"name", "mem_total_mb", "power_limit_w", "sm_clock_max_mhz"}


@dataclass
class _FakeGpu:
    index: int
    uuid: str
    name: str
    tick: int = 0
    energy_mj: float = 0.0
    last_time: float | None = None
    fixed: dict[str, Any] = field(default_factory=dict)
    scripts: dict[str, list[Any]] = field(default_factory=dict)
    lost: bool = False


class FakeSource:
    """Fake GPU telemetry: ``snapshot()``, ``sample(uuid)``, ``find(uuid)``, ``close()``.

    Args:
        gpus: how many fake GPUs (index 0 .. gpus-1).
        cost_s: time each poll (``snapshot`` or ``sample``) takes.
        name: product name of every GPU ("Fake H200").
        busy: spend ``cost_s`` burning CPU (like NVML) rather than sleeping.
        vary: values change from poll to poll; ``False`` keeps tick-0 values (snapshots).
        names: each GPU's product name (a box of several kinds), instead of ``name`` for all.
        near_cpus: GPU index -> the CPUs near it (what NVML's CPU affinity reports); None: unknown.
        time_step_s: if set, timestamps are virtual (start + tick * step) and energy grows by
            power * step per poll, which makes samplers' results exact; otherwise real time.

    Attributes:
        calls: polls so far (including those that raised).
        available / reason: like NvmlSource's.
    """

    def __init__(
        self,
        gpus: int = 1,
        cost_s: float = 0.0,
        *,
        name: str = "Fake H200",
        busy: bool = True,
        vary: bool = True,
        time_step_s: float | None = None,
        near_cpus: dict[int, Iterable[int]] | None = None,
        names: list[str] | None = None,
    ) -> None:
        self.cost_s = cost_s
        self.busy = busy
        self.vary = vary
        self.time_step_s = time_step_s
        self.near_cpus = near_cpus
        self.calls = 0
        self.available = True
        self.reason = ""
        self.closed = False
        self._cond = threading.Condition()
        self._errors: list[BaseException] = []
        self._error_forever: BaseException | None = None
        self._gpus = [
            _FakeGpu(index=i, uuid=f"gpu-fa4e0000-0000-4000-8000-{i:012d}", name=names[i] if names else name)
            for i in range(gpus)
        ]

    # -- scripting -----------------------------------------------------------------------

    @property
    def uuids(self) -> list[str]:
        """The fake GPUs' uuids (canonical form), in index order."""
        return [g.uuid for g in self._gpus]

    def set_field(self, gpu: int | str, **values: Any) -> None:
        """Fix fields of one GPU (index or uuid) from the next poll on; ``None`` means n/a."""
        target = self._gpu(gpu)
        _check(values)
        with self._cond:
            target.fixed.update(values)

    def clear_field(self, gpu: int | str, *names: str) -> None:
        """Undo :meth:`set_field` for these fields: back to the generated pattern."""
        target = self._gpu(gpu)
        with self._cond:
            for name in names:
                target.fixed.pop(name, None)

    def script(self, gpu: int | str, **sequences: Iterable[Any]) -> None:
        """Successive values of fields for the next polls of one GPU; each last value then stays."""
        target = self._gpu(gpu)
        _check(sequences)
        with self._cond:
            for name, seq in sequences.items():
                values = list(seq)
                if not values:
                    raise ValueError(f"empty script for {name}")
                target.scripts[name] = values

    def raise_on_poll(self, error: BaseException, count: int | None = 1) -> None:
        """The next ``count`` polls raise ``error`` (``count=None``: every poll from now on)."""
        with self._cond:
            if count is None:
                self._error_forever = error
            else:
                self._errors.extend([error] * count)

    def lose(self, gpu: int | str) -> None:
        """The GPU falls off the bus: later polls say ``lost=True`` with live fields n/a."""
        target = self._gpu(gpu)
        with self._cond:
            target.lost = True

    def make_unavailable(self, reason: str) -> None:
        """Telemetry goes away (as if NVML were missing): polls return nothing."""
        with self._cond:
            self.available = False
            self.reason = reason

    def wait_for_calls(self, n: int, timeout: float | None = None) -> bool:
        """Block until at least ``n`` polls were made; ``False`` on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self.calls >= n, timeout)

    # -- the source interface ------------------------------------------------------------

    def snapshot(self, fields: Collection[str] | None = None) -> list[GpuSnapshot]:
        """One snapshot per fake GPU (``[]`` when made unavailable); ``fields`` as for :meth:`sample`."""
        self._spend()
        with self._cond:
            try:
                self._maybe_raise()
                if not self.available:
                    return []
                return [_only(self._poll(g), fields) for g in self._gpus]
            finally:
                self._count()

    def sample(self, uuid: Any, fields: Collection[str] | None = None) -> GpuSnapshot | None:
        """A fresh snapshot of the GPU with this uuid (any form), or ``None``.

        Like NvmlSource's: ``fields`` limits the live fields filled (the others are ``None``).
        """
        self._spend()
        with self._cond:
            try:
                self._maybe_raise()
                target = self._find(uuid)
                if target is None:
                    return None
                return _only(self._poll(target), fields)
            finally:
                self._count()

    def find(self, uuid: Any) -> GpuSnapshot | None:
        """The GPU with this uuid, slow fields only, without polling it."""
        with self._cond:
            target = self._find(uuid)
            if target is None:
                return None
            base = self._values(target, 0)
            return GpuSnapshot(
                uuid=target.uuid,
                index=target.index,
                name=base["name"],
                mem_total_mb=base["mem_total_mb"],
                power_limit_w=base["power_limit_w"],
                sm_clock_max_mhz=base["sm_clock_max_mhz"],
                lost=target.lost,
            )

    def cpu_affinity(self, uuid: Any) -> frozenset[int] | None:
        """The CPUs near the GPU with this uuid (``near_cpus``: index -> CPUs), or None when not set."""
        target = self._find(uuid)
        if target is None or self.near_cpus is None:
            return None
        return frozenset(self.near_cpus.get(target.index, ())) or None

    def close(self) -> None:
        """Nothing to release; remembered in :attr:`closed`."""
        self.closed = True

    # -- internals -----------------------------------------------------------------------

    def _gpu(self, gpu: int | str) -> _FakeGpu:
        if isinstance(gpu, int):
            return self._gpus[gpu]
        found = self._find(gpu)
        if found is None:
            raise KeyError(gpu)
        return found

    def _find(self, uuid: Any) -> _FakeGpu | None:
        if not self.available:
            return None
        key = normalize_uuid(uuid)
        return next((g for g in self._gpus if g.uuid == key), None)

    def _spend(self) -> None:
        if self.cost_s <= 0:
            return
        if not self.busy:
            time.sleep(self.cost_s)
            return
        end = time.perf_counter() + self.cost_s
        while time.perf_counter() < end:
            pass

    def _maybe_raise(self) -> None:
        if self._errors:
            raise self._errors.pop(0)
        if self._error_forever is not None:
            raise self._error_forever

    def _count(self) -> None:
        self.calls += 1
        self._cond.notify_all()

    def _values(self, g: _FakeGpu, t: int) -> dict[str, Any]:
        i = g.index
        return {
            "name": g.name,
            "util_gpu_pct": float((50 + 10 * i + 7 * t) % 101),
            "util_mem_pct": float((20 + 5 * i + 3 * t) % 101),
            "mem_used_mb": float(4096 + 1024 * i + 16 * (t % 8)),
            "mem_total_mb": 143771.0,
            "temp_c": float(40 + 2 * i + t % 6),
            "power_w": float(150 + 25 * i + 10 * (t % 10)),
            "power_limit_w": 700.0,
            "sm_clock_mhz": float(1980 - 15 * (t % 4)),
            "sm_clock_max_mhz": 1980.0,
            "mem_clock_mhz": 3201.0,
            "pstate": "P0",
            "throttle_reasons": (),
            "processes": (GpuProcess(pid=4242 + i, name="python", used_mb=float(4000 + 1024 * i)),),
        }

    def _poll(self, g: _FakeGpu) -> GpuSnapshot:
        t = g.tick if self.vary else 0
        if self.time_step_s is not None:
            now = 1000.0 + g.tick * self.time_step_s
        else:
            now = time.monotonic()
        values = self._values(g, t)
        values.update(g.fixed)
        for name, seq in g.scripts.items():
            values[name] = seq[min(g.tick, len(seq) - 1)]
        g.tick += 1
        if g.lost:
            keep = ("name", "mem_total_mb", "power_limit_w", "sm_clock_max_mhz")
            values = {k: values[k] for k in keep}
            return GpuSnapshot(uuid=g.uuid, index=g.index, timestamp=now, lost=True, **values)
        power = values.get("power_w")
        if "energy_mj" not in values:
            if g.last_time is not None and power is not None:
                g.energy_mj += power * (now - g.last_time) * 1000.0
            values["energy_mj"] = round(g.energy_mj, 3)
        g.last_time = now
        return GpuSnapshot(uuid=g.uuid, index=g.index, timestamp=now, **values)


def _only(snap: GpuSnapshot, fields: Collection[str] | None) -> GpuSnapshot:
    """The snapshot with the live fields not asked for set to ``None`` (like NvmlSource)."""
    if fields is None:
        return snap
    cleared: dict[str, Any] = {name: None for name in _LIVE if name not in fields}  # field names known at run time
    return replace(snap, **cleared)


def _check(values: dict[str, Any]) -> None:
    unknown = set(values) - _FIELDS
    if unknown:
        raise ValueError(f"unknown GpuSnapshot field(s): {', '.join(sorted(unknown))}")

