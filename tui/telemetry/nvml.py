"""GPU telemetry from NVML through nvidia-ml-py (``import pynvml``, imported lazily).

Rules this module follows (docs/METHOD.md, "GPU telemetry during the run" and "Which GPU"):

* Nothing here raises to the caller. When NVML or the driver is missing, :attr:`NvmlSource.available`
  is ``False``, :attr:`NvmlSource.reason` says why, and polls return nothing.
* Every field is read on its own. ``NVMLError_NotSupported`` (or a function this driver or
  binding lacks) makes that field ``None`` and is remembered: the field is never asked again
  for that GPU. Any other error makes the field ``None`` for this poll only. "GPU is lost"
  marks the GPU lost: from then on it is reported with ``lost=True`` and is not queried.
* Handles are cached; slow fields (name, uuid, memory total, power limit, max SM clock) are
  read once per GPU.
* GPUs are matched by uuid (``nvmlDeviceGetHandleByUUID``), never by index: CUDA and NVML
  order devices differently. Indexes are only used to enumerate all GPUs.

Thread safety: every public method takes one lock, so a UI poll and a run's sampler can
share a source. NVML itself is thread-safe.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from tui.telemetry.model import GpuProcess, GpuSnapshot, normalize_uuid, nvml_uuid, throttle_words

__all__ = ["NvmlSource"]

log = logging.getLogger(__name__)

# NVML return codes (stable across releases; read from the module when it has them).
_NOT_SUPPORTED = 3
_FUNCTION_NOT_FOUND = 13
_GPU_IS_LOST = 15
_CLOCK_SM = 1
_CLOCK_MEM = 2
_TEMPERATURE_GPU = 0
_PSTATE_UNKNOWN = 32
_MIB = 1024 * 1024
_NOT_AVAILABLE = 2**63  # NVML's NVML_VALUE_NOT_AVAILABLE is 2**64 - 1 for unsigned long long

_HINTS = {
    "NVML Shared Library Not Found": "NVML Shared Library Not Found (no NVIDIA driver on this machine?)",
}


@dataclass
class _Device:
    """What the source keeps per GPU between polls."""

    handle: Any
    uuid: str
    index: int | None = None
    name: str | None = None
    mem_total_mb: float | None = None
    power_limit_w: float | None = None
    sm_clock_max_mhz: float | None = None
    unsupported: set[str] = field(default_factory=set)
    lost: bool = False


class NvmlSource:
    """Telemetry of the NVIDIA GPUs of this machine, read through NVML.

    Construction is free: NVML is loaded and initialised on first use (``available``,
    ``snapshot()``, ``sample()``, ``find()``). Call these from a thread, not from a UI
    event loop: the first call can take a few hundred milliseconds.

    Args:
        nvml: the pynvml module to use; by default ``import pynvml`` on first use
            (tests put a fake module in ``sys.modules["pynvml"]``).
    """

    def __init__(self, nvml: ModuleType | None = None) -> None:
        self._nvml: Any = nvml
        self._lock = threading.RLock()
        self._started = False
        self._available = False
        self._reason = ""
        self._devices: dict[str, _Device] = {}
        self._order: list[str] = []

    # -- state ---------------------------------------------------------------------------

    @property
    def available(self) -> bool:
        """Whether NVML loaded and found at least one GPU (initialises NVML on first use)."""
        with self._lock:
            self._start()
            return self._available

    @property
    def reason(self) -> str:
        """Why telemetry is unavailable (``""`` when available).

        The bare reason, e.g. ``"nvidia-ml-py is not installed"`` or NVML's error text;
        the UI shows it as ``"GPU telemetry unavailable: <reason>"``.
        """
        with self._lock:
            self._start()
            return self._reason

    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        self._available = False
        if self._nvml is None:
            try:
                import pynvml  # noqa: PLC0415 - lazy on purpose: the UI starts without NVML
            except ImportError:
                self._reason = "nvidia-ml-py is not installed"
                return
            self._nvml = pynvml
        try:
            self._nvml.nvmlInit()
        except Exception as exc:  # NVMLError, OSError from ctypes, ...; the GPU pane shows the reason
            log.debug("nvmlInit failed", exc_info=True)
            self._reason = _describe(exc)
            return
        try:
            count = int(self._nvml.nvmlDeviceGetCount())
        except Exception as exc:  # the GPU pane shows the reason
            log.warning("NVML did not count the GPUs", exc_info=True)
            self._reason = _describe(exc)
            return
        for index in range(count):
            try:
                handle = self._nvml.nvmlDeviceGetHandleByIndex(index)
                raw_uuid = self._nvml.nvmlDeviceGetUUID(handle)
            except Exception:  # a GPU NVML cannot even name: left out
                log.warning("NVML did not name GPU %d: it is left out", index, exc_info=True)
                continue
            self._add_device(handle, raw_uuid)
        if not self._devices:
            self._reason = "NVML found no NVIDIA GPU"
            return
        self._available = True
        self._reason = ""

    def _add_device(self, handle: Any, raw_uuid: Any) -> _Device:
        dev = _Device(handle=handle, uuid=normalize_uuid(_text(raw_uuid)) or "")
        nv = self._nvml
        index = self._read(dev, "index", "nvmlDeviceGetIndex")
        dev.index = int(index) if index is not None else None
        name = self._read(dev, "name", "nvmlDeviceGetName")
        dev.name = _text(name) if name is not None else None
        memory = self._read(dev, "memory", "nvmlDeviceGetMemoryInfo")
        dev.mem_total_mb = _mib(getattr(memory, "total", None))
        limit = self._read(dev, "power_limit", "nvmlDeviceGetEnforcedPowerLimit")
        if limit is None:
            limit = self._read(dev, "power_management_limit", "nvmlDeviceGetPowerManagementLimit")
        dev.power_limit_w = _milli(limit)
        dev.sm_clock_max_mhz = _num(
            self._read(dev, "sm_clock_max", "nvmlDeviceGetMaxClockInfo", getattr(nv, "NVML_CLOCK_SM", _CLOCK_SM))
        )
        self._devices[dev.uuid] = dev
        self._order.append(dev.uuid)
        return dev

    # -- public API ----------------------------------------------------------------------

    def snapshot(self, fields: Collection[str] | None = None) -> list[GpuSnapshot]:
        """One snapshot per GPU, in NVML order. ``[]`` when telemetry is unavailable.

        ``fields``: as for :meth:`sample`.
        """
        with self._lock:
            self._start()
            if not self._available:
                return []
            return [self._poll(self._devices[u], fields) for u in self._order]

    def sample(self, uuid: Any, fields: Collection[str] | None = None) -> GpuSnapshot | None:
        """A fresh snapshot of the one GPU with this uuid (any form), or ``None`` if unknown.

        ``fields`` (names of :class:`GpuSnapshot` fields) limits the NVML calls to what the
        caller needs; the others are ``None``. The slow fields are always filled (they are cached).
        Most NVML reads cost about a microsecond (the driver caches them), but the energy
        counter (``energy_mj``) costs milliseconds of CPU per read (docs/BENCHMARKS.md, "Figures behind the
        code"): leave it out of frequent polls.
        """
        with self._lock:
            dev = self._device(uuid)
            return None if dev is None else self._poll(dev, fields)

    def find(self, uuid: Any) -> GpuSnapshot | None:
        """The GPU with this uuid (any form) with its slow fields only (no poll), or ``None``."""
        with self._lock:
            dev = self._device(uuid)
            if dev is None:
                return None
            return GpuSnapshot(
                uuid=dev.uuid,
                index=dev.index,
                name=dev.name,
                mem_total_mb=dev.mem_total_mb,
                power_limit_w=dev.power_limit_w,
                sm_clock_max_mhz=dev.sm_clock_max_mhz,
                lost=dev.lost,
            )

    def cpu_affinity(self, uuid: Any) -> frozenset[int] | None:
        """The CPUs NVML calls ideal for this GPU (its NUMA node's), or None when it cannot say."""
        with self._lock:
            dev = self._device(uuid)
            if dev is None:
                return None
            words = (os.cpu_count() or 64) // 64 + 1
            mask = self._read(dev, "cpu_affinity", "nvmlDeviceGetCpuAffinity", words)
        if mask is None:
            return None
        cpus = frozenset(64 * word + bit for word, value in enumerate(mask) for bit in range(64)
                         if int(value) >> bit & 1)
        return cpus or None

    def close(self) -> None:
        """Shut NVML down and forget all handles; a later call initialises it again."""
        with self._lock:
            if self._started and self._available and self._nvml is not None:
                try:
                    self._nvml.nvmlShutdown()
                except Exception:  # nothing to undo: the handles are forgotten below either way
                    log.debug("nvmlShutdown failed", exc_info=True)
            self._started = False
            self._available = False
            self._devices.clear()
            self._order.clear()

    # -- internals -----------------------------------------------------------------------

    def _device(self, uuid: Any) -> _Device | None:
        self._start()
        if not self._available:
            return None
        key = normalize_uuid(uuid)
        if key is None:
            return None
        dev = self._devices.get(key)
        if dev is not None:
            return dev
        # Not enumerated at start (e.g. a MIG instance): ask NVML by uuid, never by index.
        try:
            handle = self._nvml.nvmlDeviceGetHandleByUUID(nvml_uuid(key))
        except Exception:  # not a GPU NVML knows: the caller shows it as not found
            log.debug("NVML has no GPU %s", key, exc_info=True)
            return None
        return self._add_device(handle, key)

    def _read(self, dev: _Device, key: str, function: str, *args: Any) -> Any:
        """One NVML call for one field, with the per-field error rules of this module."""
        if dev.lost or key in dev.unsupported:
            return None
        fn: Callable[..., Any] | None = getattr(self._nvml, function, None)
        if fn is None:  # an older nvidia-ml-py without this function
            dev.unsupported.add(key)
            return None
        try:
            return fn(dev.handle, *args)
        except Exception as exc:  # NVMLError by its code; anything else reads as no value this time
            code = getattr(exc, "value", None)
            if code in (_NOT_SUPPORTED, _FUNCTION_NOT_FOUND):
                dev.unsupported.add(key)
            elif code == _GPU_IS_LOST:
                dev.lost = True
            else:
                log.debug("NVML %s failed", function, exc_info=True)
            return None

    def _poll(self, dev: _Device, fields: Collection[str] | None = None) -> GpuSnapshot:
        nv = self._nvml

        def read(wanted: tuple[str, ...], key: str, function: str, *args: Any) -> Any:
            if fields is not None and not any(name in fields for name in wanted):
                return None
            return self._read(dev, key, function, *args)

        sm, mem, gpu_temp = (
            getattr(nv, n, d)
            for n, d in (
                ("NVML_CLOCK_SM", _CLOCK_SM),
                ("NVML_CLOCK_MEM", _CLOCK_MEM),
                ("NVML_TEMPERATURE_GPU", _TEMPERATURE_GPU),
            )
        )
        util = read(("util_gpu_pct", "util_mem_pct"), "utilization", "nvmlDeviceGetUtilizationRates")
        memory = read(("mem_used_mb",), "memory", "nvmlDeviceGetMemoryInfo")
        temp = read(("temp_c",), "temperature", "nvmlDeviceGetTemperature", gpu_temp)
        power = read(("power_w",), "power", "nvmlDeviceGetPowerUsage")
        sm_clock = read(("sm_clock_mhz",), "sm_clock", "nvmlDeviceGetClockInfo", sm)
        mem_clock = read(("mem_clock_mhz",), "mem_clock", "nvmlDeviceGetClockInfo", mem)
        pstate = read(("pstate",), "pstate", "nvmlDeviceGetPerformanceState")
        reasons = read(("throttle_reasons",), "clocks_event_reasons", "nvmlDeviceGetCurrentClocksEventReasons")
        if reasons is None and "clocks_event_reasons" in dev.unsupported:
            reasons = read(
                ("throttle_reasons",), "clocks_throttle_reasons", "nvmlDeviceGetCurrentClocksThrottleReasons"
            )
        processes = read(("processes",), "processes", "nvmlDeviceGetComputeRunningProcesses")
        energy = read(("energy_mj",), "energy", "nvmlDeviceGetTotalEnergyConsumption")
        if dev.mem_total_mb is None:
            dev.mem_total_mb = _mib(getattr(memory, "total", None))
        return GpuSnapshot(
            uuid=dev.uuid,
            index=dev.index,
            name=dev.name,
            util_gpu_pct=_num(getattr(util, "gpu", None)),
            util_mem_pct=_num(getattr(util, "memory", None)),
            mem_used_mb=_mib(getattr(memory, "used", None)),
            mem_total_mb=dev.mem_total_mb,
            temp_c=_num(temp),
            power_w=_milli(power),
            power_limit_w=dev.power_limit_w,
            sm_clock_mhz=_num(sm_clock),
            sm_clock_max_mhz=dev.sm_clock_max_mhz,
            mem_clock_mhz=_num(mem_clock),
            pstate=f"P{int(pstate)}" if pstate is not None and 0 <= int(pstate) < _PSTATE_UNKNOWN else None,
            throttle_reasons=throttle_words(int(reasons)) if reasons is not None else None,
            processes=_processes(processes),
            energy_mj=_num(energy),
            timestamp=time.monotonic(),
            lost=dev.lost,
        )


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return _HINTS.get(text, text)


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)


def _num(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number >= _NOT_AVAILABLE else number


def _mib(value: Any) -> float | None:
    number = _num(value)
    return None if number is None else round(number / _MIB, 1)


def _milli(value: Any) -> float | None:
    number = _num(value)
    return None if number is None else number / 1000.0


def _processes(infos: Any) -> tuple[GpuProcess, ...] | None:
    if infos is None:
        return None
    out = []
    for info in infos:
        pid = getattr(info, "pid", None)
        if pid is None:
            continue
        out.append(GpuProcess(pid=int(pid), name=_comm(int(pid)), used_mb=_mib(getattr(info, "usedGpuMemory", None))))
    return tuple(out)


def _comm(pid: int) -> str | None:
    """The process name from ``/proc/<pid>/comm`` (best effort: ``None`` when unreadable)."""
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
            return fh.read().strip() or None
    except OSError:
        return None
