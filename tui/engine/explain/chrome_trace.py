"""The profile pass's two Chrome traces (eager, compiled) as one file: both sides, told apart.

``torch.profiler.profile.export_chrome_trace`` writes one trace per profiler: the worker's process
(and, on a GPU, the device and its streams) with its ops and kernels. The two sides run in one
worker, one after the other, so their events share process ids and flow ids. :func:`merge_traces`
puts both in one trace that Perfetto (ui.perfetto.dev) or ``chrome://tracing`` opens: each side's
processes get ids of their own and names starting with the side (``eager: python3``,
``compiled: python3``), eager sorted first; flow ids (a CPU launch to its GPU kernel) are kept
apart; times stay on the worker's one clock, so the compiled calls follow the eager ones.
Torch-free: the worker calls it, and tests read what it writes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["merge_traces", "PID_STRIDE", "FLOW_ID_STRIDE", "side_of_pid"]

PID_STRIDE = 10_000_000
"""Side k's numeric process ids are moved up by k times this (OS pids and device ids are far below)."""
FLOW_ID_STRIDE = 1 << 40
"""Side k's numeric flow ids are moved up by k times this."""
_FLOW_PHASES = {"s", "t", "f"}


def _new_pid(pid: Any, side: str, number: int) -> Any:
    if isinstance(pid, int) and not isinstance(pid, bool):
        return pid + number * PID_STRIDE
    return f"{side} {pid}".strip()


def side_of_pid(pid: Any, sides: tuple[str, ...]) -> str | None:
    """Which side a process id of a merged trace belongs to (None: not one of them)."""
    if isinstance(pid, int) and not isinstance(pid, bool):
        number = pid // PID_STRIDE
        return sides[number] if 0 <= number < len(sides) else None
    text = str(pid)
    return next((side for side in sides if text == side or text.startswith(side + " ")), None)


def _side_events(trace: dict[str, Any], side: str, number: int, shift_us: float) -> list[dict[str, Any]]:
    """One side's events with new process ids, named processes, separate flow ids and a common clock."""
    events: list[dict[str, Any]] = []
    named: set[Any] = set()
    pids: list[Any] = []
    for raw in trace.get("traceEvents") or ():
        if not isinstance(raw, dict):
            continue
        event = dict(raw)
        if "pid" in event:
            if event["pid"] not in pids:
                pids.append(event["pid"])
            event["pid"] = _new_pid(event["pid"], side, number)
        if shift_us and isinstance(event.get("ts"), (int, float)):
            event["ts"] = event["ts"] + shift_us
        if event.get("ph") in _FLOW_PHASES and "id" in event:
            flow = event["id"]
            event["id"] = flow + number * FLOW_ID_STRIDE if isinstance(flow, int) else f"{side}:{flow}"
        if event.get("ph") == "M" and event.get("name") == "process_name":
            args = dict(event.get("args") or {})
            args["name"] = f"{side}: {args.get('name', '')}".rstrip(": ")
            event["args"] = args
            named.add(event.get("pid"))
        elif event.get("ph") == "M" and event.get("name") == "process_sort_index":
            event["args"] = {**(event.get("args") or {}), "sort_index": number * 1000 + pids.index(raw["pid"])}
        events.append(event)
    for pid in pids:
        new = _new_pid(pid, side, number)
        if new not in named:
            events.append(
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": new,
                    "tid": 0,
                    "args": {"name": f"{side}: {pid}".rstrip(": ")},
                }
            )
    return events


def merge_traces(traces: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One Chrome trace of several exports, keyed by side in the order given (``{"eager": ..., "compiled": ...}``).

    The first trace's top-level fields (``schemaVersion``, ``deviceProperties``, ``baseTimeNanoseconds``...)
    are kept; a later trace whose ``baseTimeNanoseconds`` differs has its times moved onto the first's
    clock. ``compile_lab.sides`` lists the sides, in process-id order (:func:`side_of_pid`).
    """
    merged: dict[str, Any] = {}
    events: list[dict[str, Any]] = []
    base = None
    for number, (side, trace) in enumerate(traces.items()):
        if not merged:
            merged = {key: value for key, value in trace.items() if key != "traceEvents"}
            base = trace.get("baseTimeNanoseconds")
        other = trace.get("baseTimeNanoseconds")
        shift = (other - base) / 1000 if isinstance(base, int) and isinstance(other, int) else 0.0
        events.extend(_side_events(trace, side, number, shift))
    merged["traceEvents"] = events
    merged["compile_lab"] = {"sides": list(traces)}
    return merged
