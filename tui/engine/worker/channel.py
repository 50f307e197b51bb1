"""The worker's side of the event channel, set up before torch is imported.

:func:`open_channel` keeps a private duplicate of fd 1 for events and points fd 1 (and
``sys.stdout``) at stderr, so whatever torch, inductor, a compiler or a user's model
prints, from Python or from C, lands in stderr and never between two events.
This module imports no torch: ``__main__`` calls it first.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import stat
import sys
import threading
import time

from tui.engine.prctl import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, prctl
from tui.engine.protocol import Event, encode

__all__ = ["EventChannel", "open_channel", "set_parent_death_signal", "become_subreaper", "read_command_line",
           "watch_stdin"]

class EventChannel:
    """Writes protocol events, one JSON line each, to a file descriptor of its own."""

    def __init__(self, fd: int, t0: float | None = None) -> None:
        self.fd = fd
        self.t0 = time.perf_counter() if t0 is None else t0
        self._lock = threading.Lock()

    def elapsed(self) -> float:
        """Seconds since the worker started (the ``t`` of every event)."""
        return time.perf_counter() - self.t0

    def emit(self, event: Event) -> None:
        """Stamp ``event`` with the time, encode and write it; a parent that went away ends the worker quietly."""
        data = memoryview(encode(dataclasses.replace(event, t=round(self.elapsed(), 6))))
        with self._lock:
            try:
                while data:
                    written = os.write(self.fd, data)
                    data = data[written:]
            except (BrokenPipeError, ConnectionResetError):
                # nobody reads the events any more: the parent is gone
                os._exit(1)


def set_parent_death_signal() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (best effort, Linux only)."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def become_subreaper() -> bool:
    """Keep what this worker's run starts in its tree: an orphan (a double-forked daemon) is handed to
    the worker instead of to the runner or PID 1, so the runner sees it among the worker's descendants
    (:mod:`tui.engine.runner.leftovers`) and kills it when the run ends. True when it applied (Linux)."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


def open_channel(t0: float | None = None) -> EventChannel:
    """Move events to a private fd and send fd 1 / ``sys.stdout`` to stderr."""
    events_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return EventChannel(events_fd, t0)


def read_command_line(fd: int = 0) -> bytes:
    """Read one line from ``fd`` without read-ahead buffering (b"" on EOF before any byte)."""
    chunks: list[bytes] = []
    while True:
        byte = os.read(fd, 1)
        if not byte:
            break
        chunks.append(byte)
        if byte == b"\n":
            break
    return b"".join(chunks)


def watch_stdin(fd: int = 0, exit_code: int = 0) -> threading.Thread | None:
    """Start a daemon thread that ends the process when the parent closes our stdin.

    The parent keeps the worker's stdin open for the whole run, so EOF means it went
    away. A regular file on stdin (``python -m tui.engine.worker < command.json``, by hand)
    reaches EOF at once and says nothing about a parent: then nothing is watched.
    """
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return None
    except OSError:
        return None

    def watch() -> None:
        try:
            while os.read(fd, 4096):
                pass
        except OSError:
            pass
        os._exit(exit_code)

    thread = threading.Thread(target=watch, name="compile-lab-stdin-watch", daemon=True)
    thread.start()
    return thread
