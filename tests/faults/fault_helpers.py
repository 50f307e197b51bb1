"""Helpers of the fault tests: the process table, a named pipe to await, the files a run leaves.

Imported as ``fault_helpers`` (pytest puts this directory on ``sys.path``). Waiting on the
process table polls ``/proc`` against a deadline: a process that ends sends no event to a
process that is not its parent. A zombie (state Z) counts as gone: it holds no memory and
runs nothing, and under a PID 1 that never reaps it may stay in the table for good.
"""

from __future__ import annotations

import asyncio
import csv
import fcntl
import json
import os
import textwrap
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from fakes import fake_worker_argv
from fakes.polling import poll_until
from tui import paths
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.store.results import RunRecord

REPO = Path(__file__).resolve().parents[2]
FAKE_WORKER = fake_worker_argv()

#: How long a killed process may take to leave the process table (the matrix says 2 s).
GONE_WITHIN_S = 2.0


# ----------------------------------------------------------------------------------------------
# the process table


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` after the command name: state, ppid, pgrp, ... (None when gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def alive(pid: int) -> bool:
    """Whether ``pid`` is in the process table and not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
                members.append(int(entry.name))
    return members


def descendants(pid: int) -> list[int]:
    """Live (non-zombie) children of ``pid``, their children, and so on."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, []))
    return found


def processes_running(needle: bytes) -> list[int]:
    """Live processes (other than this one) whose command line contains ``needle``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


async def until(predicate: Callable[[], Any], within: float, what: str) -> Any:
    """Poll ``predicate`` until it returns something true; AssertionError after ``within`` s."""
    value = await poll_until(predicate, within)
    if not value:
        raise AssertionError(f"{what}: not within {within} s")
    return value


async def none_left(
    pids: Iterable[int] = (),
    pgids: Iterable[int] = (),
    within: float = GONE_WITHIN_S,
    env: tuple[str, str] | None = None,
) -> None:
    """Wait until none of ``pids``, no member of ``pgids`` and no process started with ``env``
    (see :func:`processes_with_env`) is alive; AssertionError naming the survivors."""
    pids, pgids = list(pids), list(pgids)

    def survivors() -> list[int]:
        left = [p for p in pids if alive(p)] + [p for g in pgids for p in group_members(g)]
        return left + (processes_with_env(*env) if env else [])

    deadline = time.monotonic() + within
    while (left := survivors()) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert not left, f"still running {within} s later: {sorted(set(left))}"


# ----------------------------------------------------------------------------------------------
# awaiting what a process says on a pipe


class LineReader:
    """Lines from a pipe or a named pipe, awaited without blocking the event loop.

    ``LineReader.fifo(path)`` makes a named pipe a user workload can open and write to; the
    read end is opened first, non-blocking, so the writer never waits for the test.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = b""
        self.lines: list[str] = []

    @classmethod
    def fifo(cls, path: Path) -> LineReader:
        os.mkfifo(path)
        return cls(os.open(path, os.O_RDONLY | os.O_NONBLOCK))

    async def line(self, timeout: float = 60.0) -> str:
        """The next line (without its newline); AssertionError on timeout or end of stream."""
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            readable = loop.create_future()
            loop.add_reader(self.fd, lambda readable=readable: readable.done() or readable.set_result(None))
            try:
                await asyncio.wait_for(readable, max(0.0, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                raise AssertionError(f"no line within {timeout} s (so far: {self.lines})") from None
            finally:
                loop.remove_reader(self.fd)
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                raise AssertionError(f"the writer closed the pipe (lines so far: {self.lines})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        self.lines.append(line.decode())
        return self.lines[-1]

    async def json_until(self, predicate: Callable[[dict], bool], timeout: float = 60.0) -> dict:
        """The first JSON line, already read or still to come, that satisfies ``predicate``.

        Lines read while waiting for something else count: the writer's reports can arrive
        in either order (a run's history append may land after the next run started).
        """
        for raw in self.lines:
            item = json.loads(raw)
            if predicate(item):
                return item
        deadline = time.monotonic() + timeout
        while True:
            item = json.loads(await self.line(max(0.0, deadline - time.monotonic())))
            if predicate(item):
                return item

    def close(self) -> None:
        os.close(self.fd)


# ----------------------------------------------------------------------------------------------
# files


def write_workload(directory: Path, name: str, source: str) -> Path:
    """A user workload file (dedented ``source``) named ``name`` in ``directory``."""
    path = directory / name
    path.write_text(textwrap.dedent(source).lstrip())
    return path


def history_lines() -> list[dict]:
    """The lines of this test's history file, parsed: read under the shared lock, so never half an append."""
    path = paths.history_file()
    if not path.exists():
        return []
    with open(path, "rb") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_SH)  # an append holds the exclusive lock until its fsync
        data = handle.read()
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file, as dicts."""
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def files_in(directory: Path) -> list[str]:
    """Names in ``directory``, sorted (a leftover temporary export file shows up here)."""
    return sorted(p.name for p in directory.iterdir())


def processes_with_env(name: str, value: str) -> list[int]:
    """Live processes (other than this one) started with the environment variable ``name=value``.

    A variable set for a test (``COMPILE_LAB_HOME``) is inherited by the app, its workers and
    their children, and by nothing else on the machine: this finds exactly that tree, even
    after its processes were re-parented.
    """
    needle = f"{name}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in environ and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


# ----------------------------------------------------------------------------------------------
# records and calls that must not hang


def ended_record(eager_ms: float = 2.0) -> RunRecord:
    """A finished run with a few measured iterations per side (compiled twice as fast)."""
    record = RunRecord.new(RunOptions(workload="matmul", params={"n": 64}, backend="eager").validated())
    record.apply(make_event("started", 0.0, env={"torch": "2.13.0"}))
    for side, ms in (("eager", eager_ms), ("compiled", eager_ms / 2)):
        record.apply(make_event("block", 0.1, side=side, stage="measure", index=0, clock="perf_counter",
                                ms=[ms] * 5, host_ms_per_call=ms))
    record.apply(make_event("measured", 0.2, warnings=[]))
    record.apply(make_event("finished", 0.2))
    return record


def returns_within(seconds: float, call: Callable[[], Any], fifo: Path | None = None) -> Any:
    """``call()``'s result (or its exception, raised here), failing the test if it takes over ``seconds``.

    A call stuck opening ``fifo`` (to read or to write) is released by opening the FIFO read-write,
    which on Linux completes either end, so a regression fails the test instead of hanging the suite.
    """
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread, which raises it
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if fifo is not None:
            os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))
        pytest.fail(f"did not return within {seconds} s (did it open {fifo or 'a pipe'}?)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
