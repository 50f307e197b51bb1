"""The Ray head, watched while runs are in flight: a head that stops answering ends them as lost.

Without its head (the GCS) a Ray cluster cannot start a task, and its nodes' raylets give up after
their own reconnect timeout (60 s by default), taking the tasks with them. Ray's driver would do the
same to the caller: when the GCS has not answered for ``gcs_rpc_server_reconnect_timeout_s`` it
logs "Failed to connect to GCS within 60 seconds ... The program will terminate" and calls
``std::_Exit(1)``, which no Python handler can catch: the CLI died with no table, no export and the
last runs unrecorded. So the caller raises that timeout for itself (:func:`keep_the_caller_alive`,
before ``ray.init``) and watches the head on its own (:class:`HeadWatch`): the GCS's address is
probed every :data:`PROBE_INTERVAL_S` seconds (:func:`tui.engine.cluster.probe.check_gcs`); once it
has not answered for :data:`LOST_AFTER_S`, the head is lost: each run in flight becomes a ``crash``
row naming the cause, a run not yet started fails without being submitted, and the CLI prints its
table, writes its exports and exits 1, as for any failed run.

Nothing here imports Ray.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable

from tui.engine.cluster.probe import GcsProbeError, check_gcs

__all__ = ["HeadWatch", "keep_the_caller_alive", "RECONNECT_ENV", "CALLER_RECONNECT_S", "PROBE_INTERVAL_S",
           "LOST_AFTER_S", "head_lost_message"]

RECONNECT_ENV = "RAY_gcs_rpc_server_reconnect_timeout_s"
"""Ray's setting: seconds a Ray process waits for a lost GCS before it ends itself."""
CALLER_RECONNECT_S = 10 * 365 * 24 * 3600
"""The caller's value: it never ends itself; :class:`HeadWatch` decides when the head is lost."""
PROBE_INTERVAL_S = 2.0
"""Seconds between two probes of the head while runs are in flight."""
LOST_AFTER_S = 10.0
"""Seconds without an answer from the head after which it is lost (a GCS that restarts within them is not)."""


def keep_the_caller_alive() -> None:
    """Raise Ray's GCS reconnect timeout in this process (before ``ray.init``): a lost head must not end it.

    A larger value already set is kept.
    """
    try:
        current = int(os.environ.get(RECONNECT_ENV, "0"))
    except ValueError:
        current = 0
    if current < CALLER_RECONNECT_S:
        os.environ[RECONNECT_ENV] = str(CALLER_RECONNECT_S)


def head_lost_message(address: str, why: str, after: float = LOST_AFTER_S) -> str:
    """``the Ray head at ADDRESS was lost (...)``: the cause every run it ends names first."""
    return f"the Ray head at {address} was lost (no answer for {after:g} s: {why})"


Probe = Callable[[str], None]


class HeadWatch:
    """Probes the head at ``address`` while :meth:`lost` is awaited; ``reason`` is set once it is lost.

    ``probe(address)`` returns when the head answers and raises GcsProbeError otherwise (blocking: it
    runs in a thread).
    """

    def __init__(self, address: str, probe: Probe | None = None, interval: float = PROBE_INTERVAL_S,
                 lost_after: float = LOST_AFTER_S) -> None:
        self.address = address
        self.reason: str | None = None
        self._probe = probe or _probe_briefly
        self._interval = interval
        self._lost_after = lost_after
        self._lost = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._waiters = 0

    async def lost(self) -> str:
        """Wait until the head is lost; the reason, one line. The head is probed while someone waits here
        (a run in flight), not while the cluster is idle."""
        self._waiters += 1
        try:
            if self.reason is None and (self._task is None or self._task.done()):
                self._task = asyncio.get_running_loop().create_task(self._watch(), name="compile-lab-ray-head-watch")
            await self._lost.wait()
        finally:
            self._waiters -= 1
        assert self.reason is not None
        return self.reason

    async def close(self) -> None:
        """Stop probing."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _watch(self) -> None:
        answered = time.monotonic()
        while self._waiters:
            try:
                await asyncio.to_thread(self._probe, self.address)
                answered = time.monotonic()
            except (GcsProbeError, OSError, ValueError) as exc:
                if time.monotonic() - answered >= self._lost_after:
                    self.reason = head_lost_message(self.address, str(exc), self._lost_after)
                    self._lost.set()
                    return
            await asyncio.sleep(self._interval)


def _probe_briefly(address: str) -> None:
    """The protocol check with short timeouts: a probe must end before the next one is due."""
    check_gcs(address, connect_timeout=PROBE_INTERVAL_S, answer_timeout=PROBE_INTERVAL_S)
