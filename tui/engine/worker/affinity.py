"""The worker pins itself to its lane's CPU cores before torch is imported (no torch here).

A pooled lane's runner sets ``COMPILE_LAB_CPUS`` (:data:`tui.engine.cpu_list.CPUS_ENV`) to its
share of the host's cores. :func:`pin_to_lane_cpus` applies it to this process, so inductor's
compile workers (which size themselves from the affinity mask) and the compile subprocesses
inherit it, and sets ``OMP_NUM_THREADS`` to the share's size unless the user set it, so
torch's intra-op thread pool matches the cores it may use.
"""

from __future__ import annotations

import os

from tui.engine.cpu_list import CPUS_ENV, cpu_list_text, parse_cpu_list

__all__ = ["pin_to_lane_cpus"]


def pin_to_lane_cpus(environ: os._Environ[str] | dict[str, str] = os.environ) -> str | None:
    """Apply :data:`CPUS_ENV`; returns a one-line problem (shown as a warning), or None."""
    text = environ.get(CPUS_ENV)
    if not text:
        return None
    try:
        cpus = parse_cpu_list(text)
    except ValueError as exc:
        return f"{CPUS_ENV}={text!r} was ignored: {exc}"
    if not hasattr(os, "sched_setaffinity"):
        return f"{CPUS_ENV} was ignored: this OS cannot pin a process to cores"
    try:
        os.sched_setaffinity(0, cpus)
        applied = os.sched_getaffinity(0)  # Linux keeps only the cores this process may use
    except OSError as exc:
        return f"{CPUS_ENV}={text} could not be applied: {exc.strerror or exc}"
    environ.setdefault("OMP_NUM_THREADS", str(len(applied)))
    if len(applied) < len(cpus):
        return f"{CPUS_ENV}={text}: only cores {cpu_list_text(applied)} of those may be used here"
    return None
