"""Who else used the CPU while a run measured: the CPU time of every process in a window.

:class:`HostLoadSampler` polls the process table in a daemon thread between :meth:`~HostLoadSampler.start`
and :meth:`~HostLoadSampler.stop` and reports, in cores (CPU seconds per wall second):

* ``other_cpu_cores``: every process that is not compile-lab's own. Own means the *roots* the
  caller names (the run's worker, the session's other workers and spares: a callable, asked at
  every poll, since lanes start workers while a run measures) with their whole process trees,
  recomputed at every poll (inductor's compile pool starts children). A process once seen as own
  stays own for the window, even if it is re-parented;
* ``app_cpu_cores``: the app's (or CLI's) own process, apart: on two cores the TUI is a real
  competitor of the run, and its children other than workers count as others;
* ``other_cpu_top``: the busiest others, ``"name (pid) 0.9 cores"``.

How. Every poll reads each process's cumulative CPU time (user + system, its children excluded)
and adds the difference since the previous poll. A process first seen after the first poll counts
all of its CPU time when it was created inside the window (``create_time``, with
:data:`CREATE_SLACK_S` for psutil's whole-second boot time), else from its first sight. A process
that lives less than a poll period is never seen; its CPU time is caught when its parent reaps it
(the parent's children time grows by it): the growth of an other's children time, less what was
already counted of the children seen to vanish, is added to that parent (so ``make`` carries the
compilers it ran). Load average is not used: it lags by a minute. Limits: a child re-parented to
init before it ends is seen only while it lives; on macOS other users' processes cannot be read
without root (their CPU time is not counted) and children times are 0.

Cost. psutil (a dependency of the telemetry layer: it replaces /proc parsing, and works on macOS)
re-reads one ``/proc/<pid>/stat`` per process per poll; parent, name and start time are read once
per process, in a :func:`shared_table` that serves every window of the process. Measured on a
2-core Linux box running other tests (load 3): a poll takes 2.7-3.8 ms of CPU with 90 processes,
9-16 ms with 300 (psutil's ``process_iter`` with the same attributes: 9 and 20-30 ms); the first
sight of a process ~0.3 ms, so the first poll of all costs 50-120 ms, which :func:`warm_up` takes
before measuring starts. At :data:`POLL_HZ` = 2 that is 0.5-3 % of one core, counted in
``app_cpu_cores``; a faster rate would buy little, since short-lived processes are caught through
their parents' children times anyway. :attr:`HostLoad.poll_ms` has each window's mean poll time.

Nothing here raises into a run: a missing psutil, a failing table or too short a window give
``None`` figures and a :attr:`HostLoad.reason`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

__all__ = [
    "CREATE_SLACK_S",
    "HostLoad",
    "HostLoadSampler",
    "MIN_WINDOW_S",
    "OtherProcess",
    "POLL_HZ",
    "ProcSample",
    "PsutilTable",
    "TOP_MIN_CORES",
    "shared_table",
    "union_roots",
    "warm_up",
]

log = logging.getLogger(__name__)

POLL_HZ = 2.0
"""Polls per second: a process living less than 1/POLL_HZ s is only seen when its parent reaps it."""

MIN_WINDOW_S = 0.2
"""A shorter window gives no figures: per-process CPU times tick in 10 ms steps."""

CREATE_SLACK_S = 1.0
"""psutil's start times rest on a boot time in whole seconds: "created in the window" allows this much."""

TOP_MIN_CORES = 0.05
"""An other process below this share is not named in ``other_cpu_top``."""

TOP_N = 3


class ProcSample(NamedTuple):
    """One process at one poll: cumulative CPU seconds (None: unreadable), parent, name, start time.

    ``create_time`` is in ``time.time()`` seconds; ``children_s`` is the CPU time of the children
    it reaped (0 where the platform does not say).
    """

    cpu_s: float | None
    ppid: int | None
    name: str | None
    create_time: float | None
    children_s: float = 0.0


ProcessTable = Callable[[], Mapping[int, ProcSample | tuple]]
"""Returns ``{pid: ProcSample}`` (or plain tuples in ProcSample's order) for every process now."""

Roots = Callable[[], Iterable[int]] | Iterable[int]


@dataclass(frozen=True)
class OtherProcess:
    """One other process's CPU use over the window."""

    pid: int
    name: str | None
    cores: float

    def label(self) -> str:
        """``"stress (1234) 0.9 cores"``."""
        return f"{self.name or '?'} ({self.pid}) {self.cores:.1f} cores"


@dataclass(frozen=True)
class HostLoad:
    """The figures of one window (``None``: not measured; :attr:`reason` says why).

    ``others`` lists every other process that used CPU time, busiest first; ``polls`` the polls
    taken, ``processes`` the table's size at the last one, ``poll_ms`` the mean wall time of a poll.
    ``failed``: the reason is a failure (psutil missing, the table failing), not a short window.
    """

    other_cpu_cores: float | None = None
    app_cpu_cores: float | None = None
    others: tuple[OtherProcess, ...] = ()
    elapsed_s: float = 0.0
    polls: int = 0
    processes: int = 0
    poll_ms: float | None = None
    reason: str | None = None
    failed: bool = False
    lead_in_s: float = 0.0
    """Seconds before the :meth:`~HostLoadSampler.mark` that the figures include: 0 when the window
    since the mark was long enough, else the whole window's figures are given (see :meth:`~HostLoadSampler.result`)."""

    @property
    def other_cpu_top(self) -> tuple[str, ...]:
        """The busiest others (at most 3, each at least :data:`TOP_MIN_CORES`), as labels."""
        return tuple(p.label() for p in self.others[:TOP_N] if p.cores >= TOP_MIN_CORES)


class PsutilTable:
    """The process table through psutil, as a :data:`ProcessTable`; thread-safe.

    Keeps one ``psutil.Process`` per pid between polls, so a poll reads only CPU times: the first
    sight of a process (its parent, name and start time) costs ~0.3 ms, a poll ~0.03 ms a process.
    ImportError when psutil is missing (the sampler turns it into a reason).
    """

    def __init__(self) -> None:
        import psutil  # noqa: PLC0415 - lazily: a missing psutil is a reason, not an import error

        self._ps = psutil
        self._lock = threading.Lock()
        self._known: dict[int, tuple[Any, int | None, str | None, float | None]] = {}

    def __call__(self) -> dict[int, ProcSample]:
        ps = self._ps
        table: dict[int, ProcSample] = {}
        with self._lock:
            known: dict[int, tuple[Any, int | None, str | None, float | None]] = {}
            for pid in ps.pids():
                try:
                    entry = self._known.get(pid) or self._first_sight(pid)
                    try:
                        times = entry[0].cpu_times()
                        cpu, children = times.user + times.system, times.children_user + times.children_system
                    except ps.AccessDenied:
                        cpu, children = None, 0.0
                except ps.NoSuchProcess:  # gone (or a zombie psutil refuses) since the pids were listed
                    continue
                known[pid] = entry
                table[pid] = ProcSample(cpu, entry[1], entry[2], entry[3], children)
            self._known = known
        return table

    def _first_sight(self, pid: int) -> tuple[Any, int | None, str | None, float | None]:
        proc = self._ps.Process(pid)
        with proc.oneshot():
            ppid, name, created = (self._attr(proc, n) for n in ("ppid", "name", "create_time"))
        return proc, ppid, name, created

    def _attr(self, proc: Any, name: str) -> Any:
        try:
            return getattr(proc, name)()
        except self._ps.AccessDenied:
            return None


_shared: PsutilTable | None = None
_shared_lock = threading.Lock()


def shared_table() -> PsutilTable:
    """The process's one :class:`PsutilTable`: what it learnt of each process serves every later window."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = PsutilTable()
        return _shared


def warm_up() -> None:
    """Read the whole table once in a daemon thread, if no window did yet (psutil's import and the
    first sight of every process: 50-100 ms on a busy 2-core box), so that the first run's window
    does not start with it. Call it before measuring starts; never raises."""

    def first_poll() -> None:
        try:
            shared_table()()
        except Exception:  # the window's own polls report what is wrong
            log.debug("the host load's first poll failed", exc_info=True)

    if _shared is None:
        threading.Thread(target=first_poll, name="compile-lab-host-load-warm-up", daemon=True).start()


class HostLoadSampler:
    """Samples the host's CPU use by process in a daemon thread until :meth:`stop`.

    ``sampler = HostLoadSampler(roots).start(); ...; load = sampler.stop()``. :meth:`poll` takes
    one poll synchronously (what the thread calls, what tests drive with a fake ``table``).

    Args:
        roots: pids whose process trees are compile-lab's own: a collection, or a callable asked
            at every poll.
        app_pid: the app's process, measured apart (default: this process).
        hz: polls per second.
        table: the process table (default :func:`shared_table`).
        clock / wall: monotonic and epoch clocks (tests pass fakes).
        max_errors: failed polls in a row after which the sampler gives up.
        cpus: the machine's logical CPUs (default ``os.cpu_count()``): no process, and not all
            of them together, can have used more CPU time than that many cores in a poll's gap.
    """

    def __init__(
        self,
        roots: Roots = (),
        *,
        app_pid: int | None = None,
        hz: float = POLL_HZ,
        table: ProcessTable | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        max_errors: int = 3,
        cpus: int | None = None,
    ) -> None:
        if hz <= 0:
            raise ValueError("hz must be positive")
        self.roots = roots
        self.app_pid = os.getpid() if app_pid is None else app_pid
        self.hz = hz
        self.max_errors = max_errors
        self.cpus = cpus or os.cpu_count() or 1
        self._table = table
        self._clock = clock
        self._start_wall = wall()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reason: str | None = None
        self._errors_in_row = 0
        self._halted = False
        self._first_t: float | None = None
        self._last_t: float | None = None
        self._polls = 0
        self._poll_s = 0.0
        self._size = 0
        self._prev: dict[tuple, ProcSample] = {}
        self._ppid: dict[tuple, int | None] = {}
        self._own: set[tuple] = set()
        self._own_now: frozenset[int] = frozenset()
        self._other_s: dict[tuple, float] = defaultdict(float)
        self._names: dict[tuple, str | None] = {}
        self._app_s = 0.0
        self._mark: tuple[float, dict[tuple, float], float] | None = None

    # -- control -------------------------------------------------------------------------

    def start(self) -> HostLoadSampler:
        """Start the polling thread (once); returns ``self``."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="compile-lab-host-load", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> HostLoad:
        """Stop polling (the thread takes a last poll; waits up to ``timeout`` s) and return :meth:`result`."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        return self.result()

    def mark(self) -> None:
        """Take a poll now and let the figures count from it (the window before it is a lead-in).

        A run starts sampling when it compiles and marks when it starts measuring: the figures are
        those of measuring when it lasted at least :data:`MIN_WINDOW_S`, else (a CPU run of 50 short
        calls measures for milliseconds) those of the whole window, from compiling on, rather than none.
        """
        self.poll()
        with self._lock:
            if self._last_t is not None:
                self._mark = (self._last_t, dict(self._other_s), self._app_s)

    @property
    def running(self) -> bool:
        """Whether the polling thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def own_pids(self) -> frozenset[int]:
        """compile-lab's own pids at the last poll (the roots' trees and the app), for the GPU's process list."""
        with self._lock:
            return self._own_now

    def _loop(self) -> None:
        self.poll()
        while not self._halted and not self._stop.wait(1.0 / self.hz):
            self.poll()
        if not self._halted:
            self.poll()  # the end of the window

    # -- polling -------------------------------------------------------------------------

    def poll(self) -> bool:
        """Take one poll now; ``True`` when it was folded in. Never raises."""
        if self._halted:
            return False
        began = time.perf_counter()
        try:
            if self._table is None:
                self._table = shared_table()
            table = {pid: ProcSample(*row) for pid, row in self._table().items()}
            now = self._clock()
            roots = set(self.roots() if callable(self.roots) else self.roots)
        except ImportError:
            return self._give_up("psutil is not installed")
        except Exception as exc:  # a broken table must not end the run: its reason is the window's
            with self._lock:
                self._errors_in_row += 1
                if self._errors_in_row == 1:
                    log.warning("polling the process table failed", exc_info=True)
                self._reason = f"{type(exc).__name__}: {exc}"
                self._halted = self._errors_in_row >= self.max_errors
            return False
        with self._lock:
            self._errors_in_row = 0
            self._fold(table, roots, now)
            self._polls += 1
            self._poll_s += time.perf_counter() - began
        return True

    def _give_up(self, reason: str) -> bool:
        with self._lock:
            self._reason = reason
            self._halted = True
        return False

    def _fold(self, table: dict[int, ProcSample], roots: set[int], now: float) -> None:
        # A process is (pid, start time): a pid taken by a newcomer is another process.
        keys = {pid: (pid, row.create_time) for pid, row in table.items()}
        for pid, row in table.items():
            self._ppid.setdefault(keys[pid], row.ppid)  # the first parent: an orphan stays in its tree
        own = self._own_tree(table, keys, roots)
        self._own_now = frozenset(pid for pid, key in keys.items() if key in own) | {self.app_pid}
        if self._first_t is not None and self._last_t is not None:
            self._add_deltas(table, keys, own, max(0.0, now - self._last_t))
        else:
            self._first_t = now
        self._last_t = now
        self._size = len(table)
        self._prev = {keys[pid]: row for pid, row in table.items()}
        # Only the living are kept: memory does not grow with the processes a long window sees come and go.
        self._ppid = {key: self._ppid[key] for key in self._prev}
        self._own.intersection_update(self._prev)

    def _own_tree(self, table: dict[int, ProcSample], keys: dict[int, tuple], roots: set[int]) -> set[tuple]:
        children: dict[int, list[int]] = defaultdict(list)
        for pid, key in keys.items():
            parent = self._ppid.get(key)
            if parent is not None and parent != pid:
                children[parent].append(pid)
        stack = [pid for pid in table if pid in roots or keys[pid] in self._own]
        visited: set[int] = set()
        while stack:
            pid = stack.pop()
            if pid in visited or pid == self.app_pid:
                continue
            visited.add(pid)
            self._own.add(keys[pid])
            stack.extend(children.get(pid, ()))
        return self._own

    def _add_deltas(self, table: dict[int, ProcSample], keys: dict[int, tuple], own: set[tuple], gap: float) -> None:
        """Each process's CPU seconds since the last poll, ``gap`` seconds ago.

        A parent's children time grows when it reaps a child; what the children seen vanishing
        already counted is taken off, and what is left (a child never seen, or one whose time could
        not be read) is credited to this gap, so no process counts more than ``gap`` x :attr:`cpus`:
        a shell that reaped a test run it had started long before once read 28 cores on 2.
        """
        most = gap * self.cpus
        current = set(keys.values())
        reaped: dict[int, float] = defaultdict(float)  # parent pid -> CPU time of vanished children already counted
        for key, row in self._prev.items():
            if key not in current and row.cpu_s is not None:
                parent = self._ppid.get(key)
                if parent is not None:
                    reaped[parent] += row.cpu_s + row.children_s
        for pid, row in table.items():
            key = keys[pid]
            if row.cpu_s is None:
                continue
            prev = self._prev.get(key)
            fresh = prev is None and self._new_in_window(row)
            base = prev.cpu_s if prev is not None and prev.cpu_s is not None else (0.0 if fresh else row.cpu_s)
            spent = max(0.0, row.cpu_s - base)
            if pid == self.app_pid:
                self._app_s += spent
                continue
            if key in own:
                continue
            base_children = prev.children_s if prev is not None else (0.0 if fresh else row.children_s)
            spent += max(0.0, row.children_s - base_children - reaped.get(pid, 0.0))
            spent = min(spent, most)
            if spent > 0.0:
                self._other_s[key] += spent
                self._names[key] = row.name

    def _new_in_window(self, row: ProcSample) -> bool:
        """Created inside the window: all of its CPU time counts (else only from its first sight)."""
        return row.create_time is not None and row.create_time >= self._start_wall - CREATE_SLACK_S

    # -- results -------------------------------------------------------------------------

    def result(self) -> HostLoad:
        """The window's figures so far (``None`` where nothing could be said).

        After :meth:`mark`: the figures since the mark when that window lasted at least
        :data:`MIN_WINDOW_S`, else the whole window's, with :attr:`HostLoad.lead_in_s` > 0.
        """
        with self._lock:
            if self._mark is not None and self._last_t is not None and self._last_t - self._mark[0] >= MIN_WINDOW_S:
                return self._since_mark(self._mark)
            elapsed = (self._last_t - self._first_t) if self._first_t is not None and self._last_t is not None else 0.0
            poll_ms = self._poll_s / self._polls * 1e3 if self._polls else None
            common = HostLoad(elapsed_s=elapsed, polls=self._polls, processes=self._size, poll_ms=poll_ms)
            if self._polls < 2 or elapsed < MIN_WINDOW_S:
                if self._halted or (self._polls == 0 and self._reason):
                    return replace(common, reason=self._reason, failed=True)
                return replace(common, reason=f"measured for {elapsed:.2f} s, under {MIN_WINDOW_S} s")
            others = sorted(
                (OtherProcess(pid=key[0], name=self._names.get(key), cores=spent / elapsed)
                 for key, spent in self._other_s.items()),
                key=lambda p: (-p.cores, p.pid),
            )
            lead_in = self._mark[0] - self._first_t if self._mark is not None and self._first_t is not None else 0.0
            return replace(
                common,
                other_cpu_cores=min(sum(self._other_s.values()) / elapsed, float(self.cpus)),
                app_cpu_cores=self._app_s / elapsed,
                others=tuple(others),
                reason=self._reason if self._halted else None,
                failed=self._halted,
                lead_in_s=lead_in,
            )

    def _since_mark(self, mark: tuple[float, dict[tuple, float], float]) -> HostLoad:
        """The figures from the mark to the last poll (the caller holds the lock; the window is long enough)."""
        start, other_at, app_at = mark
        assert self._last_t is not None
        elapsed = self._last_t - start
        spent = {key: total - other_at.get(key, 0.0) for key, total in self._other_s.items()}
        others = sorted((OtherProcess(pid=key[0], name=self._names.get(key), cores=s / elapsed)
                         for key, s in spent.items() if s > 0.0), key=lambda p: (-p.cores, p.pid))
        return HostLoad(other_cpu_cores=min(sum(spent.values()) / elapsed, float(self.cpus)),
                        app_cpu_cores=(self._app_s - app_at) / elapsed,
                        others=tuple(others), reason=self._reason if self._halted else None, failed=self._halted,
                        elapsed_s=elapsed, polls=self._polls, processes=self._size,
                        poll_ms=self._poll_s / self._polls * 1e3 if self._polls else None)


def union_roots(*sources: Roots) -> Callable[[], set[int]]:
    """One roots callable from several (collections or callables), e.g. the worker and its session's."""

    def roots() -> set[int]:
        pids: set[int] = set()
        for source in sources:
            pids.update(source() if callable(source) else source)
        return pids

    return roots

