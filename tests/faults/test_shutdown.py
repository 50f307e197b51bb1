"""Quitting with a run active, and the app's process receiving SIGHUP, SIGTERM or SIGKILL (matrix line 12).

Two seconds later no worker process and no child of a worker (the fake ``hang`` worker keeps a
sleeping child in its process group, as inductor keeps its compile workers) may remain, and the
run that finished before is in the history. The process table is checked by process group and
by environment: every process of one test's app tree was started with that test's
``COMPILE_LAB_HOME``, and nothing else on the machine was.

For SIGKILL the app can do nothing: the worker ends itself, by ``PR_SET_PDEATHSIG`` and by the
end-of-file on its stdin. That test uses the ``slow`` fake worker, which has no child of its
own. The last test does it again with a real worker that runs inductor's own compile pool
(the sidecar process and its compile workers a GPU run starts; on a CPU, without triton,
inductor compiles in-process, so the workload starts the pool the way inductor does).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from app_helpers import fake_runner, wait_until
from fault_helpers import (
    GONE_WITHIN_S,
    LineReader,
    descendants,
    group_members,
    history_lines,
    none_left,
    until,
    write_workload,
)
from tui.app.components.dialogs import ConfirmScreen
from tui.engine.options import RunOptions

HARNESS = Path(__file__).with_name("app_harness.py")
POOL_GONE_WITHIN_S = 10.0
"""How soon inductor's compile pool ends after its worker was killed: inductor's own shutdown, not compile-lab's."""


def _output(tmp_path: Path) -> str:
    return (tmp_path / "app-output.txt").read_text(errors="replace")


async def test_quitting_with_a_run_active_leaves_no_worker_and_keeps_the_finished_run(make_app, compile_lab_home):
    """q, then "Quit" while a hanging run measures: its whole process group is gone within 2 s."""
    app = make_app(runner=fake_runner("ok"))
    async with app.run_test(size=(160, 48)) as pilot:
        done, hanging = app.enqueue([
            RunOptions(iters=10, block_size=5, params={"fake_behaviour": "ok"}),
            RunOptions(iters=10, block_size=5, params={"fake_behaviour": "hang"}),
        ])
        await wait_until(pilot, lambda: hanging.status == "measuring", what="the hang")
        worker = app.runner.last_pid
        tree = await until(lambda: len(group_members(worker)) >= 2 and group_members(worker), 10, "the worker's child")
        await wait_until(pilot, lambda: [line["run_id"] for line in history_lines()] == [done.run_id], what="history")
        app.table.focus()
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        await pilot.press("y")
        start = time.monotonic()
        await wait_until(pilot, lambda: not app.is_running, what="exit")
    await none_left(pids=tree, pgids=[worker], env=("COMPILE_LAB_HOME", str(compile_lab_home)),
                    within=GONE_WITHIN_S - (time.monotonic() - start))
    lines = history_lines()
    assert [line["run_id"] for line in lines if line["status"] == "done"] == [done.run_id]
    assert all(line["status"] == "cancelled" for line in lines if line["run_id"] != done.run_id)


@contextlib.asynccontextmanager
async def _app_in_its_own_process(tmp_path: Path, *args: str):
    """The headless app of ``app_harness.py`` in a process of its own: (process, status reader).

    On the way out whatever is left of it is killed, and a failed assertion carries the app's output.
    """
    read_fd, write_fd = os.pipe()
    status = LineReader(read_fd)
    log = open(tmp_path / "app-output.txt", "wb")
    app = subprocess.Popen(
        [sys.executable, str(HARNESS), str(write_fd), *args],
        pass_fds=(write_fd,), stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
    )
    os.close(write_fd)
    try:
        yield app, status
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the app's output: {_output(tmp_path)[-3000:]}") from None
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(10)
        status.close()
        log.close()


async def _signal_and_see_the_tree_gone(app: subprocess.Popen, signum: int, home: Path, pids: Sequence[int],
                                        pgids: Sequence[int] = ()) -> int:
    """Send ``signum`` to the app; within 2 s none of ``pids``, ``pgids`` or the test's processes is left.
    Returns the app's exit code."""
    app.send_signal(signum)
    start = time.monotonic()
    code = await asyncio.to_thread(app.wait, 10)
    await none_left(pids=pids, pgids=pgids, env=("COMPILE_LAB_HOME", str(home)),
                    within=GONE_WITHIN_S - (time.monotonic() - start))
    return code


@pytest.mark.slow  # the app in a process of its own, signalled: seconds each
@pytest.mark.parametrize(
    ("signum", "behaviour"),
    [(signal.SIGHUP, "hang"), (signal.SIGTERM, "hang"), (signal.SIGKILL, "slow")],
    ids=["SIGHUP", "SIGTERM", "SIGKILL"],
)
async def test_a_signal_to_the_app_process_leaves_no_worker_and_keeps_the_finished_run(tmp_path, compile_lab_home,
                                                                                      signum, behaviour):
    """The app runs headless in its own process; it gets the signal mid-run; its tree is gone 2 s later."""
    async with _app_in_its_own_process(tmp_path, behaviour) as (app, status):
        appended = await status.json_until(lambda item: "appended" in item, timeout=60)
        worker = (await status.json_until(lambda item: "measuring" in item, timeout=60))["pid"]
        size = 2 if behaviour == "hang" else 1
        tree = await until(lambda: len(group_members(worker)) >= size and group_members(worker), 10, "the worker")
        code = await _signal_and_see_the_tree_gone(app, signum, compile_lab_home, tree, [worker])
    output = _output(tmp_path)
    assert code == (-signal.SIGKILL if signum == signal.SIGKILL else 128 + signum), output[-2000:]
    assert appended["status"] == "done"
    assert [line["run_id"] for line in history_lines() if line["status"] == "done"] == [appended["appended"]]


POOLED = """
    import time

    import torch
    from torch._inductor.async_compile import AsyncCompile


    def make_workload(device, dtype):
        # inductor's compile pool, started as inductor starts it for a triton compile:
        # a sidecar process, then its pool of compile workers
        AsyncCompile.warm_pool()
        AsyncCompile.wakeup()

        def step(x):
            time.sleep(0.01)
            return x + 1

        return step, (torch.ones(4),)
"""


@pytest.mark.slow
@pytest.mark.torch
async def test_sigkill_to_the_app_ends_a_real_worker_and_inductors_compile_pool(tmp_path, compile_lab_home,
                                                                              monkeypatch):
    """The app is SIGKILLed while a real worker holds inductor's compile pool: the worker (the process that holds
    the device) is gone 2 s later, and the pool follows on inductor's own way out.

    Nothing of the app runs after a SIGKILL: the worker goes by its parent-death signal, at once. Inductor's
    sidecar then reads the end of its pipe from the worker and shuts its pool down, which on a loaded machine
    can take seconds (docs/BENCHMARKS.md §12, session 21): a bound of :data:`POOL_GONE_WITHIN_S` for that part."""
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "2")
    path = write_workload(tmp_path, "pooled.py", POOLED)
    async with _app_in_its_own_process(tmp_path, "real", str(path)) as (app, status):
        appended = await status.json_until(lambda item: "appended" in item, timeout=120)
        worker = (await status.json_until(lambda item: "measuring" in item, timeout=120))["pid"]
        # the sidecar and its two compile workers
        tree = await until(lambda: len(descendants(worker)) >= 3 and descendants(worker), 60, "the compile pool")
        app.send_signal(signal.SIGKILL)
        start = time.monotonic()
        code = await asyncio.to_thread(app.wait, 10)
        await none_left(pids=[worker], within=GONE_WITHIN_S - (time.monotonic() - start))
        await none_left(pids=tree, env=("COMPILE_LAB_HOME", str(compile_lab_home)),
                        within=POOL_GONE_WITHIN_S - (time.monotonic() - start))
    assert code == -signal.SIGKILL
    assert appended["status"] == "done"
    assert [line["run_id"] for line in history_lines() if line["status"] == "done"] == [appended["appended"]]
