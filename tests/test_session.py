"""tui.engine.run.session.RunSession with a scripted runner: order, lanes, cancel, ending and saving."""

from __future__ import annotations

import asyncio

import pytest

from tui import logs
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.store.results import RunRecord
from tui.engine.run.cancel import CANCELLED_BEFORE_START, cancel
from tui.engine.run.session import SHARED_LANE, RunSession, SessionListener, lane_of
from tui.engine.status import ended_reason


class ScriptedRunner:
    """Runs a record when the test releases it; records what ran at once."""

    def __init__(self) -> None:
        self.keep_spare = True
        self.gates: dict[str, asyncio.Event] = {}
        self.active: set[str] = set()
        self.most_at_once = 0
        self.started: list[str] = []
        self.spare_seen: list[bool] = []
        self.closed = False
        self.killed = 0
        self.fail_with: Exception | None = None

    def gate(self, record: RunRecord) -> asyncio.Event:
        return self.gates.setdefault(record.run_id, asyncio.Event())

    async def run(self, record, on_event=None):
        self.started.append(record.run_id)
        self.spare_seen.append(self.keep_spare)
        self.active.add(record.run_id)
        self.most_at_once = max(self.most_at_once, len(self.active))
        try:
            event = make_event("phase", 0.1, phase="measuring")
            record.apply(event)
            if on_event:
                on_event(event)
            await self.gate(record).wait()
            if self.fail_with is not None:
                raise self.fail_with
            for index in range(4):
                for side in ("eager", "compiled"):
                    record.apply(make_event("block", 0.2, side=side, stage="measure", index=index,
                                            clock="perf_counter", ms=[2.0 if side == "eager" else 1.0] * 10,
                                            host_ms_per_call=1.0))
            record.apply(make_event("finished", 0.3))
            return record
        finally:
            self.active.discard(record.run_id)

    async def aclose(self) -> None:
        self.closed = True

    def kill_all(self) -> None:
        self.killed += 1


class MemoryHistory:
    def __init__(self, fail: bool = False) -> None:
        self.lines: list[tuple[str, str]] = []
        self.fail = fail

    def append(self, record: RunRecord) -> None:
        if self.fail:
            raise OSError("disk full")
        assert record.finished
        self.lines.append((record.run_id, record.status))


class Heard(SessionListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def run_started(self, record):
        self.calls.append(("started", record.run_id))

    def run_event(self, record, event):
        self.calls.append(("event", record.run_id))

    def run_finished(self, record):
        self.calls.append(("finished", record.run_id))

    def run_saved(self, record, problem):
        self.calls.append(("saved" if problem is None else f"not saved: {problem}", record.run_id))


def _options(device: str = "cpu", **changes) -> RunOptions:
    return RunOptions(workload="pointwise", params={"n": 8}, device=device, **changes)


async def _until(condition, timeout: float = 5.0) -> None:
    """Let the loop run until ``condition()`` holds (the session works through call_soon and tasks)."""
    async def wait() -> None:
        while not condition():
            await asyncio.sleep(0)

    await asyncio.wait_for(wait(), timeout)


async def test_runs_go_one_at_a_time_in_submission_order_and_reach_the_history_in_end_order():
    runner, history, heard = ScriptedRunner(), MemoryHistory(), Heard()
    session = RunSession(lambda lane: runner, history, heard)
    records = session.submit([_options(), _options(), _options()])
    assert [r.status for r in records] == ["queued"] * 3 and not runner.started  # nothing starts inside submit
    for record in records:
        await _until(lambda r=record: runner.started and runner.started[-1] == r.run_id)
        assert runner.most_at_once == 1 and session.running[SHARED_LANE].record is record
        runner.gate(record).set()
    await session.wait_settled()
    assert [r.status for r in records] == ["done"] * 3
    assert history.lines == [(r.run_id, "done") for r in records]
    assert session.ended() == records
    first = records[0].run_id
    assert [c for c, rid in heard.calls if rid == first] == ["started", "event", "finished", "saved"]
    assert records[0].summary().speedup == 2.0 and records[0].summary().speedup_ci_low is not None  # final summary


async def test_repeats_make_one_record_each():
    runner = ScriptedRunner()
    session = RunSession(lambda lane: runner)
    records = session.submit([_options()], repeats=3)
    assert len({r.run_id for r in records}) == 3
    assert [u.repeat for u in session.queue] == [0, 1, 2]
    assert [r.options.profile for r in records] == [True, False, False]  # the profile pass: once per configuration
    for record in records:
        runner.gate(record).set()
    await session.wait_settled()
    assert [r.status for r in records] == ["done"] * 3


async def test_a_spare_is_kept_only_while_more_runs_wait_in_the_lane():
    runner = ScriptedRunner()
    session = RunSession(lambda lane: runner)
    records = session.submit([_options(), _options()])
    for record in records:
        runner.gate(record).set()
    await session.wait_settled()
    assert runner.spare_seen == [True, False]
    kept = ScriptedRunner()
    session = RunSession(lambda lane: kept, spare="runner")
    [only] = session.submit([_options()])
    kept.gate(only).set()
    await session.wait_settled()
    assert kept.spare_seen == [True]  # the app's own choice stays


async def test_parallel_lanes_run_gpus_at_once_and_cpu_runs_alone():
    runners: dict[str, ScriptedRunner] = {}
    session = RunSession(lambda lane: runners.setdefault(lane, ScriptedRunner()), parallel=True)
    gpu0, gpu1 = session.submit([_options("cuda:0"), _options("cuda:1")])
    cpu, gpu0_again = session.submit([_options("cpu"), _options("cuda:0")])
    await _until(lambda: len(session.running) == 2)
    assert set(session.running) == {"cuda:0", "cuda:1"}
    runners["cuda:0"].gate(gpu0).set()
    await _until(lambda: "cuda:0" not in session.running)
    assert set(session.running) == {"cuda:1"}  # the CPU run waits for the host, and holds back the GPU run after it
    runners["cuda:1"].gate(gpu1).set()
    await _until(lambda: SHARED_LANE in session.running)
    assert set(session.running) == {SHARED_LANE}  # the CPU run has the host to itself
    runners[SHARED_LANE].gate(cpu).set()
    await _until(lambda: "cuda:0" in session.running)
    runners["cuda:0"].gate(gpu0_again).set()
    await session.wait_settled()
    assert lane_of(_options("cuda:0"), parallel=False) == SHARED_LANE
    assert all(r.status == "done" for r in (gpu0, gpu1, cpu, gpu0_again))


async def test_a_wait_for_one_of_the_runs_hears_the_end_of_one_queued_just_before_it():
    """The tuner on a pool queues a run for a free lane while another goes, then waits for either to end: the wait
    watched only the runs already started, so the new run's end went unheard until the other one ended."""
    runner = ScriptedRunner()
    session = RunSession(lambda lane: runner, parallel=True)
    [long] = session.submit([_options("cuda:0")])
    await _until(lambda: long.run_id in runner.started)

    async def release_short() -> None:
        await _until(lambda: short.run_id in runner.started)
        runner.gate(short).set()

    [short] = session.submit([_options("cuda:1")])
    releasing = asyncio.ensure_future(release_short())
    watchdog = asyncio.get_running_loop().call_later(5.0, runner.gate(long).set)  # without the fix: ends the wait
    ended = await session.wait_ended([long, short], every=False)
    watchdog.cancel()
    assert ended == [short] and not long.finished
    runner.gate(long).set()
    await releasing
    await session.wait_settled()


async def test_cancel_keeps_the_cancelled_runs_in_the_history_and_the_exports():
    runner, history = ScriptedRunner(), MemoryHistory()
    session = RunSession(lambda lane: runner, history)
    running, waiting = session.submit([_options(), _options()])
    await _until(lambda: bool(runner.started))
    dropped, cancelled = session.cancel_all()
    assert (dropped, cancelled) == (1, True)
    await session.wait_settled()
    assert running.status == "cancelled" and running.error_message == "cancelled"
    assert waiting.status == "cancelled" and waiting.error_message == "cancelled before it started"
    assert sorted(history.lines) == sorted([(running.run_id, "cancelled"), (waiting.run_id, "cancelled")])
    assert session.ended() == [running, waiting]
    assert runner.started == [running.run_id]


async def test_a_runner_that_raises_is_a_crash_row_and_the_queue_goes_on():
    log_file = logs.setup()
    runner = ScriptedRunner()
    runner.fail_with = RuntimeError("boom")
    session = RunSession(lambda lane: runner, MemoryHistory())
    first, second = session.submit([_options(), _options()])
    runner.gate(first).set()
    await _until(lambda: len(runner.started) == 2)
    runner.fail_with = None
    runner.gate(second).set()
    await session.wait_settled()
    assert first.status == "failed" and first.error_kind == "crash" and "boom" in first.error_message
    assert second.status == "done"
    logs.reset()  # closes the file
    logged = log_file.read_text(encoding="utf-8")  # the row has one line; the log has the traceback
    assert f"ERROR tui.engine.run.session: run {first.run_id}: the run task failed\nTraceback" in logged
    assert 'raise self.fail_with\nRuntimeError: boom' in logged


async def test_a_history_that_refuses_is_reported_and_the_run_stays_exportable():
    runner, heard = ScriptedRunner(), Heard()
    session = RunSession(lambda lane: runner, MemoryHistory(fail=True), heard)
    [record] = session.submit([_options()])
    runner.gate(record).set()
    await session.wait_settled()
    assert any(call.startswith("not saved: ") and "disk full" in call for call, _ in heard.calls)
    assert session.ended() == [record]


async def test_aclose_cancels_drops_saves_and_closes_the_runners():
    runner, history = ScriptedRunner(), MemoryHistory()
    session = RunSession(lambda lane: runner, history)
    running, waiting = session.submit([_options(), _options()])
    await _until(lambda: bool(runner.started))
    await session.aclose(timeout=2.0)
    assert runner.closed and runner.killed == 1
    assert (running.status, waiting.status) == ("cancelled", "cancelled")
    assert sorted(history.lines) == sorted([(running.run_id, "cancelled"), (waiting.run_id, "cancelled")])
    with pytest.raises(RuntimeError, match="closing"):
        session.submit([_options()])


class GatedHistory(MemoryHistory):
    """A history whose append waits (in the saving thread) until the test opens its gate: a slow disk."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.gate, self.entered = threading.Event(), threading.Event()

    def append(self, record: RunRecord) -> None:
        self.entered.set()
        assert self.gate.wait(30)
        super().append(record)


async def test_a_run_whose_save_outlasts_the_close_is_still_exported_and_said():
    """A run whose save outlasts the close (a Ctrl-C during a slow save) is in the CLI's exports, and said."""
    import io

    from rich.console import Console

    from tui.cli.run import exported

    runner, history = ScriptedRunner(), GatedHistory()
    session = RunSession(lambda lane: runner, history)
    (record,) = session.submit([_options()])
    await _until(lambda: bool(runner.started))
    runner.gate(record).set()
    await asyncio.to_thread(history.entered.wait, 30)  # it ended; its save has begun and waits
    await session.aclose(timeout=0.05)
    assert session.ended() == [] and session.still_saving() == [record]
    import argparse

    err, quiet = io.StringIO(), io.StringIO()
    assert exported(session, argparse.Namespace(csv="runs.csv"), Console(file=err, width=300)) == [record]
    assert f"run {record.run_id} ended, but its save to the history had not finished" in err.getvalue()
    assert exported(session, argparse.Namespace(), Console(file=quiet, width=300)) == [record]
    assert quiet.getvalue() == ""  # no export asked for: nothing to say about one
    history.gate.set()
    await _until(lambda: session.settled)
    assert history.lines == [(record.run_id, "done")] and session.still_saving() == []


def _failing_pool(count: int, pool: tuple[str, ...]) -> tuple[RunSession, list[RunRecord], dict[str, ScriptedRunner]]:
    """A session whose runners fail every run at once (the runner raises: a crash before the worker said
    anything), ``count`` runs submitted over ``pool``; its runners by lane."""
    open_gate = asyncio.Event()
    open_gate.set()
    runners: dict[str, ScriptedRunner] = {}
    records: list[RunRecord] = []

    def runner_for(lane):
        runner = runners.setdefault(lane, ScriptedRunner())
        runner.fail_with = RuntimeError("no CUDA device")
        runner.gates.update({record.run_id: open_gate for record in records})
        return runner

    session = RunSession(runner_for)
    records.extend(session.submit([_options("cuda:0") for _ in range(count)], pool=pool))
    return session, records, runners


@pytest.mark.parametrize("pool, retired", [(("cuda:0", "cuda:1"), 1), (("cluster:0", "cluster:1"), 0)])
async def test_only_a_local_gpu_is_retired_after_runs_that_crash(pool, retired):
    session, records, _ = _failing_pool(4, pool)
    await session.wait_settled()
    assert all(r.status == "failed" and r.error_kind == "crash" for r in records)
    assert len(session.retired) == retired  # a cluster lane is a slot on some node, not a GPU


async def test_a_run_cancelled_before_its_task_began_still_ends_and_frees_its_lane():
    """x pressed in the very loop pass in which a lane's next run was started: the task is cancelled before
    its first step, so only its done callback can end the run and start the rest."""
    runner = ScriptedRunner()
    session = RunSession(lambda lane: runner)
    first, second, third = session.submit([_options(), _options(), _options()])
    await _until(lambda: first.run_id in runner.gates)
    original = session._start

    def start_then_cancel(unit):
        original(unit)
        if unit.record is second:
            session.cancel_running()  # before the new task ever ran

    session._start = start_then_cancel
    runner.gate(first).set()
    await _until(lambda: third.run_id in runner.gates)
    runner.gate(third).set()
    await asyncio.wait_for(session.wait_settled(), 5)
    assert [r.status for r in (first, second, third)] == ["done", "cancelled", "done"]
    assert second.run_id not in runner.started  # it never reached the runner
    assert session.ended() == [first, second, third]


async def test_a_pool_made_only_of_retired_gpus_still_runs():
    session, records, runners = _failing_pool(6, ("cuda:0", "cuda:1", "cuda:2"))
    await session.wait_settled()
    retired = tuple(sorted(session.retired))
    assert len(retired) == 2  # the last one stays while no other remains
    later = session.submit([_options("cuda:0")], pool=retired)
    for runner in runners.values():
        runner.gates[later[0].run_id] = runner.gates[records[0].run_id]  # open
    await asyncio.wait_for(session.wait_settled(), 5)
    assert later[0].status == "failed"  # it ran (and failed), rather than waiting for ever


class NodeRunner(ScriptedRunner):
    """A cluster's runner: each worker's ``started`` event names the node it landed on."""

    def __init__(self, nodes: dict[str, str]) -> None:
        super().__init__()
        self.nodes = nodes  # run_id -> node, set by the test before the run starts

    async def run(self, record, on_event=None):
        event = make_event("started", 0.05, run_id=record.run_id, env={"node": self.nodes[record.run_id]})
        record.apply(event)
        if on_event:
            on_event(event)
        return await super().run(record, on_event)


async def test_cluster_runs_on_one_node_count_each_other_and_other_nodes_do_not():
    from tui.engine.run.session import CLUSTER_LANE

    lanes = [f"{CLUSTER_LANE}{n}" for n in range(3)]
    nodes: dict[str, str] = {}
    runner = NodeRunner(nodes)
    session = RunSession(lambda lane: runner)
    a, b, c = session.submit([_options("cpu"), _options("cpu", iters=41), _options("cpu", iters=42)], pool=lanes)
    nodes.update({a.run_id: "node-1", b.run_id: "node-1", c.run_id: "node-2"})
    await _until(lambda: len(runner.active) == 3)
    assert (a.concurrent_runs, b.concurrent_runs, c.concurrent_runs) == (1, 1, 0)
    for record in (a, b, c):
        runner.gate(record).set()
    await session.wait_settled()
    assert (a.env.node, c.env.node) == ("node-1", "node-2")


async def test_a_cancel_says_what_cancelled_the_run():
    """A tune's stop cancels its runs with its reason: the record says it was cancelled and by what, not the
    runner's bare "cancelled" (a later close, which cancels again, keeps the first reason)."""
    runner = ScriptedRunner()
    session = RunSession(lambda lane: runner)
    running, waiting = session.submit([_options(), _options()])
    await _until(lambda: bool(runner.started))
    session.cancel_all("the tune was stopped (Ctrl-C)")
    await session.aclose(timeout=2.0)
    assert running.status == "cancelled" and running.error_message == "the tune was stopped (Ctrl-C)"
    assert ended_reason(running.error_kind, running.error_message) == "cancelled: the tune was stopped (Ctrl-C)"
    assert waiting.error_message == "cancelled before it started"


def test_one_rule_says_what_a_cancelled_run_says():
    """The runner whose task is cancelled ends the record, the session knows why, a close cancels again: the runner's
    plain "cancelled" gives way to the session's reason, a later plain cancel keeps that reason, and a run that
    ended on its own keeps its end."""
    record = RunRecord.new(_options())
    cancel(record)  # the runner: it does not know why
    assert (record.status, record.error_kind, record.error_message) == ("cancelled", "cancelled", "cancelled")
    assert ended_reason(record.error_kind, record.error_message) == "cancelled"
    cancel(record, "the tune was stopped (Ctrl-C)")  # the session: what cancelled it
    cancel(record)  # a close
    assert ended_reason(record.error_kind, record.error_message) == "cancelled: the tune was stopped (Ctrl-C)"
    failed = RunRecord.new(_options())
    failed.fail("compile_error", "compile failed")
    cancel(failed, "the tune was stopped (Ctrl-C)")
    assert (failed.status, failed.error_message) == ("failed", "compile failed")
    dropped = RunRecord.new(_options())
    cancel(dropped, CANCELLED_BEFORE_START)
    assert ended_reason(dropped.error_kind, dropped.error_message) == "cancelled: cancelled before it started"
