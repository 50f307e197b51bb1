"""What a worker for a run is started with: its command line and its environment.

Set for every worker: ``PYTHONUNBUFFERED=1``; for a CUDA run ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` and
``CUDA_VISIBLE_DEVICES`` narrowed to the run's GPU; for a run with ``torch_trace``, ``TORCH_TRACE``
pointing at the run's folder (torch reads it when it is imported, so such a worker is started for
that run alone: its key is its own, and no spare is ever started with it). ``TORCHINDUCTOR_*`` /
``TRITON_*`` (and a ``TORCH_TRACE`` the parent itself was started with) pass through untouched with
the rest of the parent's environment.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Mapping
from typing import Any

from tui.engine.runner.gpu_lock import visible_devices_value

__all__ = ["Launch", "launch_for", "make_package_importable", "TORCH_TRACE_ENV"]

TORCH_TRACE_ENV = "TORCH_TRACE"

Launch = tuple[list[str], dict[str, str], tuple]
"""(argv, environment, key): a spare is only reused for a run with the same key."""

_PACKAGE_LINK_DIR: str | None = None


def make_package_importable(python: str, env: dict[str, str]) -> None:
    """Let ``python -m tui...`` find this compile-lab in another interpreter (``--python``).

    Prepends to ``env["PYTHONPATH"]`` a private directory holding only a ``tui`` link to this
    package (never the whole site-packages, which would bring this interpreter's torch along).
    Nothing changes when ``python`` is the running interpreter.
    """
    global _PACKAGE_LINK_DIR
    import shutil
    import tempfile

    resolved = shutil.which(python) or python
    if os.path.realpath(resolved) == os.path.realpath(sys.executable):
        return
    if _PACKAGE_LINK_DIR is None or not os.path.isdir(_PACKAGE_LINK_DIR):
        import tui

        link_dir = tempfile.mkdtemp(prefix="compile-lab-pkg-")
        os.symlink(os.path.dirname(os.path.abspath(tui.__file__)), os.path.join(link_dir, "tui"))
        atexit.register(shutil.rmtree, link_dir, True)
        _PACKAGE_LINK_DIR = link_dir
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_LINK_DIR, env.get("PYTHONPATH")) if p)


def launch_for(options: Any, gpu: str | None, worker_argv: list[str] | None,
               extra_env: Mapping[str, str | None], torch_trace: str | None = None) -> Launch:
    """(argv, environment, key) of a worker for ``options`` on ``gpu``.

    ``worker_argv`` replaces ``[options.python or sys.executable, "-m", "tui.engine.worker"]``
    (tests pass a fake worker's); ``extra_env`` is applied last (None removes a variable);
    ``torch_trace``: the directory ``TORCH_TRACE`` names (None: no TORCH_TRACE).
    """
    argv = list(worker_argv) if worker_argv else [options.python or sys.executable, "-m", "tui.engine.worker"]
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    if not worker_argv and options.python:
        make_package_importable(options.python, env)
    if options.device.startswith("cuda"):
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = visible_devices_value(gpu)
    for name, value in extra_env.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(value)
    if torch_trace is not None:
        env[TORCH_TRACE_ENV] = torch_trace
    return argv, env, (tuple(argv), frozenset(env.items()))
