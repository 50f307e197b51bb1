"""A run's wall time by part (tui.engine.store.wall_time): the clock, the record's events, the runner's end."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from pathlib import Path

import pytest
from fakes import fake_worker_argv
from fakes.polling import poll_until

from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.runner import WorkerRunner
from tui.engine.store import wall_time
from tui.engine.store.results import RunRecord
from tui.engine.store.wall_time import PARTS, PartClock, WallTime
from tui.present.format import wall_time_text

FAKE_WORKER = fake_worker_argv()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The parts' clock reads the list's first value; a test sets it before each change."""
    now = [100.0]
    monkeypatch.setattr(wall_time, "monotonic", lambda: now[0])
    return now


def test_each_change_adds_the_time_since_the_last_to_the_part_left(clock):
    parts = PartClock()
    assert not parts.running and parts.times.total_s is None
    for at, part in ((100.0, "starting"), (106.0, "building"), (106.5, "compiling"), (110.0, "compiling"),
                     (111.0, "measuring"), (120.0, "ending"), (120.25, None)):
        clock[0] = at
        parts.enter(part)
    assert not parts.running
    assert list(parts.times.parts()) == [("starting", 6.0), ("building", 0.5), ("compiling", 4.5),
                                         ("measuring", 9.0), ("ending", 0.25)]
    assert parts.times.total_s == 20.25
    assert parts.times.warming_up_s is None  # never reached: not a zero


def test_the_parts_are_the_workers_phases_between_waiting_and_starting_and_ending():
    assert PARTS[:2] == ("waiting", "starting") and PARTS[-1] == "ending"
    assert [f"{part}_s" for part in PARTS] == [f.name for f in WallTime.__dataclass_fields__.values()]


def test_a_record_times_its_parts_from_its_events_and_the_runners_end(clock):
    record = RunRecord.new(RunOptions(workload="pointwise"))
    record.set_status("starting")
    clock[0] = 103.0
    record.apply(make_event("phase", 0.0, phase="compiling"))
    clock[0] = 104.5
    record.apply(make_event("failed", 0.0, kind="compile_error", message="inductor raised"))
    clock[0] = 105.0
    record.stop_clock()
    assert record.wall_time == WallTime(starting_s=3.0, compiling_s=1.5, ending_s=0.5)
    assert RunRecord.from_json(record.to_json()).wall_time == record.wall_time
    assert record.to_row()["wall_s"] == "5"


def test_a_run_that_never_started_has_no_wall_time(clock):
    record = RunRecord.new(RunOptions(workload="pointwise"))
    record.fail("cancelled", "cancelled before it started")
    clock[0] = 200.0
    record.stop_clock()
    assert record.wall_time == WallTime() and record.to_row()["wall_s"] == ""


def test_the_text_keeps_each_part_with_its_number():
    text = wall_time_text(WallTime(starting_s=5.25, compiling_s=12.0, ending_s=0.31))
    assert text == "17.6 s: starting\xa05.25\xa0· compiling\xa012.0\xa0· ending\xa00.31"
    assert wall_time_text(WallTime()) is None


async def test_a_real_run_accounts_for_its_wall_time_part_by_part():
    runner = WorkerRunner(worker_argv=FAKE_WORKER, env={"FAKE_WORKER_DELAY": "0.02"})
    record = RunRecord.new(RunOptions(workload="pointwise", iters=20, block_size=5,
                                      params={"fake_behaviour": "slow"}))
    arrived: list[float] = []
    began = time.monotonic()
    try:
        await runner.run(record, lambda event: arrived.append(time.monotonic()))
        took = time.monotonic() - began
    finally:
        await runner.aclose()
    assert record.status == "done"
    named = dict(record.wall_time.parts())
    assert list(named) == list(PARTS[1:])  # every part reached, in order; no GPU's lock waited for
    assert all(seconds > 0 for seconds in named.values())
    total = record.wall_time.total_s
    # The clock runs from before the worker's first event to after its last, and within the call.
    assert total is not None and arrived[-1] - arrived[0] <= total <= took


def test_a_group_rows_wall_time_is_every_process_summed_part_by_part():
    from fakes.records import full_group
    from tui.engine.store.repeats import GroupRecord

    members = full_group(scales=(1.0, 1.1))
    members[0].wall_time = WallTime(starting_s=4.0, compiling_s=10.0, measuring_s=5.0, ending_s=0.5)
    members[1].wall_time = WallTime(starting_s=0.25, compiling_s=12.0, measuring_s=6.0, ending_s=0.25)
    failed = RunRecord.new(members[0].options)
    failed.group_id, failed.repeat = members[0].group_id, 2
    failed.fail("timeout", "timed out after 30 s (timeout_s) while compiling")
    failed.wall_time = WallTime(starting_s=0.5, compiling_s=30.0, ending_s=0.25)
    row = GroupRecord.of([*members, failed])
    # What the configuration cost: each process's parts added up (the failed one's too), not the first one's alone.
    assert row.wall_time == WallTime(starting_s=4.75, compiling_s=52.0, measuring_s=11.0, ending_s=1.0)
    assert row.to_row()["wall_s"] == "68.75"
    assert wall_time_text(row.wall_time, processes=3).startswith("68.8 s over 3 processes: starting\xa04.75")


@pytest.mark.parametrize("handed_over", [True, False], ids=["by a session", "alone"])
async def test_a_wait_for_the_gpus_lock_is_a_part_of_its_own_not_starting(clock, compile_lab_home, handed_over):
    import fcntl

    gpu = "GPU-fa4e0000-0000-4000-8000-000000000007"
    locks = compile_lab_home / "data" / "locks"
    locks.mkdir(parents=True)
    holder = open(locks / f"gpu-{gpu.removeprefix('GPU-')}.lock", "w")  # another compile-lab holds the GPU
    fcntl.flock(holder, fcntl.LOCK_EX)

    def heard(event) -> None:
        if getattr(event, "source", None) == "runner" and "busy" in event.message:
            clock[0] += 30.0  # the other run holds the GPU for 30 s, then lets it go
            fcntl.flock(holder, fcntl.LOCK_UN)

    runner = WorkerRunner(worker_argv=FAKE_WORKER, keep_spare=False)
    record = RunRecord.new(RunOptions(workload="pointwise", iters=20, block_size=5, device=f"cuda:{gpu}"))
    if handed_over:
        record.set_status("starting")  # the session's start, before the runner looks for the GPU's lock
    try:
        await runner.run(record, heard)
    finally:
        holder.close()
        await runner.aclose()
    assert record.status == "done"
    assert record.wall_time.waiting_s == 30.0 and record.wall_time.starting_s == 0.0
    assert record.wall_time.total_s == 30.0


def _ignores_sigterm(pid: int | None) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    ignored = next(line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:"))
    return bool(int(ignored, 16) & (1 << (signal.SIGTERM - 1)))


@pytest.mark.parametrize("end", ["timeout", "cancel"])
async def test_stopping_a_worker_the_runner_ends_is_the_runs_ending_not_its_phase(end):
    from tui.engine.runner.process import KILL_GRACE_S

    runner = WorkerRunner(worker_argv=FAKE_WORKER, keep_spare=False)
    stubborn = {"fake_behaviour": "stubborn"}  # SIGTERM does not end it
    record = RunRecord.new(RunOptions(workload="pointwise", iters=20, block_size=5, params=stubborn,
                                      timeout_s=60.0 if end == "cancel" else 1.0))
    measuring = asyncio.Event()
    task = asyncio.create_task(runner.run(record, lambda event: getattr(event, "stage", None) == "measure"
                                          and measuring.set()))
    try:
        if end == "cancel":
            await asyncio.wait_for(measuring.wait(), 10)
            assert await poll_until(lambda: _ignores_sigterm(runner.last_pid), 10.0)  # it hangs, as stubborn
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    finally:
        await runner.aclose()
    assert record.status == ("cancelled" if end == "cancel" else "failed")
    # The kill (SIGTERM, KILL_GRACE_S for the worker to go, SIGKILL, reaping) comes after the run's end was decided.
    assert record.wall_time.ending_s >= KILL_GRACE_S
    if end == "timeout":
        assert record.wall_time.total_s - record.wall_time.ending_s <= 1.0 + 0.5  # the timeout, give or take a beat
