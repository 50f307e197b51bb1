"""The warm spare: the next worker, started ahead of time so the next run skips importing torch.

Right after a run is handed to its worker, the runner starts a spare for the same interpreter
and environment (the same *key*). It imports torch, emits ``ready`` and waits for its command,
so the next run with that key starts at once. While a run measures, a spare that is still importing
is paused (SIGSTOP) so it does not compete for the CPU, and resumed afterwards. While a run compiles,
it is paused only where the run may use fewer than :data:`SHARES_A_COMPILE_FROM_CORES` cores: on one
core a spare importing beside the compile doubled ``compile_s``, on two it made no difference that
could be measured (docs/BENCHMARKS.md, section 21), and a spare held back until the run measures is
often not ready for the next run. One fresh process per configuration all the same: a spare runs
exactly one run.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Awaitable, Callable

from tui.engine.run.placement import allowed_cpus
from tui.engine.runner.process import WorkerProcess

__all__ = ["SparePool", "SPARE_STOP_GRACE_S", "SHARES_A_COMPILE_FROM_CORES", "cores_of"]

SPARE_STOP_GRACE_S = 0.2
"""Seconds a spare that is no longer wanted gets between SIGTERM and SIGKILL."""

SHARES_A_COMPILE_FROM_CORES = 2
"""A spare still importing goes on beside a compiling run that may use this many cores or more."""

log = logging.getLogger(__name__)


def cores_of(pid: int) -> int:
    """How many CPU cores the process ``pid`` may run on (:func:`~tui.engine.run.placement.allowed_cpus`), or the
    machine's count where the process is gone."""
    try:
        return len(allowed_cpus(pid))
    except OSError as exc:
        log.debug("the cores of process %d could not be read: %s", pid, exc)
        return os.cpu_count() or 1

Spawn = Callable[[list, dict, tuple], Awaitable[WorkerProcess]]


class SparePool:
    """At most one waiting spare worker.

    ``spawn(argv, env, key)`` starts a worker (the runner's, which remembers its process
    group); ``forget(worker)`` is called for a spare that was stopped.
    """

    def __init__(self, spawn: Spawn, forget: Callable[[WorkerProcess], None]) -> None:
        self._spawn = spawn
        self._forget = forget
        self._spare: WorkerProcess | None = None

    @property
    def worker(self) -> WorkerProcess | None:
        """The waiting spare, or None."""
        return self._spare

    @property
    def pid(self) -> int | None:
        """The pid of the waiting spare while it lives, or None."""
        spare = self._spare
        return spare.pid if spare is not None and spare.alive else None

    async def take(self, argv: list[str], env: dict[str, str], key: tuple) -> WorkerProcess:
        """A worker for ``key``: the spare when it matches (resumed if paused), else a fresh one.

        A spare for another key is stopped. OSError when a fresh worker cannot start.
        """
        spare, self._spare = self._spare, None
        if spare is not None:
            if spare.key == key and spare.alive:
                spare.resume()
                return spare
            await self._drop(spare)
        return await self._spawn(argv, env, key)

    async def start(self, argv: list[str], env: dict[str, str], key: tuple) -> None:
        """Have a spare for ``key`` waiting (an existing one for another key is replaced).

        A spare that cannot start is no error: the next run starts its own worker.
        """
        if self._spare is not None:
            if self._spare.key == key and self._spare.alive:
                return
            old, self._spare = self._spare, None
            await self._drop(old)
        with contextlib.suppress(OSError):
            self._spare = await self._spawn(argv, env, key)

    def pause(self) -> None:
        """Pause a spare that is still importing (a run is measuring: it would steal CPU)."""
        spare = self._spare
        if spare is not None and spare.alive and not spare.ready.is_set():
            spare.pause()

    def pause_for_compile(self, worker_pid: int) -> None:
        """Pause a spare still importing while the worker ``worker_pid`` compiles, where that worker may use fewer
        than :data:`SHARES_A_COMPILE_FROM_CORES` cores."""
        if cores_of(worker_pid) < SHARES_A_COMPILE_FROM_CORES:
            self.pause()

    def resume(self) -> None:
        """Resume a paused spare."""
        if self._spare is not None:
            self._spare.resume()

    def release(self) -> WorkerProcess | None:
        """Hand the spare over (to be stopped); the pool is empty afterwards."""
        spare, self._spare = self._spare, None
        return spare

    async def _drop(self, spare: WorkerProcess) -> None:
        await spare.stop(grace=SPARE_STOP_GRACE_S)
        self._forget(spare)
