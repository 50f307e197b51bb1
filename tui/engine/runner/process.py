"""One worker process as the parent sees it: spawn, read its two streams, signal, stop and reap.

The worker is started with ``asyncio.create_subprocess_exec`` with its three standard streams
piped (never the terminal) and in a session of its own, so signalling its process group also
reaches the compile subprocesses inductor starts. Its stdout carries JSON-line events only
(:mod:`tui.engine.protocol`): each line is decoded into its typed event at once and queued;
stderr is drained concurrently and only a bounded tail is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any

from tui.engine.prctl import PR_SET_CHILD_SUBREAPER, prctl
from tui.engine.protocol import Event, ProtocolError, Ready, decode
from tui.engine.runner.leftovers import RUN_TOKEN_ENV, Leftovers, new_token
from tui.logs import suppressed
from tui.typed import printable

__all__ = ["WorkerProcess", "QueueItem", "STDERR_TAIL_BYTES", "KILL_GRACE_S", "STREAM_LIMIT", "become_subreaper"]

log = logging.getLogger(__name__)

STDERR_TAIL_BYTES = 64 * 1024
"""How much of a worker's stderr is kept (the end of it)."""

KILL_GRACE_S = 1.0
"""Seconds between SIGTERM and SIGKILL when a worker is stopped."""

STREAM_LIMIT = 32 * 1024 * 1024
"""Longest event line accepted (a block of many iterations is one line)."""

QueueItem = tuple[str, Event | str | None]
"""What the stdout reader queues: ("event", Event), ("bad", why a line was not one) or ("eof", None)."""

_SUBREAPER: bool | None = None


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux), once.

    When a worker dies, what it started (inductor's compile workers, a daemon of the workload) is
    re-parented. Under a PID 1 that never reaps (many containers) those would stay zombies forever;
    as their subreaper, the runner reaps them itself when it sweeps the group and the leftovers
    (:mod:`.leftovers`). Only what the runner killed is reaped: another child of this process (Ray's,
    a spare worker) keeps its own parent's reaping.
    """
    global _SUBREAPER
    if _SUBREAPER is None:
        _SUBREAPER = prctl(PR_SET_CHILD_SUBREAPER, 1)
    return _SUBREAPER


def _last_meaningful_line(text: str) -> str:
    """The last stderr line worth showing: not blank, not a traceback header or frame, not markers, not a
    profiler's trace-point log (kineto's ``USDT:... profiler_start`` says nothing of a crash)."""
    for raw in reversed(text.splitlines()):
        line = raw.strip()
        if not line or line.startswith(("File ", "Traceback (most recent call last)", "USDT:")):
            continue
        if set(line) <= set("^~-=*_ "):
            continue
        return line[:300]
    return ""


@dataclass(eq=False)
class WorkerProcess:
    """A started worker process with its readers (stdout events queued, stderr tail kept).

    ``key`` says which configuration the process was started for (argv and environment): a
    spare is only handed a run whose key matches. ``paused``: stopped with SIGSTOP.
    """

    process: asyncio.subprocess.Process
    key: tuple
    queue: asyncio.Queue[QueueItem] = field(default_factory=asyncio.Queue)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stderr_tail: bytearray = field(default_factory=bytearray)
    stderr_bytes: int = 0
    paused: bool = False
    tasks: list[asyncio.Task] = field(default_factory=list)
    leftovers: Leftovers | None = None
    """What its run starts outside its process group (:mod:`.leftovers`), killed when it is stopped."""
    killed: bool = False
    """Whether its runner killed it (``kill_all``: a signal, the app closing): its end is a stop, not a crash."""
    program: str = ""
    """The interpreter it was started with (``argv[0]``): named when it ends before it is ready."""

    @classmethod
    async def spawn(cls, argv: list[str], env: dict[str, str], key: tuple) -> WorkerProcess:
        """Start ``argv`` in a session of its own with piped streams and read them (OSError if it cannot start)."""
        become_subreaper()
        token = new_token()
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**env, RUN_TOKEN_ENV: token},
            start_new_session=True,
            limit=STREAM_LIMIT,
        )
        worker = cls(process=process, key=key, leftovers=Leftovers.of(process.pid, token), program=argv[0])
        worker.tasks = [
            asyncio.create_task(worker._read_stdout(), name=f"worker-{worker.pid}-stdout"),
            asyncio.create_task(worker._drain_stderr(), name=f"worker-{worker.pid}-stderr"),
        ]
        return worker

    @property
    def pid(self) -> int:
        """The worker's pid, which is also its process group id."""
        return self.process.pid

    @property
    def alive(self) -> bool:
        """True until the worker itself was reaped."""
        return self.process.returncode is None

    # ----- streams ---------------------------------------------------------------------------

    async def _read_stdout(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        try:
            while True:
                try:
                    line = await stream.readline()
                except ValueError:  # longer than STREAM_LIMIT: the rest of that line was dropped
                    self.queue.put_nowait(("bad", f"an event line over {STREAM_LIMIT} bytes was dropped"))
                    continue
                if not line:
                    break
                if line.strip():
                    self._take_line(line)
        except (ConnectionResetError, BrokenPipeError):
            pass
        finally:
            self.queue.put_nowait(("eof", None))

    def _take_line(self, line: bytes) -> None:
        try:
            event = decode(line)
        except ProtocolError as exc:
            self.queue.put_nowait(("bad", str(exc)))
            return
        if isinstance(event, Ready):
            self.ready.set()
        self.queue.put_nowait(("event", event))

    async def _drain_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        try:
            while True:
                chunk = await stream.read(65536)
                if not chunk:
                    break
                self.stderr_bytes += len(chunk)
                self.stderr_tail += chunk
                if len(self.stderr_tail) > STDERR_TAIL_BYTES:
                    del self.stderr_tail[: len(self.stderr_tail) - STDERR_TAIL_BYTES]
        except (ConnectionResetError, BrokenPipeError):
            pass

    def stderr_text(self) -> str:
        """The kept tail of stderr (from a line start when the beginning was cut)."""
        text = bytes(self.stderr_tail).decode("utf-8", errors="replace")
        if self.stderr_bytes > len(self.stderr_tail):
            # The cut may fall mid-line: drop the partial first line.
            text = text.partition("\n")[2]
        return text

    async def drain_readers(self, timeout: float = 1.0) -> None:
        """Let the readers take what is left in the pipes (they end at EOF)."""
        pending = [t for t in self.tasks if not t.done()]
        if pending:
            _done, still = await asyncio.wait(pending, timeout=timeout)
            for task in still:
                task.cancel()

    async def send_command(self, run_id: str, options: dict[str, Any], artifacts_dir: str | None = None) -> None:
        """Write the one run command to the worker's stdin (which stays open: EOF tells it the parent left).

        ``artifacts_dir``: the run's data folder, for the files the worker writes (the Chrome trace).
        """
        command: dict[str, Any] = {"command": "run", "run_id": run_id, "options": options}
        if artifacts_dir is not None:
            command["artifacts_dir"] = artifacts_dir
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write((json.dumps(command) + "\n").encode())
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the worker is gone: the stream's EOF reports it as a crash

    def crash_message(self, exited: bool) -> str:
        """Why a worker that ended without finished/failed ended, with stderr's last meaningful line."""
        code = self.process.returncode
        if not exited:
            message = "worker closed its event stream without finishing"
        elif code is not None and code < 0:
            message = f"worker crashed (signal {-code})"
        else:
            message = f"worker exited with code {code}"
        last = _last_meaningful_line(self.stderr_text())
        if not self.ready.is_set():  # it never became compile-lab's worker: say which interpreter that was
            message += f" before it was ready (interpreter {printable(self.program)})"
            return f"{message}: {last}" if last else f"{message}; it wrote nothing on stderr"
        return f"{message}: {last}" if last else message

    # ----- signals ---------------------------------------------------------------------------

    def signal_group(self, signum: int) -> bool:
        """Send ``signum`` to the worker's process group; False when the group is gone."""
        try:
            os.killpg(self.pid, signum)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def pause(self) -> None:
        """SIGSTOP the group (a spare still importing, while a run measures)."""
        if not self.paused:
            self.paused = self.signal_group(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT a paused group."""
        if self.paused:
            self.signal_group(signal.SIGCONT)
            self.paused = False

    def note_descendants(self) -> None:
        """Remember the worker's descendants now (see :mod:`.leftovers`)."""
        if self.leftovers is not None and self.alive:
            self.leftovers.note()

    def kill_leftovers(self) -> int:
        """SIGKILL what the run started outside the worker's group (a daemon); how many were found now.

        Done before the worker itself is waited for: such a process may hold its pipes open.
        """
        if self.leftovers is None:
            return 0
        self.note_descendants()
        return self.leftovers.sweep()

    @property
    def leftover_count(self) -> int:
        """How many processes outside its group the worker's run left running (all killed)."""
        return self.leftovers.count if self.leftovers is not None else 0

    async def stop(self, grace: float = KILL_GRACE_S) -> None:
        """Kill the leftovers, SIGTERM the process group, SIGKILL it after ``grace`` seconds, reap, sweep."""
        if self.alive:  # one that ended by itself is swept once it is reaped, below
            self.kill_leftovers()
        self.resume()
        if self.alive:
            self.signal_group(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), grace)
            except asyncio.TimeoutError:
                pass
            except asyncio.CancelledError:
                self.signal_group(signal.SIGKILL)
                raise
        self.signal_group(signal.SIGKILL)  # the leader, if still there, and any leftover children
        if self.alive:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.process.wait(), 0.5)
        if not self.alive:
            self.kill_leftovers()  # anything that left the group meanwhile; those handed to us are reaped
            deadline = time.monotonic() + 0.5
            while not (self.reap_group() & self._reap_leftovers()) and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        with suppressed(log, "closing the worker's stdin"):
            if self.process.stdin is not None:
                self.process.stdin.close()
        await self.drain_readers(timeout=0.3)

    def reap_group(self) -> bool:
        """Reap the group's members that were handed to us (see :func:`become_subreaper`); True when none is left.

        Only called once the leader itself was reaped by asyncio, so it never races its watcher.
        """
        while True:
            try:
                pid, _status = os.waitpid(-self.pid, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return False

    def _reap_leftovers(self) -> bool:
        return self.leftovers.reap() if self.leftovers is not None else True

    def kill_now(self) -> None:
        """SIGKILL the leftovers and the process group at once (synchronous; safe from a signal handler)."""
        self.kill_leftovers()
        self.signal_group(signal.SIGKILL)
