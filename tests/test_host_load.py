"""HostLoadSampler: other processes' CPU use during a window, compile-lab's own left out.

The arithmetic is pinned with a fake process table and a fake clock (no timing); one slow test
starts real busy processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tui.telemetry.host_load import CREATE_SLACK_S, HostLoadSampler, ProcSample, PsutilTable, union_roots

APP = 100
START_WALL = 10_000.0
OLD = START_WALL - 3600.0  # created an hour before the window


class FakeHost:
    """A process table and a clock the test moves by hand: ``rows[pid] = (cpu_s, ppid, name, created, children_s)``."""

    def __init__(self) -> None:
        self.now = 0.0
        self.rows: dict[int, tuple] = {APP: (5.0, 1, "compile-lab", OLD)}
        self.raise_next: list[BaseException] = []

    def table(self) -> dict[int, tuple]:
        if self.raise_next:
            raise self.raise_next.pop(0)
        return dict(self.rows)

    def sampler(self, roots=(), **kwargs) -> HostLoadSampler:
        return HostLoadSampler(roots, app_pid=APP, table=self.table, clock=lambda: self.now,
                               wall=lambda: START_WALL, **kwargs)

    def spend(self, pid: int, seconds: float, children: float = 0.0) -> None:
        cpu, ppid, name, created, *rest = self.rows[pid]
        kids = (rest[0] if rest else 0.0) + children
        self.rows[pid] = (cpu + seconds, ppid, name, created, kids)


def test_others_are_cpu_seconds_per_wall_second_and_the_app_is_apart():
    host = FakeHost()
    host.rows[200] = (50.0, 1, "stress", OLD)
    host.rows[201] = (7.0, 1, "sshd", OLD)
    sampler = host.sampler()
    assert sampler.poll()  # the baseline: 50 s of stress before the window do not count
    host.now = 1.0
    host.spend(200, 0.9)
    host.spend(201, 0.02)
    host.spend(APP, 0.3)
    assert sampler.poll()
    host.now = 2.0
    host.spend(200, 0.9)
    host.spend(APP, 0.1)
    assert sampler.poll()
    load = sampler.result()
    assert load.other_cpu_cores == pytest.approx(0.91)
    assert load.app_cpu_cores == pytest.approx(0.2)
    assert load.elapsed_s == 2.0 and load.polls == 3 and load.processes == 3
    assert load.other_cpu_top == ("stress (200) 0.9 cores",)  # sshd's 0.01 cores is not named
    assert [(p.pid, p.cores) for p in load.others] == [(200, pytest.approx(0.9)), (201, pytest.approx(0.01))]
    assert load.reason is None and not load.failed


def test_the_whole_tree_of_a_root_is_own_recomputed_at_every_poll():
    host = FakeHost()
    host.rows[300] = (1.0, APP, "python", OLD)  # the worker, a child of the app
    host.rows[301] = (0.0, 300, "compile-pool", OLD)
    sampler = host.sampler(roots={300})
    sampler.poll()
    host.now = 1.0
    host.spend(300, 1.0)
    host.spend(301, 0.5)
    host.rows[302] = (0.4, 301, "compile-worker", START_WALL + 0.5)  # born in the window, under the pool
    sampler.poll()
    assert sampler.own_pids() == {APP, 300, 301, 302}
    host.now = 2.0
    host.rows[302] = (1.4, 1, "compile-worker", START_WALL + 0.5)  # re-parented to init: still own
    sampler.poll()
    load = sampler.result()
    assert load.other_cpu_cores == 0.0 and load.others == ()


def test_roots_from_a_callable_follow_the_session_and_a_sibling_is_own_from_its_first_poll():
    host = FakeHost()
    host.rows[300] = (1.0, APP, "python", OLD)
    siblings: set[int] = set()
    sampler = host.sampler(roots=union_roots({300}, lambda: siblings))
    sampler.poll()
    host.now = 1.0
    host.rows[400] = (0.8, APP, "python", START_WALL + 0.2)  # another lane's worker, started mid-window
    siblings.add(400)
    sampler.poll()
    host.now = 2.0
    host.spend(400, 1.0)
    sampler.poll()
    assert sampler.result().other_cpu_cores == 0.0


def test_a_child_of_the_app_that_is_not_a_worker_counts_as_other():
    host = FakeHost()
    host.rows[500] = (0.0, APP, "nvidia-smi", OLD)
    sampler = host.sampler(roots={300})  # the worker is gone already
    sampler.poll()
    host.now = 1.0
    host.spend(500, 0.25)
    sampler.poll()
    assert sampler.result().other_cpu_cores == pytest.approx(0.25)


def test_a_process_born_in_the_window_counts_from_its_creation_an_old_one_from_its_first_sight():
    host = FakeHost()
    sampler = host.sampler()
    sampler.poll()
    host.now = 1.0
    host.rows[600] = (0.6, 1, "born", START_WALL + 0.4)
    host.rows[601] = (30.0, 1, "hidden", OLD)  # missing from the first poll, yet old: no past counted
    host.rows[602] = (0.3, 1, "slack", START_WALL - CREATE_SLACK_S / 2)  # start times are whole-second rough
    sampler.poll()
    host.now = 2.0
    host.spend(601, 0.5)
    sampler.poll()
    load = sampler.result()
    assert {p.pid: p.cores for p in load.others} == {600: pytest.approx(0.3), 601: pytest.approx(0.25),
                                                      602: pytest.approx(0.15)}


def test_a_reused_pid_is_a_new_process():
    host = FakeHost()
    host.rows[700] = (100.0, 1, "old", OLD)
    sampler = host.sampler()
    sampler.poll()
    host.now = 1.0
    host.rows[700] = (0.5, 1, "new", START_WALL + 0.5)  # the old one ended, its pid taken by a newcomer
    sampler.poll()
    load = sampler.result()
    assert load.other_cpu_cores == pytest.approx(0.5)
    assert load.other_cpu_top == ("new (700) 0.5 cores",)


def test_children_a_parent_reaped_count_once():
    host = FakeHost()
    host.rows[800] = (1.0, 1, "make", OLD, 20.0)
    host.rows[801] = (2.0, 800, "cc1", OLD)
    sampler = host.sampler()
    sampler.poll()
    host.now = 1.0
    host.spend(801, 0.5)  # seen working...
    sampler.poll()
    host.now = 2.0
    del host.rows[801]  # ...then reaped: 2.7 s in all (0.2 s after the last poll)
    host.spend(800, 0.1, children=2.7 + 0.6)  # and a short-lived cc1 never seen: 0.6 s
    sampler.poll()
    load = sampler.result()
    assert {p.pid: p.cores * load.elapsed_s for p in load.others} == {
        800: pytest.approx(0.1 + 0.2 + 0.6), 801: pytest.approx(0.5)}


def test_other_processes_never_use_more_cores_than_the_machine_has():
    # A shell reaps a test run it started long before the window and that the sampler never saw
    # (its time could not be read): its children time jumps by 56 s in a 1 s gap. On a 2-core box
    # that read "bash (3192) 28.1 cores"; at most the gap's 2 cores can have been spent.
    host = FakeHost()
    host.rows[3192] = (1.0, 1, "bash", OLD, 0.0)
    host.rows[3300] = (3.0, 1, "stress", OLD)
    sampler = host.sampler(cpus=2)
    sampler.poll()
    host.now = 1.0
    host.spend(3300, 0.9)
    sampler.poll()
    host.now = 2.0
    host.spend(3192, 0.05, children=56.0)
    host.spend(3300, 0.9)
    sampler.poll()
    load = sampler.result()
    by_pid = {p.pid: p.cores for p in load.others}
    assert by_pid[3192] <= 1.0  # 2 cores for 1 s of a 2 s window
    assert by_pid[3300] == pytest.approx(0.9)
    assert load.other_cpu_cores <= 2.0


def test_children_of_own_processes_and_of_the_app_are_not_others():
    host = FakeHost()
    host.rows[300] = (1.0, APP, "python", OLD)
    sampler = host.sampler(roots={300})
    sampler.poll()
    host.now = 1.0
    host.spend(300, 0.1, children=3.0)  # the worker reaped a compiler
    host.spend(APP, 0.1, children=9.0)  # the app reaped an old worker
    sampler.poll()
    load = sampler.result()
    assert load.other_cpu_cores == 0.0 and load.app_cpu_cores == pytest.approx(0.1)


def test_unreadable_processes_and_negative_deltas_count_nothing():
    host = FakeHost()
    host.rows[900] = (None, 1, "root-only", OLD)
    host.rows[901] = (5.0, 1, "odd", OLD)
    sampler = host.sampler()
    sampler.poll()
    host.now = 1.0
    host.rows[901] = (4.0, 1, "odd", OLD)
    sampler.poll()
    assert sampler.result().other_cpu_cores == 0.0


def test_a_short_window_is_no_figure_and_no_failure():
    host = FakeHost()
    sampler = host.sampler()
    assert sampler.result().other_cpu_cores is None and sampler.result().polls == 0
    sampler.poll()
    host.now = 0.1
    sampler.poll()
    load = sampler.result()
    assert load.other_cpu_cores is None and load.app_cpu_cores is None
    assert not load.failed and "0.10 s" in load.reason


def test_a_failing_table_is_survived_then_given_up():
    host = FakeHost()
    sampler = host.sampler(max_errors=2)
    sampler.poll()
    host.raise_next = [OSError("proc is gone")]
    host.now = 0.5
    assert not sampler.poll()
    host.now = 1.0
    assert sampler.poll()  # one failure in a row: the next poll counts
    assert sampler.result().other_cpu_cores == 0.0 and not sampler.result().failed
    host.raise_next = [OSError("a"), OSError("b")]
    assert not sampler.poll() and not sampler.poll()
    assert not sampler.poll()  # halted: no more polls
    load = sampler.result()
    assert load.failed and load.reason == "OSError: b"
    assert load.other_cpu_cores == 0.0  # what was measured before is kept


def test_missing_psutil_is_a_reason_and_the_thread_ends(monkeypatch):
    def no_psutil():
        raise ImportError("No module named 'psutil'")

    sampler = HostLoadSampler(table=no_psutil).start()
    load = sampler.stop()
    assert not sampler.running
    assert load.failed and load.reason == "psutil is not installed" and load.other_cpu_cores is None


def test_a_raising_roots_callable_is_a_failed_poll():
    host = FakeHost()

    def roots():
        raise RuntimeError("boom")

    sampler = host.sampler(roots=roots, max_errors=1)
    assert not sampler.poll()
    assert sampler.result().failed and sampler.result().reason == "RuntimeError: boom"


def test_the_psutil_table_reads_this_process():
    table = PsutilTable()
    rows = table()
    me = ProcSample(*rows[os.getpid()])
    assert me.ppid == os.getppid() and me.name and me.cpu_s > 0
    assert abs(me.create_time - time.time()) < 24 * 3600
    again = ProcSample(*table()[os.getpid()])
    assert again.cpu_s >= me.cpu_s and again.create_time == me.create_time


def test_the_thread_polls_until_stopped():
    host = FakeHost()
    sampler = HostLoadSampler(app_pid=APP, table=host.table, hz=200, clock=time.monotonic,
                              wall=lambda: START_WALL).start()
    assert sampler.running
    deadline = time.monotonic() + 10
    while sampler.result().polls < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    load = sampler.stop()
    assert not sampler.running and load.polls >= 6
    assert sampler.stop().polls == load.polls  # idempotent


BUSY = "while True: pass"
PARENT_OF_BUSY = (
    "import subprocess, sys, time\n"
    f"subprocess.Popen([sys.executable, '-c', {BUSY!r}])\n"
    "while True: time.sleep(1)\n"
)


def _cpu_s(pid: int) -> float:
    times = PsutilTable()()[pid]
    return times[0]


#: CPU seconds the busy process spends inside the window: the window lasts until it has (two seconds at least),
#: so a loaded machine that gives it a small share makes the window longer, not the evidence thinner.
BUSY_CPU_S = 0.8


def _until(predicate, within: float, what: str) -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, f"{what} within {within} s"
        time.sleep(0.02)


@pytest.mark.slow  # busy processes for two seconds or more
def test_a_busy_process_is_seen_and_a_busy_child_of_an_own_root_is_not():
    other = subprocess.Popen([sys.executable, "-c", BUSY])
    own = subprocess.Popen([sys.executable, "-c", PARENT_OF_BUSY], start_new_session=True)
    try:
        _until(lambda: any(row[1] == own.pid for row in PsutilTable()().values()), 30, "the own root's busy child")
        before, t0 = _cpu_s(other.pid), time.monotonic()
        sampler = HostLoadSampler({own.pid}).start()
        _until(lambda: _cpu_s(other.pid) - before >= BUSY_CPU_S and time.monotonic() - t0 >= 2.0, 60,
               f"{BUSY_CPU_S} CPU seconds of the busy process")
        load = sampler.stop()
        spent = _cpu_s(other.pid) - before
        own_tree = sampler.own_pids()
    finally:
        other.kill()
        os.killpg(own.pid, 9)
        other.wait()
        own.wait()
    busy_child = own_tree - {own.pid, os.getpid()}
    assert len(busy_child) == 1, own_tree
    seen = {p.pid: p.cores * load.elapsed_s for p in load.others}  # CPU seconds inside the sampler's window
    # The sampler's window lies inside the test's, a poll or two shorter: what it saw of the busy process is
    # nearly all the busy process spent, however small a share of a loaded machine that was.
    assert spent - 0.25 <= seen.get(other.pid, 0.0) <= spent + 0.05, (seen.get(other.pid), spent)
    assert load.other_cpu_cores >= seen[other.pid] / load.elapsed_s
    assert not busy_child & set(seen)
    assert own.pid not in seen
    assert load.app_cpu_cores is not None and load.app_cpu_cores < 0.5
    if other.pid in [p.pid for p in load.others[:3]]:  # named when among the three busiest
        cores = seen[other.pid] / load.elapsed_s
        assert any(label.endswith(f"({other.pid}) {cores:.1f} cores") for label in load.other_cpu_top)


def test_after_a_mark_the_figures_are_those_since_the_mark():
    host = FakeHost()
    host.rows[200] = (50.0, 1, "make", OLD)
    sampler = host.sampler()
    sampler.poll()
    host.now = 10.0
    host.spend(200, 10.0)  # a full core while the run compiled
    sampler.poll()
    sampler.mark()  # measuring starts: the mark's own poll
    host.now = 11.0
    host.spend(200, 0.2)
    host.spend(APP, 0.5)
    sampler.poll()
    load = sampler.result()
    assert load.other_cpu_cores == pytest.approx(0.2) and load.app_cpu_cores == pytest.approx(0.5)
    assert load.elapsed_s == 1.0 and load.lead_in_s == 0.0
    assert load.other_cpu_top == ("make (200) 0.2 cores",)


def test_a_mark_too_close_to_the_end_gives_the_whole_windows_figures():
    # A CPU run of short calls measures for milliseconds: its window since the mark is too short,
    # and the figures from compiling on stand for it rather than none.
    host = FakeHost()
    host.rows[200] = (50.0, 1, "make", OLD)
    sampler = host.sampler()
    sampler.poll()
    host.now = 2.0
    host.spend(200, 1.5)
    sampler.mark()
    host.now = 2.05
    host.spend(200, 0.05)
    sampler.poll()
    load = sampler.result()
    assert load.other_cpu_cores == pytest.approx(1.55 / 2.05)
    assert load.lead_in_s == 2.0 and load.elapsed_s == 2.05
