"""The inductor cache a run compiles with: compile-lab's own, one folder per set of precision flags.

Inductor's autotuning cache (max-autotune's benchmark of each kernel choice, kept on disk) keys a choice's
timing by ``torch.get_float32_matmul_precision()`` alone, which reads ``highest`` both under PyTorch's defaults
(cuDNN convolutions may use TF32) and under ``ieee`` (they may not); the FX-graph cache keys the matmul settings
but not cuDNN's. So choices benchmarked under one precision are served to a run under the other, which then
measures kernels picked for flags it does not have, and the order of a sweep's runs decides its numbers
(docs/BENCHMARKS.md §19 measures it on the seed CNN with max-autotune).

The worker therefore points ``TORCHINDUCTOR_CACHE_DIR`` (and with it triton's default cache) at a folder named by a hash
of every precision flag in effect, right before it compiles: runs under the same flags share their warm cache, as a
user's repeated runs do, and no run reads what another precision wrote. The folders live under
:func:`tui.paths.compile_cache_dir`, apart from the user's own compiled graphs and autotuning results, which
compile-lab neither reads nor deletes. Two caches stay where the user has them, since no precision flag changes what
they hold: triton's when ``TRITON_CACHE_DIR`` is set (its kernels are keyed by their source), and inductor's
precompiled C++ headers (fixed to inductor's default folder when it is imported). ``cold_compile`` keeps its fresh
temporary folder instead.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tui import paths

__all__ = ["root", "folder_for", "use", "ENV_NAMES", "saved_env", "restore_env"]

log = logging.getLogger(__name__)

_root: Path | None = None

ENV_NAMES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
"""The variables a run points at its caches (:func:`use`, and ``cold_compile``'s fresh folder)."""


def root() -> Path:
    """The folder above the per-flags folders, read once: the worker calls it before torch is imported, since
    inductor writes its default into ``TORCHINDUCTOR_CACHE_DIR`` the first time it looks for a cache."""
    global _root
    if _root is None:
        _root = paths.compile_cache_dir()
    return _root


def folder_for(flags: Mapping[str, Any], under: Path) -> Path:
    """The folder for runs under ``flags`` (:func:`tui.engine.worker.precision.read_flags`): the same flags give the
    same folder, any flag that differs gives another."""
    text = json.dumps(sorted((str(name), repr(value)) for name, value in flags.items()))
    return under / f"flags-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def use(flags: Mapping[str, Any]) -> Path:
    """Point inductor's cache at the folder for ``flags`` and return it."""
    folder = folder_for(flags, root())
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder)
    log.debug("inductor cache for this run's precision flags: %s", folder)
    return folder


def saved_env() -> dict[str, str | None]:
    """The cache variables as they are now, for :func:`restore_env` once the run ends."""
    return {name: os.environ.get(name) for name in ENV_NAMES}


def restore_env(saved: dict[str, str | None]) -> None:
    """Put the cache variables back as :func:`saved_env` found them: a worker run inside another process (a test's,
    say) leaves no later run of that process a folder meant for this one's flags, or a cold folder since removed."""
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
