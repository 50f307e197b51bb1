"""The command line with stderr not a terminal (issue 14, the CLI): a line per run as it starts and ends, at once;
and the table's ``n.s.`` explained under it.

The sweep test reads stderr from a pipe while the sweep runs: the second run waits (off the event
loop) until the test has read the first run's end line, so the line provably came before the sweep
ended, with no sleep anywhere.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import os
import re
import select
import sys
import threading

from fakes.records import cuda_run_record
from fakes import fake_worker_argv
from rich.console import Console
from tui import cli
from tui.cli.render import NOT_SIGNIFICANT_LEGEND, print_table
from tui.cli.run_lines import RunLines, ended_text, run_label
from tui.engine.options import RunOptions
from tui.engine.store.results import RunRecord
from tui.engine.runner import WorkerRunner

FAKE_WORKER = fake_worker_argv()
WAIT_S = 60.0
"""The longest a read of the pipe waits for a line (a hung sweep fails the test instead of hanging it)."""


class _PipeLines:
    """Lines read from a pipe's read end as they arrive (select with a timeout; no sleeps)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.seen: list[str] = []

    def next_line(self) -> str | None:
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.fd], [], [], WAIT_S)
            assert ready, f"no line within {WAIT_S} s; so far: {self.seen}"
            chunk = os.read(self.fd, 4096)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        self.seen.append(line.decode())
        return self.seen[-1]

    def until(self, pattern: str) -> str:
        while (line := self.next_line()) is not None:
            if re.search(pattern, line):
                return line
        raise AssertionError(f"no line matched {pattern!r}: {self.seen}")


def test_a_sweep_to_a_pipe_says_each_run_as_it_starts_and_ends(monkeypatch, compile_lab_home):
    gate = threading.Event()
    runs: list[RunRecord] = []

    class GatedRunner(WorkerRunner):
        async def run(self, record, on_event=None):
            runs.append(record)
            if len(runs) == 2:  # the sweep cannot end before the test let it go on
                await asyncio.to_thread(gate.wait, WAIT_S)
            return await super().run(record, on_event)

    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: GatedRunner(
        worker_argv=FAKE_WORKER, keep_spare=keep_spare, env={"FAKE_WORKER_BEHAVIOUR": "ok"}))
    read_fd, write_fd = os.pipe()
    stderr = io.TextIOWrapper(os.fdopen(write_fd, "wb"), encoding="utf-8")  # not a terminal
    monkeypatch.setattr(sys, "stderr", stderr)
    codes: list[int] = []
    sweep = threading.Thread(target=lambda: codes.append(cli.main(
        ["sweep", "--workload", "pointwise", "--param", "n=64,128", "--device", "cpu", "--iters", "20",
         "--block-size", "5", "--no-history"])))  # fmt: skip
    sweep.start()
    try:
        lines = _PipeLines(read_fd)
        assert lines.next_line() == "[1/2] pointwise n=64 inductor dyn=auto fp32 cpu: started"
        done = lines.until(r"^\[1/2\] ")
        assert sweep.is_alive() and not gate.is_set()  # read while the sweep still runs
        assert re.fullmatch(r"\[1/2\] pointwise n=64 inductor dyn=auto fp32 cpu: done \d+\.\d\d× "
                            r"\[\d+\.\d\d, \d+\.\d\d\] (faster|slower|no change|inconclusive|noisy) \(\d+\.\d s\)",
                            done), done
    finally:
        gate.set()
        sweep.join(WAIT_S)
        stderr.close()
    while lines.next_line() is not None:
        pass
    os.close(read_fd)
    assert codes == [0]
    # one run at a time, so the log never reads as if two overlapped: each run's end before the next one's start
    assert [line.split(":")[0] for line in lines.seen] == ["[1/2] pointwise n=64 inductor dyn=auto fp32 cpu"] * 2 + [
        "[2/2] pointwise n=128 inductor dyn=auto fp32 cpu"] * 2
    assert sum(line.startswith("[2/2] pointwise n=128 ") and ": done " in line for line in lines.seen) == 1


def test_quiet_writes_no_run_lines(monkeypatch, compile_lab_home, capsys):
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: WorkerRunner(
        worker_argv=FAKE_WORKER, keep_spare=keep_spare, env={"FAKE_WORKER_BEHAVIOUR": "ok"}))
    assert cli.main(["run", "--device", "cpu", "--iters", "10", "--block-size", "5", "--no-history", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_quiet_says_a_failed_run_as_its_progress_line_ends(monkeypatch, compile_lab_home, capsys):
    """``--quiet`` printed the raw workload and ``label()``: no parameters or device, a user file's whole path
    with ``:make_workload``, and no error kind."""
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: WorkerRunner(
        worker_argv=FAKE_WORKER, keep_spare=keep_spare, env={"FAKE_WORKER_BEHAVIOUR": "fail"}))
    assert cli.main(["sweep", "--workload", "pointwise", "--param", "n=64,128", "--device", "cpu", "--iters", "10",
                     "--block-size", "5", "--no-history", "--quiet"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"compile-lab: pointwise n={n} inductor dyn=auto fp32 cpu: failed: compile_error: compile failed: fake "
        "inductor error" for n in (64, 128)]


def test_a_failed_and_a_cancelled_run_end_with_their_reason():
    stream = io.StringIO()
    options = RunOptions(workload="matmul", params={"n": 64}, backend="aot_eager")
    lines = RunLines(stream, [options, RunOptions(workload="matmul", params={"n": 64}, backend="inductor")])
    lines.total = 2
    failed, dropped = RunRecord.new(options), RunRecord.new(options)
    lines.started(failed)
    failed.fail("compile_error", "inductor failed to compile:\nno compiler")
    lines.finished(failed)
    lines.saved(failed)
    dropped.fail("cancelled", "cancelled before it started")
    lines.saved(dropped)
    assert re.fullmatch(r"\[1/2\] matmul n=64 aot_eager dyn=auto fp32 cpu: started\n"
                        r"\[1/2\] matmul n=64 aot_eager dyn=auto fp32 cpu: failed: compile_error: inductor failed "
                        r"to compile: no compiler \(\d+\.\d s\)\n"
                        r"\[-/2\] matmul n=64 aot_eager dyn=auto fp32 cpu: cancelled: cancelled before it started\n",
                        stream.getvalue()), stream.getvalue()


def test_the_next_runs_start_line_waits_for_the_end_line_of_the_run_before_it():
    # the session starts the next run as soon as a run ends, and the end line waits for the final summary
    stream = io.StringIO()
    options = [RunOptions(workload="matmul", params={"n": 64}, mode=mode) for mode in ("default", "max-autotune")]
    lines = RunLines(stream, options)
    lines.total = 2
    first, second = RunRecord.new(options[0]), RunRecord.new(options[1])
    lines.started(first)
    first.fail("compile_error", "no compiler")
    lines.finished(first)
    lines.started(second)  # before the first run's summary is saved
    lines.saved(first)
    said = [re.sub(r" \(\d+\.\d s\)$", "", line.split(": ", 1)[1]) for line in stream.getvalue().splitlines()]
    numbers = [line.split("]")[0] for line in stream.getvalue().splitlines()]
    assert list(zip(numbers, said, strict=True)) == [
        ("[1/2", "started"), ("[1/2", "failed: compile_error: no compiler"), ("[2/2", "started")], stream.getvalue()


def test_under_repeat_auto_a_process_number_is_said_from_the_second_process_on():
    options = RunOptions(workload="matmul", params={"n": 64})
    first, second = RunRecord.new(options), RunRecord.new(options)
    first.group_id = second.group_id = first.run_id
    second.repeat = 1
    for numbered, expected in ((False, ["[1/1]", "[1/1] process 2"]), (True, ["[1/1] process 1", "[2/2] process 2"])):
        stream = io.StringIO()
        lines = RunLines(stream, [options], numbered=numbered)
        lines.total = 1
        lines.started(first)
        lines.total = 2  # auto queued a second process once the first had ended
        lines.started(second)
        said = [line.split(": started")[0].replace(" matmul n=64 inductor dyn=auto fp32 cpu", "")
                for line in stream.getvalue().splitlines()]
        assert said == expected, stream.getvalue()


def test_under_repeat_auto_the_counter_counts_configurations_so_a_first_process_does_not_read_as_the_last():
    """``[1/1] ...: done`` and then ``[2/2] ... process 2``: "1/1 done" read as finished."""
    from tui.cli.run_lines import RunCounter

    a, b = RunOptions(workload="matmul", params={"n": 64}), RunOptions(workload="mlp")
    first, second, other = RunRecord.new(a), RunRecord.new(a), RunRecord.new(b)
    first.group_id = second.group_id = first.run_id
    other.group_id = other.run_id
    counter = RunCounter(2, by_configuration=True)
    for record in (first, other, second):
        counter.started(record)
    assert [counter.text(r, queued=3) for r in (first, other, second)] == ["[1/2]", "[2/2]", "[1/2]"]
    runs = RunCounter(0, by_configuration=False)
    for record in (first, other):
        runs.started(record)
    assert [runs.text(r, queued=3) for r in (first, other, second)] == ["[1/3]", "[2/3]", "[-/3]"]


def test_a_launch_bound_run_ends_with_its_host_speedup_too():
    record = cuda_run_record()
    summary = record.summary()
    assert summary.launch_bound
    text = ended_text(record)
    assert text.startswith(f"done {summary.speedup:.2f}× [{summary.speedup_ci_low:.2f}, {summary.speedup_ci_high:.2f}] "
                           f"{summary.verdict}, launch-bound: host {summary.host_speedup:.2f}×")


def test_the_label_says_the_swept_fields_first():
    a = RunOptions(workload="cnn", params={"batch": 64}, mode="reduce-overhead", dynamic=True)
    b = RunOptions(workload="cnn", params={"batch": 64}, dynamic=False)
    from tui.present.option_fields import differing

    assert run_label(a, differing([a, b])) == "cnn batch=64 reduce-overhead dyn=true inductor fp32 cpu"
    assert run_label(b, differing([a, b])) == "cnn batch=64 default dyn=false inductor fp32 cpu"


def _table(*records: RunRecord) -> str:
    console = Console(file=io.StringIO(), width=100, color_system=None)
    print_table(list(records), console)
    return console.file.getvalue()


def test_n_s_in_the_table_is_explained_under_it():
    significant = cuda_run_record()
    assert significant.summary().significant
    assert "n.s." not in _table(significant)  # no n.s., no legend
    unclear = cuda_run_record()
    summary = dataclasses.replace(unclear.summary(), speedup=1.01, speedup_ci_low=0.97, speedup_ci_high=1.05,
                                  significant=False)
    unclear.summary = lambda: summary
    table = _table(significant, unclear)
    assert "n.s." in table.split(NOT_SIGNIFICANT_LEGEND)[0]  # in a cell, then explained below the table
    assert table.count(NOT_SIGNIFICANT_LEGEND) == 1
    assert NOT_SIGNIFICANT_LEGEND.startswith("n.s.: not significant: the speedup's 95% interval includes 1×")


def _bars_text(width: int, tasks: list[tuple[str, str]]) -> list[str]:
    from tui.cli.run import _progress_bars

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=True, color_system=None)
    bars = _progress_bars(console)
    for label, state in tasks:
        bars.add_task(label, total=1.0, completed=0.5, state=state)
    console.print(bars.get_renderable())
    return buffer.getvalue().splitlines()


def test_the_live_progress_cuts_a_long_label_not_the_runs_state_bar_or_time():
    """At 80 columns the label, shared alike with the state, cut it to ``measuring 50/1…`` and dropped the bar
    and the time."""
    label = "[3/12] /tmp/models/my_model.py batch=64 max-autotune-no-cg dyn=false inductor fp32 cpu process 2"
    for width in (40, 60, 80, 120, 200):
        lines = _bars_text(width, [(label, "measuring 50/100 it"), ("[4/12] mlp batch=64", "waiting for the GPU")])
        assert len(lines) == 2
        for line, state in zip(lines, ("measuring 50/100 it", "waiting for the GPU"), strict=True):
            assert re.search(r"\d:\d\d:\d\d$", line.rstrip()), line
            assert len(line.rstrip()) <= width - 3
            if width >= 60:  # the state whole; from 80 columns the bar too
                assert f" {state} " in line and ("━" in line) == (width >= 80), line
        assert lines[0].startswith("[3/12] /tmp/models/" if width < 60 else "[3/12] /tmp/models/my_mod")
        assert ("…" in lines[0]) == (width < 160)
        assert lines[1].startswith("[4/12] mlp batch=64")


def test_the_live_progress_names_the_process_and_gpu_before_a_label_a_narrow_terminal_cuts():
    from tui.cli.run import _Progress

    options = RunOptions(workload="/tmp/models/a_model_with_a_long_name.py", device="cuda:1")
    record = RunRecord.new(options)
    record.group_id, record.repeat = "20260101-000000-group", 1
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None)
    progress = _Progress(console, total=6, enabled=True)
    progress.pooled = True
    progress.run_started(record)
    (task,) = progress.progress.tasks
    assert task.description.startswith("[1/6] process 2 on cuda:1: a_model_with_a_long_name.py")
    # under --repeat auto (most configurations run once) a first process goes unnumbered, as in a log's lines
    first = RunRecord.new(options)
    first.group_id = first.run_id
    progress.counter.by_configuration, progress.pooled = True, False
    progress.run_started(first)
    assert progress.progress.tasks[-1].description.startswith("[2/6] a_model_with_a_long_name.py")
    progress.counter.by_configuration = False
    again = RunRecord.new(options)
    again.group_id = again.run_id
    progress.run_started(again)
    assert progress.progress.tasks[-1].description.startswith("[3/6] process 1: a_model")
