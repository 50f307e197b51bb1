"""Where the runs of a session go: a pool of GPUs dealt one run each, and each lane's CPU cores.

``--device cuda:all`` (every GPU the machine shows) or a list (``cuda:0,cuda:3``) makes a
*pool*: :func:`parse_device_pool` turns the text into device strings, the session
(:mod:`tui.engine.run.session`) gives each GPU its own lane and deals the queued runs to free
lanes, one run per GPU at a time. Each lane's worker is pinned to whole physical cores near its
GPU (:func:`plan_cores`), so neighbours do not steal each other's host time: the worker sets its
affinity from :data:`~tui.engine.cpu_list.CPUS_ENV` before torch is imported (inductor's compile
threads follow the mask) and sets torch's thread count to match (``tui/engine/worker/affinity.py``).

No torch, no NVML here: the GPU count comes from the caller (telemetry or the environment).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from tui.engine.options import OptionsError
from tui.engine.catalog import echo
from tui.engine.cpu_list import CPUS_ENV, cpu_list_text, parse_cpu_list

__all__ = ["POOL_ALL", "parse_device_pool", "is_pool", "split_cpus", "lane_cpu_env", "allowed_cpus", "plan_cores",
           "physical_cores", "thread_siblings", "kinds_of", "kinds_text", "check_kinds"]

POOL_ALL = "cuda:all"
_ONE_GPU = re.compile(r"^cuda:(\d+)$")


def is_pool(text: str) -> bool:
    """Whether a device field names several GPUs (``cuda:all`` or a comma-separated list)."""
    text = text.strip()
    return text == POOL_ALL or "," in text


def parse_device_pool(text: str, gpu_count: int | None) -> tuple[str, ...]:
    """The GPUs a device text names, as ``cuda:N`` strings in the order given.

    ``cuda:all``: every GPU (``gpu_count`` of them; None or 0 is refused: no GPU is known);
    ``cuda:0,cuda:3``: those, each once. A single device is a pool of one. OptionsError
    (field ``device``) names what is wrong and what is allowed.
    """
    text = text.strip()
    if text == POOL_ALL:
        if not gpu_count:
            raise OptionsError("device", "cuda:all names no GPU: none is visible on this machine")
        return tuple(f"cuda:{index}" for index in range(gpu_count))
    devices: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        match = _ONE_GPU.match(part)
        if match is None:
            raise OptionsError("device", f"{echo(part)} is not allowed in a GPU list (allowed: cuda:all, "
                                         "or cuda:N entries separated by commas, e.g. cuda:0,cuda:3)")
        if gpu_count is not None and int(match.group(1)) >= gpu_count:
            raise OptionsError("device", f"{part} does not exist (this machine shows {gpu_count} GPU"
                                         f"{'' if gpu_count == 1 else 's'}: cuda:0 to cuda:{gpu_count - 1})")
        if part in devices:
            raise OptionsError("device", f"{part} is named twice in the GPU list")
        devices.append(part)
    return tuple(devices)


def kinds_of(pool: Sequence[str], names: Mapping[str, str | None]) -> list[tuple[str, tuple[str, ...]]]:
    """The pool's GPUs by kind (their product name; ``?`` when unknown), kinds in the order first met.

    A pool of several kinds deals each configuration to whichever GPU is free, so rows of one sweep
    would compare different hardware; ``--each-gpu-kind`` submits the configurations once per kind,
    each to that kind's GPUs only.
    """
    kinds: dict[str, list[str]] = {}
    for lane in pool:
        kinds.setdefault(names.get(lane) or "?", []).append(lane)
    return [(kind, tuple(lanes)) for kind, lanes in kinds.items()]


def kinds_text(kinds: Sequence[tuple[str, Sequence[str]]]) -> str:
    """``NVIDIA H100 x4, NVIDIA A100 x2``."""
    return ", ".join(f"{kind} x{len(lanes)}" for kind, lanes in kinds)


def check_kinds(kinds: Sequence[tuple[str, Sequence[str]]], repeats: int | str) -> str | None:
    """The rule for a pool of several GPU kinds dealt without ``--each-gpu-kind``: a note to show (rows may
    compare different hardware), or OptionsError (field ``repeat``) when one row's processes would mix kinds.

    ``auto`` (the default) is not refused: such a pool runs each configuration once (:func:`repeats_for_kinds`).
    """
    if len(kinds) <= 1:
        return None
    if repeats == "auto":
        return (f"the GPUs are of several kinds ({kinds_text(kinds)}): each configuration runs once on whichever is "
                "free (--repeat auto adds processes on GPUs of one kind only), so rows may compare different "
                "hardware; --each-gpu-kind runs every configuration on each kind")
    if repeats != 1:
        raise OptionsError("repeat", f"more than one process per configuration with GPUs of several kinds "
                                     f"({kinds_text(kinds)}) would run one row's processes on different hardware: "
                                     "run each kind (--each-gpu-kind), or choose GPUs of one kind")
    return (f"the GPUs are of several kinds ({kinds_text(kinds)}): each configuration runs on whichever is free, so "
            "rows may compare different hardware; --each-gpu-kind runs every configuration on each kind")


def repeats_for_kinds(kinds: Sequence[tuple[str, Sequence[str]]], repeats: int | str) -> int | str:
    """The repeats a pool of ``kinds`` runs with: ``auto`` becomes 1 on several kinds (a row's processes share one)."""
    return 1 if repeats == "auto" and len(kinds) > 1 else repeats


def allowed_cpus(pid: int = 0) -> tuple[int, ...]:
    """The CPU cores the process ``pid`` (0: this one) may run on: its affinity mask where the OS has one, else
    every core. OSError where ``pid`` is gone."""
    if hasattr(os, "sched_getaffinity"):
        return tuple(sorted(os.sched_getaffinity(pid)))
    return tuple(range(os.cpu_count() or 1))


def split_cpus(cpus: Sequence[int], lanes: int) -> list[tuple[int, ...]]:
    """``cpus`` dealt into ``lanes`` disjoint runs of consecutive cores, as equal as they can be.

    Consecutive, because neighbouring core numbers usually share a socket and its caches. With
    fewer cores than lanes every lane gets all of them (pinning would starve some lane).
    """
    cpus = list(cpus)
    if lanes <= 1 or len(cpus) < lanes:
        return [tuple(cpus) for _ in range(max(lanes, 1))]
    size, extra = divmod(len(cpus), lanes)
    shares, start = [], 0
    for lane in range(lanes):
        end = start + size + (1 if lane < extra else 0)
        shares.append(tuple(cpus[start:end]))
        start = end
    return shares


def thread_siblings(cpu: int) -> tuple[int, ...]:
    """The logical CPUs of ``cpu``'s physical core (Linux sysfs; just ``cpu`` where it cannot be read)."""
    try:
        with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list", encoding="ascii") as handle:
            return parse_cpu_list(handle.read())
    except (OSError, ValueError):
        return (cpu,)


def physical_cores(cpus: Sequence[int], siblings: Callable[[int], Sequence[int]] = thread_siblings
                   ) -> list[tuple[int, ...]]:
    """``cpus`` grouped by physical core (hyperthreads of one core together), in order of their first CPU."""
    allowed, cores = set(cpus), []
    seen: set[int] = set()
    for cpu in sorted(allowed):
        if cpu in seen:
            continue
        core = tuple(sorted((set(siblings(cpu)) & allowed) | {cpu}))
        seen.update(core)
        cores.append(core)
    return cores


def plan_cores(lanes: Sequence[str], cpus: Sequence[int], near: Mapping[str, Iterable[int]] | None = None,
               siblings: Callable[[int], Sequence[int]] = thread_siblings) -> dict[str, tuple[int, ...]]:
    """Each lane's cores: whole physical cores, from those near its GPU (NVML's CPU affinity: the
    GPU's NUMA node) where known, split evenly among the lanes that share that neighbourhood.

    Whole cores, so two lanes never share a core through its hyperthreads; near the GPU, so a
    worker's copies and launches do not cross sockets. Neighbourhoods that overlap without being
    the same (unusual) fall back to one split of every core. A group with fewer cores than lanes
    gives each of its lanes all of them (pinning would starve some lane).
    """
    cores = physical_cores(cpus, siblings)
    groups: dict[tuple[int, ...], list[str]] = {}
    for lane in lanes:
        close = set(near.get(lane) or ()) if near else set()
        indices = tuple(i for i, core in enumerate(cores) if close & set(core)) or tuple(range(len(cores)))
        groups.setdefault(indices, []).append(lane)
    keys = [set(key) for key in groups]
    if any(a & b for i, a in enumerate(keys) for b in keys[i + 1:]):
        groups = {tuple(range(len(cores))): list(lanes)}
    plan: dict[str, tuple[int, ...]] = {}
    for indices, members in groups.items():
        for lane, share in zip(members, split_cpus(indices, len(members)), strict=True):
            plan[lane] = tuple(sorted(cpu for index in share for cpu in cores[index]))
    return plan


def lane_cpu_env(lanes: Sequence[str], cpus: Sequence[int] | None = None,
                 near: Mapping[str, Iterable[int]] | None = None,
                 siblings: Callable[[int], Sequence[int]] = thread_siblings) -> dict[str, dict[str, str]]:
    """Each lane's extra worker environment: its cores (:data:`CPUS_ENV`, :func:`plan_cores`).

    A single lane is not pinned (it has the host to itself).
    """
    if len(lanes) <= 1:
        return {lane: {} for lane in lanes}
    plan = plan_cores(lanes, allowed_cpus() if cpus is None else cpus, near, siblings)
    return {lane: {CPUS_ENV: cpu_list_text(plan[lane])} for lane in lanes}
