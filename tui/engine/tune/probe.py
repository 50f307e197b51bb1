"""Where the tuner asks which of the catalog's inductor options the runs' torch has.

:func:`ask_torch` picks the place: a node of the cluster when there is one (the runs run there),
else this machine's worker interpreter (:mod:`tui.engine.runner.torch_probe`, which holds the
question and its reading for both). When the cluster cannot be asked (no node answers in time,
Ray's error, a node refused), this machine's torch is asked instead, and the answer's
:attr:`TorchOptions.fallback` says so and why (one line: the tuner shows it as a note, and it is
logged). When no torch can be asked at all, the tuner goes on with the catalog as it is and a
note: a run whose option torch lacks then fails, and is listed with its reason.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Protocol

from tui.engine.runner.torch_probe import THIS_MACHINE, TorchOptions, probe_torch, probing

__all__ = ["TorchAsker", "ask_torch", "probe_torch", "TorchOptions", "THIS_MACHINE"]

log = logging.getLogger(__name__)


class TorchAsker(Protocol):
    """A cluster that can ask one of its nodes (:class:`tui.engine.cluster.link.ClusterLink`)."""

    async def ask_torch(self, keys: Sequence[str], device: str) -> TorchOptions:
        """The torch of a node that runs runs of ``device``, asked about ``keys``; ``problem`` set when it cannot."""
        ...


async def ask_torch(keys: Sequence[str], python: str | None = None, cluster: TorchAsker | None = None,
                    device: str = "cpu") -> TorchOptions:
    """Ask the torch the runs will run with about ``keys``: a node's of ``cluster`` (one that runs runs of
    ``device``), else this machine's (``python``'s, in a thread); the cluster's failing, this machine's with
    :attr:`TorchOptions.fallback` saying why."""
    why = None
    if cluster is not None:
        found = await cluster.ask_torch(keys, device)
        if found.problem is None:
            return found
        why = f"the cluster's torch could not be asked ({found.problem}); this machine's torch was asked instead"
        log.warning("tune: %s", why)
    local = await probing(probe_torch, keys, python)
    return local if why is None else dataclasses.replace(local, fallback=why)
