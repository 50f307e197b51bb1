"""The app's side of the worker faults, with the torch-free fake worker.

For every fault the matrix names, a run before it and a run after it: the faulty run ends
as a failed row whose one-line message names the cause (and a notification says so), the
next run starts and finishes, and all three runs are in the history and in an export.
The failure messages the fake worker sends are the real worker's, copied from real runs
(``test_worker_faults.py`` produces them with the real worker).

Also here: an invalid field refused before any worker starts (line 6), an unreadable config
(line 11) and GPU telemetry failing in the middle of a run (line 13).
"""

from __future__ import annotations

import pytest
from textual.widgets import Input

from app_helpers import fake_runner, fake_worker_children, raised_notices, wait_until
from fault_helpers import csv_rows, history_lines
from tui import paths
from tui.app.components.picker import Picker
from tui.engine.options import RunOptions
from tui.telemetry.fake import FakeSource

SIZE = (160, 48)

#: (fake behaviour, extra options, the worker's failure kind and message) of each matrix line.
SIGNAL = ("crash", {}, "crash", "worker crashed (signal 9): Fatal Python error: Segmentation fault (fake)")
HANG = ("hang", {"timeout_s": 2.0}, "timeout", "timed out after 2 s (timeout_s) while measuring")  # room to start
EXIT = ("exit", {}, "crash", "worker exited with code 3: RuntimeError: fake worker gave up")
MEGABYTES = ("spam", {}, None, None)
#: The faults the worker reports itself (a ``failed`` event with its kind and message): one path through the app,
#: so they run one after another in one app, each with its own kind and message (``fake_fail_kind``).
REPORTED = [
    ("fail", {}, "out_of_memory",
     "ran out of memory in eager (memory_limit_gb 2): RuntimeError: DefaultCPUAllocator: can't allocate "
     "memory: you tried to allocate 8589934592 bytes. Error code 12 (Cannot allocate memory)"),  # 3
    ("fail", {}, "graph_break",
     "the graph broke under fullgraph=True: Data-dependent branching at worker/workloads.py:157 in "
     "graph_break_fn (if y.sum() > 0:)"),  # 4
    ("fail", {}, "compile_error",
     "inductor failed to compile: InvalidCxxCompiler: No working C++ compiler found in "
     "torch._inductor.config.cpp.cxx: (None, '/nonexistent/g++')"),  # 5
    ("fail", {}, "bad_options",
     "backend: 'no_such_backend' is not a registered torch._dynamo backend (allowed: aot_eager, "
     "aot_eager_decomp_partition, cudagraphs, eager, inductor)"),  # 6, the list shortened
    ("fail", {}, "workload_error", "/tmp/models/mine.py:2: syntax error: expected ':'"),  # 7
]
FAULTS = [
    pytest.param([SIGNAL], id="1-signal"),
    pytest.param([HANG], id="2-hang-timeout"),
    pytest.param([EXIT], id="1-exit"),
    pytest.param(REPORTED, id="3-to-7-reported-by-the-worker"),
    pytest.param([MEGABYTES], id="8-megabytes"),
]


def _options(behaviour: str, kind: str | None = None, message: str | None = None, **fields) -> RunOptions:
    """Options for the fake worker (not validated: ``fake_behaviour`` is no real parameter); a ``fail`` run fails
    with ``kind`` and ``message``."""
    fields.setdefault("iters", 10)
    fields.setdefault("block_size", 5)
    params = {"fake_behaviour": behaviour}
    if behaviour == "fail":
        params.update(fake_fail_kind=kind, fake_fail_message=message)
    return RunOptions(workload="pointwise", params=params, **fields)


@pytest.mark.parametrize("faults", FAULTS)
async def test_a_fault_is_a_failed_row_and_the_runs_around_it_are_kept(make_app, tmp_path, faults):
    """ok, each fault, ok: a failed row naming the cause, the next run goes, all of them in the history and an
    export."""
    app = make_app(runner=fake_runner("ok"))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        made = [_options(behaviour, kind, message, **extra) for behaviour, extra, kind, message in faults]
        before, *middle, after = app.enqueue([_options("ok"), *made, _options("ok")])
        await wait_until(pilot, lambda: after.finished and app.settled, what="every run ended")
        assert (before.status, after.status) == ("done", "done")
        failed = [n for n in raised_notices(app) if n.title == "Run failed"]
        assert len(failed) == sum(kind is not None for _, _, kind, _ in faults)
        for fault, (_, _, kind, message) in zip(middle, faults, strict=True):
            if kind is None:
                assert fault.status == "done"
            else:
                assert (fault.status, fault.error_kind, fault.error_message) == ("failed", kind, message)
                assert app.table.cell_text(fault.run_id, "status") == "failed"
                assert sum(n.message.endswith(f": {kind}: {message}") for n in failed) == 1
        # each run is stored as it is summarised, off the UI thread: lines may be in another order
        runs = [before, *middle, after]
        assert sorted(line["run_id"] for line in history_lines()) == sorted(run.run_id for run in runs)
        report = tmp_path / "report.csv"
        app._export(str(report))
        await wait_until(pilot, lambda: (tmp_path / "report.json").exists(), what="the export")
    rows = csv_rows(report)
    assert [(r["run_id"], r["status"]) for r in rows] == [(run.run_id, run.status) for run in runs]
    for row, (_, _, kind, message) in zip(rows[1:-1], faults, strict=True):
        if kind is not None:
            assert (row["error_kind"], row["error"]) == (kind, message)
    assert fake_worker_children() == []


@pytest.mark.parametrize(
    ("field", "value", "refusal"),
    [
        pytest.param("iters", "0", "iters: 0 is not allowed", id="zero-iterations"),
        pytest.param("param-n", "-5", "params: n: -5 is below the minimum 1", id="negative-size"),
    ],
)
async def test_an_invalid_field_is_refused_before_any_worker_starts(make_app, field, value, refusal):
    """A refused field: a notification naming it, no row, no worker process, and the corrected run goes."""
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        picker = app.query_one(Picker)
        picker.query_one(f"#{field}", Input).value = value
        await pilot.pause()
        app.action_run()
        await pilot.pause()
        assert app.table.row_count == 0 and app.current is None and not app.queue
        assert app.runner.last_pid is None and fake_worker_children() == []
        refused = [n for n in raised_notices(app) if n.title == "Run refused"]
        assert len(refused) == 1 and refused[0].message.startswith(refusal), refused[0].message
        picker.query_one(f"#{field}", Input).value = ""  # back to the default
        await pilot.pause()
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="the corrected run")
        assert app.records[app.table.run_ids[0]].status == "done"


async def test_telemetry_failing_mid_run_shows_na_and_the_app_goes_on(make_app, tmp_path):
    """A field going n/a, polls raising and the GPU lost while a CUDA run measures: the run and the next one finish."""
    source = FakeSource(gpus=1, vary=False)
    gpu = source.uuids[0]
    gate = tmp_path / "gate"
    runner = fake_runner("ok", FAKE_WORKER_GPU_UUID=gpu, FAKE_WORKER_GATE=str(gate))
    app = make_app(runner=runner, telemetry=source)
    device = "cuda:GPU-" + gpu.removeprefix("gpu-")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        pane = app.query_one("#gpu")
        (first,) = app.enqueue([_options("ok", device=device)])
        await wait_until(pilot, lambda: first.status == "measuring", what="measuring")
        source.set_field(0, temp_c=None, power_w=None)  # e.g. NVML began to answer NotSupported
        await wait_until(pilot, lambda: "temp n/a" in pane.content.plain, what="temp n/a")
        polls = source.calls
        source.raise_on_poll(RuntimeError("NVML hiccup"), count=3)  # the pane's and the run sampler's polls
        await wait_until(pilot, lambda: source.calls >= polls + 3, what="three failed polls")
        source.lose(0)
        await wait_until(pilot, lambda: "GPU lost" in pane.content.plain, what="GPU lost")
        assert app.current is first and first.status == "measuring"  # all of it happened mid-run
        gate.touch()  # let the run go on
        await wait_until(pilot, lambda: first.finished and app.settled, what="the first run ended")
        assert first.status == "done", first.error_message
        (second,) = app.enqueue([_options("ok", device=device)])
        await wait_until(pilot, lambda: second.finished and app.settled, what="the next run")
        assert second.status == "done" and app.is_running
        assert "GPU lost" in pane.content.plain
    assert [line["status"] for line in history_lines()] == ["done", "done"]


async def test_an_unreadable_config_gives_defaults_a_warning_and_runs_still_run(make_app):
    """A directory where the config file should be: defaults, a warning, and saving it later fails politely.

    A corrupt config (torn JSON, an unknown option) is tests/app/test_app_picker.py's.
    """
    paths.config_file().mkdir(parents=True)
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        assert app.query_one(Picker).current_options() == RunOptions()
        (warning,) = [n for n in raised_notices(app) if n.title == "Config ignored"]
        assert warning.message == (f"config {paths.config_file()} is a directory (allowed: a regular file of at most "
                                   "1 MiB); using defaults (it is left as it is and not saved over)")
        app.action_run()  # saves the options first: that fails, and the run goes on
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="a run")
        assert app.records[app.table.run_ids[0]].status == "done"
        assert any(n.message.startswith("config not saved: ") for n in raised_notices(app))
    assert paths.config_file().is_dir()
