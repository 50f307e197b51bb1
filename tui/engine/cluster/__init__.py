"""A sweep on the nodes of a Ray cluster: one Ray task per configuration, its worker on a node.

``compile-lab sweep ... --cluster ADDRESS`` runs each configuration as a Ray streaming generator
task that asks for one GPU (a CPU configuration: ``--cluster-cpus`` CPUs) and runs compile-lab's own
worker process on its node, its events streamed back as they happen. The package, by side:

* :mod:`.address` -- what ``--cluster`` accepts, the one-line refusals (no Ray);
* :mod:`.handshake` -- the versions a node must share with the caller, and the refusal's line;
* :mod:`.node` -- the task's body on the node (a local ``WorkerRunner``) and the kill task;
* :mod:`.transport` -- what the runner asks of a transport, and a lost task's one line;
* :mod:`.runner` -- :class:`~tui.engine.cluster.runner.ClusterRunner`, the session's runner of the
  cluster lanes (``cluster:0``, ...): items -> record, lost tasks, cancel;
* :mod:`.ray_transport` -- Ray itself: connect, count the runs that fit, submit, cancel;
* :mod:`.torch_probe` -- a tune's torch probe on a node: which options the nodes' torch has.

Ray is imported only inside the functions that ``--cluster`` calls (docs/CLUSTER.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tui.engine.cluster.address import DEFAULT_CPUS, NEEDS_RAY, ClusterError, parse_address

__all__ = ["ClusterError", "NEEDS_RAY", "DEFAULT_CPUS", "parse_address", "open_cluster"]


def open_cluster(address: str, device: str, cpus: float = DEFAULT_CPUS, worker_argv: list[str] | None = None,
                 env: Mapping[str, str] | None = None) -> tuple[Any, tuple[str, ...]]:
    """Connect to the Ray cluster at ``address``: (a ClusterRunner, its lanes: one per run that fits at once).

    ClusterError (one line) without Ray, when the cluster cannot be reached, or when it has no room
    for a run of ``device``. See :func:`tui.engine.cluster.ray_transport.open_cluster`.
    """
    from tui.engine.cluster.ray_transport import open_cluster as open_ray_cluster

    return open_ray_cluster(address, device, cpus, worker_argv=worker_argv, env=env)
