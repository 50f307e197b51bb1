"""Before a run: what the worker imports ahead, and how a command is checked against torch and the machine.

Each check raises :class:`~tui.engine.options.OptionsError` naming the field and what is allowed, so a bad
command ends as a ``bad_options`` failure in one line before anything is built.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import torch

from tui.engine.catalog import echo
from tui.engine.worker.inductor_values import ValueRefused, checked_value
from tui.engine.options import OptionsError
from tui.engine.worker import envinfo
from tui.engine.worker.failures import one_line
from tui.telemetry.model import normalize_uuid

__all__ = ["import_ahead", "resolve_device", "apply_memory_limit", "check_dtype", "check_backend",
           "check_inductor_options"]

log = logging.getLogger(__name__)


def import_ahead() -> None:
    """Import dynamo and its backends before saying ``ready``: every run needs them, and a spare worker (started
    while the run before it ran) then has them ready, so the run's own start skips 1-3 s of imports. Neither
    side's timing moves: a user's process has imported them too by the time it compiles."""
    try:
        import torch._dynamo

        torch._dynamo.list_backends(exclude_tags=())
    except Exception:  # the run's own checks meet it again and say what failed
        log.warning("importing torch._dynamo ahead of the run failed", exc_info=True)


def resolve_device(text: str) -> torch.device:
    """``cpu``, ``cuda``, ``cuda:N`` or ``cuda:GPU-<uuid>`` as a torch device (OptionsError if absent)."""
    if text == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        why = "this torch build has no CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
        raise OptionsError("device", f"{text} is not available: {why} (torch {torch.__version__}; allowed: cpu)")
    count = torch.cuda.device_count()
    if text == "cuda":
        index = 0
    elif text.startswith("cuda:GPU-"):
        wanted = normalize_uuid(text.partition(":")[2])
        found = [i for i in range(count) if normalize_uuid(envinfo.gpu_uuid(i)) == wanted]
        if not found:
            seen = ", ".join(envinfo.gpu_uuid(i) or "?" for i in range(count))
            raise OptionsError("device", f"{text[5:]} is not among the visible GPUs ({seen})")
        index = found[0]
    else:
        index = int(text.split(":", 1)[1])
        visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
        if index >= count and count == 1 and len(visible) == 1:
            index = 0  # the runner already narrowed CUDA_VISIBLE_DEVICES to the GPU this index named
        if index >= count:
            raise OptionsError("device", f"{text} does not exist (allowed: cuda:0 to cuda:{count - 1})")
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def _address_space_bytes() -> int | None:
    """This process's virtual address space in bytes (``VmSize``; Linux), or None."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def apply_memory_limit(gb: float) -> None:
    """Cap this worker's address space (``RLIMIT_AS``) at ``gb`` GB, for the rest of its life.

    Called after torch was imported and before any workload code: an allocation beyond the
    cap then fails inside torch (``DefaultCPUAllocator: can't allocate memory``, or
    MemoryError), which ends the run as ``out_of_memory`` instead of waking the system's
    OOM killer. The compile subprocesses the worker starts inherit the cap. OptionsError
    when the platform has no such limit, or when the worker already uses more than ``gb``.
    """
    try:
        import resource
    except ImportError:
        raise OptionsError("memory_limit_gb", f"this platform ({sys.platform}) has no address-space limit") from None
    limit = int(gb * 2**30)
    used = _address_space_bytes()
    if used is not None and used >= limit:
        raise OptionsError(
            "memory_limit_gb",
            f"{gb:g} GB is below what the worker already uses ({used / 2**30:.2f} GB of address space "
            "with torch imported; allowed: more than that)",
        )
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError) as exc:
        raise OptionsError("memory_limit_gb", f"the limit could not be set: {exc}") from None


def check_dtype(name: str, dtype: torch.dtype, device: torch.device) -> None:
    """OptionsError when ``device`` cannot compute in ``dtype`` (a tiny matmul must run)."""
    allowed = "float32, float16" if dtype == torch.bfloat16 else "float32"
    if device.type == "cuda" and dtype == torch.bfloat16:
        try:
            native = torch.cuda.is_bf16_supported(including_emulation=False)
        except TypeError:
            native = torch.cuda.is_bf16_supported()
        if not native:
            gpu = torch.cuda.get_device_name(device)
            raise OptionsError("dtype", f"bfloat16 is not supported natively on {gpu} (allowed: {allowed})")
    try:
        probe = torch.ones(8, 8, dtype=dtype, device=device)
        (probe @ probe).sum().item()
    except Exception as exc:
        raise OptionsError("dtype", f"{name} did not run on {device}: {one_line(str(exc), 160)} "
                                    f"(allowed: {allowed})") from exc


def check_backend(backend: str) -> None:
    """OptionsError when ``backend`` is not registered with torch._dynamo."""
    try:
        names = list(torch._dynamo.list_backends(exclude_tags=()))
    except Exception:  # cannot tell: torch.compile itself will say
        log.debug("torch._dynamo.list_backends failed", exc_info=True)
        return
    if backend not in names:
        shown = [n for n in names if not n.endswith("TESTING_ONLY") and "minifier" not in n]
        raise OptionsError("backend", f"{echo(backend)} is not a registered torch._dynamo backend "
                                      f"(allowed: {', '.join(shown)})")


def check_inductor_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with each value in the kind torch's config declares for it
    (:func:`~tui.engine.worker.inductor_values.checked_value`); OptionsError for a name torch does not know or a
    value that is not of its kind."""
    try:
        known = set(torch._inductor.list_options())
    except Exception:  # cannot tell: torch.compile itself will say
        log.debug("torch._inductor.list_options failed", exc_info=True)
        return options
    for key in options:
        if key not in known:
            raise OptionsError("inductor_options",
                               f"{echo(key)} is not an inductor option (see torch._inductor.list_options())")
    entries = getattr(torch._inductor.config, "_config", {})  # each option's declared type, where torch says it
    try:
        return {key: checked_value(key, value, getattr(entries.get(key), "value_type", None))
                for key, value in options.items()}
    except ValueRefused as exc:
        raise OptionsError("inductor_options", str(exc)) from None
