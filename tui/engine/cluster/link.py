"""A Ray cluster of the app or the command line (``--cluster ADDRESS``): every run queued goes to the cluster.

Both front ends connect through it: :func:`tui.engine.cluster.open_cluster` connects
(in a thread, off the event loop: Ray takes seconds to connect) and says how many runs fit at once; the runs are
submitted with those lanes (``cluster:0`` ...) as their pool, and the session's lane runners hand
them to the one :class:`~tui.engine.cluster.runner.ClusterRunner`. A run's device there is ``cuda``
(Ray gives it its GPU) or ``cpu``. Ray is imported only when the first run is queued. Imports no
textual.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from collections.abc import Sequence

from tui.engine.options import RunOptions

if TYPE_CHECKING:
    from tui.engine.runner.torch_probe import TorchOptions

__all__ = ["ClusterLink", "on_cluster"]


def on_cluster(options: RunOptions) -> RunOptions:
    """``options`` as a cluster runs them: any CUDA device is ``cuda`` (Ray picks the GPU)."""
    if options.device.startswith("cuda") and options.device != "cuda":
        return dataclasses.replace(options, device="cuda")
    return options


@dataclass
class ClusterLink:
    """Where the app's runs go: a Ray cluster's address and the CPUs each run asks for."""

    address: str
    cpus: float = 1.0
    runner: Any = None
    """The ClusterRunner, once connected (it serves every cluster lane)."""
    slots: dict[str, int] = dataclasses.field(default_factory=dict)
    """Runs at once, by device kind, as the cluster said when asked."""

    async def lanes(self, options: Sequence[RunOptions], worker_argv: list[str] | None = None) -> tuple[str, ...]:
        """The cluster lanes for runs of ``options`` (connecting on first use); ClusterError (one line)."""
        from tui.engine import cluster
        from tui.engine.run.session import CLUSTER_LANE

        kind = "cuda" if any(o.device.startswith("cuda") for o in options) else "cpu"
        if kind not in self.slots:
            connect = (functools.partial(cluster.open_cluster, self.address, kind, self.cpus) if worker_argv is None
                       else functools.partial(cluster.open_cluster, self.address, kind, self.cpus,
                                              worker_argv=worker_argv))  # None: a test's replacement keeps its own
            runner, lanes = await asyncio.to_thread(connect)
            if self.runner is None:
                self.runner = runner
            elif runner is not self.runner:
                await runner.aclose()  # this process's Ray is the first runner's: one is enough
            self.slots[kind] = len(lanes)
        return tuple(f"{CLUSTER_LANE}{index}" for index in range(self.slots[kind]))

    async def ask_torch(self, keys: Sequence[str], device: str) -> TorchOptions:
        """What a node's torch says about ``keys`` (:meth:`~tui.engine.cluster.runner.ClusterRunner.ask_torch`):
        a :class:`~tui.engine.runner.torch_probe.TorchOptions`, its ``problem`` set when no node could be asked
        (the cluster refused: connecting first when no lanes were asked for yet)."""
        from tui.engine.cluster.address import ClusterError
        from tui.engine.runner.torch_probe import TorchOptions

        if self.runner is None:
            try:
                await self.lanes([RunOptions(device=device)])
            except ClusterError as exc:
                return TorchOptions(problem=str(exc))
        return await self.runner.ask_torch(keys, device)
