"""Which GPU a CUDA run uses, and the per-GPU lock that keeps two compile-lab processes off one GPU.

A CUDA run holds ``flock`` on ``paths.locks_dir()/gpu-<uuid>.lock`` for its whole life, so two
compile-lab processes (two apps, an app and a CLI sweep) never measure on one GPU at once. The
lock is keyed by the GPU's UUID where it can be known (``cuda:N`` resolved through
``CUDA_VISIBLE_DEVICES`` and NVML's PCI order), else by its PCI-order index.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import stat
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from tui import paths
from tui.engine.run.placement import lane_cpu_env
from tui.logs import suppressed
from tui.telemetry.model import normalize_uuid, nvml_uuid

__all__ = ["GpuResolver", "acquire_gpu_lock", "release_gpu_lock", "lock_name", "visible_devices_value",
           "visible_gpu_count", "visible_entries", "pool_cpu_env", "pool_gpu_names",
           "uuid_of", "LOCK_RETRY_S"]

log = logging.getLogger(__name__)

LOCK_RETRY_S = 0.5
"""Seconds between attempts to take a busy GPU lock."""


def uuid_of(value: Any) -> str:
    """A GPU uuid in its canonical form (``gpu-...`` lowercase; see tui.telemetry.model)."""
    return normalize_uuid(value) or ""


def _device_index(device: str) -> int | None:
    if device == "cuda":
        return 0
    tail = device.partition(":")[2]
    return int(tail) if tail.isdigit() else None


def visible_entries() -> list[str] | None:
    """This process's CUDA_VISIBLE_DEVICES as a list of entries; None when it is not set ("" hides every GPU)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return None
    return [entry.strip() for entry in visible.split(",") if entry.strip()]


def visible_gpu_count(telemetry: Any = None) -> int | None:
    """How many GPUs this process can see: CUDA_VISIBLE_DEVICES' entries when set, else NVML's
    count; None when neither can tell (no NVML)."""
    entries = visible_entries()
    if entries is not None:
        return len(entries)
    resolver = GpuResolver(telemetry)
    try:
        uuids = resolver._nvml_uuids()
    finally:
        resolver.close()
    return len(uuids) if uuids else None


def pool_cpu_env(pool: Sequence[str], telemetry: Any = None) -> dict[str, dict[str, str]]:
    """Each pooled lane's worker environment: whole cores near its GPU (NVML's CPU affinity by
    the GPU's UUID; :func:`tui.engine.run.placement.lane_cpu_env`). Blocks on NVML: call it off a UI loop."""
    if len(pool) <= 1:
        return {lane: {} for lane in pool}
    resolver = GpuResolver(telemetry)
    source = telemetry
    near: dict[str, frozenset[int]] = {}
    try:
        for lane in pool:
            gpu = resolver.resolve(lane)
            if source is None:
                resolver._nvml_uuids()  # opens NVML once
                source = resolver._nvml
            reader = getattr(source, "cpu_affinity", None)
            cpus = reader(gpu) if gpu is not None and reader is not None else None
            if cpus:
                near[lane] = cpus
    finally:
        resolver.close()
    return lane_cpu_env(pool, near=near or None)


def pool_gpu_names(pool: Sequence[str], telemetry: Any = None) -> dict[str, str | None]:
    """Each pooled GPU's product name as NVML gives it (None when unknown). Blocks on NVML."""
    resolver = GpuResolver(telemetry)
    names: dict[str, str | None] = {}
    try:
        for lane in pool:
            gpu = resolver.resolve(lane)
            source = telemetry if telemetry is not None else resolver._nvml
            found = source.find(gpu) if gpu is not None and source is not None else None
            names[lane] = getattr(found, "name", None)
    finally:
        resolver.close()
    return names


def visible_devices_value(gpu: str) -> str:
    """What CUDA_VISIBLE_DEVICES takes for a canonical uuid (``GPU-...``) or a PCI-order index."""
    return gpu if gpu.isdigit() else (nvml_uuid(gpu) or gpu)


def lock_name(gpu: str) -> str:
    """``gpu-<uuid>.lock`` (``gpu-index-N.lock`` when only an index is known)."""
    ident = f"index-{gpu}" if gpu.isdigit() else gpu.removeprefix("gpu-")
    return "gpu-" + "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in ident) + ".lock"


class GpuResolver:
    """Turns a CUDA device string into the GPU it names.

    ``telemetry``: a telemetry source (``NvmlSource``/``FakeSource``) whose snapshots give the
    GPUs' UUIDs in NVML (PCI bus) order; without one, an NVML source is opened on first need.
    """

    def __init__(self, telemetry: Any = None) -> None:
        self.telemetry = telemetry
        self._nvml: Any = None

    async def resolve_async(self, device: str) -> str | None:
        """:meth:`resolve` off the event loop (NVML calls block)."""
        if not device.startswith("cuda"):
            return None
        return await asyncio.to_thread(self.resolve, device)

    def resolve(self, device: str) -> str | None:
        """The GPU a CUDA device string names: a UUID when it can be known, else a PCI-order index."""
        if not device.startswith("cuda"):
            return None
        tail = device.partition(":")[2]
        if tail.startswith("GPU-"):
            return uuid_of(tail)
        index = _device_index(device)
        if index is None:
            return None
        entry = self._visible_entry(index)
        if entry is not None:
            if entry.upper().startswith(("GPU-", "MIG-")):
                return uuid_of(entry)
            if entry.isdigit():
                index = int(entry)
        uuids = self._nvml_uuids()
        if uuids and index < len(uuids):
            return uuid_of(uuids[index])
        return str(index)

    @staticmethod
    def _visible_entry(index: int) -> str | None:
        """Entry ``index`` of this process's CUDA_VISIBLE_DEVICES, or None when unset or shorter."""
        entries = visible_entries() or []
        return entries[index] if index < len(entries) else None

    def _nvml_uuids(self) -> list[str]:
        """GPU UUIDs in NVML index order (PCI bus order), or [] without NVML."""
        source = self.telemetry
        try:
            if source is None:
                if self._nvml is None:
                    from tui.telemetry.nvml import NvmlSource

                    self._nvml = NvmlSource()
                source = self._nvml
            if not getattr(source, "available", False):
                return []
            return [uuid_of(s.uuid) for s in source.snapshot()]
        except Exception:
            log.warning("NVML could not list the GPUs' uuids", exc_info=True)
            return []

    def close(self) -> None:
        """Close the NVML source this resolver opened, if any."""
        if self._nvml is not None:
            with suppressed(log, "closing NVML"):
                self._nvml.close()
            self._nvml = None


async def acquire_gpu_lock(gpu: str, on_busy: Callable[[], Awaitable[None]]) -> int:
    """Take ``gpu``'s lock, waiting while another process holds it; the locked file descriptor.

    ``on_busy()`` is awaited once, the first time the lock is found taken. The file then
    holds the holder's pid (for a person wondering who holds it).
    """
    fd = _open_lock(paths.locks_dir() / lock_name(gpu))
    told = False
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told:
                    told = True
                    await on_busy()
                await asyncio.sleep(LOCK_RETRY_S)
    except BaseException:
        os.close(fd)
        raise
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _open_lock(path: Path) -> int:
    """The lock file's descriptor, created if need be. A link there is not followed and anything but a regular
    file is refused (OSError naming it): the pid written into the lock must never land in a file of the user's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(exc.errno, f"{path} is a link: compile-lab leaves it alone; remove it") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{path} is not a regular file: compile-lab leaves it alone; remove it")
    return fd


def release_gpu_lock(fd: int) -> None:
    """Release and close a lock taken by :func:`acquire_gpu_lock`."""
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
