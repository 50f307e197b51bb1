"""A worker's CPU cores as the runner hands them over: the variable's name and the cpu-list text.

The runner of a pooled lane (:mod:`tui.engine.run.placement`) writes the cores to :data:`CPUS_ENV`;
the worker (``tui/engine/worker/affinity.py``) reads them before torch is imported. Both sides share
this module, so the worker needs nothing of the parent's placement.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["CPUS_ENV", "cpu_list_text", "parse_cpu_list"]

CPUS_ENV = "COMPILE_LAB_CPUS"
"""The CPU cores a worker pins itself to (``0-3,8``), set by the runner of a pooled lane."""


def cpu_list_text(cpus: Iterable[int]) -> str:
    """``0-3,8,10-11``: the Linux cpu-list format (taskset, cgroups)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    index = 0
    while index < len(ordered):
        end = index
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        first, last = ordered[index], ordered[end]
        parts.append(str(first) if first == last else f"{first}-{last}")
        index = end + 1
    return ",".join(parts)


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """The cores of a cpu-list text (``0-3,8``); ValueError when it is not one."""
    cpus: set[int] = set()
    for part in (p.strip() for p in text.split(",") if p.strip()):
        first, _, last = part.partition("-")
        low, high = int(first), int(last or first)
        if low < 0 or high < low:
            raise ValueError(f"{part!r} is not a range of cores")
        cpus.update(range(low, high + 1))
    if not cpus:
        raise ValueError("no cores named")
    return tuple(sorted(cpus))
