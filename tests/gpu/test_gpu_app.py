"""The app on a real GPU: headless Pilot, real NVML, a real worker on CUDA; and its idle CPU cost.

Run with ``pytest -m gpu``; skipped (and reported as skipped) without CUDA.
"""

from __future__ import annotations

import resource
import time

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

textual = pytest.importorskip("textual")

from textual.widgets import Input  # noqa: E402
from tui.app.components.chooser import Chooser  # noqa: E402

from tui.app.app import CompileLabApp  # noqa: E402
from tui.app.components.gpu_pane import GpuPane  # noqa: E402
from tui.app.components.picker import Picker  # noqa: E402
from tui.engine.runner import WorkerRunner  # noqa: E402
from tui.telemetry.model import normalize_uuid, nvml_uuid  # noqa: E402
from tui.telemetry.nvml import NvmlSource  # noqa: E402


async def _until(pilot, predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def test_the_app_runs_a_cuda_workload_end_to_end_with_live_nvml():
    source = NvmlSource()
    assert source.available, source.reason
    runner = WorkerRunner(keep_spare=False, telemetry=source)
    app = CompileLabApp(runner=runner, telemetry=source, gpu_interval=0.5)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            pane = app.query_one(GpuPane)
            await _until(pilot, lambda: bool(pane.snapshots), 20, "the GPU pane's first poll")
            gpu = pane.snapshots[0]
            assert gpu.uuid and gpu.mem_total_mb and gpu.mem_total_mb > 1000 and gpu.temp_c is not None
            assert gpu.name and gpu.name in pane.render_text().plain

            picker = app.query_one(Picker)
            device = picker.query_one("#device", Chooser)
            wanted = f"cuda:{nvml_uuid(gpu.uuid)}"
            await _until(pilot, lambda: wanted in {value for _, value in device.options}, 10, "the GPU as a device")
            picker.query_one("#workload", Chooser).value = "matmul"
            await _until(pilot, lambda: picker.param_rows.workload == "matmul", 10, "matmul's parameter rows")
            device.value = wanted
            await pilot.pause()
            picker.query_one("#param-n", Input).value = "2048"
            picker.query_one("#iters", Input).value = "60"
            # One process: under --repeat auto a launch-bound reading adds processes; this test is about one run.
            picker.query_one("#repeat", Input).value = "1"
            app.table.focus()
            await pilot.press("r")
            await _until(pilot, lambda: app.table.row_count == 1, 15, "a row")
            run_id = app.table.run_ids[0]
            await _until(pilot, lambda: app.records[run_id].finished, 300, "the CUDA run to end")
            await _until(pilot, lambda: app.settled, 30,
                         f"the table's refresh ({len(app.records)} record(s), active {app.run_active})")
            record = app.records[run_id]
            assert record.status == "done", (record.error_kind, record.error_message, record.error_detail)
            assert normalize_uuid(record.env.gpu_uuid) == normalize_uuid(gpu.uuid)
            assert record.summary().clock == "cuda_event"
            assert record.accuracy.passed is True
            assert record.telemetry.samples >= 1 and record.telemetry.sm_clock_mean_mhz
            assert app.table.cell_text(run_id, "status") == record.summary().verdict  # a done run: its verdict
            assert float(app.table.cell_text(run_id, "compiled_ms")) > 0
    finally:
        runner.kill_all()
        source.close()


async def test_the_idle_app_with_real_nvml_costs_under_two_percent_of_a_core():
    source = NvmlSource()
    assert source.available, source.reason
    app = CompileLabApp(runner=WorkerRunner(keep_spare=False), telemetry=source, gpu_interval=1.0)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            pane = app.query_one(GpuPane)
            await _until(pilot, lambda: pane.polls >= 2, 10, "two polls")
            polls0, cpu0, wall0 = pane.polls, _cpu_s(), time.monotonic()
            await pilot.pause(6.0)
            cpu, wall = _cpu_s() - cpu0, time.monotonic() - wall0
            polls = pane.polls - polls0
    finally:
        source.close()
    pct = 100.0 * cpu / wall
    print(f"idle app with NVML: {pct:.2f}% of one core over {wall:.1f} s, {polls} polls")
    assert polls >= 4, polls  # it really polled NVML while measured
    assert pct < 2.0, f"{pct:.2f}% of one core"
