"""A run stopped after its measurement keeps it (tui.engine.run.kept): the WorkerRunner against the fake worker.

The fake's ``hang_profiling`` sends ``measured`` and then its profile pass never ends (a max-autotune re-compile
that outlasts the run's timeout); ``hang`` and ``hang_diagnosing`` hang before ``measured``.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from fakes import fake_worker_argv
from fakes.polling import group_alive, poll_until

from tui.engine.options import RunOptions
from tui.engine.protocol import Event, Measured, PhaseChanged, Profiled, WorkerWarning, make_event
from tui.engine.run.cancel import cancel
from tui.engine.run.kept import CANCELLED_THEN, kept_events, timed_out
from tui.engine.runner import WorkerRunner
from tui.engine.store.columns import csv_row
from tui.engine.store.results import RunRecord

PROFILE_TIMED_OUT = "the profile pass did not end within the run's timeout (1.5 s)"


def _record(behaviour: str, **fields) -> RunRecord:
    return RunRecord.new(RunOptions(workload="pointwise", params={"fake_behaviour": behaviour}, iters=20, block_size=5,
                                    **fields))


async def _run(record: RunRecord, heard: list[Event] | None = None) -> WorkerRunner:
    runner = WorkerRunner(worker_argv=fake_worker_argv(), keep_spare=False)
    try:
        await runner.run(record, heard.append if heard is not None else None)
    finally:
        await runner.aclose()
    return runner


async def test_a_timeout_in_the_profile_pass_keeps_the_measurement_and_says_why_the_profile_is_missing():
    heard: list[Event] = []
    record = _record("hang_profiling", timeout_s=1.5)
    runner = await _run(record, heard)
    assert (record.status, record.error_kind, record.error_message) == ("done", None, None)
    measured = [b for side in ("eager", "compiled") for b in record.samples[side] if b.stage == "measure"]
    assert len(measured) == 8 and record.summary().speedup == pytest.approx(2.0, rel=0.05)
    assert (record.compile_s, record.accuracy.passed) == (0.25, True)  # what ``measured`` brought
    assert record.profile is not None and not record.profile.available
    assert record.profile.why == PROFILE_TIMED_OUT
    assert f"profile unavailable: {PROFILE_TIMED_OUT}" in record.warnings
    # the runner's events went to its listener too: a cluster node forwards them to the caller's record
    assert isinstance(heard[-2], Profiled) and heard[-2].profile == record.profile
    assert isinstance(heard[-1], WorkerWarning) and heard[-1].source == "runner"
    assert await poll_until(lambda: not group_alive(runner.last_pid), 1.0)  # the hung profile pass was killed
    # a measured run wherever it is read: the CSV row and the history's JSON
    assert csv_row(record)["status"] == "done" and csv_row(record)["speedup"] != ""
    back = RunRecord.from_json(json.loads(json.dumps(record.to_json())))
    assert (back.status, back.profile) == ("done", record.profile)
    assert back.summary().speedup == pytest.approx(2.0, rel=0.05)


@pytest.mark.parametrize(("behaviour", "timeout_s", "phase"), [("hang", 0.5, "measuring"),
                                                               ("hang_diagnosing", 1.5, "diagnosing")])
async def test_a_timeout_before_the_measurement_is_complete_still_fails_the_run(behaviour, timeout_s, phase):
    """``hang`` stops in its first measured round; ``hang_diagnosing`` after its last block, in diagnosing, before
    ``measured``: neither has its measurement, so both fail as before (a phase alone does not keep a run)."""
    record = _record(behaviour, timeout_s=timeout_s)
    await _run(record)
    assert (record.status, record.error_kind) == ("failed", "timeout")
    assert record.error_message == f"timed out after {timeout_s:g} s (timeout_s) while {phase}"
    assert record.profile is None and not any("profile unavailable" in w for w in record.warnings)


async def test_a_cancel_in_the_profile_pass_keeps_the_measurement():
    seen = asyncio.Event()
    heard: list[Event] = []

    def listen(event: Event) -> None:
        heard.append(event)
        if isinstance(event, Measured):
            seen.set()

    record = _record("hang_profiling", timeout_s=60.0)
    runner = WorkerRunner(worker_argv=fake_worker_argv(), keep_spare=False)
    task = asyncio.create_task(runner.run(record, listen))
    try:
        await asyncio.wait_for(seen.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        await runner.aclose()
    assert (record.status, record.error_kind) == ("done", None)
    assert record.profile is not None and record.profile.why == "the profile pass was stopped by a cancel"
    assert "profile unavailable: the profile pass was stopped by a cancel" in record.warnings
    cancel(record, "the tune was stopped (Ctrl-C)")  # the session's reason comes after: a done run keeps its end
    assert record.status == "done"


@pytest.mark.parametrize(("behaviour", "event", "ended"), [
    ("hang_profiling", Measured, ("done", None)),  # in its profile pass: the measurement stays
    ("hang", PhaseChanged, ("cancelled", "cancelled")),  # before it: a stop, as a cancel says it
])
async def test_a_worker_its_runner_killed_ends_as_a_stop_never_a_crash(behaviour, event, ended):
    """``kill_all`` (a signal's handler, the app closing) kills the workers at once, and the run's events may end
    before the cancel that follows reaches the run: the runner reads that end as the stop it was."""
    seen = asyncio.Event()

    def listen(heard: Event) -> None:
        if isinstance(heard, event):
            seen.set()

    record = _record(behaviour, timeout_s=60.0)
    runner = WorkerRunner(worker_argv=fake_worker_argv(), keep_spare=False)
    try:
        task = asyncio.create_task(runner.run(record, listen))
        await asyncio.wait_for(seen.wait(), 30)
        runner.kill_all()  # no cancel of the task: the worker's end comes first
        await asyncio.wait_for(task, 30)
    finally:
        await runner.aclose()
    assert (record.status, record.error_kind) == ended, record.error_message
    if behaviour == "hang_profiling":
        assert record.profile is not None and record.profile.why == "the profile pass was stopped by a cancel"


async def test_a_run_without_a_profile_pass_finishes_as_before():
    record = _record("hang_profiling", timeout_s=10.0, profile=False)  # no profile pass to hang in
    await _run(record)
    assert record.status == "done" and record.profile is None
    assert not any("profile" in w or "after its measurement" in w for w in record.warnings)


def test_the_rule_keeps_only_a_measured_run_and_names_what_did_not_end():
    record = RunRecord.new(RunOptions(workload="pointwise"))
    assert kept_events(record, timed_out(40.0)) == () and not record.end_measured()  # nothing measured yet
    record.apply(make_event("measured", 5.0, compile_s=1.0))
    profiled, warning = kept_events(record, timed_out(40.0), 6.0)
    assert (profiled.t, profiled.profile.why) == (6.0, "the profile pass did not end within the run's timeout (40 s)")
    assert (warning.source, warning.message) == ("runner", f"profile unavailable: {profiled.profile.why}")
    # its profile arrived (or none was to come): only the worker's end is missing
    record.apply(make_event("profiled", 7.0, profile={"available": True}))
    (warning,) = kept_events(record, CANCELLED_THEN)
    assert warning.message == "the worker was stopped by a cancel after its measurement"
    assert record.end_measured() and record.status == "done" and kept_events(record, CANCELLED_THEN) == ()
    assert not record.end_measured()  # once
