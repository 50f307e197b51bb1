"""Drive benchmark runs in worker processes: spawn, stream, timeout, cancel, warm spare.

One fresh worker process per configuration (``python -m tui.engine.worker``). The worker is
started with ``asyncio.create_subprocess_exec`` with its three standard streams piped (never
the terminal) and in a session of its own, so killing its process group also ends the
compile subprocesses inductor starts. Its stdout carries JSON-line events only
(``tui.engine.protocol``); stderr is drained concurrently and only a bounded tail is kept.

The warm spare: right after a run is handed to its worker, the runner starts the next worker
for the same interpreter and environment. It imports torch, emits ``ready`` and waits for its
command, so the next run with the same configuration key skips the import. While the current
run measures, a spare that is still importing is paused (SIGSTOP) so it does not compete for
the CPU, and resumed afterwards.

Per-GPU lock: a CUDA run holds ``flock`` on ``paths.locks_dir()/gpu-<uuid>.lock`` so two
compile-lab processes never measure on one GPU at once. Per-run telemetry: with a telemetry
source, a ``RunSampler`` samples the run's GPU while it measures.

This module imports neither torch nor textual.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import json
import os
import signal
import sys
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from tui import paths
from tui.engine import protocol
from tui.telemetry.model import normalize_uuid, nvml_uuid

__all__ = ["WorkerRunner", "STDERR_TAIL_BYTES", "KILL_GRACE_S", "make_package_importable"]

STDERR_TAIL_BYTES = 64 * 1024
"""How much of a worker's stderr is kept (the end of it)."""

KILL_GRACE_S = 1.0
"""Seconds between SIGTERM and SIGKILL when a worker is stopped."""

EXIT_GRACE_S = 3.0
"""Seconds a worker gets to exit on its own after its finished/failed event."""

LOCK_RETRY_S = 0.5
"""Seconds between attempts to take a busy GPU lock."""

STREAM_LIMIT = 32 * 1024 * 1024
"""Longest event line accepted (a block of many iterations is one line)."""

EventCallback = Callable[[dict[str, Any]], Any]

_RUNNERS: "weakref.WeakSet[WorkerRunner]" = weakref.WeakSet()


def _kill_all_runners() -> None:
    for runner in list(_RUNNERS):
        runner.kill_all()


atexit.register(_kill_all_runners)


# ----------------------------------------------------------------------------------------------
# one worker process


@dataclass(eq=False)
class _Worker:
    """A started worker process with its readers (stdout events queued, stderr tail kept)."""

    process: asyncio.subprocess.Process
    key: tuple
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stderr_tail: bytearray = field(default_factory=bytearray)
    stderr_bytes: int = 0
    paused: bool = False
    tasks: list[asyncio.Task] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    def start_readers(self) -> None:
        self.tasks = [
            asyncio.create_task(self._read_stdout(), name=f"worker-{self.pid}-stdout"),
            asyncio.create_task(self._drain_stderr(), name=f"worker-{self.pid}-stderr"),
        ]

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
                if not line.strip():
                    continue
                try:
                    event = protocol.decode(line)
                except protocol.ProtocolError as exc:
                    self.queue.put_nowait(("bad", str(exc)))
                    continue
                if event.get("event") == "ready":
                    self.ready.set()
                self.queue.put_nowait(("event", event))
        except (ConnectionResetError, BrokenPipeError):
            pass
        finally:
            self.queue.put_nowait(("eof", None))

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
        text = bytes(self.stderr_tail).decode("utf-8", errors="replace")
        if self.stderr_bytes > len(self.stderr_tail):
            # The cut may fall mid-line: drop the partial first line.
            text = text.partition("\n")[2]
        return text

    async def drain_readers(self, timeout: float = 1.0) -> None:
        """Let the readers take what is left in the pipes (they end at EOF)."""
        pending = [t for t in self.tasks if not t.done()]
        if pending:
            done, still = await asyncio.wait(pending, timeout=timeout)
            for task in still:
                task.cancel()

    def signal_group(self, signum: int) -> bool:
        """Send ``signum`` to the worker's process group; False when the group is gone."""
        try:
            os.killpg(self.pid, signum)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    async def stop(self, grace: float = KILL_GRACE_S) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace`` seconds, reap, sweep the group."""
        if self.paused:
            self.signal_group(signal.SIGCONT)
            self.paused = False
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
            deadline = time.monotonic() + 0.5
            while not self.reap_group() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        with contextlib.suppress(Exception):
            if self.process.stdin is not None:
                self.process.stdin.close()
        await self.drain_readers(timeout=0.3)

    def reap_group(self) -> bool:
        """Reap the group's members that were handed to us (see _become_subreaper); True when none is left.

        Only called once the leader itself was reaped by asyncio, so it never races its watcher.
        """
        while True:
            try:
                pid, _status = os.waitpid(-self.pid, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return False

    def kill_now(self) -> None:
        """SIGKILL the process group at once (synchronous; safe from a signal handler)."""
        self.signal_group(signal.SIGKILL)


# ----------------------------------------------------------------------------------------------
# helpers


def _last_meaningful_line(text: str) -> str:
    """The last stderr line worth showing: not blank, not a traceback header or frame, not markers."""
    for raw in reversed(text.splitlines()):
        line = raw.strip()
        if not line or line.startswith(("File ", "Traceback (most recent call last)")):
            continue
        if set(line) <= set("^~-=*_ "):
            continue
        return line[:300]
    return ""


def _device_index(device: str) -> int | None:
    if device == "cuda":
        return 0
    tail = device.partition(":")[2]
    return int(tail) if tail.isdigit() else None


def _uuid_of(value: Any) -> str:
    """A GPU uuid in its canonical form (``gpu-...`` lowercase; see tui.telemetry.model)."""
    return normalize_uuid(value) or ""


def _visible_devices_value(gpu: str) -> str:
    """What CUDA_VISIBLE_DEVICES takes for a canonical uuid (``GPU-...``) or a PCI-order index."""
    return gpu if gpu.isdigit() else (nvml_uuid(gpu) or gpu)


def _lock_name(gpu: str) -> str:
    """``gpu-<uuid>.lock`` (``gpu-index-N.lock`` when only an index is known)."""
    ident = f"index-{gpu}" if gpu.isdigit() else gpu.removeprefix("gpu-")
    return "gpu-" + "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in ident) + ".lock"


_PACKAGE_LINK_DIR: str | None = None


def make_package_importable(python: str, env: dict[str, str]) -> None:
    """Let ``python -m tui...`` find this compile-lab in another interpreter (``--python``).

    Prepends to ``env["PYTHONPATH"]`` a private directory holding only a ``tui`` link to this
    package (never the whole site-packages, which would bring this interpreter's torch along).
    Nothing changes when ``python`` is the running interpreter.
    """
    global _PACKAGE_LINK_DIR
    import shutil
    import tempfile

    resolved = shutil.which(python) or python
    if os.path.realpath(resolved) == os.path.realpath(sys.executable):
        return
    if _PACKAGE_LINK_DIR is None or not os.path.isdir(_PACKAGE_LINK_DIR):
        import tui

        link_dir = tempfile.mkdtemp(prefix="compile-lab-pkg-")
        os.symlink(os.path.dirname(os.path.abspath(tui.__file__)), os.path.join(link_dir, "tui"))
        atexit.register(shutil.rmtree, link_dir, True)
        _PACKAGE_LINK_DIR = link_dir
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_LINK_DIR, env.get("PYTHONPATH")) if p)


_SUBREAPER: bool | None = None


def _become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux), once.

    When a worker dies, what it started (inductor's compile workers) is re-parented. Under a
    PID 1 that never reaps (many containers) those would stay zombies in the worker's process
    group forever; as their subreaper, the runner reaps them itself when it sweeps the group.
    """
    global _SUBREAPER
    if _SUBREAPER is None:
        _SUBREAPER = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                libc = ctypes.CDLL(None, use_errno=True)
                _SUBREAPER = libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
            except (OSError, AttributeError):
                pass
    return _SUBREAPER


async def _maybe_await(value: Any) -> None:
    if asyncio.iscoroutine(value):
        await value


# ----------------------------------------------------------------------------------------------
# the runner


class WorkerRunner:
    """Runs one benchmark configuration per worker process and streams its events into a RunRecord.

    ``worker_argv``: the worker's command line (default ``[options.python or sys.executable,
    "-m", "tui.engine.worker"]``; tests pass a fake worker's argv). ``keep_spare``: start the
    next worker ahead of time (a mutable attribute: a caller may turn it off before its last
    run). ``telemetry``: a telemetry source (``NvmlSource``/``FakeSource``) for per-run GPU
    sampling and for resolving ``cuda:N`` to a GPU UUID. ``env``: extra environment variables
    for the worker, applied over the parent's environment (a value of None removes a variable).

    ``last_stderr`` holds the kept tail of the last run's stderr; ``last_pid`` its worker's pid.
    """

    def __init__(
        self,
        worker_argv: list[str] | None = None,
        keep_spare: bool = True,
        telemetry: Any = None,
        env: Mapping[str, str | None] | None = None,
    ) -> None:
        self.worker_argv = list(worker_argv) if worker_argv else None
        self.keep_spare = keep_spare
        self.telemetry = telemetry
        self.env = dict(env or {})
        self.last_stderr = ""
        self.last_pid: int | None = None
        self._spare: _Worker | None = None
        self._running: set[_Worker] = set()
        self._pgids: set[int] = set()
        self._closed = False
        self._nvml: Any = None
        _RUNNERS.add(self)

    # ----- public API -------------------------------------------------------------------------

    @property
    def spare_pid(self) -> int | None:
        """The pid of the waiting spare worker, or None."""
        spare = self._spare
        return spare.pid if spare is not None and spare.alive else None

    async def run(self, record: Any, on_event: EventCallback | None = None) -> Any:
        """Drive ``record``'s run to its end in a fresh worker and return the record.

        Every event is applied to ``record`` and then passed to ``on_event`` (which may be
        async), in order. A line that is not an event becomes a ``warning`` event. Failures
        end up in ``record.fail``: ``timeout`` (options.timeout_s), ``crash`` (the worker died
        without finished/failed; stderr's tail is the detail), ``cancelled`` (the task was
        cancelled: the worker's process group is killed and CancelledError re-raised).
        A CUDA run first takes the GPU's lock, waiting (with a warning event) while it is busy.
        """
        if self._closed:
            raise RuntimeError("the runner was closed")
        options = record.options
        state = _RunState(record=record, on_event=on_event, gpu=None)
        lock_fd: int | None = None
        worker: _Worker | None = None
        try:
            gpu = state.gpu = await self._resolve_gpu_async(options.device)
            argv, env, key = self._launch(options, gpu)
            if gpu is not None:
                lock_fd = await self._acquire_gpu_lock(gpu, on_event)
            try:
                worker = await self._take_worker(argv, env, key)
            except OSError as exc:
                record.fail("bad_options", f"the worker could not be started: {exc}", " ".join(argv))
                return record
            self._running.add(worker)
            self.last_pid = worker.pid
            set_status = getattr(record, "set_status", None)
            if callable(set_status) and getattr(record, "status", None) == "queued":
                set_status("starting")
            await self._send_command(worker, record, options)
            if self.keep_spare:
                await self._start_spare(argv, env, key)
            timeout_s = float(options.timeout_s)
            try:
                async with asyncio.timeout(timeout_s):
                    await self._stream(worker, state)
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(worker.process.wait(), EXIT_GRACE_S)
            except TimeoutError:
                if state.terminal:  # it finished, then lingered: its results stand
                    await worker.stop()
                    return record
                await self._stop_sampler(state)
                await worker.stop()
                self._fail(record, "timeout", f"timed out after {timeout_s:g} s (timeout_s)", worker)
                return record
            exited = not worker.alive
            await worker.stop()  # reaps, and sweeps what the worker left in its group
            await self._stop_sampler(state)
            if not state.terminal:
                self._fail_crash(record, worker, exited)
            return record
        except asyncio.CancelledError:
            try:
                if worker is not None:
                    await self._stop_sampler(state, quick=True)
                    await worker.stop()
            finally:
                if not state.terminal:
                    self._fail(record, "cancelled", "cancelled", worker)
            raise
        except BaseException as exc:
            if worker is not None:
                worker.kill_now()
                await self._stop_sampler(state, quick=True)
            if not state.terminal and not isinstance(exc, (KeyboardInterrupt, SystemExit)):
                self._fail(record, "crash", f"the runner failed: {type(exc).__name__}: {exc}", worker)
            raise
        finally:
            if worker is not None:
                if worker.alive:
                    worker.kill_now()
                self.last_stderr = worker.stderr_text()
                self._forget(worker)
            self._resume_spare()
            if lock_fd is not None:
                with contextlib.suppress(OSError):
                    fcntl.flock(lock_fd, fcntl.LOCK_UN)
                os.close(lock_fd)

    async def prestart(self, options: Any, wait: bool = False, timeout: float = 120.0) -> int | None:
        """Start the spare for ``options``' configuration now, so the next such run skips the import.

        With ``wait``, return once the spare reported ``ready`` (or after ``timeout`` s).
        Returns the spare's pid (None when it could not be started).
        """
        if self._closed:
            raise RuntimeError("the runner was closed")
        gpu = await self._resolve_gpu_async(options.device)
        await self._start_spare(*self._launch(options, gpu))
        spare = self._spare
        if spare is None:
            return None
        if wait:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(spare.ready.wait(), timeout)
        return spare.pid

    async def aclose(self) -> None:
        """Stop the spare and any running worker; the runner cannot run afterwards."""
        self._closed = True
        workers = list(self._running)
        if self._spare is not None:
            workers.append(self._spare)
            self._spare = None
        for worker in workers:
            await worker.stop()
            self._forget(worker)
        if self._nvml is not None:
            with contextlib.suppress(Exception):
                self._nvml.close()
            self._nvml = None

    def kill_all(self) -> None:
        """SIGKILL every process group this runner started that may still exist.

        Synchronous, safe from a signal handler or atexit, and safe to call more than once.
        """
        for pgid in list(self._pgids):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._pgids.discard(pgid)

    async def __aenter__(self) -> "WorkerRunner":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()

    # ----- configuration ----------------------------------------------------------------------

    def _launch(self, options: Any, gpu: str | None) -> tuple[list[str], dict[str, str], tuple]:
        """(argv, environment, key) of a worker for ``options``; a spare is reused only when the key matches."""
        argv = self._argv(options)
        env = self._worker_env(options, gpu)
        return argv, env, (tuple(argv), frozenset(env.items()))

    def _argv(self, options: Any) -> list[str]:
        if self.worker_argv:
            return list(self.worker_argv)
        return [options.python or sys.executable, "-m", "tui.engine.worker"]

    def _worker_env(self, options: Any, gpu: str | None) -> dict[str, str]:
        device = options.device
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        if not self.worker_argv and options.python:
            make_package_importable(options.python, env)
        if device.startswith("cuda"):
            env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
            if gpu is not None:
                env["CUDA_VISIBLE_DEVICES"] = _visible_devices_value(gpu)
        # TORCHINDUCTOR_* / TRITON_* pass through untouched with the rest of the environment.
        for name, value in self.env.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = str(value)
        return env

    async def _resolve_gpu_async(self, device: str) -> str | None:
        if not device.startswith("cuda"):
            return None
        return await asyncio.to_thread(self._resolve_gpu, device)  # NVML calls block

    def _resolve_gpu(self, device: str) -> str | None:
        """The GPU a CUDA device string names: a UUID when it can be known, else a PCI-order index."""
        if not device.startswith("cuda"):
            return None
        tail = device.partition(":")[2]
        if tail.startswith("GPU-"):
            return _uuid_of(tail)
        index = _device_index(device)
        if index is None:
            return None
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible is not None and visible.strip():
            entries = [e.strip() for e in visible.split(",") if e.strip()]
            if index < len(entries):
                entry = entries[index]
                if entry.upper().startswith(("GPU-", "MIG-")):
                    return _uuid_of(entry)
                if entry.isdigit():
                    index = int(entry)
        uuids = self._nvml_uuids()
        if uuids and index < len(uuids):
            return _uuid_of(uuids[index])
        return str(index)

    def _nvml_uuids(self) -> list[str]:
        """GPU UUIDs in NVML index order (PCI bus order), or [] without NVML."""
        source = self.telemetry
        try:
            if source is None:
                if self._nvml is None:
                    from tui.telemetry.nvml import NvmlSource

                    self._nvml = NvmlSource()
                source = self._nvml
            if not getattr(source, "available", False):
                return []
            return [_uuid_of(s.uuid) for s in source.snapshot()]
        except Exception:
            return []

    # ----- GPU lock ---------------------------------------------------------------------------

    async def _acquire_gpu_lock(self, gpu: str, on_event: EventCallback | None) -> int:
        directory = paths.locks_dir()
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / _lock_name(gpu)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        told = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not told and on_event is not None:
                        told = True
                        notice = protocol.make_event(
                            "warning", 0.0,
                            message=f"GPU {gpu} was busy with another compile-lab run; the run waited for it",
                            source="runner",
                        )
                        await _maybe_await(on_event(notice))
                    await asyncio.sleep(LOCK_RETRY_S)
        except BaseException:
            os.close(fd)
            raise
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        return fd

    # ----- workers ----------------------------------------------------------------------------

    async def _spawn(self, argv: list[str], env: dict[str, str], key: tuple) -> _Worker:
        _become_subreaper()
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
            limit=STREAM_LIMIT,
        )
        self._pgids.add(process.pid)
        worker = _Worker(process=process, key=key)
        worker.start_readers()
        return worker

    async def _take_worker(self, argv: list[str], env: dict[str, str], key: tuple) -> _Worker:
        spare, self._spare = self._spare, None
        if spare is not None:
            if spare.key == key and spare.alive:
                if spare.paused:
                    spare.signal_group(signal.SIGCONT)
                    spare.paused = False
                return spare
            await spare.stop(grace=0.2)
            self._forget(spare)
        return await self._spawn(argv, env, key)

    async def _start_spare(self, argv: list[str], env: dict[str, str], key: tuple) -> None:
        if self._closed:
            return
        if self._spare is not None:
            if self._spare.key == key and self._spare.alive:
                return
            old, self._spare = self._spare, None
            await old.stop(grace=0.2)
            self._forget(old)
        with contextlib.suppress(OSError):
            self._spare = await self._spawn(argv, env, key)

    def _pause_spare(self) -> None:
        """Stop a spare that is still importing while a run measures (it would steal CPU)."""
        spare = self._spare
        if spare is not None and spare.alive and not spare.ready.is_set() and not spare.paused:
            spare.paused = spare.signal_group(signal.SIGSTOP)

    def _resume_spare(self) -> None:
        spare = self._spare
        if spare is not None and spare.paused:
            spare.signal_group(signal.SIGCONT)
            spare.paused = False

    def _forget(self, worker: _Worker) -> None:
        self._running.discard(worker)
        if not worker.alive:
            self._pgids.discard(worker.pid)

    async def _send_command(self, worker: _Worker, record: Any, options: Any) -> None:
        command = {"command": "run", "run_id": record.run_id, "options": options.to_dict()}
        stdin = worker.process.stdin
        assert stdin is not None
        try:
            stdin.write((json.dumps(command) + "\n").encode())
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the worker is gone: the stream's EOF reports it as a crash

    # ----- streaming --------------------------------------------------------------------------

    async def _emit(self, state: "_RunState", event: dict[str, Any]) -> None:
        state.record.apply(event)
        if state.on_event is not None:
            await _maybe_await(state.on_event(event))

    async def _stream(self, worker: _Worker, state: "_RunState") -> None:
        """Apply events until finished/failed (``state.terminal``) or the end of the stream."""
        last_t = 0.0
        while True:
            kind, payload = await worker.queue.get()
            if kind == "eof":
                return
            if kind == "bad":
                message = f"the worker wrote a line that is not an event ({payload})"
                await self._emit(state, protocol.make_event("warning", last_t, message=message, source="runner"))
                continue
            event = payload
            with contextlib.suppress(TypeError, ValueError):
                last_t = float(event.get("t") or last_t)
            name = event.get("event")
            if name == "started":
                env = event.get("env")
                state.gpu_uuid = env.get("gpu_uuid") if isinstance(env, dict) else None
            elif name == "phase":
                if event.get("phase") == "measuring":
                    self._pause_spare()
                    if state.gpu is not None:
                        await self._start_sampler(worker, state)
                else:
                    self._resume_spare()
                    await self._stop_sampler(state)
            elif name in ("finished", "failed"):
                self._resume_spare()
                await self._stop_sampler(state)
            await self._emit(state, event)
            if name in ("finished", "failed"):
                state.terminal = True
                return

    # ----- telemetry --------------------------------------------------------------------------

    async def _start_sampler(self, worker: _Worker, state: "_RunState") -> None:
        source = self.telemetry
        if source is None or state.sampler is not None or not getattr(source, "available", False):
            return
        raw = state.gpu_uuid or (state.gpu if state.gpu and not state.gpu.isdigit() else None)
        if not raw:
            return
        uuid = _uuid_of(raw)
        try:
            snap = await asyncio.to_thread(source.sample, uuid)
            others = []
            if snap is not None:
                for proc in snap.processes_except({worker.pid}):
                    others.append(f"{proc.pid} ({proc.name})" if proc.name else str(proc.pid))
            if others:
                _add_warning(
                    state.record,
                    f"other processes were using the GPU when measuring started (pid {', '.join(others)}): "
                    "times may be inflated",
                )
            from tui.telemetry.sampler import RunSampler

            sampler = RunSampler(source, uuid, hz=10)
            await _maybe_await(sampler.start())
            state.sampler = sampler
        except Exception as exc:  # telemetry must never break a run
            _add_warning(state.record, f"GPU telemetry was not sampled: {type(exc).__name__}: {exc}")

    async def _stop_sampler(self, state: "_RunState", quick: bool = False) -> None:
        sampler, state.sampler = state.sampler, None
        if sampler is None:
            return
        try:
            summary = sampler.stop() if quick else await asyncio.to_thread(sampler.stop)
            if asyncio.iscoroutine(summary):
                summary = await summary
        except Exception as exc:
            _add_warning(state.record, f"GPU telemetry was not summarised: {type(exc).__name__}: {exc}")
            return
        setter = getattr(state.record, "set_telemetry", None)
        if callable(setter):
            setter(summary)
        else:
            state.record.telemetry = summary
        # Throttle reasons other than idle become a warning in RunRecord.summary() itself,
        # from the telemetry just stored: adding one here would show it twice.

    # ----- failures ---------------------------------------------------------------------------

    def _fail(self, record: Any, kind: str, message: str, worker: _Worker | None) -> None:
        detail = worker.stderr_text() if worker is not None else ""
        record.fail(kind, message, detail)

    def _fail_crash(self, record: Any, worker: _Worker, exited: bool) -> None:
        code = worker.process.returncode
        if not exited:
            message = "worker closed its event stream without finishing"
        elif code is not None and code < 0:
            message = f"worker crashed (signal {-code})"
        else:
            message = f"worker exited with code {code}"
        stderr = worker.stderr_text()
        last = _last_meaningful_line(stderr)
        if last:
            message = f"{message}: {last}"
        record.fail("crash", message, stderr)


@dataclass(eq=False)
class _RunState:
    """What one run() call tracks besides the record."""

    record: Any
    on_event: EventCallback | None
    gpu: str | None
    gpu_uuid: str | None = None
    sampler: Any = None
    terminal: bool = False


def _add_warning(record: Any, message: str) -> None:
    warnings = getattr(record, "warnings", None)
    if isinstance(warnings, list):
        if message not in warnings:
            warnings.append(message)
    else:
        with contextlib.suppress(Exception):
            record.apply(protocol.make_event("warning", 0.0, message=message))
