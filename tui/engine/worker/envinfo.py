"""The environment a result belongs to: versions, device, precision settings, compiler.

Every field is read on its own and falls back to None: a missing triton, an old driver
or a CPU-only build must never stop a run.
"""

from __future__ import annotations

import logging
import os
import platform
import socket
import sys
from collections.abc import Callable
from typing import Any

import torch

from tui.engine.payloads import Env
from tui.engine.cpu_list import cpu_list_text
from tui.engine.worker import precision
from tui.telemetry.model import nvml_uuid

__all__ = ["collect", "gpu_uuid", "cpu_name"]

log = logging.getLogger(__name__)


def _safe(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except Exception:  # a field torch or the driver cannot tell reads as unknown
        log.debug("an environment field was not read", exc_info=True)
        return None


def cpu_name() -> str | None:
    """The CPU's model name (/proc/cpuinfo on Linux, platform.processor() elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def gpu_uuid(index: int) -> str | None:
    """``GPU-xxxxxxxx-...`` for torch's CUDA device ``index`` (what NVML matches on)."""
    return nvml_uuid(_safe(lambda: torch.cuda.get_device_properties(index).uuid))


def _triton_version() -> str | None:
    try:
        import triton  # noqa: PLC0415  (optional, absent on CPU builds)
    except Exception:  # absent, or a broken install that fails as it imports: no version either way
        log.debug("triton did not import", exc_info=True)
        return None
    return getattr(triton, "__version__", None)


def _driver_version() -> str | None:
    """The NVIDIA driver version through NVML, best effort."""
    try:
        import pynvml  # noqa: PLC0415

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVML (a CPU machine) or a driver that does not answer: no driver version
        log.debug("NVML did not say the driver version", exc_info=True)
        return None
    return version.decode() if isinstance(version, bytes) else str(version)


def _cxx() -> str | None:
    configured = _safe(lambda: torch._inductor.config.cpp.cxx)
    if isinstance(configured, (tuple, list)):
        configured = next((c for c in configured if c), None)
    return os.environ.get("CXX") or (str(configured) if configured else None)


def _cpu_affinity() -> str | None:
    """The cores this process may use, as a cpu-list, when fewer than the machine has."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cores = _safe(lambda: os.sched_getaffinity(0))
    if not cores or len(cores) == os.cpu_count():
        return None
    return cpu_list_text(cores)


def collect(device: torch.device) -> Env:
    """Everything the ``started`` event reports about this process and ``device``."""
    env: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": _triton_version(),
        "cudnn": _safe(lambda: torch.backends.cudnn.version()) if torch.version.cuda else None,
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "device": str(device),
        "gpu_name": None,
        "gpu_uuid": None,
        "driver": None,
        "compute_capability": None,
        "gpu_memory_mb": None,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "cuda_device_order": os.environ.get("CUDA_DEVICE_ORDER"),
        "cxx": None,
        "num_threads": _safe(torch.get_num_threads),
        "node": _safe(socket.gethostname),
        "cpu_affinity": _cpu_affinity(),
    }
    env.update(precision.read_flags())  # as the run's precision option left them
    if device.type == "cuda":
        index = device.index or 0
        props = _safe(lambda: torch.cuda.get_device_properties(index))
        env["gpu_name"] = getattr(props, "name", None)
        env["gpu_uuid"] = gpu_uuid(index)
        env["driver"] = _driver_version()
        if props is not None:
            env["compute_capability"] = f"{props.major}.{props.minor}"
            env["gpu_memory_mb"] = round(props.total_memory / 2**20)
    else:
        env["cxx"] = _cxx()
    return Env(**env)
