"""Every process a run starts ends with it (issue 24, finding 5), a daemon of the workload's included.

A workload that double-forks into a session of its own escaped the kill of the worker's process
group: it was still running under PID 1 after ``run`` exited 0 or the app quit, and one that kept
the worker's pipes open added 3 s to the run and an "Event loop is closed" traceback. Now the runner
finds such a process (the run's token in its environment, the worker's tree, the worker's session:
:mod:`tui.engine.runner.leftovers`), kills and reaps it when the run ends, and the row says how many
(``leftover_processes``, a warning). Nothing else is touched: a spare worker, a child of the
runner's process that no run started.

The fake worker starts the daemon (``FAKE_WORKER_DAEMON``) for the runner, the CLI and the app;
one ``slow`` test runs a user workload that double-forks through the CLI and the real worker.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app_helpers import fake_runner, wait_until
from fakes import fake_worker_argv
from fakes.polling import poll_until
from fault_helpers import REPO, alive, csv_rows, write_workload
from tui.app.components.dialogs import ConfirmScreen
from tui.engine.options import RunOptions
from tui.engine.protocol import Event, PhaseChanged
from tui.engine.status import RunStatus
from tui.engine.store.results import RunRecord
from tui.engine.runner import EXIT_GRACE_S, WorkerRunner
from tui.engine.runner.leftovers import leftover_warning

HARNESS = Path(__file__).resolve().with_name("cli_harness.py")
SIZE = (160, 48)
#: From the run's last event to run() returning, with a daemon that holds the pipes (before: 4 s and more).
QUICK_END_S = 1.5


def _options(**fields) -> RunOptions:
    fields = {"workload": "pointwise", "params": {"n": 64}, "device": "cpu", "iters": 20, "block_size": 5, **fields}
    return RunOptions(**fields).validated()


def _in_table(pid: int) -> bool:
    """Whether ``pid`` is in the process table at all (a zombie too: reaped means gone)."""
    return os.path.exists(f"/proc/{pid}")


def _daemon(pid_file: Path) -> int:
    """The daemon's pid, as it wrote it."""
    return int(pid_file.read_text())


async def _run(env: dict[str, str], on_event: Callable[[Event], None] | None = None,
               **fields) -> tuple[RunRecord, float, WorkerRunner]:
    """One run through a runner with a spare: the record, seconds from its last event to run() returning."""
    runner = WorkerRunner(worker_argv=fake_worker_argv(), keep_spare=True, env=env, sample_host=False)
    record = RunRecord.new(_options(**fields))
    last: list[float] = []

    def seen(event: Event) -> None:
        last.append(time.monotonic())
        if on_event is not None:
            on_event(event)

    try:
        await asyncio.wait_for(runner.run(record, seen), 60)
        returned = time.monotonic()
    except BaseException:
        await runner.aclose()
        raise
    return record, returned - last[-1], runner


async def test_a_daemon_that_holds_the_pipes_is_killed_counted_reaped_and_costs_no_wait(tmp_path):
    pid_file = tmp_path / "daemon.pid"
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # no run started it
    try:
        record, after_last_event, runner = await _run({"FAKE_WORKER_DAEMON": str(pid_file)})
        try:
            daemon = _daemon(pid_file)
            assert (record.status, record.leftover_processes) == ("done", 1), record.error_message
            assert leftover_warning(1) in record.warnings and leftover_warning(1) in record.summary().warnings
            assert record.to_row()["leftover_processes"] == "1"
            assert after_last_event < QUICK_END_S < EXIT_GRACE_S, after_last_event
            assert not _in_table(daemon)  # killed, and reaped by the runner's process (its subreaper): no zombie
            spare = runner.spare_pid
            assert spare is not None and alive(spare)  # another worker's: untouched
            assert bystander.poll() is None  # a child of this process that no run started: untouched
        finally:
            await runner.aclose()
    finally:
        bystander.kill()
        bystander.wait()


async def test_a_daemon_that_empties_its_environment_is_found_in_the_workers_tree(tmp_path):
    """No token to read: the worker, a child subreaper, kept the daemon in its tree, where a phase change noted it.

    The fake worker waits at a gate after its first measured round until the runner has handled the
    phase change after ``building`` (the daemon's start): a fake run is over in milliseconds, and a
    worker that exits before the runner notes its tree hands the daemon on (the limit
    :mod:`tui.engine.runner.leftovers` states), which a real run's compile and measuring never do.
    """
    pid_file, gate = tmp_path / "daemon.pid", tmp_path / "gate"

    def open_gate_after_building(event: Event) -> None:
        if isinstance(event, PhaseChanged) and event.phase != RunStatus.BUILDING:
            gate.touch()  # the runner noted the worker's tree before it handed this event on

    record, _after, runner = await _run({"FAKE_WORKER_DAEMON": str(pid_file), "FAKE_WORKER_DAEMON_ENV": "empty",
                                         "FAKE_WORKER_GATE": str(gate)}, open_gate_after_building)
    await runner.aclose()
    daemon = _daemon(pid_file)
    assert (record.status, record.leftover_processes) == ("done", 1)
    assert not _in_table(daemon)


async def test_a_run_that_times_out_takes_its_daemon_with_it(tmp_path):
    pid_file = tmp_path / "daemon.pid"
    record, _after, runner = await _run({"FAKE_WORKER_DAEMON": str(pid_file), "FAKE_WORKER_BEHAVIOUR": "hang"},
                                        timeout_s=3)
    await runner.aclose()
    assert (record.status, record.error_kind, record.leftover_processes) == ("failed", "timeout", 1)
    assert leftover_warning(1) in record.warnings
    assert not _in_table(_daemon(pid_file))


async def test_a_run_without_a_daemon_counts_none(tmp_path):
    record, _after, runner = await _run({})
    await runner.aclose()
    assert (record.status, record.leftover_processes) == ("done", 0)
    assert not any("process(es) the workload started" in w for w in record.warnings)
    assert record.to_row()["leftover_processes"] == "0"


def test_the_cli_ends_the_daemon_says_so_and_prints_no_traceback(tmp_path, compile_lab_home):
    pid_file, out = tmp_path / "daemon.pid", tmp_path / "run.csv"
    env = {**os.environ, "FAKE_WORKER_DAEMON": str(pid_file), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, str(HARNESS), "run", "--workload", "pointwise", "--param", "n=64",
                           "--iters", "20", "--csv", str(out)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Event loop is closed" not in done.stderr, done.stderr
    assert not _in_table(_daemon(pid_file))  # gone when the CLI is: not re-parented to PID 1
    (row,) = csv_rows(out)
    assert (row["status"], row["leftover_processes"]) == ("done", "1")
    assert "the runner killed them" in row["warnings"]


async def test_the_app_ends_the_daemon_of_a_finished_run_and_of_a_run_it_quits(make_app, tmp_path):
    pid_file = tmp_path / "daemon.pid"
    app = make_app(runner=fake_runner("ok", FAKE_WORKER_DAEMON=str(pid_file)))
    async with app.run_test(size=SIZE) as pilot:
        (record,) = app.enqueue([_options()])
        await wait_until(pilot, lambda: record.finished and app.settled, what="the run")
        assert (record.status, record.leftover_processes) == ("done", 1)
        assert leftover_warning(1) in record.warnings
        assert not _in_table(_daemon(pid_file))
    pid_file.unlink()
    hanging = make_app(runner=fake_runner("hang", FAKE_WORKER_DAEMON=str(pid_file)))
    async with hanging.run_test(size=SIZE) as pilot:
        hanging.action_run()
        await wait_until(pilot, lambda: pid_file.exists() and hanging.current is not None
                         and hanging.current.status == "measuring", what="a hanging run with its daemon")
        daemon = _daemon(pid_file)
        hanging.table.focus()
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(hanging.screen, ConfirmScreen), what="the confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: not hanging.is_running, what="exit")
    assert await poll_until(lambda: not _in_table(daemon), within=2)


@pytest.mark.slow
@pytest.mark.torch
def test_a_real_worker_whose_workload_double_forks_leaves_nothing_behind(tmp_path, compile_lab_home):
    """Through the CLI and the real worker: the daemon holds the worker's pipes and sleeps."""
    pytest.importorskip("torch")
    path = write_workload(tmp_path, "daemon.py", """
        import os
        import time

        import torch


        def make_workload(device, dtype, pid_file=""):
            child = os.fork()
            if child == 0:
                os.setsid()
                if os.fork() == 0:
                    with open(pid_file + ".tmp", "w") as out:
                        out.write(str(os.getpid()))
                    os.replace(pid_file + ".tmp", pid_file)
                    time.sleep(600)
                os._exit(0)
            os.waitpid(child, 0)
            return (lambda x: x * 2), (torch.ones(4, device=device, dtype=dtype),)
    """)
    pid_file, out = tmp_path / "daemon.pid", tmp_path / "run.csv"
    done = subprocess.run([sys.executable, "-m", "tui", "run", "--workload", str(path), "--param",
                           f"pid_file={pid_file}", "--backend", "eager", "--iters", "4", "--warmup", "1",
                           "--no-profile", "--csv", str(out)], env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Event loop is closed" not in done.stderr, done.stderr
    assert not _in_table(_daemon(pid_file))
    (row,) = csv_rows(out)
    assert (row["status"], row["leftover_processes"]) == ("done", "1")
