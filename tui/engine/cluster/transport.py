"""What the cluster runner asks of a transport, and how a lost task reads: the layer under the runner.

A transport (:class:`~tui.engine.cluster.ray_transport.RayTransport` for Ray; tests pass a fake)
submits a run's task (:class:`ClusterTask`) or the tune's torch probe to a node, and says when the
cluster's head is lost. A task the cluster lost raises :class:`TaskLost`; :func:`lost_message` puts it in
one line, naming the node. The runner (:mod:`.runner`) and the torch probe (:mod:`.torch_probe`) read both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from tui.engine.cluster.handshake import DOC, Hello

__all__ = ["TaskLost", "ClusterTask", "Transport", "lost_message"]


class TaskLost(Exception):
    """A task's stream ended in an error of the cluster's (``str``: one line; ``detail``: Ray's whole text)."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


class ClusterTask(Protocol):
    """One run submitted to the cluster."""

    def items(self) -> AsyncIterator[dict[str, Any]]:
        """The node's items as they come; raises :class:`TaskLost` when the cluster lost the task."""
        ...

    async def cancel(self, node_id: str | None, pid: int | None) -> None:
        """Kill process group ``pid`` on node ``node_id`` (when known), then the task."""
        ...

    def kill_now(self, node_id: str | None, pid: int | None) -> None:
        """:meth:`cancel` without waiting for anything (a signal handler)."""
        ...


class Transport(Protocol):
    """Submits runs to a cluster (:class:`~tui.engine.cluster.ray_transport.RayTransport`)."""

    def submit(self, request: dict[str, Any], num_cpus: float, num_gpus: float) -> ClusterTask:
        """Start one run's task asking for these resources."""
        ...

    async def probe(self, request: dict[str, Any], num_cpus: float, num_gpus: float) -> Any:
        """Run the tune's torch probe on a node with these resources free; the node's answer
        (:func:`~tui.engine.cluster.node.probe_on_node`). :class:`TaskLost` when the cluster lost the task;
        cancelling the call cancels the task."""
        ...

    async def aclose(self) -> None:
        """Wait for what the transport still sends (kill tasks), then let the cluster go."""
        ...

    @property
    def head_lost(self) -> str | None:
        """Why the cluster's head is lost (one line), or None while it answers."""
        ...

    async def lost(self) -> str:
        """Return (the reason, one line) once the cluster's head is lost; never while it answers."""
        ...


def lost_message(hello: Hello | None, error: str) -> str:
    """One line: which node lost the run (or that no node had started it), and Ray's error."""
    if hello is None:
        if "No module named 'tui'" in error:
            return (f"compile-lab could not be imported on the node ({error}): install it on every node or ship "
                    f"it in a runtime_env ({DOC})")
        return f"the task was lost before it started on a node: {error}"
    where = hello.node or "unknown"
    if hello.node_ip:
        where += f" ({hello.node_ip})"
    return f"node {where} lost the run: {error}"
