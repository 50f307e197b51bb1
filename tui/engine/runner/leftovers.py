"""What a run's worker started outside its process group: found, killed and counted when the run ends.

The runner ends a run by killing the worker's process group, which holds inductor's compile pool and
whatever the workload started in the ordinary way. A process that left the group (``setsid``,
``setpgid``: a daemon's double fork) is out of that signal's reach: it outlived its run, and one that
kept the worker's stdout or stderr open held the runner's pipes open too. Such a process is found
three ways, each covering what another may miss:

* the **token**: every worker is started with ``COMPILE_LAB_RUN_TOKEN`` set to a value of its own,
  which every process it starts inherits (unless a workload empties its environment), so a process
  whose environment carries it belongs to that worker's run wherever it was re-parented to;
* the **tree**: the worker's descendants, noted at each phase change and at the run's end. The
  worker makes itself a child subreaper (:func:`tui.engine.worker.channel.become_subreaper`), so a
  double-forked daemon stays in its tree while it lives, even one that emptied its environment.
  The tree is read while the worker lives: a daemon that emptied its environment and whose worker
  exited before the runner handled the next event is handed on, out of reach of this way;
* the **session**: a process whose session is the worker's (it left the group only).

Each one outside the worker's group is SIGKILLed (with what it started) and counted; the record says
how many (``leftover_processes``). The runner's own process is a subreaper too (:func:`become_subreaper`
in :mod:`.process`): a killed process that was handed to it is reaped here, so none stays a zombie.
Nothing else is touched: the spare worker has a token of its own, and Ray's processes (or anything
else the app or CLI started) carry no token and are no worker's descendants.

psutil reads the process table; without it only the group is swept, as before.
"""

from __future__ import annotations

import os
import secrets
import signal
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RUN_TOKEN_ENV", "Leftovers", "new_token", "leftover_warning"]

RUN_TOKEN_ENV = "COMPILE_LAB_RUN_TOKEN"
"""The environment variable that marks every process a worker (and what it starts) runs."""

CREATE_SLACK_S = 1.0
"""psutil's start times rest on a boot time in whole seconds: "started after the worker" allows this much."""

Key = tuple[int, float]
"""A process as (pid, start time): a pid reused since is another process."""


def new_token() -> str:
    """A fresh token for one worker."""
    return secrets.token_hex(8)


def leftover_warning(count: int) -> str:
    """The row's note on ``count`` processes that outlived their run."""
    return (f"{count} process(es) the workload started outside the worker's process group (a daemon: setsid or a "
            "double fork) were still running when the run ended; the runner killed them")


def _psutil() -> Any:
    try:
        import psutil  # noqa: PLC0415 - lazily: without it, only the group is swept
    except ImportError:
        return None
    return psutil


@dataclass(eq=False)
class Leftovers:
    """The processes of one worker's run outside its group: noted while it runs, killed at its end.

    Make one with :meth:`of` right after the worker started.
    """

    worker_pid: int
    token: str
    worker_start: float = 0.0
    """The worker's start time (psutil's): no process of its run started before it."""
    seen: dict[int, float] = field(default_factory=dict)
    """The worker's descendants noted so far: pid -> start time."""
    killed: set[Key] = field(default_factory=set)
    """Every process killed as a leftover (the count)."""
    _unreaped: dict[int, float] = field(default_factory=dict)

    @classmethod
    def of(cls, worker_pid: int, token: str) -> Leftovers:
        """The tracker of the worker ``worker_pid`` started with ``token``."""
        psutil = _psutil()
        start = 0.0
        if psutil is not None:
            try:
                start = psutil.Process(worker_pid).create_time()
            except (psutil.Error, OSError):
                pass
        return cls(worker_pid=worker_pid, token=token, worker_start=start)

    @property
    def count(self) -> int:
        """How many processes were left and killed."""
        return len(self.killed)

    def note(self) -> None:
        """Remember the worker's descendants now (a phase change, the run's end): they may leave its tree later."""
        psutil = _psutil()
        if psutil is None:
            return
        try:
            children = psutil.Process(self.worker_pid).children(recursive=True)
        except (psutil.Error, OSError):
            return
        for child in children:
            try:
                self.seen[child.pid] = child.create_time()
            except (psutil.Error, OSError):
                continue

    def sweep(self) -> int:
        """SIGKILL every process of this run outside the worker's group, and what each started; how many were new.

        Synchronous and quick (one pass over the process table): safe at a run's end and at exit.
        """
        psutil = _psutil()
        if psutil is None:
            return 0
        found = self._find(psutil)
        for process in list(found.values()):
            try:
                found.update((child.pid, child) for child in process.children(recursive=True))
            except (psutil.Error, OSError):
                continue
        before = len(self.killed)
        for process in found.values():
            self._kill(psutil, process)
        self.reap()
        return len(self.killed) - before

    def reap(self) -> bool:
        """Reap the killed processes that are now this process's zombies; True when none of its children is still dying.

        One that is another process's child is left to its parent (which hands it to this process,
        its subreaper, when it ends; a later call reaps it then). A pid is waited for only while it is
        still the process that was killed (its start time), so a pid reused since (a new worker of this
        process) is never reaped behind its owner's back.
        """
        psutil = _psutil()
        if psutil is None:
            return True
        settled = True
        for pid, start in list(self._unreaped.items()):
            process = _same_process(psutil, pid, start)
            try:
                if process is not None and process.ppid() != os.getpid():
                    continue
                if process is not None and process.status() != psutil.STATUS_ZOMBIE:
                    settled = False  # SIGKILLed, not yet dead
                    continue
                if process is not None:
                    os.waitpid(pid, os.WNOHANG)
            except (psutil.Error, OSError):
                pass
            del self._unreaped[pid]
        return settled

    def _find(self, psutil: Any) -> dict[int, Any]:
        """This run's live processes outside the worker's group: noted in its tree, or with its token or session."""
        found: dict[int, Any] = {}
        for pid, start in self.seen.items():
            process = _same_process(psutil, pid, start)
            if process is not None:
                found[pid] = process
        floor = self.worker_start - CREATE_SLACK_S
        uid = os.getuid()
        for process in psutil.process_iter(["pid", "create_time", "uids"]):
            info = process.info
            if info["pid"] in found or (info["create_time"] or 0.0) < floor:
                continue
            if info["uids"] is not None and info["uids"].real != uid:
                continue
            if self._marked(psutil, process):
                found[info["pid"]] = process
        return {pid: process for pid, process in found.items() if self._outside_group(pid)}

    def _marked(self, psutil: Any, process: Any) -> bool:
        """Whether ``process`` carries this run's token or lives in the worker's session."""
        try:
            if os.getsid(process.pid) == self.worker_pid:
                return True
            return process.environ().get(RUN_TOKEN_ENV) == self.token
        except (psutil.Error, OSError):
            return False

    def _outside_group(self, pid: int) -> bool:
        if pid in (self.worker_pid, os.getpid()):
            return False
        try:
            return os.getpgid(pid) != self.worker_pid
        except OSError:
            return False

    def _kill(self, psutil: Any, process: Any) -> None:
        try:
            key = (process.pid, process.create_time())
            if process.status() == psutil.STATUS_ZOMBIE:
                self._unreaped[key[0]] = key[1]  # it ended by itself: reaped, not counted
                return
            process.send_signal(signal.SIGKILL)  # psutil checks that the pid was not reused meanwhile
        except (psutil.Error, OSError):
            return
        self.killed.add(key)
        self._unreaped[key[0]] = key[1]


def _same_process(psutil: Any, pid: int, start: float) -> Any:
    """``pid`` as a psutil process while it is still the one that started at ``start``, else None."""
    try:
        process = psutil.Process(pid)
        return process if abs(process.create_time() - start) < 1e-3 else None
    except (psutil.Error, OSError):
        return None
