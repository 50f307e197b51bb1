"""Plain data for GPU telemetry: one snapshot per GPU per poll.

Every field of a :class:`GpuSnapshot` may be ``None``: the value is not available
("n/a") on this GPU, in this poll, or from this source. Units are in the field names.

UUIDs: NVML reports ``"GPU-8d4f...-..."``; torch's ``get_device_properties(i).uuid`` may
print without the prefix or be a UUID-like object; ``CUDA_VISIBLE_DEVICES`` accepts
either. :func:`normalize_uuid` turns all of them into one canonical form (lowercase,
``"gpu-"`` or ``"mig-"`` prefix), and every snapshot carries its uuid in that form, so
two uuids name the same GPU exactly when their normalised forms are equal. GPUs are
always matched by uuid, never by index: CUDA orders devices fastest-first, NVML by PCI
bus.
"""

from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass
from typing import Any

from tui.typed import JsonRecord

__all__ = [
    "RunTelemetry",
    "GpuProcess",
    "GpuSnapshot",
    "THROTTLE_REASONS",
    "IDLE_REASON",
    "NOT_THROTTLING",
    "normalize_uuid",
    "MIN_CLOCK_SAMPLES",
    "nvml_uuid",
    "throttle_words",
]

#: Clock event ("throttle") reason bits of NVML, in bit order, with the words shown to users.
#: The bits are the same for ``nvmlDeviceGetCurrentClocksEventReasons`` and the older
#: ``nvmlDeviceGetCurrentClocksThrottleReasons``.
THROTTLE_REASONS: tuple[tuple[int, str], ...] = (
    (0x001, "GPU idle"),
    (0x002, "applications clocks setting"),
    (0x004, "SW power cap"),
    (0x008, "HW slowdown"),
    (0x010, "sync boost"),
    (0x020, "SW thermal slowdown"),
    (0x040, "HW thermal slowdown"),
    (0x080, "HW power brake slowdown"),
    (0x100, "display clock setting"),
)

#: The reason that only says the GPU has nothing to do: not a slowdown of a run.
IDLE_REASON = "GPU idle"

#: Reasons that are not throttling: an idle GPU, or clocks the user set (a run's summary
#: warns about the other reasons).
NOT_THROTTLING = frozenset({IDLE_REASON, "applications clocks setting", "display clock setting"})

_PREFIXES = ("gpu-", "mig-")

MIN_CLOCK_SAMPLES = 5
"""Fewer telemetry samples inside one side's blocks give no per-side SM clock (n/a)."""


def throttle_words(mask: int | None) -> tuple[str, ...] | None:
    """The words of the reason bits set in ``mask``, in bit order (``None`` stays ``None``).

    Bits without a known meaning are reported as ``"reason 0x..."`` rather than dropped.
    """
    if mask is None:
        return None
    words = [word for bit, word in THROTTLE_REASONS if mask & bit]
    known = 0
    for bit, _ in THROTTLE_REASONS:
        known |= bit
    unknown = mask & ~known
    if unknown:
        words.append(f"reason {unknown:#x}")
    return tuple(words)


def normalize_uuid(value: Any) -> str | None:
    """The canonical form of a GPU uuid: lowercase, with a ``gpu-`` (or ``mig-``) prefix.

    Accepts NVML's ``"GPU-xxxxxxxx-..."``, a bare ``"xxxxxxxx-..."`` (torch), bytes
    (text, or the 16 raw bytes of a uuid), a :class:`uuid.UUID`, or any object whose
    ``str()`` is one of these. Returns ``None`` for ``None`` or an empty string.

    >>> normalize_uuid("GPU-8D4F0000-1111-2222-3333-444455556666")
    'gpu-8d4f0000-1111-2222-3333-444455556666'
    >>> normalize_uuid("8d4f0000-1111-2222-3333-444455556666")
    'gpu-8d4f0000-1111-2222-3333-444455556666'
    """
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
        if len(raw) == 16:
            text = str(_uuid.UUID(bytes=raw))
        else:
            text = raw.decode("ascii", "replace")
    else:
        text = str(value)
    text = text.strip().lower()
    if not text:
        return None
    if text.startswith(_PREFIXES):
        return text
    return "gpu-" + text


def nvml_uuid(value: Any) -> str | None:
    """The uuid in the form NVML expects (``"GPU-..."`` / ``"MIG-..."``), for ``nvmlDeviceGetHandleByUUID``."""
    canonical = normalize_uuid(value)
    if canonical is None:
        return None
    return canonical[:3].upper() + canonical[3:]


@dataclass(frozen=True)
class GpuProcess:
    """A compute process on a GPU.

    ``name`` comes from ``/proc/<pid>/comm`` when readable (``None`` otherwise, e.g. a
    process of another container); ``used_mb`` is ``None`` where the driver does not say.
    """

    pid: int
    name: str | None = None
    used_mb: float | None = None


@dataclass(frozen=True)
class GpuSnapshot:
    """The state of one GPU at one poll. Any field may be ``None`` ("n/a").

    Attributes:
        uuid: canonical uuid (:func:`normalize_uuid`).
        index: NVML's index (PCI bus order); for display only, never for matching.
        name: product name, e.g. ``"NVIDIA H200"``.
        util_gpu_pct / util_mem_pct: GPU and memory-controller utilisation, percent.
        mem_used_mb / mem_total_mb: device memory in MiB.
        temp_c: GPU temperature, degrees Celsius.
        power_w / power_limit_w: power draw and enforced limit, watts.
        sm_clock_mhz / sm_clock_max_mhz: SM clock now and its maximum, MHz.
        mem_clock_mhz: memory clock, MHz.
        pstate: performance state, ``"P0"`` (fastest) ... ``"P15"``.
        throttle_reasons: clock event reasons in words (:data:`THROTTLE_REASONS`).
        processes: compute processes on the GPU.
        energy_mj: total energy since the driver loaded, millijoules (a counter).
        timestamp: ``time.monotonic()`` when the poll was taken: for intervals, not a date.
        lost: the GPU fell off the bus (NVML "GPU is lost"); other fields are stale or n/a.
    """

    uuid: str | None
    index: int | None = None
    name: str | None = None
    util_gpu_pct: float | None = None
    util_mem_pct: float | None = None
    mem_used_mb: float | None = None
    mem_total_mb: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_mhz: float | None = None
    pstate: str | None = None
    throttle_reasons: tuple[str, ...] | None = None
    processes: tuple[GpuProcess, ...] | None = None
    energy_mj: float | None = None
    timestamp: float | None = None
    lost: bool = False

    def slowdown_reasons(self) -> tuple[str, ...]:
        """Throttle reasons that slow a run down: all of them except "GPU idle"."""
        return tuple(r for r in (self.throttle_reasons or ()) if r != IDLE_REASON)

    def processes_except(self, pids: set[int] | frozenset[int] | tuple[int, ...]) -> tuple[GpuProcess, ...]:
        """The processes on this GPU whose pid is not in ``pids`` (e.g. other users of the run's GPU)."""
        own = set(pids)
        return tuple(p for p in (self.processes or ()) if p.pid not in own)


@dataclass(frozen=True)
class RunTelemetry(JsonRecord):
    """One run's GPU figures from :class:`~tui.telemetry.sampler.RunSampler` (None: not measured).

    ``energy_j`` comes from the energy counter's difference, else power integrated over time
    (``energy_from``: ``"counter"``, ``"power"`` or None); ``throttle_reasons`` are the sorted
    unique words seen, without "GPU idle"; ``errors`` counts failed polls.

    The machine while the run measured (CPU and GPU runs alike): ``other_cpu_cores`` is the
    mean number of CPU cores busy with processes other than compile-lab's own (the worker's
    process tree, inductor's compile pool, other workers of the same session, the app),
    ``other_cpu_top`` the busiest of them (``"name (pid) 0.9 cores"``), ``app_cpu_cores`` the
    app's (or CLI's) own use; ``other_gpu_processes`` the processes other than compile-lab's
    seen on the run's GPU (``"name (pid)"``). ``sm_clock_eager_mhz`` / ``sm_clock_compiled_mhz``:
    the mean SM clock over the telemetry samples that fall inside each side's measured blocks,
    with their counts (None below :data:`MIN_CLOCK_SAMPLES`, shown as n/a).
    """

    sm_clock_mean_mhz: float | None = None
    sm_clock_min_mhz: float | None = None
    temp_max_c: float | None = None
    power_mean_w: float | None = None
    energy_j: float | None = None
    energy_from: str | None = None
    throttle_reasons: tuple[str, ...] = ()
    samples: int = 0
    errors: int = 0
    last_error: str | None = None
    gpu_lost: bool = False
    other_cpu_cores: float | None = None
    other_cpu_top: tuple[str, ...] = ()
    app_cpu_cores: float | None = None
    other_gpu_processes: tuple[str, ...] = ()
    sm_clock_eager_mhz: float | None = None
    sm_clock_compiled_mhz: float | None = None
    sm_clock_eager_samples: int = 0
    sm_clock_compiled_samples: int = 0

    @property
    def measured(self) -> bool:
        """True when at least one sample was taken."""
        return self.samples > 0

    @property
    def throttled(self) -> tuple[str, ...]:
        """The reasons that slow a busy GPU down (idle and the like left out)."""
        return tuple(r for r in self.throttle_reasons if r and r not in NOT_THROTTLING)
