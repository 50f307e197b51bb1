"""SVG snapshots of the whole app at 80x24 and 160x48 (pytest-textual-snapshot).

Deterministic by construction: fixed fake telemetry polled once, records injected with fixed
run ids, creation times and events (no live worker), no clock in the header.
Update after a deliberate change with ``pytest tests/app/test_snapshots_app.py --snapshot-update``
and look at the new SVGs before committing them.
"""

from __future__ import annotations

import math

import pytest

from app_helpers import fake_runner, no_gpu_source
from tui.app.app import CompileLabApp
from tui.app.components.details import DetailsScreen
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.store.results import RunRecord
from tui.engine.store.wall_time import WallTime
from tui.telemetry.fake import FakeSource

SIZES = [(80, 24), (160, 48)]
GPU_UUID = "gpu-fa4e0000-0000-4000-8000-000000000000"


def _env(device: str, gpu: bool) -> dict:
    return {
        "torch": "2.13.0",
        "cuda": "12.8" if gpu else None,
        "triton": "3.5.0" if gpu else None,
        "device": device,
        "gpu_name": "Fake H200" if gpu else None,
        "gpu_uuid": GPU_UUID if gpu else None,
        "driver": "570.00" if gpu else None,
        "tf32_matmul": False,
        "tf32_cudnn": False,
        "cpu": "fake cpu",
        "python": "3.11.7",
    }


def _blocks(record: RunRecord, count: int, clock: str) -> None:
    for index in range(count):
        for side, base in (("eager", 1.30), ("compiled", 0.82)):
            ms = [round(base + 0.04 * math.sin((index * 10 + j) / 3.0), 4) for j in range(10)]
            record.apply(make_event("block", 0.0, side=side, stage="measure", index=index, clock=clock, ms=ms,
                                    host_ms_per_call=round(base * 1.1, 4)))


def done_record() -> RunRecord:
    """A finished CPU run (a row above the running one)."""
    record = RunRecord(
        "20250101-000000-done01", RunOptions(workload="matmul", params={"n": 256}, iters=40), created=0.0
    )
    record.apply(make_event("started", 0.0, env=_env("cpu", False)))
    record.apply(make_event("compiled", 0.0, compile_s=2.31, diagnostics={"graph_breaks": 0, "recompiles": 0}))
    record.apply(make_event("phase", 0.0, phase="measuring"))
    _blocks(record, 4, "perf_counter")
    record.apply(make_event("measured", 0.0, diagnostics={"graph_breaks": 0, "recompiles": 0},
                            accuracy={"passed": True, "max_abs_err": 0.0}, memory={}, warnings=[]))
    record.apply(make_event("finished", 0.0))
    return record


def running_record() -> RunRecord:
    """A GPU run mid-measurement: 3 of 10 blocks per side arrived."""
    options = RunOptions(workload="pointwise", params={"n": 4096}, mode="max-autotune",
                         device=f"cuda:GPU-{GPU_UUID[4:]}", iters=100)
    record = RunRecord("20250101-000000-run001", options, created=0.0)
    record.apply(make_event("started", 0.0, env=_env("cuda:0", True)))
    record.apply(make_event("phase", 0.0, phase="compiling"))
    record.apply(make_event("block", 0.0, side="compiled", stage="compile", index=0, clock="perf_counter",
                            ms=[8421.0], host_ms_per_call=8421.0))
    record.apply(make_event("compiled", 0.0, compile_s=8.42, diagnostics={"graph_breaks": 1, "recompiles": 0}))
    record.apply(make_event("phase", 0.0, phase="warming_up"))
    record.apply(make_event("block", 0.0, side="compiled", stage="warmup", index=0, clock="cuda_event",
                            ms=[1.9, 1.1, 0.85], host_ms_per_call=1.3))
    record.apply(make_event("phase", 0.0, phase="measuring"))
    _blocks(record, 3, "cuda_event")
    return record


def failed_record() -> RunRecord:
    """A run that failed to compile, with its traceback."""
    options = RunOptions(workload="graph_break", params={"n": 256}, fullgraph=True)
    record = RunRecord("20250101-000000-fail01", options, created=0.0)
    record.apply(make_event("started", 0.0, env=_env("cpu", False)))
    record.apply(make_event("phase", 0.0, phase="compiling"))
    record.apply(make_event(
        "failed", 0.0, kind="graph_break",
        message="fullgraph=True but the workload breaks the graph: data-dependent branch at graph_break.py:12",
        detail=("Traceback (most recent call last):\n"
                "  File \"worker/main.py\", line 88, in run\n"
                "torch._dynamo.exc.Unsupported: Data-dependent branching\n"
                "  from user code: graph_break.py:12 in forward: if x.sum() > 0:\n"),
    ))
    record.wall_time = WallTime(starting_s=5.25, building_s=0.12, compiling_s=1.5, ending_s=0.31)  # not the clock's
    return record


def _app(telemetry) -> CompileLabApp:
    return CompileLabApp(runner=fake_runner(), telemetry=telemetry, gpu_interval=3600.0, load_history=False)


async def _settle(pilot) -> None:
    """Wait for the GPU pane's first poll and the chart's first drawing of the current record."""
    app = pilot.app
    pane = app.query_one("#gpu")
    for _ in range(200):
        if "reading" not in pane.render_text().plain:
            break
        await pilot.pause(0.02)
    chart = app.query_one("#chart")
    for _ in range(200):
        if not chart._dirty:
            break
        await pilot.pause(0.02)
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_main_no_gpu(snap_compare, size):
    async def run_before(pilot):
        await _settle(pilot)

    assert snap_compare(_app(no_gpu_source()), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_main_one_gpu_mid_run(snap_compare, size):
    source = FakeSource(gpus=1, vary=False)

    async def run_before(pilot):
        app = pilot.app
        app.inject_record(done_record())
        app.inject_record(running_record(), current=True)
        app.table.move_cursor(row=1)
        await _settle(pilot)
        await pilot.pause(0.3)  # the 8 Hz row refresh

    assert snap_compare(_app(source), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_failed_run_details(snap_compare, size):
    async def run_before(pilot):
        app = pilot.app
        await _settle(pilot)
        app.inject_record(failed_record())
        await pilot.pause()
        app.action_details("20250101-000000-fail01")
        for _ in range(100):
            if isinstance(app.screen, DetailsScreen) and app.screen.query("#details-summary"):
                break
            await pilot.pause(0.02)
        await pilot.pause()

    assert snap_compare(_app(no_gpu_source()), terminal_size=size, run_before=run_before)


def test_snapshot_checkboxes_under_no_color(snap_compare, monkeypatch):
    """On a monochrome terminal a check box on (fullgraph, L2 flush) and off (the rest) still look different."""
    monkeypatch.setenv("NO_COLOR", "1")  # read when the app is made

    async def run_before(pilot):
        app = pilot.app
        await _settle(pilot)
        for box in ("#fullgraph", "#l2-flush"):
            app.query_one(box).value = True
        await pilot.pause()

    assert snap_compare(_app(no_gpu_source()), terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_sweep_dialog(snap_compare, size):
    """Every value whole at both sizes, the buttons on screen, unchecked backend/dtype lists saying what they mean."""
    async def run_before(pilot):
        app = pilot.app
        await _settle(pilot)
        app.action_sweep()
        for _ in range(100):
            if app.screen.query("#sweep-preview"):
                break
            await pilot.pause(0.02)
        await pilot.pause()

    assert snap_compare(_app(no_gpu_source()), terminal_size=size, run_before=run_before)


def test_snapshot_details_code_tab(snap_compare):
    """The Code tab at 80x24: the first graph's code highlighted, with its header and the keys to step."""
    from test_details_tabs import code_record
    from tui.app.components.details.code import CodeView

    async def run_before(pilot):
        app = pilot.app
        await _settle(pilot)
        record = code_record()
        app.inject_record(record)
        await pilot.pause()
        app.action_details(record.run_id)
        for _ in range(100):
            if isinstance(app.screen, DetailsScreen) and app.screen.query("#details-summary"):
                break
            await pilot.pause(0.02)
        app.screen.action_show_tab("code")
        view = app.screen.query_one(CodeView)
        for _ in range(200):
            if view.listing is not None:
                break
            await pilot.pause(0.02)
        await pilot.pause()

    assert snap_compare(_app(no_gpu_source()), terminal_size=(80, 24), run_before=run_before)
