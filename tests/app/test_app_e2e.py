"""End to end with the real worker on the CPU: key presses in the app -> a finished row -> an export."""

from __future__ import annotations

import csv

import pytest
from textual.widgets import Input

from app_helpers import no_gpu_source, notifications, wait_until
from tui import paths
from tui.app.app import CompileLabApp
from tui.app.components.picker import Cycler, Picker
from tui.engine.runner import WorkerRunner


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.animated  # the user's path as the user sees it
async def test_real_worker_from_key_press_to_a_finished_row_and_a_csv():
    runner = WorkerRunner(keep_spare=False)  # python -m tui.engine.worker (imports torch there, not here)
    app = CompileLabApp(runner=runner, telemetry=no_gpu_source(), gpu_interval=3600.0)
    try:
        async with app.run_test(size=(160, 48), notifications=True) as pilot:
            picker = app.query_one(Picker)
            picker.query_one("#backend", Cycler).value = "eager"
            await pilot.pause()
            picker.query_one("#param-n", Input).value = "64"
            picker.query_one("#warmup", Input).value = "2"
            picker.query_one("#iters", Input).value = "40"  # 4 block pairs of 10: enough for an interval
            app.table.focus()
            await pilot.press("r")
            await wait_until(pilot, lambda: app.table.row_count == 1, what="a row")
            run_id = app.table.run_ids[0]
            await wait_until(pilot, lambda: app.records[run_id].finished, timeout=240, what="the real run to end")
            await wait_until(pilot, lambda: app.settled, what="settled")
            record = app.records[run_id]
            assert record.status == "done", (record.error_kind, record.error_message, record.error_detail)
            cell = app.table.cell_text
            assert (
                cell(run_id, "status") == record.summary().verdict
            )  # a done run shows its verdict (this box may be busy: any word)
            # one run: every option field is shared, so it is said once in the pane's title, not in columns
            assert "eager" in str(app.table.border_title) and "fp32" in str(app.table.border_title)
            assert float(cell(run_id, "eager_ms")) > 0 and float(cell(run_id, "compiled_ms")) > 0
            assert cell(run_id, "speedup").endswith("]")  # with its interval
            assert record.env.torch  # the worker reported its torch
            await pilot.press("e")
            await wait_until(
                pilot, lambda: any(m.startswith("1 run(s) -> ") for m in notifications(app)), what="export"
            )
            # the toast shortens the path from the left to fit; the file is the one export in the exports dir
            (csv_path,) = [p for p in paths.exports_dir().glob("compile-lab-*.csv") if not p.name.endswith("-raw.csv")]
            assert csv_path.name in next(m for m in notifications(app) if m.startswith("1 run(s) -> "))
            with open(csv_path, newline="") as handle:
                rows = list(csv.DictReader(handle))
            assert rows[0]["run_id"] == run_id and rows[0]["backend"] == "eager" and rows[0]["status"] == "done"
    finally:
        runner.kill_all()
