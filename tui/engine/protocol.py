"""The worker's event protocol: JSON objects, one per line, on a channel of their own.

The worker duplicates its original stdout into a private file descriptor, then points
fd 1 at stderr, so anything torch, inductor or a user's model prints (from Python or
from C) lands in stderr and can never corrupt the event stream. The parent reads the
child's stdout pipe line by line and decodes each line with :func:`decode`.

Parent -> worker (one line on the worker's stdin)::

    {"command": "run", "run_id": "...", "options": {RunOptions.to_dict()}}

Worker -> parent (every event carries ``"v": PROTOCOL_VERSION``, ``"event"`` and ``"t"``,
seconds since the worker started):

``ready``     the worker imported torch and waits for its command: pid, python, torch
``started``   env: torch / CUDA / triton versions, device, gpu_name, gpu_uuid, driver,
              precision settings (tf32 matmul / cudnn), cpu, python
``phase``     phase: one of PHASES
``warning``   message: one line
``compiled``  compile_s, diagnostics (graph breaks, recompiles, ...)
``block``     side ("eager" | "compiled"), stage ("compile" | "warmup" | "measure"),
              index (block number per side and stage), clock ("cuda_event" | "perf_counter"),
              ms (per-iteration times), wall_ms_per_call (block wall time / calls, synchronised),
              labels (optional, one input label per iteration, e.g. the batch size)
``finished``  diagnostics, accuracy, memory, flops_per_call, bytes_per_call, warnings
``failed``    kind (one of FAILURE_KINDS), message (one line), detail (full text)
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "PROTOCOL_VERSION",
    "PHASES",
    "STAGES",
    "FAILURE_KINDS",
    "EVENTS",
    "ProtocolError",
    "encode",
    "decode",
    "make_event",
]

PROTOCOL_VERSION = 1

PHASES = ("building", "compiling", "warming_up", "checking_accuracy", "measuring", "diagnosing")
"""The worker's phases, in the order it runs them."""
STAGES = ("compile", "warmup", "measure")
EVENTS = ("ready", "started", "phase", "warning", "compiled", "block", "finished", "failed")
FAILURE_KINDS = (
    "bad_options",  # refused before or right after start (unknown backend, dtype the device cannot run)
    "workload_error",  # a user workload file that cannot be loaded or returns the wrong thing
    "compile_error",  # torch.compile / inductor raised
    "graph_break",  # fullgraph=True and the workload breaks the graph
    "out_of_memory",  # CUDA or host allocation failed
    "runtime_error",  # the workload itself raised while running
    "crash",  # the worker died (signal, nonzero exit) without saying why
    "timeout",  # the per-run timeout ended it
    "cancelled",  # the user cancelled it
)


class ProtocolError(ValueError):
    """A line from the worker is not a valid event."""


def make_event(event: str, t: float, **fields: Any) -> dict[str, Any]:
    """Build an event dict with the protocol header."""
    if event not in EVENTS:
        raise ValueError(f"unknown event {event!r}")
    return {"v": PROTOCOL_VERSION, "event": event, "t": round(t, 6), **fields}


def encode(event: dict[str, Any]) -> bytes:
    """One event as a JSON line (non-finite floats become null)."""
    return (json.dumps(_finite(event), separators=(",", ":")) + "\n").encode()


def decode(line: bytes | str) -> dict[str, Any]:
    """Parse one line into an event dict, or raise ProtocolError."""
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"not JSON: {line[:120]!r}") from exc
    if not isinstance(data, dict) or data.get("event") not in EVENTS:
        raise ProtocolError(f"not an event: {line[:120]!r}")
    if data.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {data.get('v')!r}, expected {PROTOCOL_VERSION}")
    return data


def _finite(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
