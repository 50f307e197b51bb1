"""``python -m tui.engine.worker.envcheck``: the torch side of ``compile-lab env``, as one JSON line.

Runs in its own process (like a worker) so the CLI never imports torch. Like the worker, it
keeps a private duplicate of its stdout for its one JSON line and points fd 1 at stderr, so
whatever torch prints while loading cannot corrupt the report. Every field is read on its
own: a failure becomes ``None`` plus a message in ``problems``, never a traceback.

Keys: python, python_executable, platform, torch, torch_import_s, torch_error, cuda_build,
cuda_available, gpu_count, gpus (name, uuid, capability, memory_mb per visible GPU),
cudnn, triton, triton_error, cxx (the C++ compiler inductor uses on the CPU), cxx_path (where
it is on PATH, None when it is missing), cxx_version, num_threads, problems.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

__all__ = ["collect", "main"]


def _read(problems: list[str], what: str, read: Callable[[], Any]) -> Any:
    try:
        return read()
    except Exception as exc:  # noqa: BLE001 - every field on its own
        problems.append(f"{what}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
        return None


def _cpp_compiler(torch: Any, problems: list[str]) -> str | None:
    """The compiler inductor's C++ backend will call (its own choice first, then CXX, then config)."""

    def from_inductor() -> str | None:
        from torch._inductor import cpp_builder  # private API: read defensively

        return str(cpp_builder.get_cpp_compiler())

    found = None
    try:
        found = from_inductor()
    except Exception:  # noqa: BLE001 - a private API: when it fails, $CXX and the PATH are asked instead
        found = None
    if found:
        return found
    if os.environ.get("CXX"):
        return os.environ["CXX"]
    configured = _read(problems, "inductor cpp.cxx", lambda: torch._inductor.config.cpp.cxx)
    if isinstance(configured, (tuple, list)):
        configured = next((c for c in configured if c), None)
    return str(configured) if configured else None


def _compiler_version(path: str) -> str | None:
    try:
        out = subprocess.run(
            [path, "--version"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    first = (out.stdout or out.stderr).strip().splitlines()
    return first[0].strip() if first else None


def _gpus(torch: Any, problems: list[str]) -> list[dict[str, Any]]:
    gpus = []
    for index in range(torch.cuda.device_count()):
        props = _read(problems, f"cuda:{index} properties", partial(torch.cuda.get_device_properties, index))
        if props is None:
            continue
        raw_uuid = getattr(props, "uuid", None)
        uuid = None
        if raw_uuid is not None:
            text = str(raw_uuid).strip()
            uuid = text if text.upper().startswith(("GPU-", "MIG-")) else f"GPU-{text}"
        gpus.append(
            {
                "index": index,
                "name": getattr(props, "name", None),
                "uuid": uuid,
                "capability": f"{props.major}.{props.minor}",
                "memory_mb": round(props.total_memory / 2**20),
            }
        )
    return gpus


def collect() -> dict[str, Any]:
    """Everything ``compile-lab env`` shows about torch in this interpreter."""
    problems: list[str] = []
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "torch": None,
        "torch_import_s": None,
        "torch_error": None,
        "problems": problems,
    }
    start = time.perf_counter()
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - not installed, or broken
        info["torch_error"] = f"{type(exc).__name__}: {exc}"
        return info
    info["torch_import_s"] = round(time.perf_counter() - start, 3)
    info["torch"] = torch.__version__
    info["cuda_build"] = torch.version.cuda
    info["cuda_available"] = _read(problems, "torch.cuda.is_available", torch.cuda.is_available)
    info["gpu_count"] = _read(problems, "torch.cuda.device_count", torch.cuda.device_count) or 0
    info["gpus"] = _read(problems, "GPUs", lambda: _gpus(torch, problems)) if info["cuda_available"] else []
    info["cudnn"] = (
        _read(problems, "cuDNN", torch.backends.cudnn.version) if torch.backends.cudnn.is_available() else None
    )
    try:
        import triton

        info["triton"] = getattr(triton, "__version__", "unknown")
        info["triton_error"] = None
    except Exception as exc:  # noqa: BLE001 - absent on CPU builds
        info["triton"] = None
        info["triton_error"] = f"{type(exc).__name__}: {exc}"
    cxx = _cpp_compiler(torch, problems)
    info["cxx"] = cxx
    info["cxx_path"] = shutil.which(cxx) if cxx else None
    info["cxx_version"] = _compiler_version(info["cxx_path"]) if info["cxx_path"] else None
    info["num_threads"] = _read(problems, "torch.get_num_threads", torch.get_num_threads)
    return info


def main() -> int:
    """Print :func:`collect`'s report as one JSON line on the original stdout."""
    report_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    info = collect()
    os.write(report_fd, (json.dumps(info, default=str) + "\n").encode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
