"""The tune's torch probe on a cluster, the caller's side: ask one node's worker interpreter, read its answer.

``compile-lab tune --cluster`` races options that the nodes' torch must have, so the catalog is
read where the runs run: one task (:func:`tui.engine.cluster.node.probe_on_node`) asking for the
resources a run of the search asks for, so it lands on a node that could run one, runs the probe
there. Its answer is read here with the code that reads a probe run on this machine
(:func:`tui.engine.runner.torch_probe.read_output`), after the same version handshake a run passes.

Anything that keeps the node from answering is :attr:`TorchOptions.problem` (one line), never an
exception: no node in time (the probe's limit and :data:`NODE_START_S`), the task lost, the
head lost, a node with another compile-lab, Ray or Python. The caller then asks this machine's
torch and says why (:func:`tui.engine.tune.probe.ask_torch`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from tui.engine.cluster.handshake import Hello, Versions, mismatch
from tui.engine.cluster.transport import TaskLost, Transport, lost_message
from tui.engine.runner.torch_probe import PROBE_TIMEOUT_S, ProbeOutput, TorchOptions, read_output
from tui.typed import printable

__all__ = ["ask_node", "read_answer", "node_torch", "NODE_START_S"]

log = logging.getLogger(__name__)

NODE_START_S = 60.0
"""Seconds the caller waits beyond the node's own probe limit: Ray placing the task and the node starting it."""


def node_torch(hello: Hello) -> str:
    """Whose torch a node's probe asked, in words: ``node gpu-03's torch``."""
    return f"node {printable(hello.node or 'unknown')}'s torch"


async def ask_node(transport: Transport, versions: Versions, keys: Sequence[str], num_cpus: float, num_gpus: float,
                   timeout: float = PROBE_TIMEOUT_S, start_s: float = NODE_START_S) -> TorchOptions:
    """Run the probe about ``keys`` on a node with ``num_cpus`` and ``num_gpus`` free (``transport``: a
    :class:`~tui.engine.cluster.transport.Transport`); what its torch said, or why not.

    The node gives its probe ``timeout`` s; this side waits ``start_s`` more for the task to reach a node
    and start, so a probe that runs out of time on the node says so itself."""
    lost = transport.head_lost
    if lost is not None:
        return TorchOptions(problem=lost)
    request = {"keys": list(keys), "versions": versions.to_json(), "timeout": timeout}
    probe = asyncio.ensure_future(transport.probe(request, num_cpus, num_gpus))
    head = asyncio.ensure_future(transport.lost())
    wait = timeout + start_s
    try:
        done, _ = await asyncio.wait({probe, head}, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for future in (probe, head):
            if not future.done():
                future.cancel()  # the probe's: its task on the cluster is cancelled too
        await asyncio.gather(probe, head, return_exceptions=True)
    if probe in done:
        try:
            return read_answer(probe.result(), versions)
        except TaskLost as exc:
            log.info("the torch probe's task was lost: %s", exc.detail or exc)
            return TorchOptions(problem=lost_message(None, str(exc)))
    if head in done:
        return TorchOptions(problem=str(head.result()))
    return TorchOptions(problem=f"no node answered within {wait:g} s")


def read_answer(answer: Any, versions: Versions) -> TorchOptions:
    """A node's answer (:func:`~tui.engine.cluster.node.probe_on_node`) as :class:`TorchOptions`: its refusal, or
    what its probe left, read as a probe on this machine is read."""
    data = answer if isinstance(answer, dict) else {}
    hello = Hello.parse(_object(data.get("hello")))  # not one: a node of another compile-lab, refused below
    refusal = mismatch(versions, hello.versions, hello.node) or hello.refused
    if refusal is not None:
        return TorchOptions(problem=refusal, asked=node_torch(hello))
    output = ProbeOutput.from_json(_object(data.get("output")))
    return read_output(output, node_torch(hello))


def _object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (whose fields take their defaults)."""
    return value if isinstance(value, dict) else {}
